//! The keyed layer, its builder, and what its services share.

use std::fmt;

use http::{Request, Response, StatusCode};
use resil_core::keyed::{KeyedBulkhead, KeyedCircuitBreaker, KeyedRateLimiter};
use resil_registry::Registry;
use tower_layer::Layer;

use super::extract::MissingKey;
use super::service::KeyedService;
use crate::http::HttpClassifier;
use crate::tower::{default_refusal_response, Refusal};

/// How many permits a request costs the key's rate limiter.
pub trait Cost<B>: Send + Sync + 'static {
    /// The permits `req` takes (0 asks whether one is free and takes none).
    fn cost(&self, req: &Request<B>) -> u32;
}

/// Every request costs one permit (the default).
#[derive(Debug, Clone, Copy, Default)]
pub struct One;

impl<B> Cost<B> for One {
    #[inline]
    fn cost(&self, _: &Request<B>) -> u32 {
        1
    }
}

impl<B, F> Cost<B> for F
where
    F: Fn(&Request<B>) -> u32 + Send + Sync + 'static,
{
    #[inline]
    fn cost(&self, req: &Request<B>) -> u32 {
        self(req)
    }
}

/// The responses of the keyed layer that are not the inner service's.
pub trait KeyedResponses<B>: Send + Sync + 'static {
    /// A refusal by the key's breaker, rate limiter or bulkhead.
    fn refused(&self, refusal: &Refusal) -> Response<B>;
    /// A request the extractor found no key in.
    fn missing_key(&self, missing: &MissingKey) -> Response<B>;
}

/// The default responses: a refusal as [`default_refusal_response`] (429
/// with `Retry-After` and the key's quota for a rate limit, 503 for an
/// open breaker or a full bulkhead), and a request without a key as
/// [`missing_key_response`] (400).
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultResponses;

impl<B: From<String>> KeyedResponses<B> for DefaultResponses {
    fn refused(&self, refusal: &Refusal) -> Response<B> {
        default_refusal_response(refusal)
    }

    fn missing_key(&self, missing: &MissingKey) -> Response<B> {
        missing_key_response(missing)
    }
}

/// `400 Bad Request`, `text/plain`, the body saying what was missing
/// (``no `x-tenant` header``).
pub fn missing_key_response<B: From<String>>(missing: &MissingKey) -> Response<B> {
    let mut response = Response::new(B::from(format!("{missing}\n")));
    *response.status_mut() = StatusCode::BAD_REQUEST;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

/// What every service and response future of one keyed layer reads, built
/// once and kept for the rest of the process (as [`ResilienceLayer`](crate::tower::ResilienceLayer)'s),
/// so that key handles borrow the families for `'static`.
pub(crate) struct KeyedShared<X, P, R> {
    pub(crate) breaker: Option<KeyedCircuitBreaker>,
    pub(crate) limiter: Option<KeyedRateLimiter>,
    pub(crate) bulkhead: Option<KeyedBulkhead>,
    pub(crate) extract: X,
    pub(crate) cost: P,
    pub(crate) respond: R,
    pub(crate) classify: HttpClassifier,
    pub(crate) name: String,
}

/// A [`Layer`] giving each key (a tenant, a client IP, a route parameter)
/// its own circuit breaker, rate limiter and bulkhead, from the keyed
/// families of one name (see the [module docs](super)).
///
/// `Copy`-cheap: every service it makes shares the same families.
pub struct KeyedLayer<X: 'static, P: 'static = One, R: 'static = DefaultResponses> {
    shared: &'static KeyedShared<X, P, R>,
}

impl<X: 'static, P: 'static, R: 'static> Clone for KeyedLayer<X, P, R> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<X: 'static, P: 'static, R: 'static> Copy for KeyedLayer<X, P, R> {}

impl<X: fmt::Debug + 'static, P: 'static, R: 'static> fmt::Debug for KeyedLayer<X, P, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = self.shared;
        f.debug_struct("KeyedLayer")
            .field("name", &s.name)
            .field("extract", &s.extract)
            .field("circuit_breaker", &s.breaker.is_some())
            .field("rate_limiter", &s.limiter.is_some())
            .field("bulkhead", &s.bulkhead.is_some())
            .finish()
    }
}

impl<X: 'static> KeyedLayer<X> {
    /// A builder for the keyed families called `name` in `registry` (the
    /// `keyed:` section of the instance of that name: `max-keys`,
    /// `idle-ttl`, tiers), keying requests with `extract`; no aspect chosen
    /// yet.
    pub fn builder<'r>(registry: &'r Registry, name: &str, extract: X) -> KeyedBuilder<'r, X> {
        KeyedBuilder {
            registry,
            name: name.to_owned(),
            extract,
            breaker: false,
            limiter: false,
            bulkhead: false,
            cost: One,
            respond: DefaultResponses,
            classify: HttpClassifier::default(),
        }
    }
}

