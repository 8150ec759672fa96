//! The semaphore bulkhead: its file options, its in-place update (every
//! setting has a run-time setter), health and metrics.

use resil_core::bulkhead::{Bulkhead, BulkheadConfig, BulkheadConfigBuilder};
use resil_core::event::EventStream;

use super::primitive;
use super::{bind, plain_options};
use crate::kind::Kind;
use crate::overrides::Overrides;
use crate::primitive::{Hooks, NoTwins};
use crate::telemetry::describe::{describe_config, Describe, Family, Metric, Telemetry};
use crate::telemetry::health::Status;

primitive!(Bulkhead: BulkheadConfig => BulkheadConfigBuilder, Kind::Bulkhead);

impl Hooks for Bulkhead {
    type Settings = BulkheadConfigBuilder;
    type Twins = NoTwins;

    /// Bulkheads have shadows: the staged limit counts the same calls in flight.
    fn start_shadow(
        handle: &crate::handle::Handle<Self>,
        config: &BulkheadConfig,
        trial: &crate::shadow::TrialContext,
    ) -> Option<Box<dyn crate::shadow::ShadowRun>> {
        Some(crate::shadow::Run::start(handle, config, trial))
    }

    /// Every bulkhead setting has a run-time setter.
    fn update_in_place(&self, config: &BulkheadConfig) -> bool {
        self.change_config(*config);
        true
    }

    /// An operator's size outlives a reload until released.
    fn reassert(&self, overrides: &Overrides, name: &str) {
        if let Some(size) = overrides
            .tuning(Kind::Bulkhead, name)
            .and_then(|t| t.max_concurrent_calls)
        {
            let _ = self.set_max_concurrent_calls(size);
        }
    }
}

bind! {
    BulkheadConfig => BulkheadConfigBuilder {
        "max-concurrent-calls" => U32: max_concurrent_calls,
        "max-wait-duration" => Duration: max_wait_duration,
        "fair-call-handling-enabled" => Bool: fair_call_handling_enabled,
        "sheddable-threshold" => Percent: sheddable_threshold,
        "sheddable-plus-threshold" => Percent: sheddable_plus_threshold,
        "critical-threshold" => Percent: critical_threshold,
        "critical-plus-threshold" => Percent: critical_plus_threshold,
    }
}

plain_options!(BulkheadConfig => BulkheadConfigBuilder, Kind::Bulkhead);

const AVAILABLE: Family = Family::new(
    "bulkhead_available_concurrent_calls",
    "The number of calls the bulkhead can still let in",
);
const MAX_ALLOWED: Family = Family::new(
    "bulkhead_max_allowed_concurrent_calls",
    "The bulkhead's maximum number of concurrent calls",
);
const WAITING: Family = Family::new(
    "bulkhead_waiting_calls",
    "Calls waiting for a slot (up to max-wait-duration)",
);
const CALLS: Family = Family::new(
    "bulkhead_calls",
    "Calls the bulkhead let in or refused (kind): refused when full, or when the deadline ran out while waiting",
);

const REJECTED_BY_CLASS: Family = Family::new(
    "bulkhead_rejected_calls",
    "Calls the bulkhead refused, by the request's criticality (a lower class is refused above its threshold)",
);

impl Telemetry for Bulkhead {
    fn metric_values(&self) -> Vec<Metric> {
        let m = self.metrics();
        let mut out = vec![
            Metric::gauge(AVAILABLE, None, f64::from(m.available_concurrent_calls())),
            Metric::gauge(
                MAX_ALLOWED,
                None,
                f64::from(m.max_allowed_concurrent_calls()),
            ),
            Metric::gauge(WAITING, None, m.waiting_calls() as f64),
            Metric::counter(CALLS, Some("permitted"), m.permitted_calls()),
            Metric::counter(CALLS, Some("rejected"), m.rejected_calls()),
        ];
        out.extend(resil_core::Criticality::ALL.map(|c| {
            Metric::counter(REJECTED_BY_CLASS, Some(c.as_str()), m.rejected_calls_of(c))
                .keyed("criticality")
        }));
        out
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        describe_config(&self.config())
    }

    fn health(&self) -> (Status, Option<String>) {
        if self.available_concurrent_calls() == 0 {
            (
                Status::Degraded,
                Some("every concurrent-call slot is taken".to_owned()),
            )
        } else {
            (Status::Up, None)
        }
    }
}

impl Describe for Bulkhead {
    type Event = resil_core::bulkhead::BulkheadEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    fn default_values() -> Vec<(&'static str, String)> {
        describe_config(&BulkheadConfig::default())
    }
}
