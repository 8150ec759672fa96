//! Configuration of the refilling token bucket: Resilience4j 2.x's
//! `RefillRateLimiterConfig`, validated once.

use std::time::Duration;

use super::config::check_period;
use super::drain::DrainOnResult;
use super::RateLimiterConfig;
use crate::clock;
use crate::criticality::{check_classes, Criticality, Thresholds, INVALID};
use crate::error::ConfigError;

/// How a [`RefillRateLimiter`](super::RefillRateLimiter) paces calls: one
/// permit every `limit_refresh_period / limit_for_period`, up to
/// `permit_capacity` banked, and how long a call may wait for one.
///
/// The defaults are Resilience4j's: 50 permits per 500 ns (one every 10 ns), a
/// capacity and an initial balance of `limit_for_period`, and a 5 s timeout.
///
/// Where Resilience4j silently raises a `permit_capacity` below
/// `limit_for_period` to it, resil rejects it: a capacity is the largest burst
/// allowed, and a config that asks for a smaller one than it gets is a mistake
/// worth hearing about.
///
/// ```
/// use std::time::Duration;
/// use resil_core::rate_limiter::RefillRateLimiterConfig;
///
/// let config = RefillRateLimiterConfig::builder()
///     .limit_for_period(100)
///     .limit_refresh_period(Duration::from_secs(1))
///     .permit_capacity(20)
///     .build();
/// assert_eq!(
///     config.unwrap_err().to_string(),
///     "invalid `permit_capacity`: got 20, expected an integer >= limit_for_period (100)"
/// );
///
/// let config = RefillRateLimiterConfig::builder()
///     .limit_for_period(100)
///     .limit_refresh_period(Duration::from_secs(1))
///     .build()
///     .unwrap();
/// assert_eq!(config.nanos_per_permit(), Duration::from_millis(10));
/// assert_eq!((config.permit_capacity(), config.initial_permits()), (100, 100));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct RefillRateLimiterConfig {
    limit_for_period: u32,
    limit_refresh_period: Duration,
    permit_capacity: Option<u32>,
    initial_permits: Option<u32>,
    timeout_duration: Duration,
    drain_permissions_on_result: Option<DrainOnResult>,
    /// Per class ([`Criticality::index`]), in percent.
    thresholds: Thresholds,
}

impl RefillRateLimiterConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> RefillRateLimiterConfigBuilder {
        RefillRateLimiterConfigBuilder {
            config: RefillRateLimiterConfig::default(),
            invalid: [None; 4],
        }
    }

    /// A builder starting from this configuration.
    pub fn to_builder(&self) -> RefillRateLimiterConfigBuilder {
        RefillRateLimiterConfigBuilder {
            config: self.clone(),
            invalid: [None; 4],
        }
    }

    /// Permits added per `limit_refresh_period` (default 50).
    #[inline]
    pub fn limit_for_period(&self) -> u32 {
        self.limit_for_period
    }

    /// The period `limit_for_period` permits are spread over (default 500 ns).
    #[inline]
    pub fn limit_refresh_period(&self) -> Duration {
        self.limit_refresh_period
    }

    /// The most permits the bucket holds: the largest burst after an idle
    /// spell (default `limit_for_period`).
    #[inline]
    pub fn permit_capacity(&self) -> u32 {
        self.permit_capacity.unwrap_or(self.limit_for_period)
    }

    /// Permits in the bucket when the limiter is created (default
    /// `limit_for_period`, as in Resilience4j).
    #[inline]
    pub fn initial_permits(&self) -> u32 {
        self.initial_permits.unwrap_or(self.limit_for_period)
    }

    /// How long a call may wait for a permit (default 5 s; zero never waits).
    #[inline]
    pub fn timeout_duration(&self) -> Duration {
        self.timeout_duration
    }

    /// The time between two permits: `limit_refresh_period / limit_for_period`,
    /// rounded down to whole nanoseconds (Resilience4j's `nanosPerPermission`).
    #[inline]
    pub fn nanos_per_permit(&self) -> Duration {
        Duration::from_nanos(
            clock::nanos(self.limit_refresh_period) / u64::from(self.limit_for_period.max(1)),
        )
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

    /// The threshold of `class`, in percent of `permit_capacity`: a call of
    /// that class takes permits only while the bucket, after taking them,
    /// misses at most `ceil(threshold × capacity / 100)` permits — a class
    /// at 50 % uses the top half of the bucket and leaves the bottom half to
    /// the classes above it (defaults 50, 75, 100, 100 from `SHEDDABLE` to
    /// `CRITICAL_PLUS`, as the cycle [`RateLimiterConfig`]'s). A class
    /// below 100 never waits for, nor reserves, permits to come: it is
    /// refused at once.
    #[inline]
    pub fn threshold(&self, class: Criticality) -> f32 {
        self.thresholds.get(class.index())
    }

    pub(crate) fn with_timeout(self, timeout_duration: Duration) -> Self {
        RefillRateLimiterConfig {
            timeout_duration,
            ..self
        }
    }
}

impl Default for RefillRateLimiterConfig {
    /// Resilience4j's defaults: 50 permits per 500 ns, capacity and initial
    /// permits 50, wait up to 5 s.
    fn default() -> Self {
        RefillRateLimiterConfig {
            limit_for_period: 50,
            limit_refresh_period: Duration::from_nanos(500),
            permit_capacity: None,
            initial_permits: None,
            timeout_duration: Duration::from_secs(5),
            drain_permissions_on_result: None,
            thresholds: Thresholds::defaults(),
        }
    }
}

