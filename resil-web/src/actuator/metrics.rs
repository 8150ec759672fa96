//! `/actuator/metrics` and `/actuator/metrics/{name}`, as Spring Boot
//! Actuator answers them, from the registry's snapshot.

use std::collections::{BTreeMap, BTreeSet};

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::{error, Problem, Shared};

/// `circuitbreaker_calls` → `resilience4j.circuitbreaker.calls`.
fn dotted(name: &str) -> String {
    format!("resilience4j.{}", name.replace('_', "."))
}

/// Counters report a `COUNT`, gauges a `VALUE`: the calls counted since the
/// start, as the registry publishes them as counters.
fn statistic(name: &str) -> &'static str {
    if name.ends_with("_calls") && !name.contains("buffered") && !name.contains("concurrent") {
        "COUNT"
    } else {
        "VALUE"
    }
}

/// What a metric measures, for the `description` Actuator shows (the
/// registry's own metrics; `null` for any other).
fn description(name: &str) -> Option<&'static str> {
    Some(match name {
        "circuitbreaker_calls" => "The number of calls through the circuit breaker, by outcome (kind)",
        "circuitbreaker_buffered_calls" => "The number of calls in the sliding window, by outcome (kind)",
        "circuitbreaker_slow_calls" => "The number of slow calls in the sliding window, by outcome (kind)",
        "circuitbreaker_failure_rate" => "The failure rate of the sliding window, in percent (-1 until the minimum number of calls)",
        "circuitbreaker_slow_call_rate" => "The slow call rate of the sliding window, in percent (-1 until the minimum number of calls)",
        "retry_calls" => "The number of retried and not retried calls, by outcome (kind)",
        "bulkhead_available_concurrent_calls" => "The number of calls the bulkhead can still let in",
        "bulkhead_max_allowed_concurrent_calls" => "The bulkhead's maximum number of concurrent calls",
        "ratelimiter_available_permissions" => "The number of permissions left in the current period",
        "ratelimiter_waiting_threads" => "The number of callers waiting for a permission",
        "timelimiter_calls" => "The number of calls through the time limiter, by outcome (kind)",
        _ => return None,
    })
}

pub(crate) async fn names(State(ctx): Shared) -> Response {
    let snapshot = ctx.registry.snapshot();
    let names: BTreeSet<String> = snapshot
        .instances
        .iter()
        .flat_map(|i| i.metrics.iter().map(|m| dotted(m.name)))
        .collect();
    Json(json!({ "names": names })).into_response()
}

/// `?tag=kind:failed&tag=name:inventory`: every tag must match.
fn tags(query: Option<&str>) -> Result<Vec<(String, String)>, Problem> {
    let mut out = Vec::new();
    for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        if key != "tag" {
            continue;
        }
        let value = value.replace("%3A", ":").replace("%3a", ":");
        match value.split_once(':') {
            Some((k, v)) if !k.is_empty() => out.push((k.to_owned(), v.to_owned())),
            _ => {
                return Err(Problem(
                    StatusCode::BAD_REQUEST,
                    format!(
                        "invalid `tag` `{value}`: expected `name:value`, such as `kind:failed`"
                    ),
                ))
            }
        }
    }
    Ok(out)
}

pub(crate) async fn metric(
    State(ctx): Shared,
    Path(name): Path<String>,
    RawQuery(query): RawQuery,
) -> Response {
    let wanted = match tags(query.as_deref()) {
        Ok(t) => t,
        Err(r) => return r.into_response(),
    };
    let snapshot = ctx.registry.snapshot();
    let mut total = 0.0;
    let mut found = false;
    let mut available: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut stat = "VALUE";
    let mut described = None;
    for i in &snapshot.instances {
        for m in i.metrics.iter().filter(|m| dotted(m.name) == name) {
            found = true;
            stat = statistic(m.name);
            described = description(m.name);
            let mut labels: Vec<(String, String)> = vec![("name".into(), i.name.clone())];
            if let Some(kind) = m.kind {
                labels.push(("kind".into(), kind.to_owned()));
            }
            labels.extend(i.tags.iter().map(|(k, v)| (k.clone(), v.clone())));
            let matches = wanted
                .iter()
                .all(|(k, v)| labels.iter().any(|(lk, lv)| lk == k && lv == v));
            if matches {
                total += m.value;
                for (k, v) in labels {
                    available.entry(k).or_default().insert(v);
                }
            }
        }
    }
    if !found {
        return error(StatusCode::NOT_FOUND, format!("no metric named `{name}`"));
    }
    // Tags already filtered on are not offered again, as Actuator does.
    for (k, _) in &wanted {
        available.remove(k);
    }
    let available: Vec<_> = available
        .into_iter()
        .map(|(tag, values)| json!({ "tag": tag, "values": values }))
        .collect();
    Json(json!({
        "name": name,
        "description": described,
        // Counts and rates have no unit; Resilience4j's call timers also
        // have a `seconds` total, which the registry does not keep.
        "baseUnit": null,
        "measurements": [{ "statistic": stat, "value": total }],
        "availableTags": available,
    }))
    .into_response()
}
