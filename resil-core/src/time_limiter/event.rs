//! What a time limiter reports about each call it waited for.

use std::fmt;
use std::time::Duration;

use crate::event::{Event, EventKind};

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
pub type TimeLimiterEvent = Event<TimeLimiterEventKind>;

impl TimeLimiterEvent {
    /// How long the limiter waited, read from its clock; `None` when the
    /// subscription began while this call was already in flight (the start of a
    /// call is only timed while someone listens).
    #[inline]
    pub fn elapsed(&self) -> Option<Duration> {
        *self.detail()
    }
}

/// The detail is the elapsed time ([`TimeLimiterEvent::elapsed`]).
impl EventKind for TimeLimiterEventKind {
    type Detail = Option<Duration>;
    const EVENT: &'static str = "TimeLimiterEvent";
    const SOURCE: &'static str = "time limiter";

    /// [`as_str`](Self::as_str).
    fn label(&self) -> &'static str {
        self.as_str()
    }

    /// Never: every event is one call's outcome.
    fn is_notable(&self) -> bool {
        false
    }

    fn fmt_line(&self, elapsed: &Option<Duration>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, " recorded {self}")?;
        if let Some(elapsed) = elapsed {
            write!(f, " after {elapsed:?}")?;
        }
        Ok(())
    }

    fn fmt_detail(elapsed: &Option<Duration>, out: &mut fmt::DebugStruct<'_, '_>) {
        out.field("elapsed", elapsed);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn events_display_a_stable_lowercase_line() {
        let name: Arc<str> = "inventory".into();
        let event = TimeLimiterEvent::with_detail(
            &name,
            TimeLimiterEventKind::Timeout,
            Some(Duration::from_millis(800)),
        );
        assert_eq!(
            event.to_string(),
            "time limiter 'inventory' recorded TIMEOUT after 800ms"
        );
        assert_eq!(
            format!("{event:?}"),
            "TimeLimiterEvent { name: \"inventory\", kind: Timeout, elapsed: Some(800ms) }"
        );
        let event = TimeLimiterEvent::with_detail(&name, TimeLimiterEventKind::Success, None);
        assert_eq!(
            event.to_string(),
            "time limiter 'inventory' recorded SUCCESS"
        );
    }
}
