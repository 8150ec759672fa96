//! The RAII slot a call holds while it runs, and why acquiring one failed.

use std::fmt;

use super::shadow::ShadowHold;
use super::Inner;
use crate::error::{BulkheadFull, DeadlineExceeded, Error};

/// A slot in a [`Bulkhead`](super::Bulkhead), held until dropped.
///
/// Dropping it gives the slot back (to the longest-waiting caller first, when
/// fair) and publishes a `CallFinished` event. Success, error, panic and
/// cancellation all release through this one `Drop`: keep the permit inside the
/// future that does the work, and the slot is held exactly as long as the work.
///
/// ```
/// use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
///
/// let bulkhead = Bulkhead::new("reports", BulkheadConfig::builder().max_concurrent_calls(1).build().unwrap());
/// let permit = bulkhead.try_acquire_permission().unwrap();
/// assert_eq!(bulkhead.available_concurrent_calls(), 0);
/// assert!(bulkhead.try_acquire_permission().is_err());
/// drop(permit);
/// assert_eq!(bulkhead.available_concurrent_calls(), 1);
/// ```
#[must_use = "the slot is released as soon as the permit is dropped"]
pub struct BulkheadPermit<'a> {
    inner: &'a Inner,
    /// The slot the call holds in the shadow's count, if a shadow admitted
    /// it: released by its own `Drop`, right after the live slot.
    _shadow: Option<ShadowHold>,
}

impl<'a> BulkheadPermit<'a> {
    /// Wraps a slot already taken from `inner`'s semaphore (and one of its
    /// shadow's).
    #[inline]
    pub(crate) fn new(inner: &'a Inner, shadow: Option<ShadowHold>) -> Self {
        BulkheadPermit {
            inner,
            _shadow: shadow,
        }
    }

    /// The name of the bulkhead this slot belongs to.
    pub fn bulkhead_name(&self) -> &str {
        &self.inner.name
    }
}

impl Drop for BulkheadPermit<'_> {
    #[inline]
    fn drop(&mut self) {
        self.inner.finish();
    }
}

impl fmt::Debug for BulkheadPermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadPermit")
            .field("bulkhead", &&*self.inner.name)
            .finish()
    }
}

/// Why [`acquire_permission`](super::Bulkhead::acquire_permission) gave no slot.
///
/// Converts into [`Error<E>`] for any `E`, so `?` works in a function returning
/// `Result<_, resil::Error<E>>`.
#[derive(Clone, PartialEq, Eq)]
pub enum AcquireError {
    /// No slot came free within `max_wait_duration`.
    Full(BulkheadFull),
    /// The task's deadline was spent, or ran out while waiting (the wait had
    /// been cut to it).
    DeadlineExceeded(DeadlineExceeded),
}

impl AcquireError {
    /// The same refusal as a [`resil::Error`](Error).
    pub fn into_error<E>(self) -> Error<E> {
        match self {
            AcquireError::Full(r) => Error::BulkheadFull(r),
            AcquireError::DeadlineExceeded(r) => Error::DeadlineExceeded(r),
        }
    }
}

impl<E> From<AcquireError> for Error<E> {
    #[inline]
    fn from(e: AcquireError) -> Self {
        e.into_error()
    }
}

impl fmt::Display for AcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AcquireError::Full(r) => fmt::Display::fmt(r, f),
            AcquireError::DeadlineExceeded(r) => fmt::Display::fmt(r, f),
        }
    }
}

impl fmt::Debug for AcquireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AcquireError::Full(r) => f.debug_tuple("Full").field(r).finish(),
            AcquireError::DeadlineExceeded(r) => {
                f.debug_tuple("DeadlineExceeded").field(r).finish()
            }
        }
    }
}

impl std::error::Error for AcquireError {}
