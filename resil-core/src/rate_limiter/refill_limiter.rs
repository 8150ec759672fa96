//! The refilling token bucket: [`Limiter`] over [`Bucket`].

use std::fmt;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use super::cycle::{Grant, Refusal};
use super::handle::{sealed::Machinery, Algorithm, Limiter};
use super::refill::Bucket;
use super::RefillRateLimiterConfig;
use crate::clock;

/// Resilience4j 2.x's `RefillRateLimiter` ([`Limiter`] over [`Bucket`]): a token bucket that gains one
/// permit every `limit_refresh_period / limit_for_period` and holds at most
/// `permit_capacity`, for smooth pacing without the burst a cycle boundary
/// allows.
///
/// With the cycle limiter ([`RateLimiter`](super::RateLimiter)), 10 permits a
/// second can mean 10 calls at 0.999 s and 10 more at 1.000 s; here a bucket of
/// capacity 10 that has been drained admits the next call 100 ms later, then
/// one every 100 ms. After an idle spell it admits a burst of at most
/// `permit_capacity`.
///
/// Waiting is as with the cycle limiter: a caller that finds no permit
/// reserves one due within its `timeout_duration` (and its
/// [deadline](crate::deadline)) and sleeps or awaits until then; otherwise it
/// is refused and consumes nothing. A cancelled async waiter gives its permits
/// back if nobody reserved behind it. More permits than `permit_capacity` at
/// once are refused outright ([`AcquireError::ExceedsLimit`](super::AcquireError::ExceedsLimit)).
///
/// # Algorithm and cost
///
/// The state is one `AtomicU64`, the instant the bucket is full again (GCRA,
/// as governor uses): an acquire reads the clock once and does one
/// compare-and-swap; no lock, no allocation, no event built unless someone
/// [subscribed](Self::subscribe).
///
/// ```
/// use std::time::Duration;
/// use resil_core::clock::ManualClock;
/// use resil_core::rate_limiter::{RefillRateLimiter, RefillRateLimiterConfig};
///
/// let config = RefillRateLimiterConfig::builder()
///     .limit_for_period(10)
///     .limit_refresh_period(Duration::from_secs(1)) // one permit every 100 ms
///     .initial_permits(2)
///     .timeout_duration(Duration::ZERO)
///     .build()
///     .unwrap();
/// let clock = ManualClock::new();
/// let limiter = RefillRateLimiter::with_clock("partner", config, clock.clone());
///
/// assert!(limiter.try_acquire_permission(2));
/// assert!(!limiter.try_acquire_permission(1));
/// clock.advance(Duration::from_millis(100));
/// assert!(limiter.try_acquire_permission(1)); // one permit per 100 ms, no burst
/// assert!(!limiter.try_acquire_permission(1));
/// ```
pub type RefillRateLimiter = Limiter<Bucket>;

impl Algorithm for Bucket {}

impl Machinery for Bucket {
    type Config = RefillRateLimiterConfig;
    const NAME: &'static str = "RefillRateLimiter";
    const LIMIT_IS_CAPACITY: bool = true;
    const PRECISE_AVAILABLE: bool = true;

    fn build(config: &RefillRateLimiterConfig, origin: u64) -> Self {
        Bucket::new(
            config.permit_capacity(),
            config.initial_permits(),
            clock::nanos(config.nanos_per_permit()).max(1),
            origin,
        )
    }

    fn origin(&self) -> u64 {
        Bucket::origin(self)
    }

    fn refill_period(config: &RefillRateLimiterConfig) -> Duration {
        config.nanos_per_permit()
    }

    fn timeout(config: &RefillRateLimiterConfig) -> Duration {
        config.timeout_duration()
    }

    fn config_now(
        &self,
        config: &RefillRateLimiterConfig,
        timeout: Duration,
    ) -> RefillRateLimiterConfig {
        config.clone().with_timeout(timeout)
    }

    #[inline]
    fn drains<T: 'static, E: 'static>(
        config: &RefillRateLimiterConfig,
        result: &Result<T, E>,
        name: &Arc<str>,
        warned_foreign: &AtomicBool,
    ) -> bool {
        match config.drain_on_result() {
            Some(drain) => drain.drains(result, name, warned_foreign),
            None => false,
        }
    }

    #[inline]
    fn acquire_fast(&self, permits: u32, clock: impl FnOnce() -> u64) -> bool {
        self.acquire(permits, clock(), || 0).is_ok()
    }

    #[inline]
    fn acquire_at(
        &self,
        permits: u32,
        now: u64,
        max_wait: impl FnMut() -> u64,
    ) -> Result<Grant, Refusal> {
        self.acquire(permits, now, max_wait)
    }

    fn thresholds(config: &RefillRateLimiterConfig) -> [f32; 4] {
        crate::criticality::Criticality::ALL.map(|c| config.threshold(c))
    }

    fn acquire_within(&self, permits: u32, share: crate::criticality::Share, now: u64) -> bool {
        let allowed = crate::criticality::share_of(self.capacity(), share);
        Bucket::acquire_within(self, permits, allowed, now)
    }

    fn give_back(&self, grant: &Grant) {
        Bucket::give_back(self, grant);
    }

    fn drain(&self, now: u64) -> u32 {
        Bucket::drain(self, now)
    }

    fn available(&self, now: u64) -> i64 {
        Bucket::available(self, now)
    }

    fn debug_fields(&self, out: &mut fmt::DebugStruct<'_, '_>) {
        out.field("capacity", &self.capacity());
    }
}
