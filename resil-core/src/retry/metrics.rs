//! Retry metrics: logical calls by outcome, and the physical attempts they made.

use crate::striped::Striped;
use std::sync::atomic::{AtomicU64, Ordering};

/// A snapshot of a [`Retry`](super::Retry)'s counters (seed 000 §15.2, §27).
///
/// Every **logical** call is counted once, when it ends, in exactly one of
/// `successful_calls_without_retry`, `successful_calls_with_retry`,
/// `failed_calls_without_retry`, `failed_calls_with_retry`, `ignored_error_calls`
/// or `cancelled_calls`, so [`calls`](Self::calls) is their sum.
/// [`attempts`](Self::attempts) counts the **physical** attempts those calls made:
/// with a 100 % failing dependency and `max_attempts = 3`, 100 calls show
/// `calls() == 100` and `attempts() == 300`.
///
/// "With retry" means at least one retry ran. A call that ends on a
/// non-retryable error after a retry is `failed_calls_with_retry` (Resilience4j
/// counts it "without retry"); a call whose attempts ran out on a result that
/// `retry_on_result` rejects returns that result as `Ok` but is counted as
/// failed. Calls in flight are not counted yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RetryMetrics {
    pub(crate) successful_without_retry: u64,
    pub(crate) successful_with_retry: u64,
    pub(crate) failed_without_retry: u64,
    pub(crate) failed_with_retry: u64,
    pub(crate) ignored: u64,
    pub(crate) cancelled: u64,
    pub(crate) other_attempts: u64,
    pub(crate) retries: u64,
    pub(crate) budget_exhausted: u64,
    pub(crate) deadline_exceeded: u64,
}

impl RetryMetrics {
    /// Calls that succeeded on the first attempt.
    #[inline]
    pub fn successful_calls_without_retry(&self) -> u64 {
        self.successful_without_retry
    }

    /// Calls that succeeded after at least one retry.
    #[inline]
    pub fn successful_calls_with_retry(&self) -> u64 {
        self.successful_with_retry
    }

    /// Calls that failed without any retry: a non-retryable error or rejection
    /// on the first attempt, `max_attempts = 1`, or a first retry refused by the
    /// budget or the deadline.
    #[inline]
    pub fn failed_calls_without_retry(&self) -> u64 {
        self.failed_without_retry
    }

    /// Calls that failed after at least one retry (including those whose
    /// attempts ran out on a retried result).
    #[inline]
    pub fn failed_calls_with_retry(&self) -> u64 {
        self.failed_with_retry
    }

    /// Calls ended by an error that `ignore_error` accepts (not failures).
    #[inline]
    pub fn ignored_error_calls(&self) -> u64 {
        self.ignored
    }

    /// Calls that never finished: an async call whose future was dropped (for
    /// instance mid-backoff, or by a deadline or a time limiter outside the
    /// retry), or a sync call whose closure panicked. Their attempts are counted.
    #[inline]
    pub fn cancelled_calls(&self) -> u64 {
        self.cancelled
    }

    /// Calls that failed because the retry budget refused a retry (also counted
    /// in one of the two `failed_calls_*`).
    #[inline]
    pub fn retry_budget_exhausted_calls(&self) -> u64 {
        self.budget_exhausted
    }

    /// Calls that failed because the end-to-end deadline left no time for the
    /// next attempt or backoff (also counted in one of the two `failed_calls_*`).
    #[inline]
    pub fn deadline_exceeded_calls(&self) -> u64 {
        self.deadline_exceeded
    }

    /// Logical calls that ended, in any way.
    #[inline]
    pub fn calls(&self) -> u64 {
        self.successful_without_retry
            + self.successful_with_retry
            + self.failed_without_retry
            + self.failed_with_retry
            + self.ignored
            + self.cancelled
    }

    /// Physical attempts made by the calls that ended (first calls and retries).
    #[inline]
    pub fn attempts(&self) -> u64 {
        self.successful_without_retry + self.other_attempts
    }

    /// Physical attempts beyond the first of each call: the retries.
    #[inline]
    pub fn retry_attempts(&self) -> u64 {
        self.retries
    }
}

/// The live counters behind [`RetryMetrics`].
#[derive(Default)]
pub(crate) struct Counters {
    /// Striped: threads calling one retry concurrently must not fight over
    /// one cache line on the success path.
    successful_without_retry: Striped<AtomicU64>,
    successful_with_retry: AtomicU64,
    failed_without_retry: AtomicU64,
    failed_with_retry: AtomicU64,
    ignored: AtomicU64,
    cancelled: AtomicU64,
    /// Attempts made by every call except those that succeeded at once (which
    /// made exactly one each), so the success path touches one counter.
    other_attempts: AtomicU64,
    retries: AtomicU64,
    budget_exhausted: AtomicU64,
    deadline_exceeded: AtomicU64,
}

/// How a logical call ended, for the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    Success,
    Failure,
    Ignored,
    Cancelled,
}

/// Why a failed call stopped early, for the counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Refusal {
    Budget,
    Deadline,
    /// `fail_after_max_attempts` turned the last retried value into an error.
    MaxRetries,
}

impl Counters {
    /// Records a finished call that made `attempts` attempts.
    #[inline(always)]
    pub(crate) fn record(&self, outcome: Outcome, attempts: u32, refusal: Option<Refusal>) {
        if outcome == Outcome::Success && attempts == 1 {
            self.successful_without_retry.increment();
        } else {
            self.record_slow(outcome, attempts, refusal);
        }
    }

    #[inline(never)]
    fn record_slow(&self, outcome: Outcome, attempts: u32, refusal: Option<Refusal>) {
        let retried = attempts > 1;
        let counter = match (outcome, retried) {
            (Outcome::Success, _) => &self.successful_with_retry,
            (Outcome::Failure, false) => &self.failed_without_retry,
            (Outcome::Failure, true) => &self.failed_with_retry,
            (Outcome::Ignored, _) => &self.ignored,
            (Outcome::Cancelled, _) => &self.cancelled,
        };
        counter.fetch_add(1, Ordering::Relaxed);
        self.other_attempts
            .fetch_add(u64::from(attempts), Ordering::Relaxed);
        if retried {
            self.retries
                .fetch_add(u64::from(attempts - 1), Ordering::Relaxed);
        }
        match refusal {
            Some(Refusal::Budget) => &self.budget_exhausted,
            Some(Refusal::Deadline) => &self.deadline_exceeded,
            Some(Refusal::MaxRetries) | None => return,
        }
        .fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn snapshot(&self) -> RetryMetrics {
        RetryMetrics {
            successful_without_retry: self.successful_without_retry.sum(),
            successful_with_retry: self.successful_with_retry.load(Ordering::Relaxed),
            failed_without_retry: self.failed_without_retry.load(Ordering::Relaxed),
            failed_with_retry: self.failed_with_retry.load(Ordering::Relaxed),
            ignored: self.ignored.load(Ordering::Relaxed),
            cancelled: self.cancelled.load(Ordering::Relaxed),
            other_attempts: self.other_attempts.load(Ordering::Relaxed),
            retries: self.retries.load(Ordering::Relaxed),
            budget_exhausted: self.budget_exhausted.load(Ordering::Relaxed),
            deadline_exceeded: self.deadline_exceeded.load(Ordering::Relaxed),
        }
    }
}
