//! Call counts of a time limiter: successful, failed, timed out.

use crate::striped::Striped;
use std::sync::atomic::{AtomicU64, Ordering};

/// Live counters, one relaxed increment per finished call.
///
/// Striped: each thread increments its own stripe, on a cache line of its
/// own, so threads finishing calls at the same time do not pull one line back
/// and forth (nor the limiter's read-mostly fields, which would otherwise
/// share it), and a thread holding a stripe alone counts without a locked
/// instruction. A snapshot adds the stripes up.
#[derive(Debug, Default)]
pub(super) struct Counters {
    stripes: Striped<Stripe>,
}

#[derive(Debug, Default)]
struct Stripe {
    successful: AtomicU64,
    failed: AtomicU64,
    timeout: AtomicU64,
    deadline_exceeded: AtomicU64,
}

impl Counters {
    #[inline]
    pub(super) fn success(&self) {
        self.stripes.mine().increment(|s| &s.successful);
    }

    #[inline]
    pub(super) fn failure(&self) {
        self.stripes.mine().increment(|s| &s.failed);
    }

    pub(super) fn timeout(&self) {
        self.stripes.mine().increment(|s| &s.timeout);
    }

    pub(super) fn deadline_exceeded(&self) {
        self.stripes.mine().increment(|s| &s.deadline_exceeded);
    }

    pub(super) fn snapshot(&self) -> TimeLimiterMetrics {
        let sum = |count: fn(&Stripe) -> &AtomicU64| {
            self.stripes
                .iter()
                .map(|s| count(s).load(Ordering::Relaxed))
                .sum()
        };
        TimeLimiterMetrics {
            successful: sum(|s| &s.successful),
            failed: sum(|s| &s.failed),
            timeout: sum(|s| &s.timeout),
            deadline_exceeded: sum(|s| &s.deadline_exceeded),
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
