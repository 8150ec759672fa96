//! The adaptive bulkhead (a limit that follows latency, Vegas): its file
//! options, health and metrics, published beside the bulkhead's names:
//! `resilience4j_bulkhead_adaptive_limit` (the current limit, a gauge),
//! `…_concurrent_calls`, `…_available_concurrent_calls`, `…_min_rtt_seconds`
//! `resilience4j_bulkhead_adaptive_calls{kind=rejected|dropped|sampled}` and
//! `resilience4j_bulkhead_adaptive_rejected_calls{criticality}` (one series
//! per class: four, whatever the traffic).

use resil_core::bulkhead::{
    AdaptiveBulkhead, AdaptiveBulkheadConfig, AdaptiveBulkheadConfigBuilder,
};
use resil_core::event::EventStream;
use resil_core::Criticality;

use super::primitive;
use super::{bind, plain_options};
use crate::kind::Kind;
use crate::primitive::{Hooks, NoTwins};
use crate::telemetry::describe::{describe_config, Describe, Family, Metric, Telemetry};
use crate::telemetry::health::Status;

primitive!(AdaptiveBulkhead: AdaptiveBulkheadConfig => AdaptiveBulkheadConfigBuilder, Kind::AdaptiveBulkhead);

impl Hooks for AdaptiveBulkhead {
    type Settings = AdaptiveBulkheadConfigBuilder;
    type Twins = NoTwins;
}

bind! {
    AdaptiveBulkheadConfig => AdaptiveBulkheadConfigBuilder {
        "initial-limit" => U32: initial_limit,
        "min-limit" => U32: min_limit,
        "max-limit" => U32: max_limit,
        "smoothing" => F64: smoothing,
        "probe-multiplier" => U32: probe_multiplier,
        "min-window-time" => Duration: min_window_time,
        "max-window-time" => Duration: max_window_time,
        "window-size" => U32: window_size,
        "min-rtt-threshold" => Duration: min_rtt_threshold,
        "sheddable-threshold" => Percent: sheddable_threshold,
        "sheddable-plus-threshold" => Percent: sheddable_plus_threshold,
        "critical-threshold" => Percent: critical_threshold,
        "critical-plus-threshold" => Percent: critical_plus_threshold,
        "sheddable-guaranteed-share" => Percent: sheddable_guaranteed_share,
        "sheddable-plus-guaranteed-share" => Percent: sheddable_plus_guaranteed_share,
        "critical-guaranteed-share" => Percent: critical_guaranteed_share,
        "critical-plus-guaranteed-share" => Percent: critical_plus_guaranteed_share,
    }
}

plain_options!(AdaptiveBulkheadConfig => AdaptiveBulkheadConfigBuilder, Kind::AdaptiveBulkhead);

const LIMIT: Family = Family::new(
    "bulkhead_adaptive_limit",
    "The adaptive bulkhead's current concurrency limit",
);
const CONCURRENT: Family = Family::new(
    "bulkhead_adaptive_concurrent_calls",
    "Calls the adaptive bulkhead holds now",
);
const AVAILABLE: Family = Family::new(
    "bulkhead_adaptive_available_concurrent_calls",
    "Calls the adaptive bulkhead can still let in under its current limit",
);
const MIN_RTT: Family = Family::new(
    "bulkhead_adaptive_min_rtt_seconds",
    "The shortest round-trip time the limit algorithm measured",
);
const CALLS: Family = Family::new(
    "bulkhead_adaptive_calls",
    "Calls the adaptive bulkhead refused, dropped from its samples, or sampled (kind)",
);

const REJECTED_BY_CLASS: Family = Family::new(
    "bulkhead_adaptive_rejected_calls",
    "Calls the adaptive bulkhead refused, by the request's criticality",
);

impl Telemetry for AdaptiveBulkhead {
    fn metric_values(&self) -> Vec<Metric> {
        let m = self.metrics();
        let mut out = vec![
            Metric::gauge(LIMIT, None, f64::from(m.limit())),
            Metric::gauge(CONCURRENT, None, f64::from(m.concurrent_calls())),
            Metric::gauge(AVAILABLE, None, f64::from(m.available_concurrent_calls())),
            Metric::seconds(MIN_RTT, m.min_rtt().as_secs_f64()),
            Metric::counter(CALLS, Some("rejected"), m.rejected_calls()),
            Metric::counter(CALLS, Some("dropped"), m.dropped_calls()),
            Metric::counter(CALLS, Some("sampled"), m.samples()),
        ];
        out.extend(Criticality::ALL.map(|c| {
            Metric::counter(REJECTED_BY_CLASS, Some(c.as_str()), m.rejected_calls_of(c))
                .keyed("criticality")
        }));
        out
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        describe_config(&self.config())
    }

    fn health(&self) -> (Status, Option<String>) {
        let m = self.metrics();
        if m.available_concurrent_calls() == 0 {
            (
                Status::Degraded,
                Some(format!(
                    "every slot under the adaptive limit ({}) is taken",
                    m.limit()
                )),
            )
        } else {
            (Status::Up, None)
        }
    }
}

impl Describe for AdaptiveBulkhead {
    type Event = resil_core::bulkhead::AdaptiveBulkheadEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    fn default_values() -> Vec<(&'static str, String)> {
        describe_config(&AdaptiveBulkheadConfig::default())
    }
}
