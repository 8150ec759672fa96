//! Adaptive bulkhead configuration: the bounds and tuning of its Vegas limit.

use std::time::Duration;

use crate::criticality::{check_classes, Criticality, DEFAULT_THRESHOLDS};
use crate::error::ConfigError;

use super::MAX_CONCURRENT_CALLS;

/// How an [`AdaptiveBulkhead`](super::AdaptiveBulkhead)'s limit starts and
/// where it may go.
///
/// The defaults are Netflix concurrency-limits' `VegasLimit` defaults: start
/// at 20, stay within 1..=1000, no smoothing (1.0: each update takes full
/// effect), probe the no-load latency every 15 to 30 × limit samples; and its
/// `WindowedLimit` defaults: the estimator sees one sample per window of
/// 1 s and at least 10 calls (the window's average latency), and ignores
/// latencies under 100 µs.
///
/// ```
/// use resil_core::bulkhead::AdaptiveBulkheadConfig;
///
/// let config = AdaptiveBulkheadConfig::builder()
///     .initial_limit(10)
///     .min_limit(2)
///     .max_limit(200)
///     .build()
///     .unwrap();
/// assert_eq!((config.initial_limit(), config.min_limit(), config.max_limit()), (10, 2, 200));
///
/// let err = AdaptiveBulkheadConfig::builder().min_limit(50).build().unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     "invalid `initial_limit`: got 20, expected an integer in min_limit..=max_limit (here 50..=1000)"
/// );
/// ```
///
/// # Admission by criticality
///
/// Each [`Criticality`] has a *threshold*, a percentage of the limit: a call
/// of that class is admitted while the calls in flight (of every class) are
/// fewer than `ceil(threshold × limit / 100)`. The defaults refuse
/// `SHEDDABLE` work once half the limit is busy, `SHEDDABLE_PLUS` at 75 %, and
/// let `CRITICAL` and `CRITICAL_PLUS` use all of it — so a program that never
/// sets a class (every call `CRITICAL`) sees the plain limit.
///
/// Each class also has a *guaranteed share* (Netflix concurrency-limits'
/// partitioned limiter): a call refused by its threshold or by the limit is
/// admitted anyway while its own class holds fewer than
/// `ceil(share × limit / 100)` slots. Below its threshold a class borrows any
/// idle share; above it only its guarantee is left. By default only
/// `CRITICAL_PLUS` has one (10 %), which is what makes it the last class
/// refused: with the limit full, the load balancer's health probe still gets
/// in. Guaranteed calls may take the slots in flight past the limit by at
/// most the sum of the shares, as in Netflix's limiter.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct AdaptiveBulkheadConfig {
    initial_limit: u32,
    min_limit: u32,
    max_limit: u32,
    smoothing: f64,
    probe_multiplier: u32,
    min_window_time: Duration,
    max_window_time: Duration,
    window_size: u32,
    min_rtt_threshold: Duration,
    /// Per class (indexed by [`Criticality::index`]), in percent of the limit.
    thresholds: [f32; 4],
    /// Per class, in percent of the limit.
    guaranteed: [f32; 4],
}

/// The default per-class guaranteed shares (percent of the limit), from
/// `SHEDDABLE` to `CRITICAL_PLUS`.
pub(crate) const DEFAULT_GUARANTEED_SHARES: [f32; 4] = [0.0, 0.0, 0.0, 10.0];

impl Default for AdaptiveBulkheadConfig {
    fn default() -> Self {
        AdaptiveBulkheadConfig {
            initial_limit: 20,
            min_limit: 1,
            max_limit: 1000,
            smoothing: 1.0,
            probe_multiplier: 30,
            min_window_time: Duration::from_secs(1),
            max_window_time: Duration::from_secs(1),
            window_size: 10,
            min_rtt_threshold: Duration::from_micros(100),
            thresholds: DEFAULT_THRESHOLDS,
            guaranteed: DEFAULT_GUARANTEED_SHARES,
        }
    }
}

