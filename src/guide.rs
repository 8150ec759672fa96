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

/// Keyed protection: a quota, a breaker and a bulkhead per tenant.
#[doc = include_str!("../docs/tenants.md")]
pub struct Tenants;

/// Overload: criticality, admission by class, the inbound guard.
#[doc = include_str!("../docs/overload.md")]
pub struct Overload;

/// Breaker failure models (`RATE`, `CONSECUTIVE`, `COUNT`), adaptive
/// client-side throttling and the adaptive bulkhead's rules (issue 30).
#[doc = include_str!("../docs/failure-models-and-throttling.md")]
pub struct FailureModelsAndThrottling;

#[doc = include_str!("../docs/operating-a-fleet.md")]
pub struct OperatingAFleet;
