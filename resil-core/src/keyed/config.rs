//! How many keys a family holds and how long an idle one stays.

use std::time::Duration;

use crate::error::ConfigError;

/// The default `max-keys`.
pub const DEFAULT_MAX_KEYS: usize = 10_000;

/// The default `idle-ttl`: 10 minutes.
pub const DEFAULT_IDLE_TTL: Duration = Duration::from_secs(600);

/// The most keys a family may be configured for.
pub const MAX_MAX_KEYS: usize = 100_000_000;

/// A keyed family's bounds: at most `max_keys` keys (then the least recently
/// used key that holds no state that matters makes room), and keys unused
/// for `idle_ttl` are dropped (again, only when their state allows).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyedConfig {
    max_keys: usize,
    idle_ttl: Duration,
}

impl Default for KeyedConfig {
    fn default() -> Self {
        KeyedConfig {
            max_keys: DEFAULT_MAX_KEYS,
            idle_ttl: DEFAULT_IDLE_TTL,
        }
    }
}

impl KeyedConfig {
    /// Bounds of `max_keys` keys (`1..=100 000 000`) and `idle_ttl`
    /// (at least 1 ms).
    pub fn new(max_keys: usize, idle_ttl: Duration) -> Result<Self, ConfigError> {
        if !(1..=MAX_MAX_KEYS).contains(&max_keys) {
            return Err(ConfigError::new(
                "max_keys",
                max_keys.to_string(),
                "1..=100000000",
            ));
        }
        if idle_ttl < Duration::from_millis(1) {
            return Err(ConfigError::new(
                "idle_ttl",
                format!("{idle_ttl:?}"),
                ">= 1ms",
            ));
        }
        Ok(KeyedConfig { max_keys, idle_ttl })
    }

    /// The most keys held at once.
    pub fn max_keys(&self) -> usize {
        self.max_keys
    }

    /// How long an unused key is kept.
    pub fn idle_ttl(&self) -> Duration {
        self.idle_ttl
    }
}
