//! What a rate limiter reports to its subscribers.

use std::fmt;
use std::sync::Arc;

/// An acquisition at a [`RateLimiter`](super::RateLimiter), published to
/// [`subscribe`](super::RateLimiter::subscribe)rs (Resilience4j's
/// `RateLimiterOnSuccessEvent` and `RateLimiterOnFailureEvent`).
#[derive(Clone, PartialEq, Eq)]
pub struct RateLimiterEvent {
    name: Arc<str>,
    kind: RateLimiterEventKind,
    permits: u32,
}

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
    pub(crate) fn new(name: &Arc<str>, kind: RateLimiterEventKind, permits: u32) -> Self {
        RateLimiterEvent {
            name: Arc::clone(name),
            kind,
            permits,
        }
    }

    /// The rate limiter's name.
    #[inline]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What happened.
    #[inline]
    pub fn kind(&self) -> RateLimiterEventKind {
        self.kind
    }

    /// How many permits were asked for.
    #[inline]
    pub fn permits(&self) -> u32 {
        self.permits
    }
}

impl fmt::Debug for RateLimiterEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimiterEvent")
            .field("name", &&*self.name)
            .field("kind", &self.kind)
            .field("permits", &self.permits)
            .finish()
    }
}

impl fmt::Display for RateLimiterEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rate limiter '{}': {} of {} permit(s)",
            self.name, self.kind, self.permits
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_formats_are_pinned() {
        let e = RateLimiterEvent::new(&Arc::from("read"), RateLimiterEventKind::FailedAcquire, 2);
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
    }
}
