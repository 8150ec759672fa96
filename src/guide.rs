//! The guide's pages (`docs/*.md`) as doctests: each page is the doc comment
//! of one item here, so `cargo test --doc` compiles and runs every Rust block
//! in it. A page whose examples need a cargo feature is included under that
//! feature. Add a page: one `#[doc = include_str!(…)]` item below.
#![allow(dead_code)]

/// A web service: classify the downstream once, in your own error type.
#[cfg(all(feature = "http", feature = "yaml"))]
#[doc = include_str!("../docs/web-service.md")]
pub struct WebService;

/// An HTTP client: retry and hedging over replayable requests, idempotency
/// gating, deadlines over the wire, reqwest-middleware.
#[cfg(all(feature = "client", feature = "reqwest-middleware", feature = "yaml"))]
#[doc = include_str!("../docs/http-client.md")]
pub struct HttpClient;

/// Keyed protection: a quota, a breaker, a bulkhead and a retry budget per tenant.
#[doc = include_str!("../docs/tenants.md")]
pub struct Tenants;

/// Keyed protection at the edge (the keyed tower layer, the client's IP
/// behind trusted proxies) and across processes (a Redis quota per key).
#[cfg(all(
    feature = "tower",
    feature = "http",
    feature = "redis",
    feature = "toml"
))]
#[doc = include_str!("../docs/keyed-edge.md")]
pub struct KeyedEdge;

/// Overload: criticality, admission by class, the inbound guard.
#[doc = include_str!("../docs/overload.md")]
pub struct Overload;

/// Breaker failure models (`RATE`, `CONSECUTIVE`, `COUNT`), adaptive
/// client-side throttling and the adaptive bulkhead's rules (issue 30).
#[doc = include_str!("../docs/failure-models-and-throttling.md")]
pub struct FailureModelsAndThrottling;

#[doc = include_str!("../docs/operating-a-fleet.md")]
pub struct OperatingAFleet;

/// The lab: every mechanism over real HTTP.
#[doc = include_str!("../docs/lab.md")]
pub struct Lab;

/// Annotate fns: the model, the primitives, the order, the attributes.
#[doc = include_str!("../docs/annotations.md")]
pub struct Annotations;

/// Configure from Spring files: the registry, config files, every option.
#[cfg(feature = "yaml")]
#[doc = include_str!("../docs/configuration.md")]
pub struct Configuration;

/// The inventory service, end to end.
#[cfg(all(feature = "axum", feature = "tower", feature = "http"))]
#[doc = include_str!("../docs/inventory-service.md")]
pub struct InventoryService;

/// Web services and clients: tower, HTTP, gRPC, the actuator.
#[cfg(all(feature = "axum", feature = "tower", feature = "http"))]
#[doc = include_str!("../docs/web.md")]
pub struct Web;

/// Operate: traces, metrics, Prometheus and alerts.
#[cfg(feature = "otel")]
#[doc = include_str!("../docs/operating.md")]
pub struct Operating;

/// Beyond Resilience4j: hedging, an adaptive limit, fault injection.
#[doc = include_str!("../docs/beyond-resilience4j.md")]
pub struct BeyondResilience4j;

/// Distributed limits: the rate limiter on Redis.
#[cfg(all(feature = "redis", feature = "toml"))]
#[doc = include_str!("../docs/distributed-rate-limiter.md")]
pub struct DistributedRateLimiter;

/// Performance: what protection costs.
#[doc = include_str!("../docs/performance.md")]
pub struct Performance;

/// Status: what has landed.
#[doc = include_str!("../docs/status.md")]
pub struct Status;
/// Shadow trials: staged settings beside the live ones, promoted or discarded.
#[doc = include_str!("../docs/shadow-trials.md")]
pub struct ShadowTrials;
