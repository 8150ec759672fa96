//! A point-in-time view of a rate limiter's permits.

/// A snapshot of a [`RateLimiter`](super::RateLimiter), taken by
/// [`metrics`](super::RateLimiter::metrics) (Resilience4j's
/// `RateLimiter.Metrics`).
///
/// Granted acquisitions are counted on a stripe of the calling thread's own
/// (a plain load and store), refused ones with a shared atomic add.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimiterMetrics {
    pub(crate) available_permissions: i64,
    pub(crate) number_of_waiting_threads: u32,
    pub(crate) successful_acquisitions: u64,
    pub(crate) failed_acquisitions: u64,
    pub(crate) failed_by_class: [u64; 4],
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

    /// Acquisitions granted since the limiter was created (Resilience4j's
    /// `SuccessfulAcquire` events).
    #[inline]
    pub fn successful_acquisitions(&self) -> u64 {
        self.successful_acquisitions
    }

    /// Acquisitions refused since the limiter was created (Resilience4j's
    /// `FailedAcquire` events): no permit within the timeout or the deadline.
    #[inline]
    pub fn failed_acquisitions(&self) -> u64 {
        self.failed_acquisitions
    }

    /// Acquisitions refused for calls of `class` (the task's
    /// [`Criticality`](crate::criticality::Criticality) when it asked); they
    /// add up to [`failed_acquisitions`](Self::failed_acquisitions).
    #[inline]
    pub fn failed_acquisitions_of(&self, class: crate::criticality::Criticality) -> u64 {
        self.failed_by_class[class.index()]
    }
}
