//! One primitive around a call that is itself protected (it already returns
//! `Result<T, Error<E>>`): the refusal of an inner primitive stays a refusal,
//! and the result is one flat `Error<E>`. The innermost layer of an expansion
//! calls the primitive's own `call` / `call_async` instead; a breaker or a
//! retry around a stack uses its own `call_nested` / `call_async_nested`,
//! which classify `Error::Call(e)` as `e` (an `ignore_error` written for `E`
//! keeps its meaning) and an inner refusal as that refusal.

use std::future::Future;

use resil_core::bulkhead::Bulkhead;
use resil_core::time_limiter::TimeLimiter;
use resil_core::Error;

use super::SiteRateLimiter;

/// The semaphore bulkhead around an inner stack.
#[inline]
pub fn around_bulkhead<T, E>(
    bulkhead: &Bulkhead,
    f: impl FnOnce() -> Result<T, Error<E>>,
) -> Result<T, Error<E>> {
    bulkhead.call(f).map_err(Error::flatten)
}

/// [`around_bulkhead`] for a future.
#[inline]
pub async fn around_bulkhead_async<T, E>(
    bulkhead: &Bulkhead,
    inner: impl Future<Output = Result<T, Error<E>>>,
) -> Result<T, Error<E>> {
    bulkhead.call_async(inner).await.map_err(Error::flatten)
}

/// The rate limiter around an inner stack.
#[inline]
pub fn around_rate_limiter<T: 'static, E: 'static>(
    limiter: &SiteRateLimiter,
    f: impl FnOnce() -> Result<T, Error<E>>,
) -> Result<T, Error<E>> {
    limiter.call(f).map_err(Error::flatten)
}

/// [`around_rate_limiter`] for a future.
#[inline]
pub async fn around_rate_limiter_async<T: 'static, E: 'static>(
    limiter: &SiteRateLimiter,
    inner: impl Future<Output = Result<T, Error<E>>>,
) -> Result<T, Error<E>> {
    limiter.call_async(inner).await.map_err(Error::flatten)
}

/// The time limiter around an inner stack.
#[inline]
pub async fn around_time_limiter_async<T, E>(
    limiter: &TimeLimiter,
    inner: impl Future<Output = Result<T, Error<E>>>,
) -> Result<T, Error<E>> {
    limiter.call_async(inner).await.map_err(Error::flatten)
}
