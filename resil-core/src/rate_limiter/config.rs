//! Rate limiter configuration: Resilience4j's `RateLimiterConfig`, validated once.

use std::time::Duration;

use super::drain::DrainOnResult;
use crate::clock;
use crate::criticality::{check_classes, Criticality, Thresholds, INVALID};
use crate::error::ConfigError;

/// The longest `limit_refresh_period`: `u64::MAX` nanoseconds (about 584 years),
/// the range of the clock readings cycles are counted in.
pub const MAX_LIMIT_REFRESH_PERIOD: Duration = Duration::from_nanos(u64::MAX);

/// How many permits a [`RateLimiter`](super::RateLimiter) grants per cycle, how
/// long a cycle lasts, and how long a call may wait for a permit.
///
/// The defaults are Resilience4j's: 50 permits every 500 ns, and a call waits
/// up to 5 s for a permit of a later cycle.
///
/// # Limits
///
/// * `limit_for_period` is `1..=4_294_967_295` **and** at most one permit per
///   nanosecond of `limit_refresh_period` (`limit_for_period <=
///   limit_refresh_period` in nanoseconds, i.e. at most 10⁹ permits a second).
///   The limiter's whole state is one `u64` counting permits handed out since it
///   was created (see the [module docs](super)); at one permit per nanosecond
///   that counter lasts 584 years, faster rates would let it wrap.
/// * `limit_refresh_period` is `1ns..=`[`MAX_LIMIT_REFRESH_PERIOD`].
/// * `timeout_duration` is any duration; beyond 584 years it means "forever".
///
/// ```
/// use std::time::Duration;
/// use resil_core::rate_limiter::RateLimiterConfig;
///
/// let config = RateLimiterConfig::default();
/// assert_eq!(config.limit_for_period(), 50);
/// assert_eq!(config.limit_refresh_period(), Duration::from_nanos(500));
/// assert_eq!(config.timeout_duration(), Duration::from_secs(5));
///
/// let read = RateLimiterConfig::builder()
///     .limit_for_period(2)
///     .limit_refresh_period(Duration::from_secs(2))
///     .timeout_duration(Duration::ZERO)
///     .build()
///     .unwrap();
/// assert_eq!(read.limit_for_period(), 2);
///
/// let err = RateLimiterConfig::builder().limit_for_period(0).build().unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "invalid `limit_for_period`: got 0, expected an integer in 1..=500 \
///      (at most one permit per nanosecond of `limit_refresh_period`)"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RateLimiterConfig {
    limit_for_period: u32,
    limit_refresh_period: Duration,
    timeout_duration: Duration,
    drain_permissions_on_result: Option<DrainOnResult>,
    /// Per class ([`Criticality::index`]), in percent.
    thresholds: Thresholds,
    /// In nanoseconds (0: no warm-up): 8 bytes, not a `Duration`'s 16, so a
    /// limiter stays within its kilobyte (see `tests/allocations.rs`).
    warm_up_nanos: u64,
    cold_factor: u32,
}

impl RateLimiterConfig {
    /// The threshold of `class`, in percent of `limit_for_period`: a call of
    /// that class is admitted while fewer than `ceil(threshold × limit / 100)`
    /// of the current cycle's permits are taken (defaults 50, 75, 100, 100
    /// from `SHEDDABLE` to `CRITICAL_PLUS`). A class below 100 never waits
    /// for, nor reserves, a later cycle's permits: it is refused at once, so
    /// the reservations belong to the classes that may use the whole cycle.
    #[inline]
    pub fn threshold(&self, class: Criticality) -> f32 {
        self.thresholds.get(class.index())
    }

    /// [`threshold`](Self::threshold) of `SHEDDABLE` (file key `sheddable-threshold`).
    #[inline]
    pub fn sheddable_threshold(&self) -> f32 {
        self.threshold(Criticality::Sheddable)
    }

