//! The thread-pool bulkhead's configuration: thread counts, queue, keep-alive.

use std::time::Duration;

use crate::error::ConfigError;

/// Sizes of a [`ThreadPoolBulkhead`](super::ThreadPoolBulkhead): how many
/// threads it keeps, how many it may grow to, how many tasks wait in its queue
/// and how long an extra thread idles before it exits.
///
/// The defaults are Resilience4j's `ThreadPoolBulkheadConfig` defaults, with
/// `n` = [`std::thread::available_parallelism`] (1 if unknown):
///
/// | field | default |
/// |---|---|
/// | `core_thread_pool_size` | `max(n - 1, 1)` |
/// | `max_thread_pool_size` | `n` |
/// | `queue_capacity` | 100 |
/// | `keep_alive_duration` | 20 ms |
///
/// Setting only `max_thread_pool_size` below the default core size fails to
/// build, as in Resilience4j: set both.
///
/// ```
/// use std::time::Duration;
/// use resil_core::thread_pool_bulkhead::ThreadPoolBulkheadConfig;
///
/// let config = ThreadPoolBulkheadConfig::builder()
///     .core_thread_pool_size(2)
///     .max_thread_pool_size(4)
///     .queue_capacity(0) // direct hand-off
///     .build()
///     .unwrap();
/// assert_eq!(config.queue_capacity(), 0);
///
/// let err = ThreadPoolBulkheadConfig::builder()
///     .core_thread_pool_size(4)
///     .max_thread_pool_size(2)
///     .build()
///     .unwrap_err();
/// assert_eq!(err.field(), "max_thread_pool_size");
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThreadPoolBulkheadConfig {
    core_thread_pool_size: usize,
    max_thread_pool_size: usize,
    queue_capacity: usize,
    keep_alive_duration: Duration,
}

impl ThreadPoolBulkheadConfig {
    /// Resilience4j's default `queueCapacity`: 100.
    pub const DEFAULT_QUEUE_CAPACITY: usize = 100;
    /// Resilience4j's default `keepAliveDuration`: 20 ms.
    pub const DEFAULT_KEEP_ALIVE_DURATION: Duration = Duration::from_millis(20);

    /// A builder starting from the defaults.
    pub fn builder() -> ThreadPoolBulkheadConfigBuilder {
        ThreadPoolBulkheadConfigBuilder {
            config: ThreadPoolBulkheadConfig::default(),
        }
    }

    /// Threads kept even when idle; started lazily, one per submission, until
    /// there are this many.
    #[inline]
    pub fn core_thread_pool_size(&self) -> usize {
        self.core_thread_pool_size
    }

    /// The most threads the pool runs at once. Threads above the core size are
    /// started only when the queue is full.
    #[inline]
    pub fn max_thread_pool_size(&self) -> usize {
        self.max_thread_pool_size
    }

    /// How many tasks may wait for a thread. `0` is a direct hand-off: a task is
    /// accepted only if a thread is idle or a new one may start.
    #[inline]
    pub fn queue_capacity(&self) -> usize {
        self.queue_capacity
    }

    /// How long a thread above the core size waits for work before it exits.
    #[inline]
    pub fn keep_alive_duration(&self) -> Duration {
        self.keep_alive_duration
    }
}

impl Default for ThreadPoolBulkheadConfig {
    fn default() -> Self {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        ThreadPoolBulkheadConfig {
            core_thread_pool_size: n.saturating_sub(1).max(1),
            max_thread_pool_size: n,
            queue_capacity: Self::DEFAULT_QUEUE_CAPACITY,
            keep_alive_duration: Self::DEFAULT_KEEP_ALIVE_DURATION,
        }
    }
}

/// Builds a [`ThreadPoolBulkheadConfig`]; [`build`](Self::build) rejects
/// invalid values.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct ThreadPoolBulkheadConfigBuilder {
    config: ThreadPoolBulkheadConfig,
}

impl ThreadPoolBulkheadConfigBuilder {
    /// Threads kept even when idle; at least 1.
    pub fn core_thread_pool_size(mut self, core_thread_pool_size: usize) -> Self {
        self.config.core_thread_pool_size = core_thread_pool_size;
        self
    }

    /// The most threads at once; at least `core_thread_pool_size`.
    pub fn max_thread_pool_size(mut self, max_thread_pool_size: usize) -> Self {
        self.config.max_thread_pool_size = max_thread_pool_size;
        self
    }

    /// How many tasks may wait for a thread; `0` for a direct hand-off.
    pub fn queue_capacity(mut self, queue_capacity: usize) -> Self {
        self.config.queue_capacity = queue_capacity;
        self
    }

    /// How long a thread above the core size idles before it exits.
    pub fn keep_alive_duration(mut self, keep_alive_duration: Duration) -> Self {
        self.config.keep_alive_duration = keep_alive_duration;
        self
    }

    /// The configuration, or the first invalid value.
    pub fn build(self) -> Result<ThreadPoolBulkheadConfig, ConfigError> {
        let c = self.config;
        if c.core_thread_pool_size == 0 {
            return Err(ConfigError::new(
                "core_thread_pool_size",
                0,
                "an integer >= 1",
            ));
        }
        if c.max_thread_pool_size < c.core_thread_pool_size {
            return Err(ConfigError::new(
                "max_thread_pool_size",
                c.max_thread_pool_size,
                format!(
                    "an integer >= core_thread_pool_size ({})",
                    c.core_thread_pool_size
                ),
            ));
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_follow_resilience4j_from_the_available_parallelism() {
        let n = std::thread::available_parallelism().map_or(1, |n| n.get());
        let config = ThreadPoolBulkheadConfig::default();
        assert_eq!(config.max_thread_pool_size(), n);
        assert_eq!(
            config.core_thread_pool_size(),
            if n > 1 { n - 1 } else { 1 }
        );
        assert_eq!(config.queue_capacity(), 100);
        assert_eq!(config.keep_alive_duration(), Duration::from_millis(20));
        assert_eq!(ThreadPoolBulkheadConfig::builder().build().unwrap(), config);
    }

    #[test]
    fn invalid_sizes_are_rejected_naming_the_field_and_the_range() {
        let err = ThreadPoolBulkheadConfig::builder()
            .core_thread_pool_size(0)
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid `core_thread_pool_size`: got 0, expected an integer >= 1"
        );
        let err = ThreadPoolBulkheadConfig::builder()
            .core_thread_pool_size(3)
            .max_thread_pool_size(2)
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid `max_thread_pool_size`: got 2, expected an integer >= core_thread_pool_size (3)"
        );
    }

    #[test]
    fn a_zero_queue_and_a_zero_keep_alive_are_valid() {
        let config = ThreadPoolBulkheadConfig::builder()
            .core_thread_pool_size(1)
            .max_thread_pool_size(1)
            .queue_capacity(0)
            .keep_alive_duration(Duration::ZERO)
            .build()
            .unwrap();
        assert_eq!(config.queue_capacity(), 0);
        assert_eq!(config.keep_alive_duration(), Duration::ZERO);
    }
}
