//! What the layer returns for a refusal and for the inner service's error.

use std::time::Duration;

use resil_core::{Error, ErrorKind, Rejection};

/// A request one of the layer's aspects refused (or a time limiter stopped
/// waiting for), with how long a client should wait before trying again
/// when the refusing instance knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    rejection: Rejection,
    retry_after: Option<Duration>,
    quota: Option<Quota>,
}

/// The refusing rate limiter's quota, for a 429's `RateLimit-Policy` and
/// `RateLimit` fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Quota {
    /// Permits per window (`limit_for_period`).
    pub limit: u32,
    /// The window (`limit_refresh_period`).
    pub window: Duration,
    /// Permits left now (0 when refused, unless reservations came back).
    pub remaining: u32,
}

impl Refusal {
    /// A refusal, with the wait a client should observe (if known).
    pub fn new(rejection: Rejection, retry_after: Option<Duration>) -> Self {
        Refusal {
            rejection,
            retry_after,
            quota: None,
        }
    }

    /// The same refusal, with the refusing rate limiter's quota.
    pub fn with_quota(mut self, quota: Quota) -> Self {
        self.quota = Some(quota);
        self
    }

    /// The refusing rate limiter's quota, for a rate-limit refusal.
    pub fn quota(&self) -> Option<Quota> {
        self.quota
    }

    /// The refusal itself (which instance, and why).
    pub fn rejection(&self) -> &Rejection {
        &self.rejection
    }

    /// The kind of refusal (`CallNotPermitted`, `RequestNotPermitted`, …).
    pub fn kind(&self) -> ErrorKind {
        self.rejection.kind()
    }

    /// The open breaker's remaining wait, or the rate limiter's time to its
    /// next permit; `None` for other refusals (and a FORCED_OPEN breaker).
    pub fn retry_after(&self) -> Option<Duration> {
        self.retry_after
    }

    /// The refusal as a `resil::Error`.
    pub fn into_error<E>(self) -> Error<E> {
        self.rejection.into()
    }
}

/// Turns the layer's outcome into the service's `Result`.
pub trait Respond<Res, E>: Send + Sync + 'static {
    /// The layer's error type.
    type Error;
    /// The inner service's error (also from `poll_ready`).
    fn error(&self, error: E) -> Self::Error;
    /// A refusal: a response (a server's 503) or an error.
    fn refused(&self, refusal: Refusal) -> Result<Res, Self::Error>;
}

/// Refusals as errors: the layer's error is `resil::Error<E>` (the default;
/// for clients).
#[derive(Debug, Clone, Copy, Default)]
pub struct AsErrors;

impl<Res, E> Respond<Res, E> for AsErrors {
    type Error = Error<E>;

    #[inline]
    fn error(&self, error: E) -> Error<E> {
        Error::Call(error)
    }

    fn refused(&self, refusal: Refusal) -> Result<Res, Error<E>> {
        Err(refusal.into_error())
    }
}