    /// [`threshold`](Self::threshold) of `SHEDDABLE_PLUS` (file key `sheddable-plus-threshold`).
    #[inline]
    pub fn sheddable_plus_threshold(&self) -> f32 {
        self.threshold(Criticality::SheddablePlus)
    }

    /// [`threshold`](Self::threshold) of `CRITICAL` (file key `critical-threshold`).
    #[inline]
    pub fn critical_threshold(&self) -> f32 {
        self.threshold(Criticality::Critical)
    }

    /// [`threshold`](Self::threshold) of `CRITICAL_PLUS` (file key `critical-plus-threshold`).
    #[inline]
    pub fn critical_plus_threshold(&self) -> f32 {
        self.threshold(Criticality::CriticalPlus)
    }

    /// A builder starting from the defaults.
    pub fn builder() -> RateLimiterConfigBuilder {
        RateLimiterConfigBuilder {
            config: RateLimiterConfig::default(),
            invalid: [None; 4],
            warm_up_period: None,
        }
    }

    /// A builder starting from this configuration, to change a few values.
    pub fn to_builder(&self) -> RateLimiterConfigBuilder {
        RateLimiterConfigBuilder {
            config: self.clone(),
            invalid: [None; 4],
            warm_up_period: None,
        }
    }

    /// Permits granted per cycle (Resilience4j `limitForPeriod`, default 50).
    #[inline]
    pub fn limit_for_period(&self) -> u32 {
        self.limit_for_period
    }

    /// The length of a cycle; each new cycle refills the permits up to
    /// `limit_for_period` (Resilience4j `limitRefreshPeriod`, default 500 ns).
    #[inline]
    pub fn limit_refresh_period(&self) -> Duration {
        self.limit_refresh_period
    }

    /// How long a call may wait for a permit of a later cycle before it is
    /// refused with `RequestNotPermitted` (Resilience4j `timeoutDuration`,
    /// default 5 s; zero never waits). Inside a [`deadline`](crate::deadline) a
    /// wait that would not end before the deadline is refused too.
    #[inline]
    pub fn timeout_duration(&self) -> Duration {
        self.timeout_duration
    }

    /// The ramp after idleness (zero, the default: none). See
    /// [`RateLimiterConfigBuilder::warm_up_period`].
    #[inline]
    pub fn warm_up_period(&self) -> Duration {
        Duration::from_nanos(self.warm_up_nanos)
    }

    /// A cold limiter grants `limit_for_period / cold_factor` (rounded up)
    /// per cycle at first (default 3, Guava's and Sentinel's).
    #[inline]
    pub fn cold_factor(&self) -> u32 {
        self.cold_factor
    }

    /// Whether a `drain_permissions_on_result` predicate is set.
    #[inline]
    pub fn has_drain_permissions_on_result(&self) -> bool {
        self.drain_permissions_on_result.is_some()
    }

    #[inline]
    pub(crate) fn drain_on_result(&self) -> Option<&DrainOnResult> {
        self.drain_permissions_on_result.as_ref()
    }

    /// The largest `limit_for_period` allowed with this refresh period.
    pub(crate) fn max_limit_for(period: Duration) -> u32 {
        u32::try_from(clock::nanos(period)).unwrap_or(u32::MAX)
    }

    pub(crate) fn check_limit(limit: u32, period: Duration) -> Result<(), ConfigError> {
        let max = Self::max_limit_for(period);
        if limit == 0 || limit > max {
            return Err(ConfigError::new(
                "limit_for_period",
                limit,
                format!(
                    "an integer in 1..={max} (at most one permit per nanosecond of `limit_refresh_period`)"
                ),
            ));
        }
        Ok(())
    }

    pub(crate) fn with_dynamic(self, limit_for_period: u32, timeout_duration: Duration) -> Self {
        RateLimiterConfig {
            limit_for_period,
            timeout_duration,
            ..self
        }
    }
}

