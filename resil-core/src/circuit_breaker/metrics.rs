//! A snapshot of a circuit breaker's sliding window and counters.

use super::State;

/// What a circuit breaker has seen, taken by
/// [`CircuitBreaker::metrics`](super::CircuitBreaker::metrics).
///
/// Window counts (`buffered`, `failed`, `slow` …) describe the sliding window of
/// the current state: CLOSED and METRICS_ONLY their own window, HALF_OPEN its
/// probes, OPEN the window that opened it (frozen). `not_permitted_calls` and
/// `ignored_calls` count since the current state began, except that OPEN goes on
/// counting where the state that opened it stopped.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metrics {
    pub(crate) state: State,
    pub(crate) calls: u64,
    pub(crate) failed: u64,
    pub(crate) slow: u64,
    pub(crate) slow_failed: u64,
    pub(crate) minimum: u64,
    pub(crate) not_permitted: u64,
    pub(crate) ignored: u64,
    pub(crate) consecutive_failures: u32,
    pub(crate) failures_in_interval: u64,
}

impl Metrics {
    /// The state when the snapshot was taken.
    pub fn state(&self) -> State {
        self.state
    }

    /// Failures in a row since the last success in CLOSED / METRICS_ONLY,
    /// what [`FailureModel::Consecutive`](super::FailureModel::Consecutive)
    /// compares with `consecutive_failure_threshold` (0 with
    /// [`FailureModel::Rate`](super::FailureModel::Rate), which keeps no run).
    pub fn consecutive_failures(&self) -> u32 {
        self.consecutive_failures
    }

    /// Failures within the last `failure_count_interval`, what
    /// [`FailureModel::Count`](super::FailureModel::Count) compares with
    /// `failure_count_threshold` (at most that many are kept; 0 with the
    /// other models).
    pub fn failures_in_interval(&self) -> u64 {
        self.failures_in_interval
    }

    /// Failed calls in percent of buffered calls, or `None` while fewer than
    /// `minimum_number_of_calls` are buffered (Resilience4j's `-1`).
    pub fn failure_rate(&self) -> Option<f32> {
        self.rate(self.failed)
    }

    /// Slow calls in percent of buffered calls, or `None` while fewer than
    /// `minimum_number_of_calls` are buffered.
    pub fn slow_call_rate(&self) -> Option<f32> {
        self.rate(self.slow)
    }

    fn rate(&self, part: u64) -> Option<f32> {
        (self.calls >= self.minimum && self.calls > 0)
            .then(|| part as f32 * 100.0 / self.calls as f32)
    }

    /// Calls in the window (successful + failed).
    pub fn buffered_calls(&self) -> u64 {
        self.calls
    }

    /// Failed calls in the window.
    pub fn failed_calls(&self) -> u64 {
        self.failed
    }

    /// Successful calls in the window.
    pub fn successful_calls(&self) -> u64 {
        self.calls - self.failed
    }

    /// Slow calls in the window (successful or failed).
    pub fn slow_calls(&self) -> u64 {
        self.slow
    }

    /// Slow calls in the window that failed.
    pub fn slow_failed_calls(&self) -> u64 {
        self.slow_failed
    }

    /// Slow calls in the window that succeeded.
    pub fn slow_successful_calls(&self) -> u64 {
        self.slow - self.slow_failed
    }

    /// Calls refused without running.
    pub fn not_permitted_calls(&self) -> u64 {
        self.not_permitted
    }

    /// Calls whose error was ignored (counted neither as success nor failure).
    pub fn ignored_calls(&self) -> u64 {
        self.ignored
    }

    /// The number of buffered calls from which rates are computed.
    pub fn minimum_number_of_calls(&self) -> u64 {
        self.minimum
    }
}
