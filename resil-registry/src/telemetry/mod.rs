//! Telemetry: a serde-serializable snapshot of every instance with a ring of
//! recent events, a health summary, `tracing` events, the Prometheus text
//! exposition under the Spring Boot starter's names (`exposition.rs`), and
//! (feature `metrics`) the same names through the `metrics` facade.
//!
//! Nothing here runs on the call path but the tower layers' request counts
//! (`layer.rs`): everything else is read from the counters the primitives
//! keep anyway, when a snapshot, a health check, a scrape or a metrics
//! publication asks. Each kind describes its own metrics in its module
//! (`kinds/`); `describe.rs` holds the types they are described with.

pub(crate) mod describe;
pub(crate) mod exposition;
pub(crate) mod health;
pub(crate) mod histogram;
pub(crate) mod in_force;
pub(crate) mod inbound;
pub(crate) mod keyed;
pub(crate) mod layer;
#[cfg(feature = "metrics")]
pub(crate) mod metrics;
pub(crate) mod ring;
pub(crate) mod snapshot;
