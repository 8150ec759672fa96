//! What a throttler reports to its subscribers, and its counters.

use std::fmt;

use crate::event::{Event, EventKind, Field};

/// Something a [`Throttler`](super::Throttler) did, delivered to every stream
/// from [`Throttler::subscribe`](super::Throttler::subscribe).
pub type ThrottlerEvent = Event<ThrottlerEventKind>;

/// The kinds of [`ThrottlerEvent`]: all per call (none is notable; the
/// rejection probability is a gauge in the metrics).
#[derive(Debug, Clone, Copy, PartialEq)]
#[non_exhaustive]
pub enum ThrottlerEventKind {
    /// `NOT_PERMITTED`: the call was refused locally.
    NotPermitted {
        /// The rejection probability it was drawn against.
        probability: f64,
    },
    /// `ACCEPTED`: the downstream accepted a permitted call.
    Accepted,
    /// `REFUSED`: the downstream refused a permitted call (an error, a
    /// refused value).
    Refused,
}

impl EventKind for ThrottlerEventKind {
    type Detail = ();
    const EVENT: &'static str = "ThrottlerEvent";
    const SOURCE: &'static str = "throttler";

    fn label(&self) -> &'static str {
        match self {
            ThrottlerEventKind::NotPermitted { .. } => "NOT_PERMITTED",
            ThrottlerEventKind::Accepted => "ACCEPTED",
            ThrottlerEventKind::Refused => "REFUSED",
        }
    }

    fn is_notable(&self) -> bool {
        false
    }

    fn visit_fields(&self, (): &(), visit: &mut dyn FnMut(&'static str, Field<'_>)) {
        if let ThrottlerEventKind::NotPermitted { probability } = *self {
            visit("probability", Field::Percent(probability * 100.0));
        }
    }

    fn fmt_line(&self, (): &(), f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ": {}", self.label())?;
        if let ThrottlerEventKind::NotPermitted { probability } = self {
            write!(f, " (p = {probability:.3})")?;
        }
        Ok(())
    }
}

/// A snapshot of a [`Throttler`](super::Throttler)'s window and counters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ThrottlerMetrics {
    pub(crate) requests: u64,
    pub(crate) accepts: u64,
    pub(crate) rejection_probability: f64,
    pub(crate) not_permitted: u64,
}

impl ThrottlerMetrics {
    /// Requests in the window: calls the downstream answered, plus calls
    /// refused locally.
    pub fn requests(&self) -> u64 {
        self.requests
    }

    /// Calls in the window the downstream accepted.
    pub fn accepts(&self) -> u64 {
        self.accepts
    }

    /// `max(0, (requests − K·accepts) / (requests + 1))`, capped at
    /// `max_rejection_probability`: the chance the next call is refused.
    pub fn rejection_probability(&self) -> f64 {
        self.rejection_probability
    }

    /// Calls refused locally since the throttler was created.
    pub fn not_permitted_calls(&self) -> u64 {
        self.not_permitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_formats_are_pinned() {
        let e = ThrottlerEvent::new(
            "search",
            ThrottlerEventKind::NotPermitted { probability: 0.25 },
        );
        assert_eq!(
            e.to_string(),
            "throttler 'search': NOT_PERMITTED (p = 0.250)"
        );
        assert_eq!(e.label(), "NOT_PERMITTED");
        assert!(!e.is_notable());
    }
}