impl AdaptiveBulkheadConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> AdaptiveBulkheadConfigBuilder {
        AdaptiveBulkheadConfigBuilder {
            config: AdaptiveBulkheadConfig::default(),
        }
    }

    /// A builder starting from this configuration.
    pub fn to_builder(&self) -> AdaptiveBulkheadConfigBuilder {
        AdaptiveBulkheadConfigBuilder { config: *self }
    }

    /// The limit before any latency was measured (default 20).
    #[inline]
    pub fn initial_limit(&self) -> u32 {
        self.initial_limit
    }

    /// The limit never goes below this (default 1).
    #[inline]
    pub fn min_limit(&self) -> u32 {
        self.min_limit
    }

    /// The limit never goes above this (default 1000, Netflix's `maxConcurrency`).
    #[inline]
    pub fn max_limit(&self) -> u32 {
        self.max_limit
    }

    /// How much of each update takes effect, in `(0, 1]` (default 1.0).
    #[inline]
    pub fn smoothing(&self) -> f64 {
        self.smoothing
    }

    /// The no-load latency is re-measured every `0.5..1 × probe_multiplier ×
    /// limit` samples (default 30).
    #[inline]
    pub fn probe_multiplier(&self) -> u32 {
        self.probe_multiplier
    }

    /// The shortest sample window (default 1 s). A window lasts twice its
    /// smallest latency, within `min_window_time..=max_window_time`.
    #[inline]
    pub fn min_window_time(&self) -> Duration {
        self.min_window_time
    }

    /// The longest sample window (default 1 s).
    #[inline]
    pub fn max_window_time(&self) -> Duration {
        self.max_window_time
    }

    /// Calls a window needs before it updates the limit (default 10); a
    /// window closing with fewer is discarded.
    #[inline]
    pub fn window_size(&self) -> u32 {
        self.window_size
    }

    /// Latencies below this are not samples (default 100 µs).
    #[inline]
    pub fn min_rtt_threshold(&self) -> Duration {
        self.min_rtt_threshold
    }

    /// The threshold of `class`: in percent of the limit, the in-flight calls
    /// below which the class is admitted (defaults 50, 75, 100, 100 from
    /// `SHEDDABLE` to `CRITICAL_PLUS`).
    #[inline]
    pub fn threshold(&self, class: Criticality) -> f32 {
        self.thresholds[class.index()]
    }

    /// The guaranteed share of `class`, in percent of the limit (defaults 0,
    /// 0, 0, 10 from `SHEDDABLE` to `CRITICAL_PLUS`).
    #[inline]
    pub fn guaranteed_share(&self, class: Criticality) -> f32 {
        self.guaranteed[class.index()]
    }

    /// [`threshold`](Self::threshold) of `SHEDDABLE` (file key `sheddable-threshold`).
    #[inline]
    pub fn sheddable_threshold(&self) -> f32 {
        self.threshold(Criticality::Sheddable)
    }

    /// [`guaranteed_share`](Self::guaranteed_share) of `SHEDDABLE` (file key
    /// `sheddable-guaranteed-share`).
    #[inline]
    pub fn sheddable_guaranteed_share(&self) -> f32 {
        self.guaranteed_share(Criticality::Sheddable)
    }

    /// [`threshold`](Self::threshold) of `SHEDDABLE_PLUS` (file key `sheddable-plus-threshold`).
    #[inline]
    pub fn sheddable_plus_threshold(&self) -> f32 {
        self.threshold(Criticality::SheddablePlus)
    }

    /// [`guaranteed_share`](Self::guaranteed_share) of `SHEDDABLE_PLUS` (file key
    /// `sheddable-plus-guaranteed-share`).
    #[inline]
    pub fn sheddable_plus_guaranteed_share(&self) -> f32 {
        self.guaranteed_share(Criticality::SheddablePlus)
    }

    /// [`threshold`](Self::threshold) of `CRITICAL` (file key `critical-threshold`).
    #[inline]
    pub fn critical_threshold(&self) -> f32 {
        self.threshold(Criticality::Critical)
    }

    /// [`guaranteed_share`](Self::guaranteed_share) of `CRITICAL` (file key
    /// `critical-guaranteed-share`).
    #[inline]
    pub fn critical_guaranteed_share(&self) -> f32 {
        self.guaranteed_share(Criticality::Critical)
    }

    /// [`threshold`](Self::threshold) of `CRITICAL_PLUS` (file key `critical-plus-threshold`).
    #[inline]
    pub fn critical_plus_threshold(&self) -> f32 {
        self.threshold(Criticality::CriticalPlus)
    }

    /// [`guaranteed_share`](Self::guaranteed_share) of `CRITICAL_PLUS` (file key
    /// `critical-plus-guaranteed-share`).
    #[inline]
    pub fn critical_plus_guaranteed_share(&self) -> f32 {
        self.guaranteed_share(Criticality::CriticalPlus)
    }
}

/// Builds an [`AdaptiveBulkheadConfig`]; [`build`](Self::build) checks every value.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct AdaptiveBulkheadConfigBuilder {
    config: AdaptiveBulkheadConfig,
}

impl AdaptiveBulkheadConfigBuilder {
    /// The starting limit: `min_limit..=max_limit`.
    pub fn initial_limit(mut self, limit: u32) -> Self {
        self.config.initial_limit = limit;
        self
    }

    /// The smallest limit: `1..=max_limit`.
    pub fn min_limit(mut self, limit: u32) -> Self {
        self.config.min_limit = limit;
        self
    }

    /// The largest limit: `1..=`[`MAX_CONCURRENT_CALLS`].
    pub fn max_limit(mut self, limit: u32) -> Self {
        self.config.max_limit = limit;
        self
    }

