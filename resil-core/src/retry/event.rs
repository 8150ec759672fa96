//! What a retry publishes: each retry with its wait, and how each call ended.

use std::fmt;
use std::time::Duration;

use crate::error::ErrorKind;
use crate::event::{Event, EventKind, Field};

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
/// [`Retry::subscribe`](super::Retry::subscribe)): the retry's name and a
/// [`RetryEventKind`].
///
/// Events carry counts and causes, not the call's error itself: the retry is
/// shared by call sites with different error types and publishing never clones
/// or formats a value. [`attempts`](Event::attempts) is the number of attempts
/// the call had made when the event was published.
pub type RetryEvent = Event<RetryEventKind>;

/// What happened to a retried call, with Resilience4j's event names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RetryEventKind {
    /// `RETRY`: attempt `attempt` failed for `cause`; the next attempt starts
    /// after `wait`.
    Retry {
        /// The attempt that failed (1 = the first call).
        attempt: u32,
        /// The wait before the next attempt.
        wait: Duration,
        /// Why the attempt failed.
        cause: RetryCause,
    },
    /// `SUCCESS`: the call succeeded after at least one retry (`attempts` ≥ 2).
    /// A call that succeeds on its first attempt publishes no event, as in
    /// Resilience4j; [`RetryMetrics`](super::RetryMetrics) counts it.
    Success {
        /// Attempts made, the successful one included.
        attempts: u32,
    },
    /// `ERROR`: the call failed for good because its attempts ran out (for
    /// `RetryCause::Result` the last value was still returned as `Ok`, or
    /// turned into an error by `fail_after_max_attempts`).
    Error {
        /// Attempts made.
        attempts: u32,
        /// Why the last attempt failed.
        cause: RetryCause,
    },
    /// `IGNORED_ERROR`: the call ended on an error the retry does not retry:
    /// one that `ignore_error` accepts, one no `retry_on_error` predicate
    /// accepts, or a refusal by an inner primitive that `retry_on_rejection`
    /// turns down. Resilience4j publishes IGNORED_ERROR for every
    /// non-retryable error.
    IgnoredError {
        /// Attempts made.
        attempts: u32,
        /// What the call ended on ([`RetryCause::Error`] or a rejection).
        cause: RetryCause,
    },
    /// `RETRY_BUDGET_EXHAUSTED` (resil's): a retry was due but the retry
    /// budget refused it; the call returned `Error::RetryBudgetExhausted` and
    /// the last attempt's outcome was dropped.
    RetryBudgetExhausted {
        /// Attempts made.
        attempts: u32,
        /// Why the last attempt failed.
        cause: RetryCause,
    },
    /// `DEADLINE_EXCEEDED` (resil's): the end-to-end deadline left no time for
    /// the next attempt or backoff; the call returned `Error::DeadlineExceeded`.
    DeadlineExceeded {
        /// Attempts made.
        attempts: u32,
        /// The backoff that did not fit (`None` when the deadline was already
        /// spent before an attempt).
        wait: Option<Duration>,
    },
}

impl RetryEvent {
    /// Attempts made by the call when the event was published.
    pub fn attempts(&self) -> u32 {
        match self.kind() {
            RetryEventKind::Retry { attempt, .. } => attempt,
            RetryEventKind::Success { attempts }
            | RetryEventKind::Error { attempts, .. }
            | RetryEventKind::IgnoredError { attempts, .. }
            | RetryEventKind::RetryBudgetExhausted { attempts, .. }
            | RetryEventKind::DeadlineExceeded { attempts, .. } => attempts,
        }
    }

    /// The wait before the next attempt, for [`RetryEventKind::Retry`].
    pub fn wait(&self) -> Option<Duration> {
        match self.kind() {
            RetryEventKind::Retry { wait, .. } => Some(wait),
            _ => None,
        }
    }
}

impl EventKind for RetryEventKind {
    type Detail = ();
    const EVENT: &'static str = "RetryEvent";
    const SOURCE: &'static str = "retry";

