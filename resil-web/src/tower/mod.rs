//! `tower::Layer`s over the registry's named instances.
//!
//! [`ResilienceLayer`] applies what the attributes apply to a fn, to a tower
//! [`Service`](tower_service::Service): the same instances (looked up by name
//! in a [`Registry`](resil_registry::Registry)), in the same fixed order
//! ([`ResilienceLayer::ORDER`], from the one table [`resil_options::ORDER`]),
//! with the same permits and the same accounting.
//!
//! ```
//! use resil_registry::Registry;
//! use resil_web::tower::ResilienceLayer;
//!
//! let registry = Registry::new();
//! let layer = ResilienceLayer::builder(&registry, "inventory")
//!     .circuit_breaker()
//!     .bulkhead()
//!     .build();
//! let service = tower_layer::Layer::layer(&layer, tower::service_fn(|n: u32| async move {
//!     Ok::<_, std::io::Error>(n * 2)
//! }));
//! # let _ = service;
//! ```
//!
//! # Where each permit is taken
//!
//! Permission is decided in `call`, before the inner service's `call`: a
//! request the breaker or the rate limiter refuses never reaches the inner
//! service (so a buffered or eager service sends nothing). The bulkhead's
//! slot is taken in `call` too when one is free; when the bulkhead must wait
//! (`max_wait_duration` > 0) or the rate limiter reserved a later permit, the
//! ready inner service is moved into the response future and called once
//! the wait ends (tower's clone-and-swap: `S: Clone`). The bulkhead is the
//! innermost aspect, after the breaker's decision, as with the attributes,
//! which is why its slot is not taken in `poll_ready`.
//!
//! A rate-limiter permit of a later cycle is reserved in `call`
//! (Resilience4j's `reservePermission`) and waited for on tokio's timer: a
//! request dropped during that wait does not give the reservation back, and
//! the wait follows tokio's clock (paused in tests) rather than a custom
//! registry clock.
//!
//! # What a refusal becomes
//!
//! By default ([`AsErrors`]) the layer's error is `resil::Error<S::Error>`:
//! the inner error as [`Error::Call`](resil_core::Error::Call) and each
//! refusal as its own variant, which suits a client (a tonic channel, a
//! hyper client). A server, whose error type must stay the handler's, turns
//! refusals into responses instead: with the `http` feature,
//! [`RefusalResponses`] answers 503 with `Retry-After` for an open breaker,
//! 429 with `Retry-After` for a rate limit, 503 for a full bulkhead and 504
//! for a timeout, each overridable.
//!
//! # Outcome classification
//!
//! By default ([`BreakerPredicates`]) a response and an error are recorded
//! by the breaker's own predicates, exactly as `call_async` records them.
//! [`HttpClassifier`](crate::http::HttpClassifier) classifies HTTP responses
//! by status (and opens the breaker for a `Retry-After`), and
//! `GrpcClassifier` (feature `grpc`) by `grpc-status`.
//!
//! # Costs
//!
//! Building a layer looks its instances up once and keeps them, with the
//! classifier and the refusal mapping, in one allocation that lives for the
//! rest of the process, as an attribute's call site keeps its handles in a
//! `static`: build layers at start-up, not per request. A request then
//! allocates nothing the inner service does not: the response future holds
//! the permits inline. (A waiting bulkhead and a pending time limiter make
//! their timers, as they do under the attributes; a request that waits for
//! a bulkhead slot or a reserved rate-limiter permit also keeps its service
//! and request in one box while it waits, so that every other request's
//! future does not carry them.)
//!
//! On an axum route, the cheapest form is the stack as the handler itself,
//! [`ResilienceLayer::handler`] (`get(layer.handler(handler))`, with the
//! `axum` feature): no `HandlerService`, `Oneshot` or `Map` of axum's
//! around a layered handler. Next comes the layer applied to the handler
//! (`get(handler.layer(layer))`); `MethodRouter::route_layer` boxes the
//! layered route a second time, which costs every request a clone of the
//! boxed service and a boxed future, whatever the layer does (about 0.1 µs
//! a request more than through the handler, in the in-process phase of
//! `benches/tower_e2e.rs`).

mod classify;
#[cfg(feature = "client")]
pub mod client;
#[cfg(feature = "http")]
pub mod criticality;
#[cfg(feature = "client")]
pub mod deadline;
mod future;
#[cfg(feature = "axum")]
mod handler;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "http")]
pub mod inbound;
#[cfg(feature = "http")]
pub mod keyed;
mod layer;
mod respond;
mod service;
mod shared;
mod trace;

pub use self::classify::{BreakerPredicates, Classify, Verdict};
#[cfg(feature = "client")]
pub use self::client::{ClientBuilder, ClientLayer};
#[cfg(feature = "http")]
pub use self::criticality::{CriticalityLayer, CriticalityService, RequestCriticality};
pub use self::future::ResponseFuture;
#[cfg(feature = "axum")]
pub use self::handler::{HandlerFuture, ProtectedHandler};
#[cfg(feature = "http")]
pub use self::http::{default_refusal_response, RefusalResponses};
#[cfg(feature = "http")]
pub use self::inbound::{Admitted, InboundGuardLayer, InboundGuardService};
pub use self::layer::{Builder, ResilienceLayer};
pub use self::respond::{AsErrors, Quota, Refusal, Respond};
pub use self::service::Resilience;

/// A layer with the circuit breaker called `name` in the process-wide
/// registry ([`resil_registry::registry`]), recording by its predicates and
/// reporting refusals as errors. Use [`ResilienceLayer::builder`] to choose
/// other aspects, another registry, a classifier or refusal responses.
pub fn layer(name: &str) -> ResilienceLayer {
    ResilienceLayer::builder(resil_registry::registry(), name)
        .circuit_breaker()
        .build()
}
