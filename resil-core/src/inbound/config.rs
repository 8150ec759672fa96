//! The inbound guard's thresholds.

use std::time::Duration;

use crate::error::ConfigError;

/// When an [`InboundGuard`](super::InboundGuard) refuses (Sentinel's system
/// rules): each threshold is off until set, except the CPU usage (80 %).
///
/// ```
/// use resil_core::inbound::InboundGuardConfig;
/// use std::time::Duration;
///
/// let config = InboundGuardConfig::builder()
///     .max_in_flight(200)
///     .max_average_rt(Duration::from_millis(500))
///     .build()
///     .unwrap();
/// assert_eq!(config.cpu_usage_threshold(), Some(80.0));
///
/// let err = InboundGuardConfig::builder().cpu_usage_threshold(120.0).build().unwrap_err();
/// assert_eq!(err.to_string(), "invalid `cpu_usage_threshold`: got 120, expected a percentage in (0, 100]");
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InboundGuardConfig {
    max_in_flight: Option<u32>,
    max_rps: Option<f64>,
    max_average_rt: Option<Duration>,
    cpu_usage_threshold: Option<f32>,
    load_threshold: Option<f64>,
    window: Duration,
    window_buckets: u32,
    retry_after: Duration,
}

impl Default for InboundGuardConfig {
    fn default() -> Self {
        InboundGuardConfig {
            max_in_flight: None,
            max_rps: None,
            max_average_rt: None,
            cpu_usage_threshold: Some(80.0),
            load_threshold: None,
            window: Duration::from_secs(1),
            window_buckets: 10,
            retry_after: Duration::from_secs(1),
        }
    }
}

impl InboundGuardConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> InboundGuardConfigBuilder {
        InboundGuardConfigBuilder {
            config: InboundGuardConfig::default(),
        }
    }

    /// Requests in flight at most (file key `max-in-flight`; default off).
    #[inline]
    pub fn max_in_flight(&self) -> Option<u32> {
        self.max_in_flight
    }

    /// Requests admitted per second at most, over the window (file key
    /// `max-rps`; default off).
    #[inline]
    pub fn max_rps(&self) -> Option<f64> {
        self.max_rps
    }

    /// The average response time over the window above which requests are
    /// refused (file key `max-average-rt`; default off).
    #[inline]
    pub fn max_average_rt(&self) -> Option<Duration> {
        self.max_average_rt
    }

    /// The CPU usage, in percent of what the container may use, above which
    /// the BBR check runs (file key `cpu-usage-threshold`; default 80).
    #[inline]
    pub fn cpu_usage_threshold(&self) -> Option<f32> {
        self.cpu_usage_threshold
    }

    /// The 1-minute load average above which the BBR check runs (file key
    /// `load-threshold`; default off).
    #[inline]
    pub fn load_threshold(&self) -> Option<f64> {
        self.load_threshold
    }

    /// The sliding window the rates, response times and the BBR estimate are
    /// measured over (file key `window`; default 1 s).
    #[inline]
    pub fn window(&self) -> Duration {
        self.window
    }

    /// The buckets the window slides by (file key `window-buckets`; default 10).
    #[inline]
    pub fn window_buckets(&self) -> u32 {
        self.window_buckets
    }

    /// The `Retry-After` a refusal carries (file key `retry-after`; default 1 s).
    #[inline]
    pub fn retry_after(&self) -> Duration {
        self.retry_after
    }
}

/// Builds an [`InboundGuardConfig`]; [`build`](Self::build) checks every value.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct InboundGuardConfigBuilder {
    config: InboundGuardConfig,
}

impl InboundGuardConfigBuilder {
    /// Requests in flight at most: `1..`.
    pub fn max_in_flight(mut self, max: u32) -> Self {
        self.config.max_in_flight = Some(max);
        self
    }

    /// Requests admitted per second at most: `> 0`.
    pub fn max_rps(mut self, max: f64) -> Self {
        self.config.max_rps = Some(max);
        self
    }

    /// The average response time refused above: `> 0`.
    pub fn max_average_rt(mut self, max: Duration) -> Self {
        self.config.max_average_rt = Some(max);
        self
    }

    /// The CPU usage (percent) above which the BBR check runs: `(0, 100]`.
    pub fn cpu_usage_threshold(mut self, percent: f32) -> Self {
        self.config.cpu_usage_threshold = Some(percent);
        self
    }

    /// No CPU condition: the BBR check runs only on load, if set.
    pub fn no_cpu_usage_threshold(mut self) -> Self {
        self.config.cpu_usage_threshold = None;
        self
    }

    /// The load average above which the BBR check runs: `> 0`.
    pub fn load_threshold(mut self, load: f64) -> Self {
        self.config.load_threshold = Some(load);
        self
    }

    /// The sliding window: `10ms..=60s`.
    pub fn window(mut self, window: Duration) -> Self {
        self.config.window = window;
        self
    }

    /// The window's buckets: `1..=1000`, each at least 1 ms.
    pub fn window_buckets(mut self, buckets: u32) -> Self {
        self.config.window_buckets = buckets;
        self
    }

    /// The `Retry-After` of a refusal: at most 1 hour.
    pub fn retry_after(mut self, retry_after: Duration) -> Self {
        self.config.retry_after = retry_after;
        self
    }

    /// The configuration, or the first invalid value with its field name.
    pub fn build(self) -> Result<InboundGuardConfig, ConfigError> {
        let c = self.config;
        if c.max_in_flight == Some(0) {
            return Err(ConfigError::new(
                "max_in_flight",
                0,
                "an integer in 1..=4294967295",
            ));
        }
        if let Some(rps) = c.max_rps.filter(|r| !(*r > 0.0 && r.is_finite())) {
            return Err(ConfigError::new("max_rps", rps, "a number above 0"));
        }
        if let Some(rt) = c.max_average_rt.filter(|rt| rt.is_zero()) {
            return Err(ConfigError::new(
                "max_average_rt",
                format!("{rt:?}"),
                "a duration above 0",
            ));
        }
        if let Some(cpu) = c.cpu_usage_threshold.filter(|p| !(*p > 0.0 && *p <= 100.0)) {
            return Err(ConfigError::new(
                "cpu_usage_threshold",
                cpu,
                "a percentage in (0, 100]",
            ));
        }
        if let Some(load) = c.load_threshold.filter(|l| !(*l > 0.0 && l.is_finite())) {
            return Err(ConfigError::new("load_threshold", load, "a number above 0"));
        }
        if !(Duration::from_millis(10)..=Duration::from_secs(60)).contains(&c.window) {
            return Err(ConfigError::new(
                "window",
                format!("{:?}", c.window),
                "a duration in 10ms..=60s",
            ));
        }
        let most = u32::try_from(c.window.as_millis())
            .unwrap_or(u32::MAX)
            .min(1000);
        if !(1..=most).contains(&c.window_buckets) {
            return Err(ConfigError::new(
                "window_buckets",
                c.window_buckets,
                format!(
                    "an integer in 1..={most} (at most 1000, each bucket at least 1ms of `window`)"
                ),
            ));
        }
        if c.retry_after > Duration::from_secs(3600) {
            return Err(ConfigError::new(
                "retry_after",
                format!("{:?}", c.retry_after),
                "a duration in 0s..=1h",
            ));
        }
        Ok(c)
    }
}