/// Builds a [`RefillRateLimiterConfig`]; [`build`](Self::build) checks every value.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct RefillRateLimiterConfigBuilder {
    config: RefillRateLimiterConfig,
    /// A threshold given out of range, as given (for the error).
    invalid: [Option<f32>; 4],
}

impl RefillRateLimiterConfigBuilder {
    /// Permits added per period: at least 1, at most one per nanosecond of it.
    pub fn limit_for_period(mut self, limit: u32) -> Self {
        self.config.limit_for_period = limit;
        self
    }

    /// The period `limit_for_period` permits are spread over.
    pub fn limit_refresh_period(mut self, period: Duration) -> Self {
        self.config.limit_refresh_period = period;
        self
    }

    /// The most permits the bucket holds; at least `limit_for_period`.
    pub fn permit_capacity(mut self, capacity: u32) -> Self {
        self.config.permit_capacity = Some(capacity);
        self
    }

    /// Permits in the bucket at creation; at most `permit_capacity` (0 starts
    /// empty: the first permit comes after one interval).
    pub fn initial_permits(mut self, initial: u32) -> Self {
        self.config.initial_permits = Some(initial);
        self
    }

    /// How long a call may wait for a permit; zero refuses at once.
    pub fn timeout_duration(mut self, timeout: Duration) -> Self {
        self.config.timeout_duration = timeout;
        self
    }

    /// Empties the bucket after a call whose outcome `predicate` accepts, as
    /// [`RateLimiterConfigBuilder::drain_permissions_on_result`](super::RateLimiterConfigBuilder::drain_permissions_on_result)
    /// does for the cycle limiter.
    pub fn drain_permissions_on_result<T: 'static, E: 'static>(
        mut self,
        predicate: impl Fn(Result<&T, &E>) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.config.drain_permissions_on_result = Some(DrainOnResult::new(predicate));
        self
    }

    /// The threshold of `class`, in percent of `permit_capacity`:
    /// `(0, 100]`, and no class's above a more critical one's (see
    /// [`RefillRateLimiterConfig::threshold`]).
    pub fn threshold(mut self, class: Criticality, percent: f32) -> Self {
        let encoded = Thresholds::encode(percent);
        self.config.thresholds.0[class.index()] = encoded;
        self.invalid[class.index()] = (encoded == INVALID).then_some(percent);
        self
    }

    /// The configuration, or the first invalid value with its field name.
    pub fn build(self) -> Result<RefillRateLimiterConfig, ConfigError> {
        let c = self.config;
        let given: [f32; 4] =
            std::array::from_fn(|i| self.invalid[i].unwrap_or_else(|| c.thresholds.get(i)));
        check_classes(&given, &[0.0; 4])?;
        check_period(c.limit_refresh_period)?;
        RateLimiterConfig::check_limit(c.limit_for_period, c.limit_refresh_period)?;
        let capacity = c.permit_capacity();
        if capacity < c.limit_for_period {
            return Err(ConfigError::new(
                "permit_capacity",
                capacity,
                format!("an integer >= limit_for_period ({})", c.limit_for_period),
            ));
        }
        if c.initial_permits() > capacity {
            return Err(ConfigError::new(
                "initial_permits",
                c.initial_permits(),
                format!("an integer in 0..=permit_capacity ({capacity})"),
            ));
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_resilience4j_s() {
        let c = RefillRateLimiterConfig::default();
        assert_eq!(c.limit_for_period(), 50);
        assert_eq!(c.limit_refresh_period(), Duration::from_nanos(500));
        assert_eq!(c.permit_capacity(), 50);
        assert_eq!(c.initial_permits(), 50);
        assert_eq!(c.timeout_duration(), Duration::from_secs(5));
        assert_eq!(c.nanos_per_permit(), Duration::from_nanos(10));
        assert_eq!(RefillRateLimiterConfig::builder().build(), Ok(c));
    }

    #[test]
    fn capacity_and_initial_permits_follow_limit_for_period_unless_set() {
        let c = RefillRateLimiterConfig::builder()
            .limit_for_period(10)
            .limit_refresh_period(Duration::from_secs(1))
            .build()
            .unwrap();
        assert_eq!((c.permit_capacity(), c.initial_permits()), (10, 10));
        let c = c
            .to_builder()
            .permit_capacity(40)
            .initial_permits(0)
            .build()
            .unwrap();
        assert_eq!((c.permit_capacity(), c.initial_permits()), (40, 0));
    }

    #[test]
    fn invalid_values_name_their_field() {
        let b = || {
            RefillRateLimiterConfig::builder()
                .limit_for_period(10)
                .limit_refresh_period(Duration::from_secs(1))
        };
        let cases = [
            (b().limit_for_period(0).build(), "limit_for_period"),
            (
                b().limit_refresh_period(Duration::ZERO).build(),
                "limit_refresh_period",
            ),
            (
                b().limit_refresh_period(Duration::from_nanos(5)).build(),
                "limit_for_period",
            ),
            (b().permit_capacity(9).build(), "permit_capacity"),
            (b().permit_capacity(0).build(), "permit_capacity"),
            (b().initial_permits(11).build(), "initial_permits"),
            (
                b().permit_capacity(20).initial_permits(21).build(),
                "initial_permits",
            ),
        ];
        for (result, field) in cases {
            assert_eq!(result.unwrap_err().field(), field);
        }
        assert_eq!(
            b().permit_capacity(20)
                .initial_permits(21)
                .build()
                .unwrap_err()
                .to_string(),
            "invalid `initial_permits`: got 21, expected an integer in 0..=permit_capacity (20)"
        );
    }
}
