//! What a rate limiter reports to its subscribers.

use std::fmt;

use crate::event::{Event, EventKind};

/// An acquisition at a [`RateLimiter`](super::RateLimiter), published to
/// [`subscribe`](super::RateLimiter::subscribe)rs (Resilience4j's
/// `RateLimiterOnSuccessEvent` and `RateLimiterOnFailureEvent`).
pub type RateLimiterEvent = Event<RateLimiterEventKind>;

/// The kinds of [`RateLimiterEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RateLimiterEventKind {
    /// Permits were granted, at once or as a reservation of a later cycle's
    /// permits (published when granted, before the wait).
    SuccessfulAcquire,
    /// Permits were refused: not free within `timeout_duration`, not within the
    /// remaining deadline, or more than `limit_for_period` at once.
    FailedAcquire,
    /// The free permits were drained (`drain_permissions`, or a call whose
    /// outcome `drain_permissions_on_result` accepts); `permits` is how many
    /// were free (Resilience4j's `RateLimiterOnDrainedEvent`).
    Drained,
}

impl RateLimiterEventKind {
    /// A short, stable label: `successful_acquire`, `failed_acquire`, `drained`.
    pub const fn as_str(self) -> &'static str {
        match self {
            RateLimiterEventKind::SuccessfulAcquire => "successful_acquire",
            RateLimiterEventKind::FailedAcquire => "failed_acquire",
            RateLimiterEventKind::Drained => "drained",
        }
    }
}

impl fmt::Display for RateLimiterEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl RateLimiterEvent {
    /// How many permits were asked for.
    #[inline]
    pub fn permits(&self) -> u32 {
        *self.detail()
    }
}

/// The detail is the permit count ([`RateLimiterEvent::permits`]).
impl EventKind for RateLimiterEventKind {
    type Detail = u32;
    const EVENT: &'static str = "RateLimiterEvent";
    const SOURCE: &'static str = "rate limiter";

    /// `SUCCESSFUL_ACQUIRE`, `FAILED_ACQUIRE`, `DRAINED`.
    fn label(&self) -> &'static str {
        match self {
            RateLimiterEventKind::SuccessfulAcquire => "SUCCESSFUL_ACQUIRE",
            RateLimiterEventKind::FailedAcquire => "FAILED_ACQUIRE",
            RateLimiterEventKind::Drained => "DRAINED",
        }
    }

    /// Never: acquisitions are per call, and a drain comes from a call's
    /// outcome or an explicit `drain_permissions`.
    fn is_notable(&self) -> bool {
        false
    }

    fn fmt_line(&self, permits: &u32, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ": {self} of {permits} permit(s)")
    }

    fn fmt_detail(permits: &u32, out: &mut fmt::DebugStruct<'_, '_>) {
        out.field("permits", permits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_formats_are_pinned() {
        let e = RateLimiterEvent::with_detail(
            &std::sync::Arc::from("read"),
            RateLimiterEventKind::FailedAcquire,
            2,
        );
        assert_eq!(
            e.to_string(),
            "rate limiter 'read': failed_acquire of 2 permit(s)"
        );
        assert_eq!(
            format!("{e:?}"),
            "RateLimiterEvent { name: \"read\", kind: FailedAcquire, permits: 2 }"
        );
        assert_eq!(
            RateLimiterEventKind::SuccessfulAcquire.as_str(),
            "successful_acquire"
        );
        assert_eq!(e.label(), "FAILED_ACQUIRE");
    }
}