impl<X: 'static, P: 'static, R: 'static> KeyedLayer<X, P, R> {
    /// The families' name.
    pub fn name(&self) -> &str {
        &self.shared.name
    }

    /// The rate-limiter family, when the layer applies one.
    pub fn rate_limiter(&self) -> Option<&KeyedRateLimiter> {
        self.shared.limiter.as_ref()
    }

    /// The circuit-breaker family, when the layer applies one.
    pub fn circuit_breaker(&self) -> Option<&KeyedCircuitBreaker> {
        self.shared.breaker.as_ref()
    }

    /// The bulkhead family, when the layer applies one.
    pub fn bulkhead(&self) -> Option<&KeyedBulkhead> {
        self.shared.bulkhead.as_ref()
    }
}

impl<S, X: 'static, P: 'static, R: 'static> Layer<S> for KeyedLayer<X, P, R> {
    type Service = KeyedService<S, X, P, R>;

    fn layer(&self, inner: S) -> Self::Service {
        KeyedService::new(inner, self.shared)
    }
}

/// Chooses a keyed layer's aspects, cost and responses.
#[must_use = "a builder does nothing until `build` is called"]
pub struct KeyedBuilder<'r, X, P = One, R = DefaultResponses> {
    registry: &'r Registry,
    name: String,
    extract: X,
    breaker: bool,
    limiter: bool,
    bulkhead: bool,
    cost: P,
    respond: R,
    classify: HttpClassifier,
}

impl<'r, X: 'static, P: 'static, R: 'static> KeyedBuilder<'r, X, P, R> {
    /// A circuit breaker per key (`registry.keyed_circuit_breaker(name)`),
    /// recording responses by status with `classifier` (5xx failures, as
    /// [`HttpClassifier::default`]).
    pub fn circuit_breaker(mut self) -> Self {
        self.breaker = true;
        self
    }

    /// Classifies responses for the key's breaker with `classify`.
    pub fn classify(mut self, classify: HttpClassifier) -> Self {
        self.classify = classify;
        self
    }

    /// A rate limiter per key (`registry.keyed_rate_limiter(name)`): a
    /// request waits up to its `timeout-duration` for the key's permits.
    pub fn rate_limiter(mut self) -> Self {
        self.limiter = true;
        self
    }

    /// A (semaphore) bulkhead per key (`registry.keyed_bulkhead(name)`):
    /// a key with every slot taken is refused at once (keyed bulkheads do
    /// not queue).
    pub fn bulkhead(mut self) -> Self {
        self.bulkhead = true;
        self
    }

    /// Weighs each request: `cost(&request)` permits of the key's rate
    /// limiter (a batch of 20 items, 20 permits), instead of one.
    pub fn cost<P2>(self, cost: P2) -> KeyedBuilder<'r, X, P2, R> {
        KeyedBuilder {
            registry: self.registry,
            name: self.name,
            extract: self.extract,
            breaker: self.breaker,
            limiter: self.limiter,
            bulkhead: self.bulkhead,
            cost,
            respond: self.respond,
            classify: self.classify,
        }
    }

    /// Answers refusals and requests without a key with `respond` instead
    /// of [`DefaultResponses`].
    pub fn respond<R2>(self, respond: R2) -> KeyedBuilder<'r, X, P, R2> {
        KeyedBuilder {
            registry: self.registry,
            name: self.name,
            extract: self.extract,
            breaker: self.breaker,
            limiter: self.limiter,
            bulkhead: self.bulkhead,
            cost: self.cost,
            respond,
            classify: self.classify,
        }
    }

    /// Looks the families up (get-or-create; they follow reloads) and
    /// builds the layer. Build layers at start-up: each build keeps its
    /// families for the rest of the process.
    pub fn build(self) -> KeyedLayer<X, P, R> {
        let r = self.registry;
        let name = self.name.as_str();
        let shared = KeyedShared {
            breaker: self.breaker.then(|| r.keyed_circuit_breaker(name)),
            limiter: self.limiter.then(|| r.keyed_rate_limiter(name)),
            bulkhead: self.bulkhead.then(|| r.keyed_bulkhead(name)),
            extract: self.extract,
            cost: self.cost,
            respond: self.respond,
            classify: self.classify,
            name: self.name,
        };
        KeyedLayer {
            shared: Box::leak(Box::new(shared)),
        }
    }
}
