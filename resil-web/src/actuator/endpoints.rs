//! The read-only instance and event endpoints.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use resil_registry::{FieldValue, InstanceSnapshot, Kind, RecordedEvent, Snapshot};
use serde_json::{json, Map, Value};

use super::{error, Shared};

/// Resilience4j's breaker details from a snapshot.
pub(crate) fn breaker_details(i: &InstanceSnapshot) -> Value {
    let m = |name: &str, kind: Option<&str>| i.metric(name, kind);
    let rate = |v: Option<f64>| v.map_or(json!(-1.0), |v| json!(v));
    let threshold = |key: &str| {
        i.config_value(key)
            .map(|c| c.value.trim_end_matches('%').to_owned())
            .and_then(|v| v.parse::<f64>().ok())
    };
    let buffered = m("circuitbreaker_buffered_calls", Some("successful")).unwrap_or(0.0)
        + m("circuitbreaker_buffered_calls", Some("failed")).unwrap_or(0.0);
    json!({
        "failureRate": rate(m("circuitbreaker_failure_rate", None).filter(|v| *v >= 0.0)),
        "slowCallRate": rate(m("circuitbreaker_slow_call_rate", None).filter(|v| *v >= 0.0)),
        "failureRateThreshold": threshold("failure-rate-threshold"),
        "slowCallRateThreshold": threshold("slow-call-rate-threshold"),
        "bufferedCalls": buffered,
        "failedCalls": m("circuitbreaker_buffered_calls", Some("failed")).unwrap_or(0.0),
        "slowCalls": m("circuitbreaker_slow_calls", Some("successful")).unwrap_or(0.0)
            + m("circuitbreaker_slow_calls", Some("failed")).unwrap_or(0.0),
        "slowFailedCalls": m("circuitbreaker_slow_calls", Some("failed")).unwrap_or(0.0),
        "notPermittedCalls": m("circuitbreaker_calls", Some("not_permitted")).unwrap_or(0.0),
        "state": i.state,
        "manualOverride": i.manual_override.as_ref().map(|o| json!({
            "mode": o.mode,
            "previous": o.previous,
            "reason": o.reason,
            "untilMs": o.until.map(|d| d.as_millis() as u64),
        })),
    })
}

fn of_kind(snapshot: &Snapshot, kind: Kind) -> impl Iterator<Item = &InstanceSnapshot> {
    snapshot
        .instances
        .iter()
        .filter(move |i| i.kind == kind.as_str())
}

pub(crate) async fn circuit_breakers(State(ctx): Shared) -> Response {
    let snapshot = ctx.registry.snapshot();
    let mut all = Map::new();
    for i in of_kind(&snapshot, Kind::CircuitBreaker) {
        all.insert(i.name.clone(), breaker_details(i));
    }
    Json(json!({ "circuitBreakers": all })).into_response()
}

pub(crate) async fn circuit_breaker(State(ctx): Shared, Path(name): Path<String>) -> Response {
    let snapshot = ctx.registry.snapshot();
    match snapshot.instance(Kind::CircuitBreaker, &name) {
        Some(i) => Json(breaker_details(i)).into_response(),
        None => error(
            StatusCode::NOT_FOUND,
            format!("no circuit breaker named `{name}`"),
        ),
    }
}

fn names(ctx: &super::Ctx, kinds: &[Kind], key: &str) -> Response {
    let snapshot = ctx.registry.snapshot();
    let names: Vec<&str> = kinds
        .iter()
        .flat_map(|k| of_kind(&snapshot, *k).map(|i| i.name.as_str()))
        .collect();
    Json(json!({ key: names })).into_response()
}

pub(crate) async fn rate_limiters(State(ctx): Shared) -> Response {
    names(&ctx, &[Kind::RateLimiter], "rateLimiters")
}

pub(crate) async fn retries(State(ctx): Shared) -> Response {
    names(&ctx, &[Kind::Retry], "retries")
}

pub(crate) async fn bulkheads(State(ctx): Shared) -> Response {
    names(
        &ctx,
        &[
            Kind::Bulkhead,
            Kind::ThreadPoolBulkhead,
            Kind::AdaptiveBulkhead,
        ],
        "bulkheads",
    )
}

pub(crate) async fn time_limiters(State(ctx): Shared) -> Response {
    names(&ctx, &[Kind::TimeLimiter], "timeLimiters")
}

/// The event endpoints: path, kind, list key, name key.
pub(crate) const EVENT_PATHS: [(&str, EventKind); 5] = [
    (
        "/actuator/circuitbreakerevents",
        EventKind(
            Kind::CircuitBreaker,
            "circuitBreakerEvents",
            "circuitBreakerName",
        ),
    ),
    (
        "/actuator/ratelimiterevents",
        EventKind(Kind::RateLimiter, "rateLimiterEvents", "rateLimiterName"),
    ),
    (
        "/actuator/retryevents",
        EventKind(Kind::Retry, "retryEvents", "retryName"),
    ),
    (
        "/actuator/bulkheadevents",
        EventKind(Kind::Bulkhead, "bulkheadEvents", "bulkheadName"),
    ),
    (
        "/actuator/timelimiterevents",
        EventKind(Kind::TimeLimiter, "timeLimiterEvents", "timeLimiterName"),
    ),
];

