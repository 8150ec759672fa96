//! Keyed protection at the edge: a circuit breaker, a rate limiter and a
//! bulkhead **per key** — a tenant's header, a route's path parameter, the
//! client's IP address behind trusted proxies, an extension an
//! authentication layer put on the request, or anything a closure finds —
//! from the registry's keyed families (`Registry::keyed_*`), in their
//! bounded memory.
//!
//! ```
//! use resil_registry::Registry;
//! use resil_web::tower::keyed::{by_header, KeyedLayer};
//! use tower::{Service, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let registry = Registry::from_toml_str(r#"
//!     [resilience4j.ratelimiter.instances.api]
//!     limit-for-period = 2
//!     limit-refresh-period = "1m"
//!     timeout-duration = "0s"
//! "#).unwrap();
//! let layer = KeyedLayer::builder(&registry, "api", by_header("x-tenant"))
//!     .rate_limiter()
//!     .build();
//! let mut svc = tower_layer::Layer::layer(&layer, tower::service_fn(|_: http::Request<()>| async {
//!     Ok::<_, std::convert::Infallible>(http::Response::new(String::from("ok")))
//! }));
//! let as_tenant = |t: &str| http::Request::builder().header("x-tenant", t).body(()).unwrap();
//! for _ in 0..2 {
//!     assert_eq!(svc.ready().await.unwrap().call(as_tenant("noisy")).await.unwrap().status(), 200);
//! }
//! // The noisy tenant's quota is spent; the quiet one has its own.
//! assert_eq!(svc.ready().await.unwrap().call(as_tenant("noisy")).await.unwrap().status(), 429);
//! assert_eq!(svc.ready().await.unwrap().call(as_tenant("quiet")).await.unwrap().status(), 200);
//! // No key: 400, saying which.
//! let none = svc.ready().await.unwrap().call(http::Request::new(())).await.unwrap();
//! assert_eq!(none.status(), 400);
//! # }
//! ```
//!
//! # Keys
//!
//! * [`by_header("x-tenant")`](by_header): the header's text (no
//!   allocation per request).
//! * [`by_path_param("tenant")`](by_path_param) (feature `axum`): the
//!   matched route's `{tenant}` segment; apply the layer after routing
//!   (`route_layer`, or on the route).
//! * [`by_peer_ip()`](by_peer_ip): the client's IP address; behind proxies,
//!   [`trust`](ByPeerIp::trust) their CIDR blocks and the layer reads
//!   `X-Forwarded-For` (or RFC 7239 `Forwarded`) from the right, skipping
//!   only trusted hops, so a client cannot write its way into another
//!   client's key.
//! * [`by_extension::<T>()`](by_extension): a value an earlier layer put in
//!   the request's extensions (an authenticated principal).
//! * [`key_fn(|req| …)`](key_fn): anything else.
//!
//! # A request without a key
//!
//! Answered `400 Bad Request` by default ([`missing_key_response`], the
//! body naming what was missing): a missing tenant header is the client's
//! mistake, and silently sharing one quota among every keyless caller is a
//! choice only the application can make. To make it, give the extractor a
//! shared key, [`or_key`](KeyExtractorExt::or_key):
//! `by_header("x-tenant").or_key(String::from("anonymous"))`.
//!
//! # Order and refusals
//!
//! The key's breaker, then its rate limiter, then its bulkhead (the
//! attributes' order). Refusals are answered by [`DefaultResponses`] (429
//! with `Retry-After` and the key's `RateLimit` quota, 503 for an open
//! breaker or a full bulkhead), or your [`KeyedResponses`]. A refusal by the
//! key's own rate limiter or bulkhead is not recorded by its breaker: a
//! tenant over quota does not open its own breaker. Responses are recorded
//! by status ([`HttpClassifier`](crate::http::HttpClassifier): 5xx fail).
//! A request may weigh more than one permit ([`KeyedBuilder::cost`]).
//!
//! # Costs
//!
//! Per request: the key's extraction, then a look-up per family (a hash, a
//! shard read lock, a reference count) and no allocation on an existing
//! key, except for a request that waits for a reserved permit (its timer,
//! service and request in one box).

mod extract;
mod future;
mod layer;
mod peer;
mod service;

pub use self::extract::{
    by_extension, by_header, key_fn, ByExtension, ByHeader, InvalidHeaderName, KeyExtractor,
    KeyExtractorExt, KeyFn, MissingKey, OrKey,
};
#[cfg(feature = "axum")]
pub use self::extract::{by_path_param, ByPathParam};
pub use self::future::KeyedFuture;
pub use self::layer::{
    missing_key_response, Cost, DefaultResponses, KeyedBuilder, KeyedLayer, KeyedResponses, One,
};
pub use self::peer::{by_peer_ip, ByPeerIp, Cidr, ForwardedHeader, InvalidCidr};
pub use self::service::KeyedService;
