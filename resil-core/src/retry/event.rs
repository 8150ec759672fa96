//! What a retry publishes: each retry with its wait, and how each call ended.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::error::ErrorKind;

/// Why an attempt counted as failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RetryCause {
    /// The call returned its own error (`Error::Call`).
    Error,
    /// The call returned a value that `retry_on_result` rejects.
    Result,
    /// A resil primitive inside the retried call refused it (see
    /// [`Retry::call_nested`](super::Retry::call_nested)).
    Rejection(ErrorKind),
}

impl fmt::Display for RetryCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetryCause::Error => f.write_str("error"),
            RetryCause::Result => f.write_str("result"),
            RetryCause::Rejection(kind) => write!(f, "rejection {kind}"),
        }
    }
}

/// An event published by a [`Retry`](super::Retry) (see
/// [`Retry::subscribe`](super::Retry::subscribe)).
///
/// Events carry counts and causes, not the call's error itself: the retry is
/// shared by call sites with different error types and publishing never clones
/// or formats a value. `attempts` is the number of attempts the call had made
/// when the event was published.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RetryEvent {
    /// Attempt `attempt` failed for `cause`; the next attempt starts after `wait`.
    Retry {
        /// The retry's name.
        name: Arc<str>,
        /// The attempt that failed (1 = the first call).
        attempt: u32,
        /// The wait before the next attempt.
        wait: Duration,
        /// Why the attempt failed.
        cause: RetryCause,
    },
    /// The call succeeded after at least one retry (`attempts` ≥ 2). A call
    /// that succeeds on its first attempt publishes no event, as in
    /// Resilience4j; [`RetryMetrics`](super::RetryMetrics) counts it.
    Success {
        /// The retry's name.
        name: Arc<str>,
        /// Attempts made, the successful one included.
        attempts: u32,
    },
    /// The call failed for good because its attempts ran out (for
    /// `RetryCause::Result` the last value was still returned as `Ok`, or
    /// turned into an error by `fail_after_max_attempts`).
    Error {
        /// The retry's name.
        name: Arc<str>,
        /// Attempts made.
        attempts: u32,
        /// Why the last attempt failed.
        cause: RetryCause,
    },
    /// The call ended on an error the retry does not retry: one that
    /// `ignore_error` accepts, one no `retry_on_error` predicate accepts, or a
    /// refusal by an inner primitive that `retry_on_rejection` turns down.
    /// Resilience4j publishes IGNORED_ERROR for every non-retryable error.
    IgnoredError {
        /// The retry's name.
        name: Arc<str>,
        /// Attempts made.
        attempts: u32,
        /// What the call ended on ([`RetryCause::Error`] or a rejection).
        cause: RetryCause,
    },
    /// A retry was due but the retry budget refused it; the call returned
    /// `Error::RetryBudgetExhausted` and the last attempt's outcome was dropped.
    RetryBudgetExhausted {
        /// The retry's name.
        name: Arc<str>,
        /// Attempts made.
        attempts: u32,
        /// Why the last attempt failed.
        cause: RetryCause,
    },
    /// The end-to-end deadline left no time for the next attempt or backoff;
    /// the call returned `Error::DeadlineExceeded`.
    DeadlineExceeded {
        /// The retry's name.
        name: Arc<str>,
        /// Attempts made.
        attempts: u32,
        /// The backoff that did not fit (`None` when the deadline was already
        /// spent before an attempt).
        wait: Option<Duration>,
    },
}

impl RetryEvent {
    /// The name of the retry that published the event.
    pub fn name(&self) -> &str {
        match self {
            RetryEvent::Retry { name, .. }
            | RetryEvent::Success { name, .. }
            | RetryEvent::Error { name, .. }
            | RetryEvent::IgnoredError { name, .. }
            | RetryEvent::RetryBudgetExhausted { name, .. }
            | RetryEvent::DeadlineExceeded { name, .. } => name,
        }
    }

