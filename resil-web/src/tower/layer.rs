//! The layer and its builder.

use std::fmt;

use resil_options::Aspect;
use resil_registry::Registry;
use tower_layer::Layer;

use super::classify::BreakerPredicates;
use super::respond::AsErrors;
use super::service::Resilience;
use super::shared::Shared;

/// A [`Layer`] applying a named stack of registry instances to a service,
/// with whichever aspects the builder chose, in the attributes' order
/// ([`ResilienceLayer::ORDER`]: the shared table [`resil_options::ORDER`]
/// restricted to the aspects a layer applies).
///
/// `Clone` and `Copy`-cheap: every service it makes shares the same instances.
pub struct ResilienceLayer<C: 'static = BreakerPredicates, R: 'static = AsErrors> {
    shared: &'static Shared<C, R>,
}

impl ResilienceLayer {
    /// The aspects a layer applies, outermost first:
    /// Throttler( CircuitBreaker( RateLimiter( TimeLimiter( Bulkhead( Chaos(
    /// service )))))). `Bulkhead` is the semaphore bulkhead, the adaptive
    /// one, or both (the semaphore's slot first); `RateLimiter` is the local
    /// limiter or, when the instance's settings say `backend: redis` (and
    /// the `redis` feature is on), the Redis-backed one, as with the
    /// attributes. Retry and Hedge wrap these on the client side
    /// ([`ClientLayer`](super::ClientLayer)).
    ///
    /// Derived from the one table the attribute macros sort by,
    /// [`resil_options::ORDER`] (where the order and its consequences are
    /// documented), so a layer and `#[resil::…]` attributes on a fn nest
    /// the same instances the same way. The layer's response future is a
    /// flat state machine, hand-tuned for a request that allocates nothing,
    /// so its nesting is written in its code rather than looped over at run
    /// time; compile-time assertions (in `service.rs`) tie that code to this
    /// order, so a change of the table that the state machine does not
    /// follow fails to build instead of silently disagreeing.
    pub const ORDER: [Aspect; 6] = resil_options::in_order([
        // A set, sorted by the table: written alphabetically on purpose.
        Aspect::Bulkhead,
        Aspect::Chaos,
        Aspect::CircuitBreaker,
        Aspect::RateLimiter,
        Aspect::Throttler,
        Aspect::TimeLimiter,
    ]);

    /// A builder for the instances called `name` in `registry`, choosing no
    /// aspect yet.
    pub fn builder<'r>(registry: &'r Registry, name: &str) -> Builder<'r> {
        Builder {
            registry,
            name: name.to_owned(),
            throttler: false,
            breaker: false,
            limiter: false,
            time_limiter: false,
            bulkhead: false,
            adaptive: false,
            chaos: false,
            classify: BreakerPredicates,
            respond: AsErrors,
        }
    }
}

impl<C: 'static, R: 'static> ResilienceLayer<C, R> {
    /// The name the instances were looked up by.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The aspects this layer applies, outermost first (those of
    /// [`ResilienceLayer::ORDER`] the builder chose).
    pub fn aspects(&self) -> impl Iterator<Item = Aspect> + 'static {
        let shared = self.shared;
        ResilienceLayer::ORDER
            .into_iter()
            .filter(move |&aspect| shared.applies(aspect))
    }

    #[cfg(any(feature = "axum", feature = "client"))]
    pub(crate) fn shared(&self) -> &'static Shared<C, R> {
        self.shared
    }
}

impl<C: 'static, R: 'static> Clone for ResilienceLayer<C, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<C: 'static, R: 'static> Copy for ResilienceLayer<C, R> {}

impl<C: 'static, R: 'static> fmt::Debug for ResilienceLayer<C, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.shared;
        f.debug_struct("ResilienceLayer")
            .field("name", &s.name)
            .field("throttler", &s.throttler.is_some())
            .field("circuit_breaker", &s.breaker.is_some())
            .field("rate_limiter", &s.limiter.is_some())
            .field("time_limiter", &s.time_limiter.is_some())
            .field("bulkhead", &s.bulkhead.is_some())
            .field("adaptive_bulkhead", &s.adaptive.is_some())
            .field("chaos", &s.chaos.is_some())
            .finish()
    }
}

impl<S, C: 'static, R: 'static> Layer<S> for ResilienceLayer<C, R> {
    type Service = Resilience<S, C, R>;

    fn layer(&self, inner: S) -> Self::Service {
        Resilience::new(inner, self.shared)
    }
}

/// Chooses a layer's aspects, classifier and refusal mapping.
///
/// The aspects always apply in the attributes' order
/// ([`ResilienceLayer::ORDER`]), whatever order they are chosen in.
#[must_use = "a builder does nothing until `build` is called"]
pub struct Builder<'r, C = BreakerPredicates, R = AsErrors> {
    registry: &'r Registry,
    name: String,
    throttler: bool,
    breaker: bool,
    limiter: bool,
    time_limiter: bool,
    bulkhead: bool,
    adaptive: bool,
    chaos: bool,
    classify: C,
    respond: R,
}

