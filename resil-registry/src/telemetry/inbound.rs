//! The registry's inbound guard in the exposition: what it admitted and
//! refused (by the rule that refused), what is in flight, the window's rates
//! and response times, BBR's estimate and the system readings it holds.
//! Published only once the guard exists ([`Registry::inbound_guard`]); its
//! series carry no `name` (a registry has one guard).

use resil_core::inbound::Overload;

use super::describe::{Family, Metric};
use super::exposition::Sample;
use super::health::{ComponentHealth, Status};
use crate::registry::Registry;

const REQUESTS: Family = Family::new(
    "resil_inbound_guard_requests",
    "Inbound requests the server-wide guard admitted, or refused, by the rule that refused them (kind)",
);
const IN_FLIGHT: Family = Family::new(
    "resil_inbound_guard_in_flight",
    "Inbound requests the guard admitted that are in flight now",
);
const RATE: Family = Family::new(
    "resil_inbound_guard_rps",
    "Inbound requests per second over the guard's window: admitted, completed, and the best bucket's completions (max_completed, BBR's bottleneck bandwidth)",
);
const RESPONSE_TIME: Family = Family::new(
    "resil_inbound_guard_response_time_seconds",
    "Response times over the guard's window: the smallest (min, BBR's round-trip time) and the average; absent before a completion",
);
const ESTIMATE: Family = Family::new(
    "resil_inbound_guard_estimated_in_flight",
    "BBR's estimate of the requests the service holds without queueing (best completions per second x smallest response time); refused above it under CPU or load pressure",
);
const CPU: Family = Family::new(
    "resil_inbound_guard_cpu_usage_ratio",
    "The last CPU usage reading the guard holds (0 to 1 of what the container may use); absent before one",
);
const LOAD: Family = Family::new(
    "resil_inbound_guard_load",
    "The last 1-minute load reading the guard holds; absent before one",
);

/// The guard's samples, if the registry made one.
pub(crate) fn samples(registry: &Registry, out: &mut Vec<Sample>) {
    let Some(guard) = registry.inner.inbound.get() else {
        return;
    };
    let m = guard.metrics();
    let mut push = |tag: Option<&'static str>, metric: Metric| {
        out.push(Sample {
            labels: tag.map(|t| ("kind", t.to_owned())).into_iter().collect(),
            metric,
        });
    };
    push(
        Some("admitted"),
        Metric::counter(REQUESTS, None, m.admitted),
    );
    for reason in Overload::ALL {
        push(
            Some(reason.as_str()),
            Metric::counter(REQUESTS, None, m.refused_for(reason)),
        );
    }
    push(None, Metric::gauge(IN_FLIGHT, None, f64::from(m.in_flight)));
    for (kind, rps) in [
        ("admitted", m.admitted_rps),
        ("completed", m.completed_rps),
        ("max_completed", m.max_completed_rps),
    ] {
        push(Some(kind), Metric::gauge(RATE, None, rps));
    }
    for (kind, rt) in [("min", m.min_rt), ("average", m.average_rt)] {
        if let Some(rt) = rt {
            push(Some(kind), Metric::seconds(RESPONSE_TIME, rt.as_secs_f64()));
        }
    }
    if let Some(estimate) = m.estimated_in_flight {
        push(None, Metric::gauge(ESTIMATE, None, estimate));
    }
    if let Some(cpu) = m.cpu_usage {
        push(None, Metric::gauge(CPU, None, cpu / 100.0));
    }
    if let Some(load) = m.load {
        push(None, Metric::gauge(LOAD, None, load));
    }
}

/// The guard's part in the health summary, if the registry made one:
/// DEGRADED while a request arriving now would be refused (it sheds by
/// design, so never DOWN: an orchestrator must not take an overloaded
/// service out of rotation for shedding), naming the rule; UP otherwise.
pub(crate) fn health(registry: &Registry) -> Option<ComponentHealth> {
    let guard = registry.inner.inbound.get()?;
    let refusing = guard.would_refuse();
    Some(ComponentHealth {
        kind: "inbound-guard",
        name: "inbound-guard".to_owned(),
        state: refusing.map(|_| "SHEDDING"),
        status: if refusing.is_some() {
            Status::Degraded
        } else {
            Status::Up
        },
        reason: refusing.map(|rule| {
            format!(
                "refusing inbound requests ({}), answered 503 with Retry-After",
                rule.as_str()
            )
        }),
    })
}
