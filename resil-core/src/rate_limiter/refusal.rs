//! Why a rate limiter did not grant permits.

use std::fmt;

use crate::error::{DeadlineExceeded, Error, ErrorKind, RequestNotPermitted, SharedName};

/// Why [`acquire_permission`](super::RateLimiter::acquire_permission) (and its
/// siblings) granted nothing. In every case no permit was consumed.
///
/// Converts into [`Error<E>`](crate::Error) with `?`: `NotPermitted` and
/// `ExceedsLimit` become `RequestNotPermitted`, `DeadlineExceeded` stays itself.
///
/// ```
/// use std::time::Duration;
/// use resil_core::rate_limiter::{AcquireError, RateLimiter, RateLimiterConfig};
///
/// let config = RateLimiterConfig::builder()
///     .limit_for_period(2)
///     .limit_refresh_period(Duration::from_secs(1))
///     .build()
///     .unwrap();
/// let limiter = RateLimiter::new("read", config);
/// let err = limiter.acquire_permission(3).unwrap_err();
/// assert!(matches!(err, AcquireError::ExceedsLimit(_)));
/// assert_eq!(
///     err.to_string(),
///     "rate limiter 'read' cannot grant 3 permits at once: its limit_for_period is 2"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AcquireError {
    /// The permits would come free only after `timeout_duration`.
    NotPermitted(RequestNotPermitted),
    /// The permits would come free within `timeout_duration`, but not before the
    /// task's [deadline](crate::deadline): refused before reserving anything.
    DeadlineExceeded(DeadlineExceeded),
    /// More permits than `limit_for_period` were asked for at once: no cycle
    /// ever holds that many, so no wait could grant them.
    ExceedsLimit(ExceedsLimit),
}

impl AcquireError {
    /// The [`ErrorKind`] this refusal becomes in an [`Error`].
    pub fn kind(&self) -> ErrorKind {
        match self {
            AcquireError::DeadlineExceeded(_) => ErrorKind::DeadlineExceeded,
            _ => ErrorKind::RequestNotPermitted,
        }
    }
}

impl fmt::Display for AcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AcquireError::NotPermitted(r) => fmt::Display::fmt(r, f),
            AcquireError::DeadlineExceeded(r) => fmt::Display::fmt(r, f),
            AcquireError::ExceedsLimit(r) => fmt::Display::fmt(r, f),
        }
    }
}

impl std::error::Error for AcquireError {}

impl<E> From<AcquireError> for Error<E> {
    fn from(err: AcquireError) -> Self {
        match err {
            AcquireError::NotPermitted(r) => Error::RequestNotPermitted(r),
            AcquireError::DeadlineExceeded(r) => Error::DeadlineExceeded(r),
            AcquireError::ExceedsLimit(r) => {
                Error::RequestNotPermitted(RequestNotPermitted::by(&r.inner.name))
            }
        }
    }
}

/// More permits were asked for at once than a cycle holds (or, for a
/// [`RefillRateLimiter`](super::RefillRateLimiter), than its bucket holds).
#[derive(Clone, PartialEq, Eq)]
pub struct ExceedsLimit {
    /// Boxed: a caller asking for more than a cycle holds is a mistake, not
    /// traffic, and the box keeps every [`AcquireError`] (and so the result of
    /// every acquisition on the hot path) at two words.
    inner: Box<Exceeds>,
}

#[derive(Clone, PartialEq, Eq)]
struct Exceeds {
    name: SharedName,
    requested: u32,
    limit_for_period: u32,
    /// The setting that bounds it: `limit_for_period` or `permit_capacity`.
    field: &'static str,
}

impl ExceedsLimit {
    pub(crate) fn new(name: &SharedName, requested: u32, limit_for_period: u32) -> Self {
        ExceedsLimit::bounded_by(name, requested, limit_for_period, "limit_for_period")
    }

    /// A refill limiter's refusal: more than `permit_capacity` at once.
    pub(crate) fn capacity(name: &SharedName, requested: u32, permit_capacity: u32) -> Self {
        ExceedsLimit::bounded_by(name, requested, permit_capacity, "permit_capacity")
    }

    /// More than `limit` at once, `field` being the setting that bounds it
    /// (`burst` for a GCRA limiter on Redis).
    #[cold]
    pub(crate) fn bounded_by(
        name: &SharedName,
        requested: u32,
        limit: u32,
        field: &'static str,
    ) -> Self {
        ExceedsLimit {
            inner: Box::new(Exceeds {
                name: name.clone(),
                requested,
                limit_for_period: limit,
                field,
            }),
        }
    }

    /// The rate limiter's name.
    #[inline]
    pub fn name(&self) -> &str {
        self.inner.name.as_str()
    }

    /// How many permits were asked for.
    #[inline]
    pub fn requested(&self) -> u32 {
        self.inner.requested
    }

    /// The limit they exceed: `limit_for_period`, or a refill limiter's
    /// `permit_capacity`.
    #[inline]
    pub fn limit_for_period(&self) -> u32 {
        self.inner.limit_for_period
    }
}

impl fmt::Display for ExceedsLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "rate limiter '{}' cannot grant {} permits at once: its {} is {}",
            self.inner.name, self.inner.requested, self.inner.field, self.inner.limit_for_period
        )
    }
}

impl fmt::Debug for ExceedsLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ExceedsLimit")
            .field("name", &self.name())
            .field("requested", &self.inner.requested)
            .field(self.inner.field, &self.inner.limit_for_period)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_display_stably_and_convert_to_the_flat_error() {
        let name = SharedName::new("read");
        let too_many = AcquireError::ExceedsLimit(ExceedsLimit::new(&name, 3, 2));
        assert_eq!(too_many.kind(), ErrorKind::RequestNotPermitted);
        assert_eq!(
            format!("{too_many:?}"),
            "ExceedsLimit(ExceedsLimit { name: \"read\", requested: 3, limit_for_period: 2 })"
        );
        let err: Error<()> = too_many.into();
        assert_eq!(
            err,
            Error::RequestNotPermitted(RequestNotPermitted::new("read"))
        );

        let late = AcquireError::DeadlineExceeded(DeadlineExceeded::by("read"));
        assert_eq!(late.kind(), ErrorKind::DeadlineExceeded);
        assert_eq!(
            late.to_string(),
            "deadline exceeded: 'read' cannot finish within the remaining end-to-end budget"
        );
        let err: Error<()> = late.into();
        assert_eq!(err.kind(), ErrorKind::DeadlineExceeded);

        let no = AcquireError::NotPermitted(RequestNotPermitted::new("read"));
        assert_eq!(
            no.to_string(),
            "rate limiter 'read' does not permit further calls"
        );
    }
}