    /// How much of each update takes effect: `(0, 1]`.
    pub fn smoothing(mut self, smoothing: f64) -> Self {
        self.config.smoothing = smoothing;
        self
    }

    /// How often the no-load latency is re-measured: `1..=1000` (× limit samples).
    pub fn probe_multiplier(mut self, multiplier: u32) -> Self {
        self.config.probe_multiplier = multiplier;
        self
    }

    /// The shortest sample window: `1ms..=60s`, at most `max_window_time`.
    pub fn min_window_time(mut self, window: Duration) -> Self {
        self.config.min_window_time = window;
        self
    }

    /// The longest sample window: `min_window_time..=60s`.
    pub fn max_window_time(mut self, window: Duration) -> Self {
        self.config.max_window_time = window;
        self
    }

    /// Calls a window needs to update the limit: `1..=100000`.
    pub fn window_size(mut self, calls: u32) -> Self {
        self.config.window_size = calls;
        self
    }

    /// Latencies below this are not samples: at most 1 s.
    pub fn min_rtt_threshold(mut self, threshold: Duration) -> Self {
        self.config.min_rtt_threshold = threshold;
        self
    }

    /// The threshold of `class`, in percent of the limit: `(0, 100]`, and no
    /// class's above a more critical one's.
    pub fn threshold(mut self, class: Criticality, percent: f32) -> Self {
        self.config.thresholds[class.index()] = percent;
        self
    }

    /// The guaranteed share of `class`, in percent of the limit: `[0, 100]`,
    /// all classes' together at most 100.
    pub fn guaranteed_share(mut self, class: Criticality, percent: f32) -> Self {
        self.config.guaranteed[class.index()] = percent;
        self
    }

    /// [`threshold`](Self::threshold) of `SHEDDABLE`.
    pub fn sheddable_threshold(self, percent: f32) -> Self {
        self.threshold(Criticality::Sheddable, percent)
    }

    /// [`guaranteed_share`](Self::guaranteed_share) of `SHEDDABLE`.
    pub fn sheddable_guaranteed_share(self, percent: f32) -> Self {
        self.guaranteed_share(Criticality::Sheddable, percent)
    }

    /// [`threshold`](Self::threshold) of `SHEDDABLE_PLUS`.
    pub fn sheddable_plus_threshold(self, percent: f32) -> Self {
        self.threshold(Criticality::SheddablePlus, percent)
    }

    /// [`guaranteed_share`](Self::guaranteed_share) of `SHEDDABLE_PLUS`.
    pub fn sheddable_plus_guaranteed_share(self, percent: f32) -> Self {
        self.guaranteed_share(Criticality::SheddablePlus, percent)
    }

    /// [`threshold`](Self::threshold) of `CRITICAL`.
    pub fn critical_threshold(self, percent: f32) -> Self {
        self.threshold(Criticality::Critical, percent)
    }

    /// [`guaranteed_share`](Self::guaranteed_share) of `CRITICAL`.
    pub fn critical_guaranteed_share(self, percent: f32) -> Self {
        self.guaranteed_share(Criticality::Critical, percent)
    }

    /// [`threshold`](Self::threshold) of `CRITICAL_PLUS`.
    pub fn critical_plus_threshold(self, percent: f32) -> Self {
        self.threshold(Criticality::CriticalPlus, percent)
    }

    /// [`guaranteed_share`](Self::guaranteed_share) of `CRITICAL_PLUS`.
    pub fn critical_plus_guaranteed_share(self, percent: f32) -> Self {
        self.guaranteed_share(Criticality::CriticalPlus, percent)
    }

