//! The time limiter: its file options and metrics.

use std::sync::Arc;

use resil_core::clock::SharedClock;
use resil_core::event::EventStream;
use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig, TimeLimiterConfigBuilder};

use super::created;
use super::{bind, plain_options};
use crate::kind::Kind;
use crate::primitive::{Hooks, NoTwins, Primitive};
use crate::telemetry::describe::{describe_config, Describe, Family, Metric, Telemetry};

impl Primitive for TimeLimiter {
    type Config = TimeLimiterConfig;
    type Builder = TimeLimiterConfigBuilder;
    const KIND: Kind = Kind::TimeLimiter;

    fn default_builder() -> TimeLimiterConfigBuilder {
        TimeLimiterConfig::builder()
    }

    fn to_builder(c: &TimeLimiterConfig) -> TimeLimiterConfigBuilder {
        TimeLimiterConfig::builder()
            .timeout_duration(c.timeout_duration())
            .cancel_running_future(c.cancel_running_future())
    }

    fn create(name: Arc<str>, config: TimeLimiterConfig, clock: Option<&SharedClock>) -> Self {
        created!(TimeLimiter, name, config, clock)
    }

    #[allow(clippy::clone_on_copy)]
    fn config_of(&self) -> TimeLimiterConfig {
        self.config().clone()
    }
}

impl Hooks for TimeLimiter {
    type Settings = TimeLimiterConfigBuilder;
    type Twins = NoTwins;
}

bind! {
    TimeLimiterConfig => TimeLimiterConfigBuilder {
        "timeout-duration" => Duration: timeout_duration,
        "cancel-running-future" => Bool: cancel_running_future,
    }
}

plain_options!(TimeLimiterConfig => TimeLimiterConfigBuilder, Kind::TimeLimiter);

const CALLS: Family = Family::new(
    "timelimiter_calls",
    "Calls through the time limiter, by outcome (kind): successful, failed, or timed out",
);

impl Telemetry for TimeLimiter {
    fn metric_values(&self) -> Vec<Metric> {
        let m = self.metrics();
        vec![
            Metric::counter(CALLS, Some("successful"), m.successful_calls()),
            Metric::counter(CALLS, Some("failed"), m.failed_calls()),
            Metric::counter(CALLS, Some("timeout"), m.timeout_calls()),
        ]
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        describe_config(self.config())
    }
}

impl Describe for TimeLimiter {
    type Event = resil_core::time_limiter::TimeLimiterEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    fn default_values() -> Vec<(&'static str, String)> {
        describe_config(&TimeLimiterConfig::default())
    }
}
