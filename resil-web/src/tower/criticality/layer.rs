//! The layer: where the class comes from.

use http::HeaderName;
use resil_core::Criticality;
use tower_layer::Layer;

use super::service::CriticalityService;

/// Sets each request's [`Criticality`] from a header or a fixed class (see
/// the [module docs](super)). Cheap to clone.
#[derive(Debug, Clone)]
pub struct CriticalityLayer {
    pub(super) header: Option<HeaderName>,
    pub(super) default: Criticality,
    pub(super) at_most: Criticality,
}

impl CriticalityLayer {
    /// The header `x-criticality`: [`from_header`](Self::from_header) with
    /// the name resil's own clients and examples use.
    pub fn from_default_header() -> Self {
        Self::from_header(HeaderName::from_static("x-criticality"))
    }

    /// Every request of the layer's routes has `class` (a route's class:
    /// `/prefetch` is `SHEDDABLE`, `/checkout` `CRITICAL_PLUS`).
    pub fn fixed(class: Criticality) -> Self {
        CriticalityLayer {
            header: None,
            default: class,
            at_most: Criticality::CriticalPlus,
        }
    }

    /// The class named by the header `name` (case-insensitive words, see
    /// [`Criticality`]'s `FromStr`); a request without it, or with a value
    /// that names no class, is `CRITICAL` (change with
    /// [`default_class`](Self::default_class)).
    pub fn from_header(name: HeaderName) -> Self {
        CriticalityLayer {
            header: Some(name),
            default: Criticality::Critical,
            at_most: Criticality::CriticalPlus,
        }
    }

    /// The class of a request without a (valid) header.
    pub fn default_class(mut self, class: Criticality) -> Self {
        self.default = class;
        self
    }

    /// No request gets a class above `class`, whatever its header says.
    pub fn at_most(mut self, class: Criticality) -> Self {
        self.at_most = class;
        self
    }
}

impl<S> Layer<S> for CriticalityLayer {
    type Service = CriticalityService<S>;

    fn layer(&self, inner: S) -> Self::Service {
        CriticalityService {
            inner,
            layer: self.clone(),
        }
    }
}
