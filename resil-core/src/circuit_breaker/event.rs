//! What a circuit breaker publishes to its subscribers.

use std::fmt;
use std::time::Duration;

use super::State;
use crate::event::{Event, EventKind, Field};

/// One thing that happened to a circuit breaker, as delivered by
/// [`CircuitBreaker::subscribe`](super::CircuitBreaker::subscribe).
pub type CircuitBreakerEvent = Event<CircuitBreakerEventKind>;

/// What happened, with Resilience4j's event names in the variant docs.
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum CircuitBreakerEventKind {
    /// `SUCCESS`: a permitted call completed and counted as a success.
    Success {
        /// How long the call took.
        elapsed: Duration,
    },
    /// `ERROR`: a permitted call completed and counted as a failure.
    Error {
        /// How long the call took.
        elapsed: Duration,
    },
    /// `IGNORED_ERROR`: a permitted call failed with an ignored error.
    IgnoredError {
        /// How long the call took.
        elapsed: Duration,
    },
    /// `NOT_PERMITTED`: a call was refused without running.
    NotPermitted {
        /// The state that refused.
        state: State,
    },
    /// `STATE_TRANSITION`: the breaker moved between two different states.
    StateTransition {
        /// The state left.
        from: State,
        /// The state entered.
        to: State,
    },
    /// `FAILURE_RATE_EXCEEDED`: the failure rate reached its threshold.
    FailureRateExceeded {
        /// The failure rate, in percent.
        rate: f32,
    },
    /// `SLOW_CALL_RATE_EXCEEDED`: the slow-call rate reached its threshold.
    SlowCallRateExceeded {
        /// The slow-call rate, in percent.
        rate: f32,
    },
    /// `CONSECUTIVE_FAILURES_EXCEEDED` (resil's): with
    /// [`FailureModel::Consecutive`](super::FailureModel::Consecutive), a run
    /// of failures reached `consecutive_failure_threshold`.
    ConsecutiveFailuresExceeded {
        /// The failures in the run.
        failures: u32,
    },
    /// `FAILURE_COUNT_EXCEEDED` (resil's): with
    /// [`FailureModel::Count`](super::FailureModel::Count),
    /// `failure_count_threshold` failures fell within `failure_count_interval`.
    FailureCountExceeded {
        /// The failures counted.
        failures: u32,
        /// The interval they fell within.
        interval: Duration,
    },
    /// `RESET`: the breaker was reset to a fresh CLOSED state.
    Reset,
}

impl EventKind for CircuitBreakerEventKind {
    type Detail = ();
    const EVENT: &'static str = "CircuitBreakerEvent";
    const SOURCE: &'static str = "circuit breaker";

