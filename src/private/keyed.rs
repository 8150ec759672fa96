//! A keyed attribute's family (`key = <expr>`): looked up once per call
//! site, the key's handle once per call, and each kind around an inner
//! stack.

use std::future::Future;

pub use resil_core::keyed::{
    BreakerHandle, BulkheadHandle, KeyedBulkhead, KeyedCircuitBreaker, KeyedRateLimiter,
    LimiterHandle,
};
use resil_core::keyed::{BudgetHandle, Key, KeyedRetryBudget};
pub use resil_core::retry::OnBudget;
use resil_core::retry::Retry;
use resil_core::Error;
use resil_registry::{registry, Handle};

/// The process-wide registry's keyed rate-limiter family `name`.
#[inline(never)]
pub fn keyed_rate_limiter(name: &str) -> KeyedRateLimiter {
    registry().keyed_rate_limiter(name)
}

/// The process-wide registry's keyed circuit-breaker family `name`.
#[inline(never)]
pub fn keyed_circuit_breaker(name: &str) -> KeyedCircuitBreaker {
    registry().keyed_circuit_breaker(name)
}

/// The process-wide registry's keyed bulkhead family `name`.
#[inline(never)]
pub fn keyed_bulkhead(name: &str) -> KeyedBulkhead {
    registry().keyed_bulkhead(name)
}

/// A keyed retry (`#[resil::retry(name = "api", key = …)]`): the retry
/// `name` (following reloads), drawing on the key's budget of the keyed
/// retry-budget family `name`.
pub struct KeyedRetry {
    retry: Handle<Retry>,
    budgets: KeyedRetryBudget,
}

/// The process-wide registry's retry `name` and its keyed budgets.
#[inline(never)]
pub fn keyed_retry(name: &str) -> KeyedRetry {
    KeyedRetry {
        retry: registry().retry(name),
        budgets: registry().keyed_retry_budget(name),
    }
}

impl KeyedRetry {
    /// The retry and `key`'s budget, for one call.
    #[inline]
    pub fn get<Q: Key + ?Sized>(&self, key: &Q) -> RetryKeyHandle<'_> {
        RetryKeyHandle {
            retry: self.retry.get(),
            budget: self.budgets.get(key),
        }
    }
}

/// One call's retry and its key's budget, from [`KeyedRetry::get`].
pub struct RetryKeyHandle<'a> {
    retry: &'a Retry,
    budget: BudgetHandle<'a>,
}

impl RetryKeyHandle<'_> {
    /// The retry on the key's budget.
    #[inline]
    pub fn on(&self) -> OnBudget<'_> {
        self.retry.with_budget(&self.budget)
    }
}

/// A key's rate limiter around an inner stack (`permits` permits).
#[inline]
pub fn around_keyed_rate_limiter<T, E>(
    limiter: &LimiterHandle<'_>,
    permits: u32,
    f: impl FnOnce() -> Result<T, Error<E>>,
) -> Result<T, Error<E>> {
    limiter.call_n(permits, f).map_err(Error::flatten)
}

/// [`around_keyed_rate_limiter`] for a future.
#[inline]
pub async fn around_keyed_rate_limiter_async<T, E>(
    limiter: &LimiterHandle<'_>,
    permits: u32,
    inner: impl Future<Output = Result<T, Error<E>>>,
) -> Result<T, Error<E>> {
    limiter
        .call_async_n(permits, inner)
        .await
        .map_err(Error::flatten)
}

/// A key's bulkhead around an inner stack.
#[inline]
pub fn around_keyed_bulkhead<T, E>(
    bulkhead: &BulkheadHandle<'_>,
    f: impl FnOnce() -> Result<T, Error<E>>,
) -> Result<T, Error<E>> {
    bulkhead.call(f).map_err(Error::flatten)
}

/// [`around_keyed_bulkhead`] for a future.
#[inline]
pub async fn around_keyed_bulkhead_async<T, E>(
    bulkhead: &BulkheadHandle<'_>,
    inner: impl Future<Output = Result<T, Error<E>>>,
) -> Result<T, Error<E>> {
    bulkhead.call_async(inner).await.map_err(Error::flatten)
}
