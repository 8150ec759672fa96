//! One primitive around a call that is itself protected (it already returns
//! `Result<T, Error<E>>`): the refusal of an inner primitive stays a refusal,
//! and the result is one flat `Error<E>`. The innermost layer of an expansion
//! calls the primitive's own `call` / `call_async` instead; a breaker or a
//! retry around a stack uses its own `call_nested` / `call_async_nested`,
//! which classify `Error::Call(e)` as `e` (an `ignore_error` written for `E`
//! keeps its meaning) and an inner refusal as that refusal.

use std::future::Future;

use resil_core::bulkhead::{AdaptiveBulkhead, Bulkhead};
use resil_core::chaos::Chaos;
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

/// [`around_bulkhead`] for a future (polled in place, no extra layer).
#[inline]
pub fn around_bulkhead_async<'a, T, E, F>(
    bulkhead: &'a Bulkhead,
    inner: F,
) -> impl Future<Output = Result<T, Error<E>>> + 'a
where
    F: Future<Output = Result<T, Error<E>>> + 'a,
    T: 'a,
    E: 'a,
{
    bulkhead.call_async_nested(inner)
}

/// The adaptive bulkhead (`kind = "adaptive"`) around an inner stack.
#[inline]
pub fn around_adaptive_bulkhead<T, E>(
    bulkhead: &AdaptiveBulkhead,
    f: impl FnOnce() -> Result<T, Error<E>>,
) -> Result<T, Error<E>> {
    bulkhead.call(f).map_err(Error::flatten)
}

/// [`around_adaptive_bulkhead`] for a future.
#[inline]
pub fn around_adaptive_bulkhead_async<'a, T, E, F>(
    bulkhead: &'a AdaptiveBulkhead,
    inner: F,
) -> impl Future<Output = Result<T, Error<E>>> + 'a
where
    F: Future<Output = Result<T, Error<E>>> + 'a,
    T: 'a,
    E: 'a,
{
    bulkhead.call_async_nested(inner)
}

/// Chaos around an inner stack (an `order = [...]` that does not put it
/// innermost). Sync, the inner error type is `Error<E>`, so of the faults
/// only latency and results for `T` apply; the async form injects errors
/// for `E` too.
#[inline]
pub fn around_chaos<T: 'static, E: 'static>(
    chaos: &Chaos,
    f: impl FnOnce() -> Result<T, Error<E>>,
) -> Result<T, Error<E>> {
    chaos.call(f).map_err(Error::flatten)
}

/// [`around_chaos`] for a future.
#[inline]
pub fn around_chaos_async<'a, T: 'static, E: 'static, F>(
    chaos: &'a Chaos,
    inner: F,
) -> impl Future<Output = Result<T, Error<E>>> + 'a
where
    F: Future<Output = Result<T, Error<E>>> + 'a,
{
    chaos.call_async_nested(inner)
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
pub fn around_rate_limiter_async<'a, T: 'static, E: 'static, F>(
    limiter: &'a SiteRateLimiter,
    inner: F,
) -> impl Future<Output = Result<T, Error<E>>> + 'a
where
    F: Future<Output = Result<T, Error<E>>> + 'a,
{
    limiter.call_async_nested(inner)
}

/// The rate limiter weighing each call `permits`, around an inner stack.
#[inline]
pub fn around_rate_limiter_n<T: 'static, E: 'static>(
    limiter: &SiteRateLimiter,
    permits: u32,
    f: impl FnOnce() -> Result<T, Error<E>>,
) -> Result<T, Error<E>> {
    limiter.call_n(permits, f).map_err(Error::flatten)
}

/// [`around_rate_limiter_n`] for a future.
#[inline]
pub fn around_rate_limiter_n_async<'a, T: 'static, E: 'static, F>(
    limiter: &'a SiteRateLimiter,
    permits: u32,
    inner: F,
) -> impl Future<Output = Result<T, Error<E>>> + 'a
where
    F: Future<Output = Result<T, Error<E>>> + 'a,
{
    limiter.call_async_nested_n(permits, inner)
}

/// The time limiter around an inner stack (polled in place).
#[inline]
pub fn around_time_limiter_async<'a, T, E, F>(
    limiter: &'a TimeLimiter,
    inner: F,
) -> impl Future<Output = Result<T, Error<E>>> + 'a
where
    F: Future<Output = Result<T, Error<E>>> + 'a,
{
    limiter.call_async_nested(inner)
}
