//! What every service and response future of one layer reads: the
//! instances, the classifier and the refusal mapping, built once by
//! [`Builder::build`](super::Builder::build).

use resil_core::bulkhead::{AdaptiveBulkhead, Bulkhead};
use resil_core::chaos::Chaos;
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
    pub(crate) adaptive: Option<Handle<AdaptiveBulkhead>>,
    pub(crate) chaos: Option<Handle<Chaos>>,
    /// The rate limiter, when its settings put it on Redis (`backend:
    /// redis`): then `limiter` is `None`.
    #[cfg(feature = "redis")]
    pub(crate) redis: Option<Handle<resil_core::distributed_rate_limiter::DistributedRateLimiter>>,
    pub(crate) classify: C,
    pub(crate) respond: R,
    /// What the layer did with each request it finished.
    pub(crate) counts: Arc<LayerCounts>,
    pub(crate) name: String,
}

impl<C, R> Shared<C, R> {
    /// Whether the rate limiter is the Redis-backed one.
    fn redis_limiter(&self) -> bool {
        #[cfg(feature = "redis")]
        return self.redis.is_some();
        #[cfg(not(feature = "redis"))]
        false
    }

    /// Whether the layer applies `aspect`.
    pub(crate) fn applies(&self, aspect: Aspect) -> bool {
        match aspect {
            Aspect::Throttler => self.throttler.is_some(),
            Aspect::CircuitBreaker => self.breaker.is_some(),
            Aspect::RateLimiter => self.limiter.is_some() || self.redis_limiter(),
            Aspect::TimeLimiter => self.time_limiter.is_some(),
            Aspect::Bulkhead => self.bulkhead.is_some() || self.adaptive.is_some(),
            Aspect::Chaos => self.chaos.is_some(),
            // The client side's (`ClientLayer`), outside this layer's.
            Aspect::Retry | Aspect::Hedge => false,
        }
    }
}
