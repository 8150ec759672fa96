//! What the fallbacks of annotated fns did, counted per protected fn: how
//! many results a fallback produced instead of the live call, by the cause
//! that sent the call there, and how many fallbacks failed themselves.
//!
//! The primitives' own metrics only ever see live results; these counters
//! see what callers got instead. Every call site of `#[resil::…(fallback =
//! …)]` keeps one [`FallbackSite`] (a `static`, counted with relaxed atomic
//! adds, no allocation) and registers it here on its first fallback, so the
//! registry's snapshot ([`Snapshot::fallbacks`](crate::Snapshot::fallbacks))
//! and its published metrics (`resil_fallback_calls`) show them. Call sites
//! are process-wide, like the statics they are: every registry shows them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, Once};

use resil_core::{Error, ErrorKind};

/// The causes counted, in this order.
const CAUSES: [ErrorKind; 9] = ErrorKind::ALL;

/// Every call site whose fallback ran at least once.
static SITES: Mutex<Vec<&'static FallbackSite>> = Mutex::new(Vec::new());

/// How many results of one protected fn its fallbacks produced, by the cause
/// that sent the call to a fallback, and how many fallbacks failed
/// themselves. The attribute macros put one in a `static` per call site.
#[doc(hidden)]
pub struct FallbackSite {
    key: &'static str,
    registered: Once,
    degraded: [AtomicU64; CAUSES.len()],
    failed: AtomicU64,
}

impl FallbackSite {
    /// A site for the fn at path `key` (`module::fn`).
    #[allow(clippy::declare_interior_mutable_const)]
    pub const fn new(key: &'static str) -> Self {
        #[allow(clippy::declare_interior_mutable_const)]
        const ZERO: AtomicU64 = AtomicU64::new(0);
        FallbackSite {
            key,
            registered: Once::new(),
            degraded: [ZERO; CAUSES.len()],
            failed: AtomicU64::new(0),
        }
    }

    /// Counts one result degraded because of `cause`.
    #[inline]
    pub fn degraded<E>(&'static self, cause: &Error<E>) {
        self.registered.call_once(|| {
            SITES
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .push(self)
        });
        let kind = cause.kind();
        let i = CAUSES.iter().position(|&k| k == kind).unwrap_or(0);
        self.degraded[i].fetch_add(1, Ordering::Relaxed);
    }

    /// Counts the fallback's own failure, and returns its result as it was.
    #[inline]
    pub fn finished<R: FallbackResult>(&'static self, result: R) -> R {
        if result.is_err() {
            self.failed.fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    fn counts(&self) -> FallbackMetrics {
        let mut m = FallbackMetrics::default();
        for (i, n) in self.degraded.iter().enumerate() {
            m.degraded[i] = n.load(Ordering::Relaxed);
        }
        m.failed = self.failed.load(Ordering::Relaxed);
        m
    }
}

/// A fallback's result, which may itself be an error.
#[doc(hidden)]
pub trait FallbackResult {
    /// Whether the fallback failed.
    fn is_err(&self) -> bool;
}

impl<T, E> FallbackResult for Result<T, E> {
    #[inline]
    fn is_err(&self) -> bool {
        Result::is_err(self)
    }
}

/// A snapshot of the fallback counters of one protected fn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FallbackMetrics {
    degraded: [u64; CAUSES.len()],
    failed: u64,
}

impl FallbackMetrics {
    /// Results a fallback produced because the call ended with `cause`
    /// (`ErrorKind::Call` for the call's own error).
    pub fn degraded(&self, cause: ErrorKind) -> u64 {
        CAUSES
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

    /// `(cause, results degraded by it)` for every cause that sent at least
    /// one call to the fallback, in a fixed order.
    pub fn by_cause(&self) -> impl Iterator<Item = (ErrorKind, u64)> + '_ {
        CAUSES
            .iter()
            .zip(&self.degraded)
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| (*k, *n))
    }

    fn add(&mut self, other: &FallbackMetrics) {
        for (a, b) in self.degraded.iter_mut().zip(&other.degraded) {
            *a += b;
        }
        self.failed += other.failed;
    }
}

/// The counters of the protected fn at `path` (`module_path!()` + `::` + the
/// fn's name; for a method, the fn's name alone after the module path). All
/// zero for a fn whose fallback never ran.
pub fn metrics(path: &str) -> FallbackMetrics {
    let mut out = FallbackMetrics::default();
    for site in sites().iter().filter(|s| s.key == path) {
        out.add(&site.counts());
    }
    out
}

/// Every protected fn whose fallback ran, with its counters, by path.
pub fn all() -> Vec<(&'static str, FallbackMetrics)> {
    let mut out: Vec<(&'static str, FallbackMetrics)> = Vec::new();
    for site in sites().iter() {
        match out.iter_mut().find(|(k, _)| *k == site.key) {
            Some((_, m)) => m.add(&site.counts()),
            None => out.push((site.key, site.counts())),
        }
    }
    out.sort_by(|a, b| a.0.cmp(b.0));
    out
}

fn sites() -> std::sync::MutexGuard<'static, Vec<&'static FallbackSite>> {
    SITES
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
