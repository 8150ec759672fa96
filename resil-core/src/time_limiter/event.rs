//! What a time limiter reports about each call it waited for.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// How a time-limited call ended, as Resilience4j's `TimeLimiterEvent.Type`
/// (`SUCCESS`, `ERROR`, `TIMEOUT`) plus the end-to-end deadline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TimeLimiterEventKind {
    /// The future finished in time with `Ok`.
    Success,
    /// The future finished in time with `Err`.
    Error,
    /// The limiter's own `timeout_duration` ended the wait.
    Timeout,
    /// The task's end-to-end deadline ended the wait before `timeout_duration` did.
    DeadlineExceeded,
}

impl TimeLimiterEventKind {
    /// Resilience4j's name for the kind: `SUCCESS`, `ERROR`, `TIMEOUT`, and
    /// resil's `DEADLINE_EXCEEDED`.
    pub const fn as_str(self) -> &'static str {
        match self {
            TimeLimiterEventKind::Success => "SUCCESS",
            TimeLimiterEventKind::Error => "ERROR",
            TimeLimiterEventKind::Timeout => "TIMEOUT",
            TimeLimiterEventKind::DeadlineExceeded => "DEADLINE_EXCEEDED",
        }
    }
}

impl fmt::Display for TimeLimiterEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One call's outcome, published to the streams of [`TimeLimiter::subscribe`](super::TimeLimiter::subscribe).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeLimiterEvent {
    pub(super) name: Arc<str>,
    pub(super) kind: TimeLimiterEventKind,
    pub(super) elapsed: Option<Duration>,
}

impl TimeLimiterEvent {
    /// The time limiter's name.
    #[inline]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How the call ended.
    #[inline]
    pub fn kind(&self) -> TimeLimiterEventKind {
        self.kind
    }

    /// How long the limiter waited, read from its clock; `None` when the
    /// subscription began while this call was already in flight (the start of a
    /// call is only timed while someone listens).
    #[inline]
    pub fn elapsed(&self) -> Option<Duration> {
        self.elapsed
    }
}

impl fmt::Display for TimeLimiterEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "time limiter '{}' recorded {}", self.name, self.kind)?;
        if let Some(elapsed) = self.elapsed {
            write!(f, " after {elapsed:?}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_display_a_stable_lowercase_line() {
        let event = TimeLimiterEvent {
            name: "inventory".into(),
            kind: TimeLimiterEventKind::Timeout,
            elapsed: Some(Duration::from_millis(800)),
        };
        assert_eq!(
            event.to_string(),
            "time limiter 'inventory' recorded TIMEOUT after 800ms"
        );
        let event = TimeLimiterEvent {
            elapsed: None,
            kind: TimeLimiterEventKind::Success,
            ..event
        };
        assert_eq!(
            event.to_string(),
            "time limiter 'inventory' recorded SUCCESS"
        );
    }
}
