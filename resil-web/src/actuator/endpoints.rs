//! The read-only instance and event endpoints.

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use resil_registry::{InstanceSnapshot, Kind, Snapshot};
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

/// `Success { elapsed: 1ms }` → `SUCCESS`, `StateTransition { … }` →
/// `STATE_TRANSITION`: Resilience4j's event type names, from the event's
/// variant name (the word after `kind: ` in the recorded description).
pub(crate) fn event_type(description: &str) -> String {
    let after = description
        .split_once("kind: ")
        .map_or(description, |(_, rest)| rest);
    let word: String = after
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    let mut out = String::new();
    for (i, c) in word.chars().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            out.push('_');
        }
        out.push(c.to_ascii_uppercase());
    }
    out
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
    let mut out = Vec::new();
    for i in of_kind(&snapshot, kind) {
        if name.as_deref().is_some_and(|n| n != i.name) {
            continue;
        }
        for e in &i.recent_events {
            let ty = event_type(&e.description);
            if event_type_filter
                .as_deref()
                .is_some_and(|want| !want.eq_ignore_ascii_case(&ty))
            {
                continue;
            }
            out.push(json!({
                name_key: i.name,
                "type": ty,
                "creationTime": e.at.as_millis() as u64,
                "description": e.description,
            }));
        }
    }
    out.sort_by_key(|e| e["creationTime"].as_u64());
    Json(json!({ key: out })).into_response()
}

#[cfg(test)]
mod tests {
    use super::event_type;

    #[test]
    fn event_types_are_resilience4j_names() {
        assert_eq!(
            event_type("CircuitBreakerEvent { name: \"a\", kind: Success { elapsed: 1ms } }"),
            "SUCCESS"
        );
        assert_eq!(
            event_type("X { kind: StateTransition { from: Closed, to: Open } }"),
            "STATE_TRANSITION"
        );
        assert_eq!(event_type("X { kind: NotPermitted }"), "NOT_PERMITTED");
    }
}