impl Default for RateLimiterConfig {
    /// Resilience4j's defaults: 50 permits per 500 ns, wait up to 5 s.
    fn default() -> Self {
        RateLimiterConfig {
            limit_for_period: 50,
            limit_refresh_period: Duration::from_nanos(500),
            timeout_duration: Duration::from_secs(5),
            drain_permissions_on_result: None,
            thresholds: Thresholds::defaults(),
            warm_up_nanos: 0,
            cold_factor: 3,
        }
    }
}

/// Builds a [`RateLimiterConfig`]; [`build`](Self::build) checks every value.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct RateLimiterConfigBuilder {
    config: RateLimiterConfig,
    /// A threshold given out of range, as given (for the error).
    invalid: [Option<f32>; 4],
    /// Checked by `build` before it is stored in nanoseconds.
    warm_up_period: Option<Duration>,
}

impl RateLimiterConfigBuilder {
    /// Permits per cycle: at least 1, at most one per nanosecond of the period.
    pub fn limit_for_period(mut self, limit: u32) -> Self {
        self.config.limit_for_period = limit;
        self
    }

    /// The cycle length: `1ns..=`[`MAX_LIMIT_REFRESH_PERIOD`].
    pub fn limit_refresh_period(mut self, period: Duration) -> Self {
        self.config.limit_refresh_period = period;
        self
    }

    /// How long a call may wait for a permit; zero refuses at once.
    pub fn timeout_duration(mut self, timeout: Duration) -> Self {
        self.config.timeout_duration = timeout;
        self
    }

    /// Warms up after idleness (Guava's `SmoothWarmingUp`, Sentinel's
    /// warm-up controller), for a downstream whose caches, connection pools
    /// or JIT go cold: a limiter that granted nothing for longer than
    /// `warm_up_period` (and a new one) starts at `limit_for_period /
    /// cold_factor` permits per cycle (rounded up) and ramps linearly to
    /// `limit_for_period` over `warm_up_period`. Zero (the default) turns it
    /// off; otherwise at least one `limit_refresh_period`. The ramp moves
    /// once per cycle, at the cycle's first acquire; a cycle in which nobody
    /// acquired keeps the step before it (it errs towards fewer permits).
    ///
    /// ```
    /// use std::time::Duration;
    /// use resil_core::clock::ManualClock;
    /// use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
    ///
    /// let config = RateLimiterConfig::builder()
    ///     .limit_for_period(30)
    ///     .limit_refresh_period(Duration::from_secs(1))
    ///     .timeout_duration(Duration::ZERO)
    ///     .warm_up_period(Duration::from_secs(10))
    ///     .build()
    ///     .unwrap();
    /// let clock = ManualClock::new();
    /// let limiter = RateLimiter::with_clock("catalog", config, clock.clone());
    /// let granted = |limiter: &RateLimiter| (0..40).filter(|_| limiter.acquire_permission(1).is_ok()).count();
    /// assert_eq!(granted(&limiter), 10); // cold: 30 / 3
    /// clock.advance(Duration::from_secs(5));
    /// assert_eq!(granted(&limiter), 20); // half-way up the ramp
    /// clock.advance(Duration::from_secs(5));
    /// assert_eq!(granted(&limiter), 30); // warm
    /// ```
    pub fn warm_up_period(mut self, period: Duration) -> Self {
        self.warm_up_period = Some(period);
        self
    }

    /// How much colder a cold limiter is: it starts at `limit_for_period /
    /// cold_factor` (at least 1; default 3). Only with a `warm_up_period`.
    pub fn cold_factor(mut self, factor: u32) -> Self {
        self.config.cold_factor = factor;
        self
    }

