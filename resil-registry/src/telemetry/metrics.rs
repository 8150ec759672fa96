//! Resilience4j's metric names through the `metrics` facade.
//!
//! [`Registry::publish_metrics`] reads every instance's counters (which the
//! primitives keep anyway) and hands them to whatever recorder the program
//! installed: gauges set, counters set to their absolute value. Call it from
//! the exporter's scrape hook or a periodic task; nothing is added to the call
//! path. Names and labels are those of [`Registry::prometheus_text`], without
//! the `_total` suffix (the exporter adds its own): a counter is published as
//! `resilience4j_retry_calls{kind="failed_with_retry"}`, and a call timer as
//! the counter `resilience4j_circuitbreaker_calls_seconds_count` and the
//! gauges `…_seconds_sum` and `…_seconds_max` (the `metrics` facade has no
//! timer that takes an absolute total; the histogram's buckets are in the
//! Prometheus text only).

use metrics::Label;

use super::describe::MetricKind;
use super::exposition::samples;
use crate::registry::Registry;

/// Publishes every instance's metrics (see [`Registry::publish_metrics`]).
pub(crate) fn publish(registry: &Registry) {
    for sample in samples(registry) {
        let labels: Vec<Label> = sample
            .labels
            .iter()
            .map(|(k, v)| Label::new(*k, v.clone()))
            .collect();
        let metric = &sample.metric;
        let base = metric.base_name();
        match metric.kind {
            MetricKind::Counter => metrics::counter!(base, labels).absolute(metric.value as u64),
            MetricKind::Gauge => metrics::gauge!(base, labels).set(metric.value),
            MetricKind::Timer => {
                let timer = metric.timer.as_ref();
                metrics::counter!(format!("{base}_count"), labels.clone())
                    .absolute(metric.value as u64);
                metrics::gauge!(format!("{base}_sum"), labels.clone())
                    .set(timer.map_or(0.0, |t| t.sum));
                metrics::gauge!(format!("{base}_max"), labels).set(timer.map_or(0.0, |t| t.max));
            }
        }
    }
}
