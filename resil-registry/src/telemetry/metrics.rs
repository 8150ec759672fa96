//! Resilience4j's metric names through the `metrics` facade.
//!
//! [`Registry::publish_metrics`] reads every instance's counters (which the
//! primitives keep anyway) and hands them to whatever recorder the program
//! installed: gauges set, counters set to their absolute value. Call it from
//! the exporter's scrape hook or a periodic task; nothing is added to the call
//! path. Labels are `name` and the instance's tags, plus `kind` where
//! Resilience4j has one (`resilience4j_circuitbreaker_calls{kind="failed"}`).
//!
//! A Redis-backed rate limiter (feature `redis`) publishes with
//! `backend="redis"`: `resilience4j_ratelimiter_waiting_threads`,
//! `resilience4j_ratelimiter_available_permissions` (left after the last
//! verdict this process saw), and resil's own counters
//! `resilience4j_ratelimiter_distributed_acquire_calls{kind=successful|failed}`,
//! `…_fallback_calls{kind=granted|refused}` (every failure-policy decision),
//! `…_backend_failure_calls{kind=timeout|unavailable|auth|error|cannot_block}`,
//! `…_script_calls` and, with local permit leases,
//! `…_lease_permits{kind=leased|handed_out|returned}`.
//!
//! The kinds beyond Resilience4j: `resilience4j_bulkhead_adaptive_limit` (the
//! adaptive bulkhead's current limit) and its `…_concurrent_calls`,
//! `…_available_concurrent_calls`, `…_min_rtt_seconds` gauges and
//! `resilience4j_bulkhead_adaptive_calls{kind=rejected|dropped|sampled}`;
//! `resil_hedging_calls{kind=won_by_primary|won_by_hedge|all_failed|cancelled}`
//! and `resil_hedging_hedges{kind=started|budget_refused}`;
//! `resil_chaos_injections{kind=latency|error|result}`, `resil_chaos_calls`
//! and the `resil_chaos_enabled` gauge.

use metrics::Label;
use resil_core::circuit_breaker::State;

use super::describe::{MetricKind, Telemetry};
use crate::kind::Kind;
use crate::primitive::{Primitive, Twins};
use crate::registry::Registry;
use crate::store::{for_each_kind, KindVisitor};

/// Breaker states, in the order of Resilience4j's `state` gauge labels.
const STATES: [State; 6] = [
    State::Closed,
    State::Open,
    State::HalfOpen,
    State::ForcedOpen,
    State::Disabled,
    State::MetricsOnly,
];

/// The published name: Resilience4j's `resilience4j_` prefix, except for the
/// kinds Resilience4j lacks, whose names already carry `resil_`.
fn published_name(metric: &str) -> String {
    if metric.starts_with("resil_") {
        metric.to_owned()
    } else {
        format!("resilience4j_{metric}")
    }
}

/// Publishes every instance's metrics (see [`Registry::publish_metrics`]).
pub(crate) fn publish(registry: &Registry) {
    registry.run_due_overrides();
    registry.collect_instance_events();
    struct Publish<'a>(&'a Registry);
    impl KindVisitor for Publish<'_> {
        fn visit<P: Primitive>(&mut self) {
            publish_kind::<P>(self.0);
        }
    }
    for_each_kind(&mut Publish(registry));
    for (name, m) in crate::fallback::all() {
        for (cause, n) in m.by_cause() {
            let labels = vec![
                Label::new("name", name),
                Label::new("kind", "degraded"),
                Label::new("cause", cause.as_str()),
            ];
            metrics::counter!("resil_fallback_calls", labels).absolute(n);
        }
        let labels = vec![Label::new("name", name), Label::new("kind", "failed")];
        metrics::counter!("resil_fallback_calls", labels).absolute(m.failed());
    }
    for kind in Kind::ALL {
        metrics::counter!(
            "resil_registry_refused_instances",
            vec![Label::new("kind", kind.as_str())]
        )
        .absolute(registry.refused_by_cap(kind));
    }
}

fn publish_kind<P: Primitive>(registry: &Registry) {
    for name in registry.names::<P>() {
        if let Some(handle) = registry.find::<P>(&name) {
            publish_values::<P>(registry, &name, &*handle, &[]);
        }
    }
    let twins = &registry.store::<P>().twins;
    let extra: Vec<Label> = twins
        .labels()
        .iter()
        .map(|(k, v)| Label::new(*k, *v))
        .collect();
    for name in twins.names() {
        twins.with(&name, &mut |instance| {
            publish_values::<P>(registry, &name, instance, &extra);
        });
    }
}

/// One instance's metrics, labelled with its name, the tags of instance
/// `name` of kind `P`, and `extra` (a Redis-backed limiter's
/// `backend="redis"`, apart from a local limiter of the same name).
fn publish_values<P: Primitive>(
    registry: &Registry,
    name: &str,
    handle: &(impl Telemetry + ?Sized),
    extra: &[Label],
) {
    let mut labels = vec![Label::new("name", name.to_owned())];
    for (k, v) in registry.tags::<P>(name) {
        labels.push(Label::new(k, v));
    }
    labels.extend_from_slice(extra);
    for metric in handle.metric_values() {
        let mut labels = labels.clone();
        if let Some(kind) = metric.tag {
            labels.push(Label::new("kind", kind));
        }
        let key = published_name(metric.name);
        match metric.kind {
            MetricKind::Counter => metrics::counter!(key, labels).absolute(metric.value as u64),
            MetricKind::Gauge => metrics::gauge!(key, labels).set(metric.value),
        }
    }
    // The state gauge is the breaker's (a chaos instance's state is its
    // `resil_chaos_enabled` gauge).
    if let Some(state) = handle
        .state_label()
        .filter(|_| P::KIND == Kind::CircuitBreaker)
    {
        for s in STATES {
            let mut labels = labels.clone();
            labels.push(Label::new("state", s.as_str().to_ascii_lowercase()));
            metrics::gauge!("resilience4j_circuitbreaker_state", labels)
                .set(if s.as_str() == state { 1.0 } else { 0.0 });
        }
    }
}
