//! GCRA: one grant per `period / N`, with a burst after idle spells.
//!
//! The state is one string per limiter, the theoretical arrival time of the
//! next permit; the script is `gcra.lua` beside this file.

use std::sync::LazyLock;

use redis::Script;

use super::config::DistributedRateLimiterConfig;

/// The script, hashed once per process; `EVALSHA` falls back to loading it
/// after `SCRIPT FLUSH` or a server restart (`NOSCRIPT`).
pub(crate) static SCRIPT: LazyLock<Script> =
    LazyLock::new(|| Script::new(include_str!("gcra.lua")));

/// The script's arguments after the permits: `emission, tolerance` (µs). The
/// emission interval is rounded *up* to a whole microsecond, so the sustained
/// rate is never above N per period.
pub(crate) fn args(config: &DistributedRateLimiterConfig) -> [u64; 2] {
    let emission = config
        .interval_micros()
        .div_ceil(u64::from(config.limit_for_period()));
    [emission, emission.saturating_mul(u64::from(config.burst()))]
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn the_emission_interval_rounds_up_and_the_tolerance_is_the_burst() {
        let c = DistributedRateLimiterConfig::builder()
            .algorithm(super::super::Algorithm::Gcra)
            .limit_for_period(3)
            .limit_refresh_period(Duration::from_secs(1))
            .burst(2)
            .build()
            .unwrap();
        assert_eq!(args(&c), [333_334, 666_668]);
    }
}
