//! What a distributed rate limiter reports to its subscribers.

use std::fmt;
use std::sync::Arc;

use super::backend::BackendFailure;
use super::config::FailurePolicy;

/// An acquisition at a [`DistributedRateLimiter`](super::DistributedRateLimiter),
/// published to [`subscribe`](super::DistributedRateLimiter::subscribe)rs.
#[derive(Clone, PartialEq, Eq)]
pub struct DistributedRateLimiterEvent {
    name: Arc<str>,
    kind: DistributedRateLimiterEventKind,
    permits: u32,
    cause: Option<Arc<str>>,
}

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
    pub(crate) fn new(
        name: &Arc<str>,
        kind: DistributedRateLimiterEventKind,
        permits: u32,
    ) -> Self {
        DistributedRateLimiterEvent {
            name: Arc::clone(name),
            kind,
            permits,
            cause: None,
        }
    }

    pub(crate) fn with_cause(mut self, cause: &Arc<str>) -> Self {
        self.cause = Some(Arc::clone(cause));
        self
    }

    /// For a `BackendFailure`: what went wrong, in words (`connection
    /// refused: …`, `authentication failed: …`, `not a Redis server …`, `no
    /// answer within 100ms`). Never contains the URL's password.
    pub fn cause(&self) -> Option<&str> {
        self.cause.as_deref()
    }

    /// The limiter's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What happened.
    pub fn kind(&self) -> DistributedRateLimiterEventKind {
        self.kind
    }

    /// How many permits were asked for.
    pub fn permits(&self) -> u32 {
        self.permits
    }
}

impl fmt::Debug for DistributedRateLimiterEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DistributedRateLimiterEvent")
            .field("name", &&*self.name)
            .field("kind", &self.kind)
            .field("permits", &self.permits)
            .field("cause", &self.cause.as_deref())
            .finish()
    }
}

impl fmt::Display for DistributedRateLimiterEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "distributed rate limiter '{}': {} of {} permit(s)",
            self.name, self.kind, self.permits
        )?;
        match &self.cause {
            Some(cause) => write!(f, ": {cause}"),
            None => Ok(()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_formats_are_pinned() {
        let name = Arc::from("checkout");
        let e = DistributedRateLimiterEvent::new(
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
        let e = DistributedRateLimiterEvent::new(
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
