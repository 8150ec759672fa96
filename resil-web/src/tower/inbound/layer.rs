//! The layer: the guard every request passes.

use resil_core::inbound::InboundGuard;
use tower_layer::Layer;

use super::service::InboundGuardService;

/// Puts one [`InboundGuard`] in front of a service (see the [module docs](super)).
#[derive(Debug, Clone)]
pub struct InboundGuardLayer {
    guard: InboundGuard,
}

impl InboundGuardLayer {
    /// A layer over `guard` (a clone shares its counts and readings).
    pub fn new(guard: InboundGuard) -> Self {
        InboundGuardLayer { guard }
    }
}

impl<S> Layer<S> for InboundGuardLayer {
    type Service = InboundGuardService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        InboundGuardService {
            inner,
            guard: self.guard.clone(),
        }
    }
}