    /// Drains the current cycle's free permits after a call whose outcome
    /// `predicate` accepts (Resilience4j's `drainPermissionsOnResult`): `Ok(&v)`
    /// for a value, `Err(&e)` for the call's error (also inside a
    /// `resil::Error<E>`, up to four levels deep, as plain calls around other
    /// primitives nest it). Typically a 429 or a quota error from the dependency:
    /// nothing more is sent until the next cycle. Applies to
    /// [`call`](super::RateLimiter::call),
    /// [`call_async`](super::RateLimiter::call_async) and
    /// [`call_async_nested`](super::RateLimiter::call_async_nested); outcomes of other types
    /// never drain.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resil_core::clock::ManualClock;
    /// use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
    ///
    /// let config = RateLimiterConfig::builder()
    ///     .limit_for_period(10)
    ///     .limit_refresh_period(Duration::from_secs(1))
    ///     .timeout_duration(Duration::ZERO)
    ///     .drain_permissions_on_result(|r: Result<&u16, &()>| r == Ok(&429))
    ///     .build()
    ///     .unwrap();
    /// let limiter = RateLimiter::with_clock("partner", config, ManualClock::new());
    /// assert_eq!(limiter.call(|| Ok::<u16, ()>(429)), Ok(429));
    /// assert_eq!(limiter.available_permissions(), 0); // the other 9 are gone
    /// ```
    pub fn drain_permissions_on_result<T: 'static, E: 'static>(
        mut self,
        predicate: impl Fn(Result<&T, &E>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.config.drain_permissions_on_result = Some(DrainOnResult::new(predicate));
        self
    }

    /// The threshold of `class`, in percent of `limit_for_period`: `(0, 100]`,
    /// and no class's above a more critical one's.
    pub fn threshold(mut self, class: Criticality, percent: f32) -> Self {
        self.config.thresholds.0[class.index()] = Thresholds::encode(percent);
        self.invalid[class.index()] = (Thresholds::encode(percent) == INVALID).then_some(percent);
        self
    }

    /// [`threshold`](Self::threshold) of `SHEDDABLE`.
    pub fn sheddable_threshold(self, percent: f32) -> Self {
        self.threshold(Criticality::Sheddable, percent)
    }

    /// [`threshold`](Self::threshold) of `SHEDDABLE_PLUS`.
    pub fn sheddable_plus_threshold(self, percent: f32) -> Self {
        self.threshold(Criticality::SheddablePlus, percent)
    }

    /// [`threshold`](Self::threshold) of `CRITICAL`.
    pub fn critical_threshold(self, percent: f32) -> Self {
        self.threshold(Criticality::Critical, percent)
    }

    /// [`threshold`](Self::threshold) of `CRITICAL_PLUS`.
    pub fn critical_plus_threshold(self, percent: f32) -> Self {
        self.threshold(Criticality::CriticalPlus, percent)
    }

    /// The configuration, or the first invalid value with its field name.
    pub fn build(self) -> Result<RateLimiterConfig, ConfigError> {
        let mut c = self.config;
        let given: [f32; 4] =
            std::array::from_fn(|i| self.invalid[i].unwrap_or_else(|| c.thresholds.get(i)));
        check_classes(&given, &[0.0; 4])?;
        check_period(c.limit_refresh_period)?;
        RateLimiterConfig::check_limit(c.limit_for_period, c.limit_refresh_period)?;
        let warm_up = self.warm_up_period.unwrap_or(c.warm_up_period());
        if (!warm_up.is_zero() && warm_up < c.limit_refresh_period)
            || warm_up > MAX_LIMIT_REFRESH_PERIOD
        {
            return Err(ConfigError::new(
                "warm_up_period",
                format!("{warm_up:?}"),
                format!(
                    "zero (no warm-up) or at least one `limit_refresh_period` ({:?})",
                    c.limit_refresh_period
                ),
            ));
        }
        if c.cold_factor == 0 {
            return Err(ConfigError::new("cold_factor", 0, "an integer >= 1"));
        }
        c.warm_up_nanos = clock::nanos(warm_up);
        Ok(c)
    }
}

/// `limit_refresh_period` is `1ns..=`[`MAX_LIMIT_REFRESH_PERIOD`].
pub(crate) fn check_period(period: Duration) -> Result<(), ConfigError> {
    if period.is_zero() || period > MAX_LIMIT_REFRESH_PERIOD {
        return Err(ConfigError::new(
            "limit_refresh_period",
            format!("{period:?}"),
            "a duration in 1ns..=584 years (u64::MAX nanoseconds)",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_resilience4j_defaults() {
        let c = RateLimiterConfig::default();
        assert_eq!(c.limit_for_period(), 50);
        assert_eq!(c.limit_refresh_period(), Duration::from_nanos(500));
        assert_eq!(c.timeout_duration(), Duration::from_secs(5));
        assert_eq!(RateLimiterConfig::builder().build(), Ok(c));
    }

    #[test]
    fn a_zero_limit_or_more_than_one_permit_per_nanosecond_is_rejected_naming_the_field() {
        let at = |limit, period| {
            RateLimiterConfig::builder()
                .limit_for_period(limit)
                .limit_refresh_period(period)
                .build()
        };
        assert!(at(1, Duration::from_nanos(1)).is_ok());
        assert!(at(500, Duration::from_nanos(500)).is_ok());
        assert!(at(u32::MAX, Duration::from_secs(10)).is_ok());
        for (limit, period, max) in [
            (0, Duration::from_secs(1), "1000000000"),
            (501, Duration::from_nanos(500), "500"),
            (2, Duration::from_nanos(1), "1"),
        ] {
            let err = at(limit, period).unwrap_err();
            assert_eq!(err.field(), "limit_for_period");
            assert_eq!(err.got(), limit.to_string());
            assert!(err.expected().contains(&format!("1..={max} ")), "{err}");
        }
    }

    #[test]
    fn a_zero_or_overlong_refresh_period_is_rejected_naming_the_field() {
        for bad in [
            Duration::ZERO,
            MAX_LIMIT_REFRESH_PERIOD + Duration::from_nanos(1),
        ] {
            let err = RateLimiterConfig::builder()
                .limit_refresh_period(bad)
                .build()
                .unwrap_err();
            assert_eq!(err.field(), "limit_refresh_period");
            assert_eq!(err.got(), format!("{bad:?}"));
        }
        let err = RateLimiterConfig::builder()
            .limit_refresh_period(Duration::ZERO)
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid `limit_refresh_period`: got 0ns, expected a duration in 1ns..=584 years (u64::MAX nanoseconds)"
        );
    }

    #[test]
    fn a_warm_up_shorter_than_a_cycle_or_a_zero_cold_factor_is_rejected() {
        let err = RateLimiterConfig::builder()
            .limit_refresh_period(Duration::from_secs(1))
            .warm_up_period(Duration::from_millis(500))
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid `warm_up_period`: got 500ms, expected zero (no warm-up) or at least one `limit_refresh_period` (1s)"
        );
        let err = RateLimiterConfig::builder()
            .cold_factor(0)
            .build()
            .unwrap_err();
        assert_eq!(err.field(), "cold_factor");
        let c = RateLimiterConfig::default();
        assert_eq!((c.warm_up_period(), c.cold_factor()), (Duration::ZERO, 3));
    }

    #[test]
    fn any_timeout_is_accepted_and_to_builder_keeps_every_other_value() {
        let c = RateLimiterConfig::builder()
            .timeout_duration(Duration::MAX)
            .limit_refresh_period(Duration::from_secs(1))
            .build()
            .unwrap();
        let d = c.to_builder().limit_for_period(7).build().unwrap();
        assert_eq!(d.timeout_duration(), Duration::MAX);
        assert_eq!(d.limit_refresh_period(), Duration::from_secs(1));
        assert_eq!(d.limit_for_period(), 7);
    }
}