    fn label(&self) -> &'static str {
        match self {
            RetryEventKind::Retry { .. } => "RETRY",
            RetryEventKind::Success { .. } => "SUCCESS",
            RetryEventKind::Error { .. } => "ERROR",
            RetryEventKind::IgnoredError { .. } => "IGNORED_ERROR",
            RetryEventKind::RetryBudgetExhausted { .. } => "RETRY_BUDGET_EXHAUSTED",
            RetryEventKind::DeadlineExceeded { .. } => "DEADLINE_EXCEEDED",
        }
    }

    /// Never: every retry event is about one call.
    fn is_notable(&self) -> bool {
        false
    }

    /// `attempts` (for `RETRY`, the attempt that failed), `wait` when there
    /// is one.
    fn visit_fields(&self, (): &(), visit: &mut dyn FnMut(&'static str, Field<'_>)) {
        let (attempts, wait) = match *self {
            RetryEventKind::Retry { attempt, wait, .. } => (attempt, Some(wait)),
            RetryEventKind::DeadlineExceeded { attempts, wait } => (attempts, wait),
            RetryEventKind::Success { attempts }
            | RetryEventKind::Error { attempts, .. }
            | RetryEventKind::IgnoredError { attempts, .. }
            | RetryEventKind::RetryBudgetExhausted { attempts, .. } => (attempts, None),
        };
        visit("attempts", Field::U64(u64::from(attempts)));
        if let Some(wait) = wait {
            visit("wait", Field::Duration(wait));
        }
    }

    fn fmt_line(&self, (): &(), f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RetryEventKind::Retry {
                attempt,
                wait,
                cause,
            } => write!(
                f,
                ": attempt {attempt} failed ({cause}), retrying in {wait:?}"
            ),
            RetryEventKind::Success { attempts } => {
                write!(f, ": succeeded after {attempts} attempt(s)")
            }
            RetryEventKind::Error { attempts, cause } => {
                write!(f, ": failed after {attempts} attempt(s) ({cause})")
            }
            RetryEventKind::IgnoredError { attempts, cause } => {
                write!(f, ": not retried ({cause}) after {attempts} attempt(s)")
            }
            RetryEventKind::RetryBudgetExhausted { attempts, cause } => write!(
                f,
                ": retry budget exhausted after {attempts} attempt(s) ({cause})"
            ),
            RetryEventKind::DeadlineExceeded { attempts, .. } => {
                write!(f, ": deadline exceeded after {attempts} attempt(s)")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_displays_are_pinned() {
        let name: std::sync::Arc<str> = "inventory".into();
        let cases = [
            (
                RetryEvent::new(
                    name.clone(),
                    RetryEventKind::Retry {
                        attempt: 1,
                        wait: Duration::from_millis(500),
                        cause: RetryCause::Error,
                    },
                ),
                "retry 'inventory': attempt 1 failed (error), retrying in 500ms",
            ),
            (
                RetryEvent::new(name.clone(), RetryEventKind::Success { attempts: 2 }),
                "retry 'inventory': succeeded after 2 attempt(s)",
            ),
            (
                RetryEvent::new(
                    name.clone(),
                    RetryEventKind::Error {
                        attempts: 1,
                        cause: RetryCause::Rejection(ErrorKind::CallNotPermitted),
                    },
                ),
                "retry 'inventory': failed after 1 attempt(s) (rejection call_not_permitted)",
            ),
            (
                RetryEvent::new(
                    name.clone(),
                    RetryEventKind::IgnoredError {
                        attempts: 1,
                        cause: RetryCause::Error,
                    },
                ),
                "retry 'inventory': not retried (error) after 1 attempt(s)",
            ),
            (
                RetryEvent::new(
                    name.clone(),
                    RetryEventKind::IgnoredError {
                        attempts: 2,
                        cause: RetryCause::Rejection(ErrorKind::CallNotPermitted),
                    },
                ),
                "retry 'inventory': not retried (rejection call_not_permitted) after 2 attempt(s)",
            ),
            (
                RetryEvent::new(
                    name.clone(),
                    RetryEventKind::RetryBudgetExhausted {
                        attempts: 1,
                        cause: RetryCause::Result,
                    },
                ),
                "retry 'inventory': retry budget exhausted after 1 attempt(s) (result)",
            ),
            (
                RetryEvent::new(
                    name.clone(),
                    RetryEventKind::DeadlineExceeded {
                        attempts: 2,
                        wait: None,
                    },
                ),
                "retry 'inventory': deadline exceeded after 2 attempt(s)",
            ),
        ];
        for (event, text) in cases {
            assert_eq!(event.to_string(), text);
            assert_eq!(event.name(), "inventory");
        }
    }
}
