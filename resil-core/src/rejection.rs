//! [`Rejection`]: every refusal by a resil primitive, as one value.
//!
//! A protected fn returns its own error type `E`. When one of its primitives
//! refuses the call and no fallback takes over, the refusal has to become an
//! `E`: the attribute macros convert it with `E: From<Rejection>`, so one line
//! in the user's error type (a variant holding a `Rejection`, e.g. thiserror's
//! `#[error(transparent)] Rejected(#[from] resil::Rejection)`) lets a caller
//! use `?` on a protected fn.

use std::fmt;

use crate::error::{
    BulkheadFull, CallNotPermitted, DeadlineExceeded, Error, MaxRetriesExceeded,
    RequestNotPermitted, RetryBudgetExhausted, Throttled, Timeout,
};
use crate::ErrorKind;

/// A refusal by a resil primitive: every [`Error`] variant but `Call`.
///
/// ```
/// use resil_core::error::Timeout;
/// use resil_core::rejection::Rejection;
/// use resil_core::{Error, ErrorKind};
/// use std::time::Duration;
///
/// let err: Error<std::io::Error> = Timeout::new("slow", Duration::from_secs(1)).into();
/// let rejection = err.into_rejection().unwrap();
/// assert_eq!(rejection.kind(), ErrorKind::Timeout);
/// assert_eq!(rejection.name(), Some("slow"));
/// assert_eq!(rejection.to_string(), "time limiter 'slow' timed out after 1s");
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Rejection {
    /// A circuit breaker refused the call.
    CallNotPermitted(CallNotPermitted),
    /// A bulkhead had no free slot.
    BulkheadFull(BulkheadFull),
    /// A rate limiter refused the call.
    RequestNotPermitted(RequestNotPermitted),
    /// A time limiter stopped waiting.
    Timeout(Timeout),
    /// A retry budget refused a retry.
    RetryBudgetExhausted(RetryBudgetExhausted),
    /// A retry ran out of attempts on a result it retries on.
    MaxRetriesExceeded(MaxRetriesExceeded),
    /// The end-to-end deadline was spent.
    DeadlineExceeded(DeadlineExceeded),
    /// An adaptive throttler shed the call locally.
    Throttled(Throttled),
}

impl Rejection {
    /// The short, stable label of this refusal (never [`ErrorKind::Call`]).
    pub fn kind(&self) -> ErrorKind {
        self.as_error().kind()
    }

    /// The name of the instance that refused (`None` only for a deadline spent
    /// outside any instance).
    pub fn name(&self) -> Option<&str> {
        match self {
            Rejection::CallNotPermitted(r) => Some(r.name()),
            Rejection::BulkheadFull(r) => Some(r.name()),
            Rejection::RequestNotPermitted(r) => Some(r.name()),
            Rejection::Timeout(r) => Some(r.name()),
            Rejection::RetryBudgetExhausted(r) => Some(r.name()),
            Rejection::MaxRetriesExceeded(r) => Some(r.name()),
            Rejection::DeadlineExceeded(r) => r.name(),
            Rejection::Throttled(r) => Some(r.name()),
        }
    }

    fn as_error(&self) -> Error<std::convert::Infallible> {
        self.clone().into()
    }
}

impl<E> From<Rejection> for Error<E> {
    fn from(r: Rejection) -> Self {
        match r {
            Rejection::CallNotPermitted(r) => Error::CallNotPermitted(r),
            Rejection::BulkheadFull(r) => Error::BulkheadFull(r),
            Rejection::RequestNotPermitted(r) => Error::RequestNotPermitted(r),
            Rejection::Timeout(r) => Error::Timeout(r),
            Rejection::RetryBudgetExhausted(r) => Error::RetryBudgetExhausted(r),
            Rejection::MaxRetriesExceeded(r) => Error::MaxRetriesExceeded(r),
            Rejection::DeadlineExceeded(r) => Error::DeadlineExceeded(r),
            Rejection::Throttled(r) => Error::Throttled(r),
        }
    }
}

impl<E> Error<E> {
    /// The refusal, or the call's own error as `Err`.
    pub fn into_rejection(self) -> Result<Rejection, E> {
        match self {
            Error::Call(e) => Err(e),
            Error::CallNotPermitted(r) => Ok(Rejection::CallNotPermitted(r)),
            Error::BulkheadFull(r) => Ok(Rejection::BulkheadFull(r)),
            Error::RequestNotPermitted(r) => Ok(Rejection::RequestNotPermitted(r)),
            Error::Timeout(r) => Ok(Rejection::Timeout(r)),
            Error::RetryBudgetExhausted(r) => Ok(Rejection::RetryBudgetExhausted(r)),
            Error::MaxRetriesExceeded(r) => Ok(Rejection::MaxRetriesExceeded(r)),
            Error::DeadlineExceeded(r) => Ok(Rejection::DeadlineExceeded(r)),
            Error::Throttled(r) => Ok(Rejection::Throttled(r)),
        }
    }
}

