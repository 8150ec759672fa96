//! What the fallbacks of annotated fns did: how many results were degraded
//! (produced by a fallback instead of the live call), by the cause that sent
//! the call to the fallback, and how many fallbacks failed themselves. These
//! are counted apart from the primitives' own metrics, which only ever see
//! live results, and shown in the registry's snapshot
//! ([`Snapshot::fallbacks`](crate::registry_crate::Snapshot::fallbacks)) and
//! its published metrics (`resil_fallback_calls{name, kind=degraded|failed, cause}`).
//!
//! ```
//! # #[derive(Debug)] struct PriceError;
//! # impl From<resil::Rejection> for PriceError { fn from(_: resil::Rejection) -> Self { PriceError } }
//! #[resil::circuit_breaker(name = "fallback-doc-price", fallback = cached_price)]
//! fn price(sku: &str) -> Result<u32, PriceError> {
//!     Err(PriceError)
//! }
//!
//! fn cached_price(_sku: &str, _why: PriceError) -> Result<u32, PriceError> {
//!     Ok(42)
//! }
//!
//! assert_eq!(price("sku-1").unwrap(), 42);
//! let m = resil::fallback::metrics(concat!(module_path!(), "::price"));
//! assert_eq!(m.degraded(resil::ErrorKind::Call), 1);
//! assert_eq!(m.degraded_total(), 1);
//! assert_eq!(m.failed(), 0);
//! ```

pub use resil_registry::fallback::{metrics, FallbackMetrics};
