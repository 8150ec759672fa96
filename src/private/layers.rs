//! One primitive around a call that is itself protected (it already returns
//! `Result<T, Error<E>>`): the refusal of an inner primitive stays a refusal,
//! and the result is one flat `Error<E>`. The innermost layer of an expansion
//! calls the primitive's own `call` / `call_async` instead.

use std::future::Future;

use resil_core::bulkhead::Bulkhead;
use resil_core::circuit_breaker::CircuitBreaker;
use resil_core::rate_limiter::RateLimiter;
use resil_core::time_limiter::TimeLimiter;
use resil_core::Error;

/// The breaker around an inner stack. `Error::Call(e)` is classified as `e`
/// (so an `ignore_error` predicate written for `E` keeps its meaning), an
/// inner refusal as the refusal.
#[inline]
pub fn around_circuit_breaker<T: 'static, E: 'static>(
    breaker: &CircuitBreaker,
    f: impl FnOnce() -> Result<T, Error<E>>,
) -> Result<T, Error<E>> {
    let permit = breaker
        .try_acquire_permission()
        .map_err(Error::CallNotPermitted)?;
    let result = f();
    record(permit, &result);
    result
}

/// [`around_circuit_breaker`] for a future.
#[inline]
pub async fn around_circuit_breaker_async<T: 'static, E: 'static>(
    breaker: &CircuitBreaker,
    inner: impl Future<Output = Result<T, Error<E>>>,
) -> Result<T, Error<E>> {
    let permit = breaker
        .try_acquire_permission()
        .map_err(Error::CallNotPermitted)?;
    let result = inner.await;
    record(permit, &result);
    result
}

#[inline]
fn record<T: 'static, E: 'static>(
    permit: resil_core::circuit_breaker::Permit<'_>,
    result: &Result<T, Error<E>>,
) {
    match result {
        Ok(value) => permit.on_value(value),
        Err(Error::Call(e)) => permit.on_error(e),
        Err(refusal) => permit.on_error(refusal),
    }
}

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
pub fn around_rate_limiter<T, E>(
    limiter: &RateLimiter,
    f: impl FnOnce() -> Result<T, Error<E>>,
) -> Result<T, Error<E>> {
    limiter.call(f).map_err(Error::flatten)
}

/// [`around_rate_limiter`] for a future.
#[inline]
pub async fn around_rate_limiter_async<T, E>(
    limiter: &RateLimiter,
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
