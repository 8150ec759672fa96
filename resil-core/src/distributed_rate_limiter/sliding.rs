//! Sliding buckets: at most N grants in any window of the period.
//!
//! The state is one hash per limiter holding a count per time bucket; the
//! script is `sliding.lua` beside this file, whose header states the rule.

use std::sync::LazyLock;

use redis::Script;

use super::config::DistributedRateLimiterConfig;

/// The script, hashed once per process; `EVALSHA` falls back to loading it
/// after `SCRIPT FLUSH` or a server restart (`NOSCRIPT`).
pub(crate) static SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("sliding.lua")));

/// The script's arguments after the permits: `limit, interval, width` (µs).
pub(crate) fn args(config: &DistributedRateLimiterConfig) -> [u64; 3] {
    let interval = config.interval_micros();
    let width = interval.div_ceil(u64::from(config.buckets()));
    [u64::from(config.limit_for_period()), interval, width]
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn buckets_cut_the_period_in_whole_microseconds_rounding_up() {
        let c = DistributedRateLimiterConfig::builder()
            .limit_for_period(7)
            .limit_refresh_period(Duration::from_millis(1))
            .buckets(3)
            .build()
            .unwrap();
        assert_eq!(args(&c), [7, 1000, 334]);
    }
}
