//! The time limiter's configuration: how long to wait, and what happens to the
//! work when the wait ends.

use std::time::Duration;

use crate::error::ConfigError;

/// How long a [`TimeLimiter`](super::TimeLimiter) waits for a future, and whether
/// it cancels the future when it stops waiting.
///
/// The defaults are Resilience4j's: wait 1 s, cancel the running future.
///
/// ```
/// use std::time::Duration;
/// use resil_core::time_limiter::TimeLimiterConfig;
///
/// let config = TimeLimiterConfig::builder()
///     .timeout_duration(Duration::from_millis(800))
///     .build()
///     .unwrap();
/// assert_eq!(config.timeout_duration(), Duration::from_millis(800));
/// assert!(config.cancel_running_future());
///
/// let err = TimeLimiterConfig::builder()
///     .timeout_duration(Duration::ZERO)
///     .build()
///     .unwrap_err();
/// assert_eq!(err.field(), "timeout_duration");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TimeLimiterConfig {
    timeout_duration: Duration,
    cancel_running_future: bool,
}

impl TimeLimiterConfig {
    /// Resilience4j's default `timeoutDuration`: 1 s.
    pub const DEFAULT_TIMEOUT_DURATION: Duration = Duration::from_secs(1);
    /// Resilience4j's default `cancelRunningFuture`: `true`.
    pub const DEFAULT_CANCEL_RUNNING_FUTURE: bool = true;

    /// A builder starting from the defaults.
    pub fn builder() -> TimeLimiterConfigBuilder {
        TimeLimiterConfigBuilder {
            config: TimeLimiterConfig::default(),
        }
    }

    /// The longest the limiter waits for the future.
    #[inline]
    pub fn timeout_duration(&self) -> Duration {
        self.timeout_duration
    }

    /// Whether the future is dropped (cancelled) when the limiter stops waiting;
    /// `false` lets it run to completion on a spawned task whose result is
    /// discarded (see [`TimeLimiter::call_async_detachable`](super::TimeLimiter::call_async_detachable)).
    #[inline]
    pub fn cancel_running_future(&self) -> bool {
        self.cancel_running_future
    }
}

impl Default for TimeLimiterConfig {
    fn default() -> Self {
        TimeLimiterConfig {
            timeout_duration: Self::DEFAULT_TIMEOUT_DURATION,
            cancel_running_future: Self::DEFAULT_CANCEL_RUNNING_FUTURE,
        }
    }
}

/// Builds a [`TimeLimiterConfig`]; [`build`](Self::build) rejects invalid values.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct TimeLimiterConfigBuilder {
    config: TimeLimiterConfig,
}

impl TimeLimiterConfigBuilder {
    /// The longest the limiter waits for the future; must be greater than zero.
    pub fn timeout_duration(mut self, timeout_duration: Duration) -> Self {
        self.config.timeout_duration = timeout_duration;
        self
    }

    /// Whether to drop the future when the limiter stops waiting.
    pub fn cancel_running_future(mut self, cancel_running_future: bool) -> Self {
        self.config.cancel_running_future = cancel_running_future;
        self
    }

    /// The configuration, or the first invalid value.
    pub fn build(self) -> Result<TimeLimiterConfig, ConfigError> {
        if self.config.timeout_duration.is_zero() {
            return Err(ConfigError::new(
                "timeout_duration",
                format_args!("{:?}", self.config.timeout_duration),
                "a duration > 0",
            ));
        }
        Ok(self.config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_resilience4j_s_one_second_and_cancel() {
        let config = TimeLimiterConfig::default();
        assert_eq!(config.timeout_duration(), Duration::from_secs(1));
        assert!(config.cancel_running_future());
        assert_eq!(TimeLimiterConfig::builder().build().unwrap(), config);
    }

    #[test]
    fn a_zero_timeout_is_rejected_naming_the_field_and_the_range() {
        let err = TimeLimiterConfig::builder()
            .timeout_duration(Duration::ZERO)
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid `timeout_duration`: got 0ns, expected a duration > 0"
        );
    }

    #[test]
    fn the_builder_sets_every_field() {
        let config = TimeLimiterConfig::builder()
            .timeout_duration(Duration::from_millis(1))
            .cancel_running_future(false)
            .build()
            .unwrap();
        assert_eq!(config.timeout_duration(), Duration::from_millis(1));
        assert!(!config.cancel_running_future());
    }
}