#[derive(Clone, Copy)]
pub(crate) struct EventKind(Kind, &'static str, &'static str);

/// The event endpoint of `kind`: its path, list key and name key.
pub(crate) fn event_keys(kind: Kind) -> Option<(&'static str, &'static str, &'static str)> {
    EVENT_PATHS
        .iter()
        .find(|(_, k)| k.0 == kind)
        .map(|(path, k)| (*path, k.1, k.2))
}

/// One instance event as Resilience4j's `*EventDTO` shows it: the
/// instance's name under `name_key`, `type`, `creationTime` (ISO-8601 wall
/// clock), and the type's own fields (a breaker's `stateTransition`
/// `CLOSED_TO_OPEN` and `durationInMs`, a retry's `numberOfAttempts`); plus
/// resil's `description`, the event in words.
pub(crate) fn event_dto(kind: Kind, name_key: &str, name: &str, e: &RecordedEvent) -> Value {
    let mut dto = json!({
        name_key: name,
        "type": e.event_type,
        "creationTime": e.creation_time,
    });
    let text = |k: &str| e.field(k).and_then(FieldValue::as_str);
    let number = |k: &str| match e.field(k) {
        Some(FieldValue::Number(n)) => Some(*n),
        Some(FieldValue::Count(n)) => Some(*n as f64),
        _ => None,
    };
    match kind {
        Kind::CircuitBreaker => {
            if let (Some(from), Some(to)) = (text("from"), text("to")) {
                dto["stateTransition"] = json!(format!("{from}_TO_{to}"));
            }
            if let Some(elapsed) = number("elapsed") {
                dto["durationInMs"] = json!((elapsed * 1000.0).round() as u64);
            }
        }
        Kind::Retry => {
            if let Some(attempts) = number("attempts") {
                dto["numberOfAttempts"] = json!(attempts as u64);
            }
        }
        _ => {}
    }
    dto["description"] = json!(e.description);
    dto
}

pub(crate) async fn events(
    State(ctx): Shared,
    kind: EventKind,
    name: Option<String>,
    event_type_filter: Option<String>,
    _query: RawQuery,
) -> Response {
    let EventKind(kind, key, name_key) = kind;
    let snapshot = ctx.registry.snapshot();
    if let Some(n) = &name {
        if snapshot.instance(kind, n).is_none() {
            return error(
                StatusCode::NOT_FOUND,
                format!("no {} named `{n}`", kind.as_str().replace('_', " ")),
            );
        }
    }
    // The instance's own events (its history of transitions and resets, and
    // its recorded per-call events); the registry's events about it
    // (replaced, manual override, …) are in the snapshot and the stream.
    let mut out: Vec<(std::time::Duration, Value)> = Vec::new();
    for i in of_kind(&snapshot, kind) {
        if name.as_deref().is_some_and(|n| n != i.name) {
            continue;
        }
        for e in i.history.iter().chain(&i.recent_events) {
            if e.source != "instance"
                || event_type_filter
                    .as_deref()
                    .is_some_and(|want| !want.eq_ignore_ascii_case(e.event_type))
            {
                continue;
            }
            out.push((e.at, event_dto(kind, name_key, &i.name, e)));
        }
    }
    out.sort_by_key(|(at, _)| *at);
    let out: Vec<Value> = out.into_iter().map(|(_, v)| v).collect();
    Json(json!({ key: out })).into_response()
}

/// The keyed families: each one's bounds, per-key default and overrides,
/// key counts and its ten noisiest keys by calls and by refusals (never a
/// list of every key).
pub(crate) async fn keyed(State(ctx): Shared) -> Response {
    let families: Vec<Value> = ctx
        .registry
        .keyed_snapshot(10)
        .into_iter()
        .map(|f| {
            let pairs = |v: Vec<(String, u64)>| -> Vec<Value> {
                v.into_iter()
                    .map(|(key, count)| json!({ "key": key, "count": count }))
                    .collect()
            };
            json!({
                "name": f.name,
                "aspect": f.aspect,
                "maxKeys": f.max_keys,
                "idleTtl": f.idle_ttl,
                "default": f.default,
                "overrides": f.overrides.into_iter().map(|(p, v)| json!({ "pattern": p, "value": v })).collect::<Vec<_>>(),
                "keys": {
                    "inUse": f.keys_in_use,
                    "created": f.keys_created,
                    "evictedIdle": f.keys_evicted_idle,
                    "evictedFull": f.keys_evicted_full,
                    "refused": f.keys_refused,
                },
                "topByCalls": pairs(f.top_by_calls),
                "topByRefusals": pairs(f.top_by_refusals),
            })
        })
        .collect();
    Json(json!({ "keyedFamilies": families })).into_response()
}
