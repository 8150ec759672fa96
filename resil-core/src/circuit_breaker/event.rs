//! What a circuit breaker publishes to its subscribers.

use std::sync::Arc;
use std::time::Duration;

use super::State;

/// One thing that happened to a circuit breaker, as delivered by
/// [`CircuitBreaker::subscribe`](super::CircuitBreaker::subscribe).
#[derive(Debug, Clone, PartialEq)]
pub struct CircuitBreakerEvent {
    pub(crate) name: Arc<str>,
    pub(crate) kind: CircuitBreakerEventKind,
}

impl CircuitBreakerEvent {
    /// The breaker's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What happened.
    pub fn kind(&self) -> &CircuitBreakerEventKind {
        &self.kind
    }
}

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
    /// `RESET`: the breaker was reset to a fresh CLOSED state.
    Reset,
}
