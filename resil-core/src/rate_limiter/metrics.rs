//! A point-in-time view of a rate limiter's permits.

/// A snapshot of a [`RateLimiter`](super::RateLimiter), taken by
/// [`metrics`](super::RateLimiter::metrics) (Resilience4j's
/// `RateLimiter.Metrics`).
///
/// Granted and refused acquisitions are deliberately not counted here: that
/// would add an atomic write to every acquire. Subscribe to the events, or use
/// the registry's metrics export.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimiterMetrics {
    pub(crate) available_permissions: i64,
    pub(crate) number_of_waiting_threads: u32,
}

impl RateLimiterMetrics {
    /// Permits still free in the current cycle. Negative while permits of later
    /// cycles are reserved by callers waiting for them: `-3` means the next
    /// three permits to come free are already promised (Resilience4j
    /// `availablePermissions`).
    #[inline]
    pub fn available_permissions(&self) -> i64 {
        self.available_permissions
    }

    /// Callers (threads or tasks) waiting for a reserved permit right now
    /// (Resilience4j `numberOfWaitingThreads`).
    #[inline]
    pub fn number_of_waiting_threads(&self) -> u32 {
        self.number_of_waiting_threads
    }
}