    /// Attempts made by the call when the event was published.
    pub fn attempts(&self) -> u32 {
        match self {
            RetryEvent::Retry { attempt, .. } => *attempt,
            RetryEvent::Success { attempts, .. }
            | RetryEvent::Error { attempts, .. }
            | RetryEvent::IgnoredError { attempts, .. }
            | RetryEvent::RetryBudgetExhausted { attempts, .. }
            | RetryEvent::DeadlineExceeded { attempts, .. } => *attempts,
        }
    }

    /// The wait before the next attempt, for [`RetryEvent::Retry`].
    pub fn wait(&self) -> Option<Duration> {
        match self {
            RetryEvent::Retry { wait, .. } => Some(*wait),
            _ => None,
        }
    }
}

impl fmt::Display for RetryEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetryEvent::Retry {
                name,
                attempt,
                wait,
                cause,
            } => write!(
                f,
                "retry '{name}': attempt {attempt} failed ({cause}), retrying in {wait:?}"
            ),
            RetryEvent::Success { name, attempts } => {
                write!(f, "retry '{name}': succeeded after {attempts} attempt(s)")
            }
            RetryEvent::Error {
                name,
                attempts,
                cause,
            } => write!(
                f,
                "retry '{name}': failed after {attempts} attempt(s) ({cause})"
            ),
            RetryEvent::IgnoredError {
                name,
                attempts,
                cause,
            } => write!(
                f,
                "retry '{name}': not retried ({cause}) after {attempts} attempt(s)"
            ),
            RetryEvent::RetryBudgetExhausted {
                name,
                attempts,
                cause,
            } => write!(
                f,
                "retry '{name}': retry budget exhausted after {attempts} attempt(s) ({cause})"
            ),
            RetryEvent::DeadlineExceeded { name, attempts, .. } => write!(
                f,
                "retry '{name}': deadline exceeded after {attempts} attempt(s)"
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_displays_are_pinned() {
        let name: Arc<str> = "inventory".into();
        let cases = [
            (
                RetryEvent::Retry {
                    name: name.clone(),
                    attempt: 1,
                    wait: Duration::from_millis(500),
                    cause: RetryCause::Error,
                },
                "retry 'inventory': attempt 1 failed (error), retrying in 500ms",
            ),
            (
                RetryEvent::Success {
                    name: name.clone(),
                    attempts: 2,
                },
                "retry 'inventory': succeeded after 2 attempt(s)",
            ),
            (
                RetryEvent::Error {
                    name: name.clone(),
                    attempts: 1,
                    cause: RetryCause::Rejection(ErrorKind::CallNotPermitted),
                },
                "retry 'inventory': failed after 1 attempt(s) (rejection call_not_permitted)",
            ),
            (
                RetryEvent::IgnoredError {
                    name: name.clone(),
                    attempts: 1,
                    cause: RetryCause::Error,
                },
                "retry 'inventory': not retried (error) after 1 attempt(s)",
            ),
            (
                RetryEvent::IgnoredError {
                    name: name.clone(),
                    attempts: 2,
                    cause: RetryCause::Rejection(ErrorKind::CallNotPermitted),
                },
                "retry 'inventory': not retried (rejection call_not_permitted) after 2 attempt(s)",
            ),
            (
                RetryEvent::RetryBudgetExhausted {
                    name: name.clone(),
                    attempts: 1,
                    cause: RetryCause::Result,
                },
                "retry 'inventory': retry budget exhausted after 1 attempt(s) (result)",
            ),
            (
                RetryEvent::DeadlineExceeded {
                    name,
                    attempts: 2,
                    wait: None,
                },
                "retry 'inventory': deadline exceeded after 2 attempt(s)",
            ),
        ];
        for (event, text) in cases {
            assert_eq!(event.to_string(), text);
            assert_eq!(event.name(), "inventory");
        }
    }
}
