//! resil: Resilience4j's fault-tolerance semantics for Rust.
//!
//! Circuit breaker, retry (with a retry budget), semaphore and thread-pool
//! bulkheads, rate limiter, time limiter and end-to-end deadlines, with the
//! defaults, windows, thresholds, states and permits Resilience4j documents.
//!
//! Every primitive is created once with a name and a config and shared by
//! cloning its handle; `call` protects sync work and `call_async` async work,
//! and both return `Result<T, resil::Error<E>>`: [`Error::Call`] for the
//! call's own error, or a refusal naming the instance that refused.
//!
//! ```
//! use std::time::Duration;
//! use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
//! use resil::retry::{Retry, RetryConfig};
//! use resil::clock::ManualClock;
//! use resil::{Error, ErrorKind};
//!
//! let clock = ManualClock::new(); // tests move time by hand; production omits it
//! let breaker = CircuitBreaker::with_clock(
//!     "inventory",
//!     CircuitBreakerConfig::builder()
//!         .sliding_window_size(4)
//!         .minimum_number_of_calls(4)
//!         .build()?,
//!     clock.clone(),
//! );
//! let retry = Retry::with_clock("inventory", RetryConfig::default(), clock.clone());
//!
//! // Retry outside the breaker: each attempt is one sample in the window.
//! let out: Result<u32, Error<&str>> =
//!     retry.call_nested(|| breaker.call(|| Err("HTTP 503")));
//! assert_eq!(out, Err(Error::Call("HTTP 503")));
//! assert_eq!(breaker.metrics().failed_calls(), 3); // max_attempts counts the first call
//!
//! let _ = breaker.call(|| Err::<u32, _>("HTTP 503")); // the 4th sample opens it
//! assert_eq!(breaker.state(), State::Open);
//! let refused = breaker.call(|| Ok::<u32, &str>(42));
//! assert_eq!(refused.unwrap_err().kind(), ErrorKind::CallNotPermitted);
//! # Ok::<(), resil::ConfigError>(())
//! ```
//!
//! Or declare the protection on the fn, with instances from the process-wide
//! [`registry()`] by name and compile-time checked fallbacks (see the
//! [`circuit_breaker`](macro@circuit_breaker) attribute for what every
//! attribute shares: the fixed order, fallbacks, rejections and `?`):
//!
//! ```
//! # #[derive(Debug, PartialEq)] pub struct InventoryError;
//! # impl From<resil::Rejection> for InventoryError { fn from(_: resil::Rejection) -> Self { InventoryError } }
//! #[resil::circuit_breaker(name = "facade-inventory", fallback = unknown)]
//! #[resil::retry(name = "facade-inventory", max_attempts = 3, wait_duration = "0ms")]
//! fn stock(sku: &str) -> Result<u32, InventoryError> {
//!     Err(InventoryError) // the downstream is down
//! }
//!
//! fn unknown(_sku: &str, why: resil::Error<InventoryError>) -> Result<u32, InventoryError> {
//!     assert_eq!(why.kind(), resil::ErrorKind::Call);
//!     Ok(0) // an explicit degraded answer
//! }
//!
//! assert_eq!(stock("sku-1"), Ok(0));
//! ```
//!
//! The crates behind the facade: `resil-core` (the primitives, re-exported
//! here module by module), `resil-registry` (named instances, config files)
//! and `resil-macros` (the attributes and `#[derive(ErrorClass)]`).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs)]

/// The option table: every setting of every primitive, with its file key,
/// attribute key, type, range and default (the option table in `docs/configuration.md`).
pub use resil_options as options;
/// Config files: Resilience4j's `resilience4j.*` tree in TOML or YAML, and
/// `RESIL_…` environment overrides (see `docs/configuration.md`).
pub use resil_registry::config;

pub use resil_core::{
    bulkhead, circuit_breaker, clock, criticality, deadline, error, event, interval, keyed,
    rate_limiter, retry, shadow, thread_pool_bulkhead, time_limiter, trace, ConfigError,
    Criticality, Error, ErrorKind, IntervalFunction, Rejection,
};

/// Primitives beyond Resilience4j's (issue 20): hedging, the adaptive
/// concurrency limit (in `bulkhead`), fault injection for drills, and the
/// configuration advisor.
pub use resil_core::{advisor, chaos, hedging, inbound};

/// Adaptive client-side throttling (the Google SRE book's; issue 30).
pub use resil_core::throttler;

mod file_advice;
pub use file_advice::advise;

// The attributes live in the macro namespace, so `resil::circuit_breaker` is
// both the module above and the attribute here; the derive shares its name
// with the `ErrorClass` trait, as serde's derives do.
pub use resil_macros::throttler;
pub use resil_macros::{
    bulkhead, chaos, circuit_breaker, hedge, rate_limiter, retry, time_limiter, ErrorClass,
};

pub mod fallback;

#[doc(hidden)]
#[path = "private/mod.rs"]
pub mod __private;

#[doc(hidden)]
pub mod checks;

pub use resil_registry::{init, init_from_env, registry, ErrorClass, Handle, HttpStatus, Registry};

/// Everything about named instances beyond the five names re-exported at the
/// root: [`RegistryError`](resil_registry::RegistryError), events, kinds, the
/// registry builder (clock, cardinality cap).
pub use resil_registry as registry_crate;

/// The distributed rate limiter: one quota in Redis shared by every instance
/// of a service (feature `redis`).
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub use resil_core::distributed_rate_limiter;

/// tower layers over the registry's named instances (feature `tower`).
#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub use resil_web::tower;

/// HTTP outcome classification and `Retry-After` (feature `http`).
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use resil_web::http;

/// `ResilienceMiddleware`: a client layer's stack as a
/// `reqwest_middleware::Middleware` (feature `reqwest-middleware`).
#[cfg(feature = "reqwest-middleware")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest-middleware")))]
pub use resil_web::reqwest;

/// gRPC (tonic `Status`) outcome classification (feature `grpc`).
#[cfg(feature = "grpc")]
#[cfg_attr(docsrs, doc(cfg(feature = "grpc")))]
pub use resil_web::grpc;

#[cfg(feature = "otel")]
#[cfg_attr(docsrs, doc(cfg(feature = "otel")))]
pub mod otel;

/// The mountable axum actuator (feature `axum`).
#[cfg(feature = "axum")]
#[cfg_attr(docsrs, doc(cfg(feature = "axum")))]
pub use resil_web::actuator;

// The guide's pages under `docs/` are compiled and run as doctests, so every
// Rust block a reader copies from them works as printed.
#[cfg(doctest)]
mod guide;
