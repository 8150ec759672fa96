//! The cycle rate limiter: [`Limiter`] over [`Cycles`].

use std::fmt;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use super::cycle::{Cycles, Fast, Grant, Refusal};
use super::handle::{sealed::Machinery, Algorithm, Limiter};
use super::RateLimiterConfig;
use crate::clock;
use crate::error::ConfigError;

/// Resilience4j's `AtomicRateLimiter`: at most `limit_for_period` permits per
/// `limit_refresh_period` cycle, with reservation of later cycles' permits for
/// callers willing to wait up to `timeout_duration`.
///
/// The [`Limiter`] handle over [`Cycles`]: a cheap `Clone` handle whose
/// clones share the same permits. Permits are per instance, never per
/// cluster (see the [module docs](super)).
///
/// ```
/// use std::time::Duration;
/// use resil_core::clock::ManualClock;
/// use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
/// use resil_core::Error;
///
/// let config = RateLimiterConfig::builder()
///     .limit_for_period(2)
///     .limit_refresh_period(Duration::from_secs(2))
///     .timeout_duration(Duration::ZERO)
///     .build()
///     .unwrap();
/// let clock = ManualClock::new();
/// let limiter = RateLimiter::with_clock("read", config, clock.clone());
///
/// let call = || limiter.call(|| Ok::<_, std::io::Error>("ok"));
/// assert!(call().is_ok());
/// assert!(call().is_ok());
/// assert!(matches!(call(), Err(Error::RequestNotPermitted(_))));
///
/// clock.advance(Duration::from_secs(2));
/// assert_eq!(limiter.available_permissions(), 2);
/// assert!(call().is_ok());
/// ```
pub type RateLimiter = Limiter<Cycles>;

impl RateLimiter {
    /// How long until one permit comes free: zero while the current cycle
    /// has one, else the time to the start of the first cycle not already
    /// taken by reservations (Resilience4j's `nanosToWait`). What an HTTP
    /// server puts in `Retry-After` when the limiter refuses a request.
    pub fn time_to_next_permit(&self) -> Duration {
        Duration::from_nanos(self.inner.state.wait_for_next(self.inner.precise_now()))
    }

    /// Changes `limit_for_period` at run time (Resilience4j
    /// `changeLimitForPeriod`).
    ///
    /// The current cycle keeps the permits it has; every later cycle grants the
    /// new limit. Reservations already made keep the wake-up time they were
    /// given, and the permits they took are counted against the cycles that
    /// follow, under the new limit. Resilience4j applies a new limit at the next
    /// refill as well; the one difference is that when nobody acquired during
    /// the current cycle before the change, Resilience4j refills the current
    /// cycle to the new limit, while here it keeps the old one. An acquire
    /// racing with the change may still lay out its permits with the old limit.
    ///
    /// The new limit is validated like the builder's (`1..=` one permit per
    /// nanosecond of the period).
    pub fn change_limit_for_period(&self, limit_for_period: u32) -> Result<(), ConfigError> {
        RateLimiterConfig::check_limit(limit_for_period, self.inner.config.limit_refresh_period())?;
        let _serial = self.inner.state.changes.lock();
        self.inner
            .state
            .change_limit(limit_for_period, self.inner.now());
        self.inner.state.warm_up_to(limit_for_period);
        Ok(())
    }
}

impl Algorithm for Cycles {}

impl Machinery for Cycles {
    type Config = RateLimiterConfig;
    const NAME: &'static str = "RateLimiter";
    const LIMIT_IS_CAPACITY: bool = false;
    const PRECISE_AVAILABLE: bool = false;

    fn build(config: &RateLimiterConfig, origin: u64) -> Self {
        Cycles::new(
            config.limit_for_period(),
            clock::nanos(config.limit_refresh_period()),
            origin,
        )
        .warming_up(clock::nanos(config.warm_up_period()), config.cold_factor())
    }

    fn origin(&self) -> u64 {
        Cycles::origin(self)
    }

    fn refill_period(config: &RateLimiterConfig) -> Duration {
        config.limit_refresh_period()
    }

    fn timeout(config: &RateLimiterConfig) -> Duration {
        config.timeout_duration()
    }

    fn config_now(&self, config: &RateLimiterConfig, timeout: Duration) -> RateLimiterConfig {
        config
            .clone()
            .with_dynamic(self.configured_limit(), timeout)
    }

    #[inline]
    fn drains<T: 'static, E: 'static>(
        config: &RateLimiterConfig,
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
        matches!(Cycles::acquire_fast(self, permits, clock), Fast::Granted)
    }

    #[inline]
    fn acquire_at(
        &self,
        permits: u32,
        now: u64,
        max_wait: impl FnMut() -> u64,
    ) -> Result<Grant, Refusal> {
        Cycles::acquire_at(self, permits, now, max_wait)
    }

    fn give_back(&self, grant: &Grant) {
        Cycles::give_back(self, grant);
    }

    fn drain(&self, now: u64) -> u32 {
        Cycles::drain(self, now)
    }

    fn available(&self, now: u64) -> i64 {
        Cycles::available(self, now)
    }

    fn thresholds(config: &RateLimiterConfig) -> [f32; 4] {
        crate::criticality::Criticality::ALL.map(|c| config.threshold(c))
    }

    fn acquire_within(&self, permits: u32, share: crate::criticality::Share, now: u64) -> bool {
        Cycles::acquire_within(self, permits, share, now)
    }

    fn debug_fields(&self, _: &mut fmt::DebugStruct<'_, '_>) {}
}