impl<'r, C: 'static, R: 'static> Builder<'r, C, R> {
    /// The registry the instances are looked up in.
    #[cfg(feature = "client")]
    pub(crate) fn registry(&self) -> &'r Registry {
        self.registry
    }

    /// The name the instances are looked up by.
    #[cfg(feature = "client")]
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// Protects with the adaptive client-side throttler called `name`
    /// (outermost: a request it refuses locally takes nothing inside). A
    /// response counts as refused by the downstream when the classifier
    /// says so ([`Classify::refused`](super::Classify::refused): HTTP 429
    /// and 503 with the HTTP classifier), an inner error and a timeout are
    /// refusals, and a refusal by an inner aspect (the breaker's, the
    /// bulkhead's) counts nothing.
    pub fn throttler(mut self) -> Self {
        self.throttler = true;
        self
    }

    /// Protects with the circuit breaker called `name`.
    pub fn circuit_breaker(mut self) -> Self {
        self.breaker = true;
        self
    }

    /// Protects with the rate limiter called `name` (a request waits up to
    /// its `timeout_duration` for a permit).
    pub fn rate_limiter(mut self) -> Self {
        self.limiter = true;
        self
    }

    /// Protects with the time limiter called `name` (it times the bulkhead's
    /// wait and the inner service's future).
    pub fn time_limiter(mut self) -> Self {
        self.time_limiter = true;
        self
    }

    /// Protects with the (semaphore) bulkhead called `name`.
    pub fn bulkhead(mut self) -> Self {
        self.bulkhead = true;
        self
    }

    /// Protects with the adaptive bulkhead called `name` (the attribute's
    /// `kind = "adaptive"`), at the bulkhead's place: a slot is taken or
    /// refused at once (`BulkheadFull`, never a wait), each finished call's
    /// latency is a sample and a timeout shrinks the limit.
    pub fn adaptive_bulkhead(mut self) -> Self {
        self.adaptive = true;
        self
    }

    /// Injects the faults of the chaos instance called `name` (innermost:
    /// every other aspect sees an injected latency, error or response as
    /// the service's own); off, it costs one relaxed load a request. The
    /// injected errors and responses are those its configuration makes for
    /// the service's error and response types.
    pub fn chaos(mut self) -> Self {
        self.chaos = true;
        self
    }

    /// Classifies responses and errors with `classify` instead of the
    /// breaker's predicates.
    pub fn classify<C2>(self, classify: C2) -> Builder<'r, C2, R> {
        Builder {
            registry: self.registry,
            name: self.name,
            throttler: self.throttler,
            breaker: self.breaker,
            limiter: self.limiter,
            time_limiter: self.time_limiter,
            bulkhead: self.bulkhead,
            adaptive: self.adaptive,
            chaos: self.chaos,
            classify,
            respond: self.respond,
        }
    }

    /// Maps refusals (and the inner error) with `respond`: for example
    /// [`RefusalResponses`](super::RefusalResponses) for a server.
    pub fn respond<R2>(self, respond: R2) -> Builder<'r, C, R2> {
        Builder {
            registry: self.registry,
            name: self.name,
            throttler: self.throttler,
            breaker: self.breaker,
            limiter: self.limiter,
            time_limiter: self.time_limiter,
            bulkhead: self.bulkhead,
            adaptive: self.adaptive,
            chaos: self.chaos,
            classify: self.classify,
            respond,
        }
    }

    /// Looks the chosen instances up (get-or-create, as the attributes do)
    /// and builds the layer. Its handles keep following the instances
    /// through reloads.
    pub fn build(self) -> ResilienceLayer<C, R> {
        let r = self.registry;
        let name = self.name.as_str();
        #[cfg(feature = "redis")]
        let redis = self.limiter.then(|| redis_limiter(r, name)).flatten();
        #[cfg(not(feature = "redis"))]
        let redis: Option<()> = None;
        let shared = Shared {
            throttler: self.throttler.then(|| r.throttler(name)),
            breaker: self.breaker.then(|| r.circuit_breaker(name)),
            limiter: (self.limiter && redis.is_none()).then(|| r.rate_limiter(name)),
            #[cfg(feature = "redis")]
            redis,
            time_limiter: self.time_limiter.then(|| r.time_limiter(name)),
            bulkhead: self.bulkhead.then(|| r.bulkhead(name)),
            adaptive: self.adaptive.then(|| r.adaptive_bulkhead(name)),
            chaos: self.chaos.then(|| r.chaos(name)),
            counts: r.layer_counts(name),
            name: self.name,
            classify: self.classify,
            respond: self.respond,
        };
        ResilienceLayer {
            shared: Box::leak(Box::new(shared)),
        }
    }
}

/// The Redis-backed limiter `name`, when its settings say `backend: redis`
/// (as an attribute's call site chooses: once, when the layer is built). A
/// limiter the registry cannot build (the cardinality cap, a code setting
/// that does not fit the file) leaves the layer on the local limiter of the
/// same quota, and says so.
#[cfg(feature = "redis")]
fn redis_limiter(
    registry: &Registry,
    name: &str,
) -> Option<resil_registry::Handle<resil_core::distributed_rate_limiter::DistributedRateLimiter>> {
    if !registry.is_redis_backed(name) {
        return None;
    }
    match registry.distributed_rate_limiter(name) {
        Ok(handle) => Some(handle),
        Err(error) => {
            tracing::error!(
                instance = name,
                %error,
                "no redis-backed rate limiter for this layer: it uses a local one (a per-process quota)"
            );
            None
        }
    }
}
