//! Telemetry: a serde-serializable snapshot of every instance with a ring of
//! recent events, a health summary, `tracing` events, and (feature `metrics`)
//! Resilience4j's metric names through the `metrics` facade.
//!
//! Nothing here runs on the call path: everything is read from the counters
//! the primitives keep anyway, when a snapshot, a health check or a metrics
//! publication asks.

pub(crate) mod describe;
pub(crate) mod exposition;
pub(crate) mod health;
pub(crate) mod histogram;
pub(crate) mod layer;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
pub(crate) mod ring;
pub(crate) mod snapshot;