impl<E: From<Rejection>> Error<E> {
    /// The protected fn's own error again: the call's error as it is, a
    /// refusal converted by `E: From<Rejection>` (the same conversion a
    /// protected fn without a fallback makes). A fallback that takes
    /// `resil::Error<E>` and decides not to handle what it got hands it back
    /// with `Err(why.into_error())`.
    ///
    /// ```
    /// use resil_core::error::BulkheadFull;
    /// use resil_core::rejection::Rejection;
    /// use resil_core::Error;
    ///
    /// #[derive(Debug, PartialEq)]
    /// enum PriceError {
    ///     NotFound,
    ///     Rejected(Rejection),
    /// }
    /// impl From<Rejection> for PriceError {
    ///     fn from(r: Rejection) -> Self {
    ///         PriceError::Rejected(r)
    ///     }
    /// }
    ///
    /// assert_eq!(Error::Call(PriceError::NotFound).into_error(), PriceError::NotFound);
    /// let full: Error<PriceError> = BulkheadFull::new("prices").into();
    /// assert_eq!(
    ///     full.into_error(),
    ///     PriceError::Rejected(Rejection::BulkheadFull(BulkheadFull::new("prices")))
    /// );
    /// ```
    pub fn into_error(self) -> E {
        match self.into_rejection() {
            Ok(rejection) => E::from(rejection),
            Err(e) => e,
        }
    }
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::CallNotPermitted(r) => fmt::Display::fmt(r, f),
            Rejection::BulkheadFull(r) => fmt::Display::fmt(r, f),
            Rejection::RequestNotPermitted(r) => fmt::Display::fmt(r, f),
            Rejection::Timeout(r) => fmt::Display::fmt(r, f),
            Rejection::RetryBudgetExhausted(r) => fmt::Display::fmt(r, f),
            Rejection::MaxRetriesExceeded(r) => fmt::Display::fmt(r, f),
            Rejection::DeadlineExceeded(r) => fmt::Display::fmt(r, f),
            Rejection::Throttled(r) => fmt::Display::fmt(r, f),
        }
    }
}

impl fmt::Debug for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::CallNotPermitted(r) => fmt::Debug::fmt(r, f),
            Rejection::BulkheadFull(r) => fmt::Debug::fmt(r, f),
            Rejection::RequestNotPermitted(r) => fmt::Debug::fmt(r, f),
            Rejection::Timeout(r) => fmt::Debug::fmt(r, f),
            Rejection::RetryBudgetExhausted(r) => fmt::Debug::fmt(r, f),
            Rejection::MaxRetriesExceeded(r) => fmt::Debug::fmt(r, f),
            Rejection::DeadlineExceeded(r) => fmt::Debug::fmt(r, f),
            Rejection::Throttled(r) => fmt::Debug::fmt(r, f),
        }
    }
}

impl std::error::Error for Rejection {}

/// A rejection as an `io::Error` of kind [`Other`](std::io::ErrorKind::Other)
/// carrying it, so a fn returning `std::io::Result<T>` can be protected as it
/// is (the orphan rule keeps users from writing this impl themselves). The
/// rejection is recovered with `downcast`:
///
/// ```
/// use resil_core::error::BulkheadFull;
/// use resil_core::rejection::Rejection;
///
/// let rejection = Rejection::BulkheadFull(BulkheadFull::new("disk"));
/// let err = std::io::Error::from(rejection.clone());
/// assert_eq!(err.kind(), std::io::ErrorKind::Other);
/// assert_eq!(err.to_string(), rejection.to_string());
/// assert_eq!(err.downcast::<Rejection>().unwrap(), rejection);
/// ```
impl From<Rejection> for std::io::Error {
    fn from(rejection: Rejection) -> Self {
        std::io::Error::other(rejection)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuit_breaker::State;

    #[test]
    fn a_rejection_round_trips_through_error_and_keeps_its_display_and_debug() {
        let r = Rejection::CallNotPermitted(CallNotPermitted::new("inventory", State::Open));
        let e: Error<u8> = r.clone().into();
        assert_eq!(e.kind(), ErrorKind::CallNotPermitted);
        assert_eq!(e.clone().into_rejection(), Ok(r.clone()));
        assert_eq!(r.to_string(), e.to_string());
        assert_eq!(
            format!("{r:?}"),
            "CallNotPermitted { name: \"inventory\", state: Open }"
        );
        assert_eq!(Error::Call(7u8).into_rejection(), Err(7));
        assert_eq!(
            Rejection::DeadlineExceeded(DeadlineExceeded::new()).name(),
            None
        );
    }

    #[test]
    fn into_error_gives_the_call_s_error_back_and_converts_a_refusal() {
        let own = std::io::Error::new(std::io::ErrorKind::NotFound, "no such sku");
        let back = Error::Call(own).into_error();
        assert_eq!(back.kind(), std::io::ErrorKind::NotFound);
        assert_eq!(back.to_string(), "no such sku");
        let refused: Error<std::io::Error> = BulkheadFull::new("disk").into();
        let back = refused.into_error();
        assert_eq!(back.kind(), std::io::ErrorKind::Other);
        assert_eq!(
            back.downcast::<Rejection>().unwrap(),
            Rejection::BulkheadFull(BulkheadFull::new("disk"))
        );
    }
}
