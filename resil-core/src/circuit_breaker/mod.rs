//! Circuit breaker: stop calling a dependency whose recent calls mostly failed or
//! were slow (Resilience4j `CircuitBreaker`).

use std::fmt;

/// The states of a circuit breaker, named as in Resilience4j.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum State {
    /// Calls pass and their outcomes are recorded in the sliding window.
    Closed,
    /// Calls are refused until the wait in the open state has passed.
    Open,
    /// A limited number of probe calls pass; their outcomes decide OPEN or CLOSED.
    HalfOpen,
    /// Every call is refused until an operator transitions the breaker.
    ForcedOpen,
    /// Every call passes; nothing is recorded.
    Disabled,
    /// Every call passes and is recorded; thresholds publish events but never open.
    MetricsOnly,
}

impl State {
    /// Resilience4j's name for the state: `CLOSED`, `OPEN`, `HALF_OPEN`,
    /// `FORCED_OPEN`, `DISABLED`, `METRICS_ONLY`.
    pub const fn as_str(self) -> &'static str {
        match self {
            State::Closed => "CLOSED",
            State::Open => "OPEN",
            State::HalfOpen => "HALF_OPEN",
            State::ForcedOpen => "FORCED_OPEN",
            State::Disabled => "DISABLED",
            State::MetricsOnly => "METRICS_ONLY",
        }
    }

    /// Whether calls in this state may run (CLOSED, HALF_OPEN with a free probe
    /// slot, DISABLED, METRICS_ONLY).
    pub const fn allows_calls(self) -> bool {
        !matches!(self, State::Open | State::ForcedOpen)
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
