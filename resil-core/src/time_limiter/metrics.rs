//! Call counts of a time limiter: successful, failed, timed out.

use std::sync::atomic::{AtomicU64, Ordering};

/// Live counters, one relaxed increment per finished call.
#[derive(Debug, Default)]
pub(super) struct Counters {
    successful: AtomicU64,
    failed: AtomicU64,
    timeout: AtomicU64,
    deadline_exceeded: AtomicU64,
}

impl Counters {
    #[inline]
    pub(super) fn success(&self) {
        self.successful.fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    pub(super) fn failure(&self) {
        self.failed.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn timeout(&self) {
        self.timeout.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn deadline_exceeded(&self) {
        self.deadline_exceeded.fetch_add(1, Ordering::Relaxed);
    }

    pub(super) fn snapshot(&self) -> TimeLimiterMetrics {
        TimeLimiterMetrics {
            successful: self.successful.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            timeout: self.timeout.load(Ordering::Relaxed),
            deadline_exceeded: self.deadline_exceeded.load(Ordering::Relaxed),
        }
    }
}

/// A snapshot of a time limiter's counts since it was created (Resilience4j's
/// `successful`, `failed` and `timeout` calls, plus deadline cut-offs).
///
/// A call whose caller dropped the future before it finished is not counted:
/// nobody waited for an outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TimeLimiterMetrics {
    successful: u64,
    failed: u64,
    timeout: u64,
    deadline_exceeded: u64,
}

impl TimeLimiterMetrics {
    /// Calls whose future finished in time with `Ok`.
    #[inline]
    pub fn successful_calls(&self) -> u64 {
        self.successful
    }

    /// Calls whose future finished in time with `Err`.
    #[inline]
    pub fn failed_calls(&self) -> u64 {
        self.failed
    }

    /// Calls the limiter stopped waiting for after its `timeout_duration`.
    #[inline]
    pub fn timeout_calls(&self) -> u64 {
        self.timeout
    }

    /// Calls whose wait the task's end-to-end deadline ended before
    /// `timeout_duration` did.
    #[inline]
    pub fn deadline_exceeded_calls(&self) -> u64 {
        self.deadline_exceeded
    }
}
