//! What every service and response future of one layer reads: the
//! instances, the classifier and the refusal mapping, built once by
//! [`Builder::build`](super::Builder::build).

use resil_core::bulkhead::Bulkhead;
use resil_core::circuit_breaker::CircuitBreaker;
use resil_core::rate_limiter::RateLimiter;
use resil_core::throttler::Throttler;
use resil_core::time_limiter::TimeLimiter;
use resil_options::Aspect;
use std::sync::Arc;

use resil_registry::{Handle, LayerCounts};

/// What every service of one layer shares: the instances, the classifier
/// and the refusal mapping. Leaked once per built layer (see the module's
/// *Costs*), so response futures borrow the instances for `'static`.
///
/// Laid out for a server whose caches go cold between requests: what every
/// request reads (the handles, then the classifier and the refusal mapping,
/// a pointer each for the HTTP ones) comes first, from the start of a cache
/// line, and the name, read only by errors and `Debug`, last.
#[repr(C, align(64))]
pub(crate) struct Shared<C, R> {
    pub(crate) throttler: Option<Handle<Throttler>>,
    pub(crate) breaker: Option<Handle<CircuitBreaker>>,
    pub(crate) limiter: Option<Handle<RateLimiter>>,
    pub(crate) time_limiter: Option<Handle<TimeLimiter>>,
    pub(crate) bulkhead: Option<Handle<Bulkhead>>,
    pub(crate) classify: C,
    pub(crate) respond: R,
    /// What the layer did with each request it finished.
    pub(crate) counts: Arc<LayerCounts>,
    pub(crate) name: String,
}

impl<C, R> Shared<C, R> {
    /// Whether the layer applies `aspect`.
    pub(crate) fn applies(&self, aspect: Aspect) -> bool {
        match aspect {
            Aspect::Throttler => self.throttler.is_some(),
            Aspect::CircuitBreaker => self.breaker.is_some(),
            Aspect::RateLimiter => self.limiter.is_some(),
            Aspect::TimeLimiter => self.time_limiter.is_some(),
            Aspect::Bulkhead => self.bulkhead.is_some(),
            // Not layer aspects (`ResilienceLayer::ORDER` has none of them).
            Aspect::Retry | Aspect::Hedge | Aspect::Chaos => false,
        }
    }
}
