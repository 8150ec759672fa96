//! What a distributed rate limiter reports to its subscribers.

use std::fmt;
use std::sync::Arc;

use crate::event::{Event, EventKind};

use super::backend::BackendFailure;
use super::config::FailurePolicy;

/// An acquisition at a [`DistributedRateLimiter`](super::DistributedRateLimiter),
/// published to [`subscribe`](super::DistributedRateLimiter::subscribe)rs.
pub type DistributedRateLimiterEvent = Event<DistributedRateLimiterEventKind>;

/// The kinds of [`DistributedRateLimiterEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DistributedRateLimiterEventKind {
    /// Redis granted the permits.
    SuccessfulAcquire,
    /// The shared quota had no room within the wait allowed.
    FailedAcquire,
    /// Redis gave no verdict; a `FallbackAcquire` follows.
    BackendFailure(BackendFailure),
    /// The failure policy decided instead of Redis.
    FallbackAcquire {
        /// The policy that decided.
        policy: FailurePolicy,
        /// Whether it granted.
        granted: bool,
    },
}

impl DistributedRateLimiterEventKind {
    /// A short, stable label: `successful_acquire`, `failed_acquire`,
    /// `backend_failure`, `fallback_acquire`.
    pub const fn as_str(self) -> &'static str {
        match self {
            DistributedRateLimiterEventKind::SuccessfulAcquire => "successful_acquire",
            DistributedRateLimiterEventKind::FailedAcquire => "failed_acquire",
            DistributedRateLimiterEventKind::BackendFailure(_) => "backend_failure",
            DistributedRateLimiterEventKind::FallbackAcquire { .. } => "fallback_acquire",
        }
    }
}

impl fmt::Display for DistributedRateLimiterEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DistributedRateLimiterEventKind::BackendFailure(why) => {
                write!(f, "backend_failure ({why})")
            }
            DistributedRateLimiterEventKind::FallbackAcquire { policy, granted } => write!(
                f,
                "fallback_acquire ({policy}: {})",
                if *granted { "granted" } else { "refused" }
            ),
            other => f.write_str(other.as_str()),
        }
    }
}

impl DistributedRateLimiterEvent {
    pub(crate) fn acquisition(
        name: &Arc<str>,
        kind: DistributedRateLimiterEventKind,
        permits: u32,
    ) -> Self {
        Event::with_detail(name, kind, (permits, None))
    }

    pub(crate) fn failure(
        name: &Arc<str>,
        kind: DistributedRateLimiterEventKind,
        permits: u32,
        cause: &Arc<str>,
    ) -> Self {
        Event::with_detail(name, kind, (permits, Some(Arc::clone(cause))))
    }

    /// For a `BackendFailure`: what went wrong, in words (`connection
    /// refused: …`, `authentication failed: …`, `not a Redis server …`, `no
    /// answer within 100ms`). Never contains the URL's password.
    pub fn cause(&self) -> Option<&str> {
        self.detail().1.as_deref()
    }

    /// How many permits were asked for.
    pub fn permits(&self) -> u32 {
        self.detail().0
    }
}

/// The detail is the permit count and, for a backend failure, its cause
/// ([`DistributedRateLimiterEvent::permits`],
/// [`cause`](DistributedRateLimiterEvent::cause)).
impl EventKind for DistributedRateLimiterEventKind {
    type Detail = (u32, Option<Arc<str>>);
    const EVENT: &'static str = "DistributedRateLimiterEvent";
    const SOURCE: &'static str = "distributed rate limiter";

    /// `SUCCESSFUL_ACQUIRE`, `FAILED_ACQUIRE`, `BACKEND_FAILURE`,
    /// `FALLBACK_ACQUIRE`.
    fn label(&self) -> &'static str {
        match self {
            DistributedRateLimiterEventKind::SuccessfulAcquire => "SUCCESSFUL_ACQUIRE",
            DistributedRateLimiterEventKind::FailedAcquire => "FAILED_ACQUIRE",
            DistributedRateLimiterEventKind::BackendFailure(_) => "BACKEND_FAILURE",
            DistributedRateLimiterEventKind::FallbackAcquire { .. } => "FALLBACK_ACQUIRE",
        }
    }

    /// Never: every event is one acquisition's (a backend outage shows as
    /// one failure per call, counted in the metrics).
    fn is_notable(&self) -> bool {
        false
    }

    fn fmt_line(
        &self,
        (permits, cause): &(u32, Option<Arc<str>>),
        f: &mut fmt::Formatter<'_>,
    ) -> fmt::Result {
        write!(f, ": {self} of {permits} permit(s)")?;
        match cause {
            Some(cause) => write!(f, ": {cause}"),
            None => Ok(()),
        }
    }

    fn fmt_detail((permits, cause): &(u32, Option<Arc<str>>), out: &mut fmt::DebugStruct<'_, '_>) {
        out.field("permits", permits)
            .field("cause", &cause.as_deref());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_formats_are_pinned() {
        let name = Arc::from("checkout");
        let e = DistributedRateLimiterEvent::acquisition(
            &name,
            DistributedRateLimiterEventKind::FallbackAcquire {
                policy: FailurePolicy::FailClosed,
                granted: false,
            },
            2,
        );
        assert_eq!(
            e.to_string(),
            "distributed rate limiter 'checkout': fallback_acquire (fail_closed: refused) of 2 permit(s)"
        );
        let e = DistributedRateLimiterEvent::acquisition(
            &name,
            DistributedRateLimiterEventKind::BackendFailure(BackendFailure::Timeout),
            1,
        );
        assert_eq!(
            format!("{e:?}"),
            "DistributedRateLimiterEvent { name: \"checkout\", kind: BackendFailure(Timeout), permits: 1, cause: None }"
        );
        assert_eq!(e.kind().as_str(), "backend_failure");
    }
}
