//! Bulkhead configuration: Resilience4j's `BulkheadConfig`, validated once.

use std::time::Duration;

use crate::criticality::{check_classes, Criticality, Thresholds, INVALID};
use crate::error::ConfigError;

/// The largest `max_concurrent_calls` a bulkhead accepts: Java's `Integer.MAX_VALUE`,
/// the same bound as Resilience4j (the permit count lives in 31 bits of one atomic).
pub const MAX_CONCURRENT_CALLS: u32 = (1 << 31) - 1;

/// How many calls a [`Bulkhead`](super::Bulkhead) lets run at once, and how long
/// a call may wait for a slot.
///
/// The defaults are Resilience4j's: 25 concurrent calls, no wait (a call that
/// finds every slot taken is refused at once with `BulkheadFull`), fair hand-off
/// to waiters.
///
/// ```
/// use std::time::Duration;
/// use resil_core::bulkhead::BulkheadConfig;
///
/// let config = BulkheadConfig::default();
/// assert_eq!(config.max_concurrent_calls(), 25);
/// assert_eq!(config.max_wait_duration(), Duration::ZERO);
/// assert!(config.fair_call_handling_enabled());
///
/// let reports = BulkheadConfig::builder()
///     .max_concurrent_calls(2)
///     .max_wait_duration(Duration::from_millis(50))
///     .build()
///     .unwrap();
/// assert_eq!(reports.max_concurrent_calls(), 2);
///
/// let err = BulkheadConfig::builder().max_concurrent_calls(0).build().unwrap_err();
/// assert_eq!(err.to_string(), "invalid `max_concurrent_calls`: got 0, expected an integer in 1..=2147483647");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BulkheadConfig {
    max_concurrent_calls: u32,
    max_wait_duration: Duration,
    fair_call_handling_enabled: bool,
    /// Per class ([`Criticality::index`]), in percent.
    thresholds: Thresholds,
}

impl BulkheadConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> BulkheadConfigBuilder {
        BulkheadConfigBuilder {
            config: BulkheadConfig::default(),
            invalid: [None; 4],
        }
    }

    /// A builder starting from this configuration, to change a few values.
    pub fn to_builder(&self) -> BulkheadConfigBuilder {
        BulkheadConfigBuilder {
            config: *self,
            invalid: [None; 4],
        }
    }

    /// How many calls may hold a slot at once (Resilience4j `maxConcurrentCalls`,
    /// default 25).
    #[inline]
    pub fn max_concurrent_calls(&self) -> u32 {
        self.max_concurrent_calls
    }

    /// How long a call waits for a free slot before it is refused (Resilience4j
    /// `maxWaitDuration`, default zero: refuse at once). Inside a
    /// [`deadline`](crate::deadline) the wait is cut to the remaining budget.
    #[inline]
    pub fn max_wait_duration(&self) -> Duration {
        self.max_wait_duration
    }

    /// Whether waiting calls get slots in arrival order (Resilience4j
    /// `fairCallHandlingEnabled`, default `true`). When `false`, a call arriving
    /// just as a slot frees may take it ahead of calls already waiting.
    #[inline]
    pub fn fair_call_handling_enabled(&self) -> bool {
        self.fair_call_handling_enabled
    }

    /// The threshold of `class`, in percent of `max_concurrent_calls`: a
    /// call of that class takes a slot only while fewer than
    /// `ceil(threshold × max / 100)` are held (defaults 50, 75, 100, 100
    /// from `SHEDDABLE` to `CRITICAL_PLUS`, as the adaptive bulkhead's and
    /// the rate limiters'). A class below 100 never waits for a slot: it is
    /// refused at once, so the wait queue belongs to the classes that may
    /// use every slot. A program that sets no class runs `CRITICAL`: every
    /// slot, as before.
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
}

impl Default for BulkheadConfig {
    /// Resilience4j's defaults: 25 concurrent calls, no wait, fair.
    fn default() -> Self {
        BulkheadConfig {
            max_concurrent_calls: 25,
            max_wait_duration: Duration::ZERO,
            fair_call_handling_enabled: true,
            thresholds: Thresholds::defaults(),
        }
    }
}

/// Builds a [`BulkheadConfig`]; [`build`](Self::build) checks every value.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct BulkheadConfigBuilder {
    config: BulkheadConfig,
    /// A threshold given out of range, as given (for the error).
    invalid: [Option<f32>; 4],
}

impl BulkheadConfigBuilder {
    /// How many calls may hold a slot at once: `1..=`[`MAX_CONCURRENT_CALLS`].
    pub fn max_concurrent_calls(mut self, calls: u32) -> Self {
        self.config.max_concurrent_calls = calls;
        self
    }

    /// How long a call may wait for a slot; zero refuses at once.
    pub fn max_wait_duration(mut self, wait: Duration) -> Self {
        self.config.max_wait_duration = wait;
        self
    }

    /// Whether waiting calls get slots strictly in arrival order.
    pub fn fair_call_handling_enabled(mut self, fair: bool) -> Self {
        self.config.fair_call_handling_enabled = fair;
        self
    }

    /// The threshold of `class`, in percent of `max_concurrent_calls`:
    /// `(0, 100]`, and no class's above a more critical one's (see
    /// [`BulkheadConfig::threshold`]).
    pub fn threshold(mut self, class: Criticality, percent: f32) -> Self {
        let encoded = Thresholds::encode(percent);
        self.config.thresholds.0[class.index()] = encoded;
        self.invalid[class.index()] = (encoded == INVALID).then_some(percent);
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
    pub fn build(self) -> Result<BulkheadConfig, ConfigError> {
        let c = self.config;
        let given: [f32; 4] =
            std::array::from_fn(|i| self.invalid[i].unwrap_or_else(|| c.thresholds.get(i)));
        check_classes(&given, &[0.0; 4])?;
        if !(1..=MAX_CONCURRENT_CALLS).contains(&c.max_concurrent_calls) {
            return Err(ConfigError::new(
                "max_concurrent_calls",
                c.max_concurrent_calls,
                "an integer in 1..=2147483647",
            ));
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_resilience4j_defaults() {
        let c = BulkheadConfig::default();
        assert_eq!(c.max_concurrent_calls(), 25);
        assert_eq!(c.max_wait_duration(), Duration::ZERO);
        assert!(c.fair_call_handling_enabled());
        assert_eq!(BulkheadConfig::builder().build(), Ok(c));
    }

    #[test]
    fn the_limits_of_max_concurrent_calls_are_accepted_and_beyond_them_rejected() {
        for ok in [1, MAX_CONCURRENT_CALLS] {
            assert!(BulkheadConfig::builder()
                .max_concurrent_calls(ok)
                .build()
                .is_ok());
        }
        for bad in [0, MAX_CONCURRENT_CALLS + 1, u32::MAX] {
            let err = BulkheadConfig::builder()
                .max_concurrent_calls(bad)
                .build()
                .unwrap_err();
            assert_eq!(err.field(), "max_concurrent_calls");
            assert_eq!(err.got(), bad.to_string());
        }
    }

    #[test]
    fn to_builder_keeps_every_other_value() {
        let c = BulkheadConfig::builder()
            .max_wait_duration(Duration::from_secs(1))
            .fair_call_handling_enabled(false)
            .build()
            .unwrap();
        let d = c.to_builder().max_concurrent_calls(3).build().unwrap();
        assert_eq!(d.max_wait_duration(), Duration::from_secs(1));
        assert!(!d.fair_call_handling_enabled());
        assert_eq!(d.max_concurrent_calls(), 3);
    }
}