    fn label(&self) -> &'static str {
        match self {
            CircuitBreakerEventKind::Success { .. } => "SUCCESS",
            CircuitBreakerEventKind::Error { .. } => "ERROR",
            CircuitBreakerEventKind::IgnoredError { .. } => "IGNORED_ERROR",
            CircuitBreakerEventKind::NotPermitted { .. } => "NOT_PERMITTED",
            CircuitBreakerEventKind::StateTransition { .. } => "STATE_TRANSITION",
            CircuitBreakerEventKind::FailureRateExceeded { .. } => "FAILURE_RATE_EXCEEDED",
            CircuitBreakerEventKind::SlowCallRateExceeded { .. } => "SLOW_CALL_RATE_EXCEEDED",
            CircuitBreakerEventKind::ConsecutiveFailuresExceeded { .. } => {
                "CONSECUTIVE_FAILURES_EXCEEDED"
            }
            CircuitBreakerEventKind::FailureCountExceeded { .. } => "FAILURE_COUNT_EXCEEDED",
            CircuitBreakerEventKind::Reset => "RESET",
        }
    }

    /// Transitions, resets and rates crossing their thresholds; not a call's
    /// outcome or refusal.
    fn is_notable(&self) -> bool {
        matches!(
            self,
            CircuitBreakerEventKind::StateTransition { .. }
                | CircuitBreakerEventKind::FailureRateExceeded { .. }
                | CircuitBreakerEventKind::SlowCallRateExceeded { .. }
                | CircuitBreakerEventKind::ConsecutiveFailuresExceeded { .. }
                | CircuitBreakerEventKind::FailureCountExceeded { .. }
                | CircuitBreakerEventKind::Reset
        )
    }

    /// `from` and `to` for a transition, `elapsed` for a call's outcome,
    /// `state` for a refusal, `rate` for a threshold crossed.
    fn visit_fields(&self, (): &(), visit: &mut dyn FnMut(&'static str, Field<'_>)) {
        match *self {
            CircuitBreakerEventKind::Success { elapsed }
            | CircuitBreakerEventKind::Error { elapsed }
            | CircuitBreakerEventKind::IgnoredError { elapsed } => {
                visit("elapsed", Field::Duration(elapsed));
            }
            CircuitBreakerEventKind::NotPermitted { state } => {
                visit("state", Field::Str(state.as_str()));
            }
            CircuitBreakerEventKind::StateTransition { from, to } => {
                visit("from", Field::Str(from.as_str()));
                visit("to", Field::Str(to.as_str()));
            }
            CircuitBreakerEventKind::FailureRateExceeded { rate }
            | CircuitBreakerEventKind::SlowCallRateExceeded { rate } => {
                visit("rate", Field::Percent(f64::from(rate)));
            }
            CircuitBreakerEventKind::ConsecutiveFailuresExceeded { failures } => {
                visit("failures", Field::U64(u64::from(failures)));
            }
            CircuitBreakerEventKind::FailureCountExceeded { failures, interval } => {
                visit("failures", Field::U64(u64::from(failures)));
                visit("interval", Field::Duration(interval));
            }
            CircuitBreakerEventKind::Reset => {}
        }
    }

    fn fmt_line(&self, (): &(), f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ": {}", self.label())?;
        match self {
            CircuitBreakerEventKind::Success { elapsed }
            | CircuitBreakerEventKind::Error { elapsed }
            | CircuitBreakerEventKind::IgnoredError { elapsed } => write!(f, " after {elapsed:?}"),
            CircuitBreakerEventKind::NotPermitted { state } => write!(f, " while {state}"),
            CircuitBreakerEventKind::StateTransition { from, to } => write!(f, " {from} -> {to}"),
            CircuitBreakerEventKind::FailureRateExceeded { rate }
            | CircuitBreakerEventKind::SlowCallRateExceeded { rate } => write!(f, " ({rate}%)"),
            CircuitBreakerEventKind::ConsecutiveFailuresExceeded { failures } => {
                write!(f, " ({failures} in a row)")
            }
            CircuitBreakerEventKind::FailureCountExceeded { failures, interval } => {
                write!(f, " ({failures} within {interval:?})")
            }
            CircuitBreakerEventKind::Reset => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_formats_are_pinned() {
        let e = CircuitBreakerEvent::new(
            "a",
            CircuitBreakerEventKind::Success {
                elapsed: Duration::from_millis(1),
            },
        );
        assert_eq!(
            format!("{e:?}"),
            "CircuitBreakerEvent { name: \"a\", kind: Success { elapsed: 1ms } }"
        );
        assert_eq!(e.to_string(), "circuit breaker 'a': SUCCESS after 1ms");
        let e = CircuitBreakerEvent::new(
            "a",
            CircuitBreakerEventKind::StateTransition {
                from: State::Closed,
                to: State::Open,
            },
        );
        assert_eq!(
            e.to_string(),
            "circuit breaker 'a': STATE_TRANSITION CLOSED -> OPEN"
        );
        assert_eq!(e.label(), "STATE_TRANSITION");
        let mut fields = Vec::new();
        e.visit_fields(&mut |k, v| fields.push((k, format!("{v:?}"))));
        assert_eq!(
            fields,
            [
                ("from", "Str(\"CLOSED\")".to_owned()),
                ("to", "Str(\"OPEN\")".to_owned())
            ]
        );
        assert!(e.is_notable());
        assert!(!CircuitBreakerEventKind::NotPermitted { state: State::Open }.is_notable());
    }
}
