//! The rate limiter and its Redis-backed twins: file options, the in-place
//! update of a limit or timeout, health and metrics. The twins themselves
//! (feature `redis`) are the Redis module, `rate_limiter/redis.rs`.

use std::time::Duration;

use resil_core::event::EventStream;
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig, RateLimiterConfigBuilder};

use super::primitive;
use super::{bind, plain_options};
use crate::kind::Kind;
use crate::overrides::Overrides;
use crate::primitive::Hooks;
#[cfg(not(feature = "redis"))]
use crate::primitive::Twins;
use crate::telemetry::describe::{describe_config, Describe, Family, Metric, Telemetry};
use crate::telemetry::health::Status;

#[cfg(feature = "redis")]
mod redis;

/// The rate limiter's twins: the Redis-backed limiters (feature `redis`).
#[cfg(feature = "redis")]
pub(crate) use self::redis::RedisTwins as RateTwins;

/// The rate limiter's twins: none without feature `redis`.
#[cfg(not(feature = "redis"))]
#[derive(Debug, Default)]
pub struct RateTwins;

#[cfg(not(feature = "redis"))]
impl Twins<RateLimiterConfigBuilder> for RateTwins {
    type Pending = ();
}

#[cfg(not(feature = "redis"))]
impl RateTwins {
    /// No Redis-backed limiter runs: nothing to change.
    pub(crate) fn change(
        &self,
        _name: &str,
        _change: RateChange,
        _events: &crate::event::Publisher,
        _cause: &str,
    ) -> Result<bool, crate::RegistryError> {
        Ok(false)
    }

    /// No Redis-backed limiter runs: nothing to apply again.
    pub(crate) fn reassert(
        &self,
        _name: &str,
        _tuning: crate::overrides::Tuning,
        _events: &crate::event::Publisher,
    ) {
    }
}

/// An operator's change to a rate limiter by name, which its Redis-backed
/// twin takes too.
#[derive(Debug, Clone, Copy)]
#[cfg_attr(not(feature = "redis"), allow(dead_code))]
pub(crate) enum RateChange {
    /// A new `limit-for-period`.
    Limit(u32),
    /// A new `timeout-duration`.
    Timeout(Duration),
}

primitive!(RateLimiter: RateLimiterConfig => RateLimiterConfigBuilder, Kind::RateLimiter);

impl Hooks for RateLimiter {
    type Settings = RateLimiterConfigBuilder;
    type Twins = RateTwins;

    /// Rate limiters have shadows: the staged settings take the same permits.
    fn start_shadow(
        handle: &crate::handle::Handle<Self>,
        config: &RateLimiterConfig,
        trial: &crate::shadow::TrialContext,
    ) -> Option<Box<dyn crate::shadow::ShadowRun>> {
        Some(crate::shadow::Run::start(handle, config, trial))
    }

    /// A running shadow trial goes on beside the rebuilt instance.
    fn before_install(
        _overrides: &crate::overrides::Overrides,
        _name: &str,
        previous: &Self,
        next: &Self,
        _carried: bool,
    ) {
        resil_core::shadow::Shadowed::move_shadow_to(previous, next);
    }

    /// The limit and the timeout have run-time setters; a new refresh
    /// period needs a new instance.
    fn update_in_place(&self, next: &RateLimiterConfig) -> bool {
        let current = self.config();
        if current.limit_refresh_period() != next.limit_refresh_period() {
            return false;
        }
        if current.limit_for_period() != next.limit_for_period()
            && self
                .change_limit_for_period(next.limit_for_period())
                .is_err()
        {
            return false;
        }
        self.change_timeout_duration(next.timeout_duration());
        true
    }

    /// An operator's limit and timeout outlive a reload until released.
    fn reassert(&self, overrides: &Overrides, name: &str) {
        let Some(tuning) = overrides.tuning(Kind::RateLimiter, name) else {
            return;
        };
        if let Some(limit) = tuning.limit_for_period {
            let _ = self.change_limit_for_period(limit);
        }
        if let Some(timeout) = tuning.timeout_duration {
            self.change_timeout_duration(timeout);
        }
    }
}

bind! {
    RateLimiterConfig => RateLimiterConfigBuilder {
        "limit-for-period" => U32: limit_for_period,
        "limit-refresh-period" => Duration: limit_refresh_period,
        "timeout-duration" => Duration: timeout_duration,
        "sheddable-threshold" => Percent: sheddable_threshold,
        "sheddable-plus-threshold" => Percent: sheddable_plus_threshold,
        "critical-threshold" => Percent: critical_threshold,
        "critical-plus-threshold" => Percent: critical_plus_threshold,
        "warm-up-period" => Duration: warm_up_period,
        "cold-factor" => U32: cold_factor,
    }
}

plain_options!(RateLimiterConfig => RateLimiterConfigBuilder, Kind::RateLimiter);

pub(crate) const AVAILABLE: Family = Family::new(
    "ratelimiter_available_permissions",
    "Permissions left in the current period (negative while reserved by waiting callers)",
);
pub(crate) const WAITING: Family = Family::new(
    "ratelimiter_waiting_threads",
    "Callers waiting for a permission",
);
const CALLS: Family = Family::new(
    "ratelimiter_calls",
    "Acquisitions the rate limiter granted or refused (kind)",
);

pub(crate) const REFUSED_BY_CLASS: Family = Family::new(
    "ratelimiter_refused_calls",
    "Acquisitions the rate limiter refused, by the request's criticality",
);

impl Telemetry for RateLimiter {
    fn metric_values(&self) -> Vec<Metric> {
        let m = self.metrics();
        let mut out = vec![
            Metric::gauge(AVAILABLE, None, m.available_permissions() as f64),
            Metric::gauge(WAITING, None, f64::from(m.number_of_waiting_threads())),
            Metric::counter(CALLS, Some("successful"), m.successful_acquisitions()),
            Metric::counter(CALLS, Some("failed"), m.failed_acquisitions()),
        ];
        out.extend(resil_core::Criticality::ALL.map(|c| {
            Metric::counter(
                REFUSED_BY_CLASS,
                Some(c.as_str()),
                m.failed_acquisitions_of(c),
            )
            .keyed("criticality")
        }));
        out
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        describe_config(&self.config())
    }

    fn health(&self) -> (Status, Option<String>) {
        let m = self.metrics();
        if m.number_of_waiting_threads() > 0 || m.available_permissions() < 0 {
            (
                Status::Degraded,
                Some(format!(
                    "{} callers waiting, {} permissions available",
                    m.number_of_waiting_threads(),
                    m.available_permissions()
                )),
            )
        } else {
            (Status::Up, None)
        }
    }
}

impl Describe for RateLimiter {
    type Event = resil_core::rate_limiter::RateLimiterEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    fn default_values() -> Vec<(&'static str, String)> {
        describe_config(&RateLimiterConfig::default())
    }
}