    /// The configuration, or the first invalid value with its field name.
    pub fn build(self) -> Result<AdaptiveBulkheadConfig, ConfigError> {
        let c = self.config;
        check_classes(&c.thresholds, &c.guaranteed)?;
        let minute = Duration::from_secs(60);
        if !(Duration::from_millis(1)..=minute).contains(&c.min_window_time) {
            return Err(ConfigError::new(
                "min_window_time",
                format!("{:?}", c.min_window_time),
                "a duration in 1ms..=60s",
            ));
        }
        if !(c.min_window_time..=minute).contains(&c.max_window_time) {
            return Err(ConfigError::new(
                "max_window_time",
                format!("{:?}", c.max_window_time),
                format!(
                    "a duration in min_window_time..=60s (here {:?}..=60s)",
                    c.min_window_time
                ),
            ));
        }
        if !(1..=100_000).contains(&c.window_size) {
            return Err(ConfigError::new(
                "window_size",
                c.window_size,
                "an integer in 1..=100000",
            ));
        }
        if c.min_rtt_threshold > Duration::from_secs(1) {
            return Err(ConfigError::new(
                "min_rtt_threshold",
                format!("{:?}", c.min_rtt_threshold),
                "a duration in 0s..=1s",
            ));
        }
        if !(1..=MAX_CONCURRENT_CALLS).contains(&c.max_limit) {
            return Err(ConfigError::new(
                "max_limit",
                c.max_limit,
                "an integer in 1..=2147483647",
            ));
        }
        if !(1..=c.max_limit).contains(&c.min_limit) {
            return Err(ConfigError::new(
                "min_limit",
                c.min_limit,
                format!("an integer in 1..=max_limit (here 1..={})", c.max_limit),
            ));
        }
        if !(c.min_limit..=c.max_limit).contains(&c.initial_limit) {
            return Err(ConfigError::new(
                "initial_limit",
                c.initial_limit,
                format!(
                    "an integer in min_limit..=max_limit (here {}..={})",
                    c.min_limit, c.max_limit
                ),
            ));
        }
        if !(c.smoothing > 0.0 && c.smoothing <= 1.0) {
            return Err(ConfigError::new(
                "smoothing",
                c.smoothing,
                "a number in (0, 1]",
            ));
        }
        if !(1..=1000).contains(&c.probe_multiplier) {
            return Err(ConfigError::new(
                "probe_multiplier",
                c.probe_multiplier,
                "an integer in 1..=1000",
            ));
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_netflix_vegas_defaults() {
        let c = AdaptiveBulkheadConfig::default();
        assert_eq!(
            (c.initial_limit(), c.min_limit(), c.max_limit()),
            (20, 1, 1000)
        );
        assert_eq!((c.smoothing(), c.probe_multiplier()), (1.0, 30));
        assert_eq!(
            (c.min_window_time(), c.max_window_time(), c.window_size()),
            (Duration::from_secs(1), Duration::from_secs(1), 10)
        );
        assert_eq!(c.min_rtt_threshold(), Duration::from_micros(100));
        assert_eq!(
            Criticality::ALL.map(|k| c.threshold(k)),
            [50.0, 75.0, 100.0, 100.0]
        );
        assert_eq!(
            Criticality::ALL.map(|k| c.guaranteed_share(k)),
            [0.0, 0.0, 0.0, 10.0]
        );
        assert_eq!(AdaptiveBulkheadConfig::builder().build(), Ok(c));
    }

    #[test]
    fn every_bad_value_is_named_with_its_range() {
        let b = AdaptiveBulkheadConfig::builder;
        let cases = [
            (b().max_limit(0).build(), "max_limit", "0"),
            (
                b().max_limit(MAX_CONCURRENT_CALLS + 1).build(),
                "max_limit",
                "2147483648",
            ),
            (b().min_limit(0).build(), "min_limit", "0"),
            (b().max_limit(10).min_limit(11).build(), "min_limit", "11"),
            (b().max_limit(10).build(), "initial_limit", "20"),
            (b().smoothing(0.0).build(), "smoothing", "0"),
            (b().smoothing(1.5).build(), "smoothing", "1.5"),
            (b().smoothing(f64::NAN).build(), "smoothing", "NaN"),
            (b().probe_multiplier(0).build(), "probe_multiplier", "0"),
            (
                b().min_window_time(Duration::ZERO).build(),
                "min_window_time",
                "0ns",
            ),
            (
                b().min_window_time(Duration::from_secs(2)).build(),
                "max_window_time",
                "1s",
            ),
            (b().window_size(0).build(), "window_size", "0"),
            (
                b().min_rtt_threshold(Duration::from_secs(2)).build(),
                "min_rtt_threshold",
                "2s",
            ),
            (
                b().sheddable_threshold(0.0).build(),
                "sheddable_threshold",
                "0",
            ),
            (
                b().critical_plus_threshold(101.0).build(),
                "critical_plus_threshold",
                "101",
            ),
            (
                b().critical_threshold(60.0).build(),
                "critical_threshold",
                "60",
            ),
            (
                b().sheddable_guaranteed_share(-1.0).build(),
                "sheddable_guaranteed_share",
                "-1",
            ),
            (
                b().critical_guaranteed_share(95.0).build(),
                "critical_plus_guaranteed_share",
                "10",
            ),
        ];
        for (result, field, got) in cases {
            let err = result.unwrap_err();
            assert_eq!((err.field(), err.got()), (field, got), "{err}");
        }
        assert_eq!(
            b().max_limit(10)
                .min_limit(11)
                .build()
                .unwrap_err()
                .to_string(),
            "invalid `min_limit`: got 11, expected an integer in 1..=max_limit (here 1..=10)"
        );
        assert_eq!(
            b().sheddable_plus_threshold(40.0).build().unwrap_err().to_string(),
            "invalid `sheddable_plus_threshold`: got 40, expected a percentage in [50, 100]: a class is never refused before a less critical one (`sheddable_threshold` is 50)"
        );
    }
}
