//! What the fallbacks of annotated fns did: how many results were degraded
//! (produced by a fallback instead of the live call), by the cause that sent
//! the call to the fallback, and how many fallbacks failed themselves. These
//! are counted apart from the primitives' own metrics, which only ever see
//! live results.
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

use crate::checks::{KINDS, SITES};
use crate::ErrorKind;

/// A snapshot of the fallback counters of one protected fn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FallbackMetrics {
    degraded: [u64; KINDS.len()],
    failed: u64,
}

impl FallbackMetrics {
    /// Results a fallback produced because the call ended with `cause`
    /// (`ErrorKind::Call` for the call's own error).
    pub fn degraded(&self, cause: ErrorKind) -> u64 {
        KINDS
            .iter()
            .position(|&k| k == cause)
            .map_or(0, |i| self.degraded[i])
    }

    /// Results a fallback produced, whatever the cause.
    pub fn degraded_total(&self) -> u64 {
        self.degraded.iter().sum()
    }

    /// Fallbacks that returned an error of their own (it propagated to the
    /// caller).
    pub fn failed(&self) -> u64 {
        self.failed
    }
}

/// The counters of the protected fn at `path` (`module_path!()` + `::` + the
/// fn's name; for a method, the fn's name alone after the module path). All
/// zero for a fn whose fallback never ran.
pub fn metrics(path: &str) -> FallbackMetrics {
    let sites = SITES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut out = FallbackMetrics::default();
    for site in sites.iter().filter(|s| s.key() == path) {
        for (i, kind) in KINDS.iter().enumerate() {
            out.degraded[i] += site.degraded_by(*kind);
        }
        out.failed += site.failed_count();
    }
    out
}
