//! `/actuator/metrics` and `/actuator/metrics/{name}`, as Spring Boot
//! Actuator answers them, from the registry's snapshot.

use std::collections::{BTreeMap, BTreeSet};

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use resil_registry::MetricKind;

use super::{error, Problem, Shared};

/// `circuitbreaker_calls` → `resilience4j.circuitbreaker.calls`;
/// `resil_hedging_calls` → `resil.hedging.calls`.
fn dotted(name: &str) -> String {
    let name = name.strip_prefix("resil_").map_or_else(
        || format!("resilience4j.{name}"),
        |rest| format!("resil.{rest}"),
    );
    name.replace('_', ".")
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
    let mut metric_type = MetricKind::Gauge;
    let mut described = None;
    let (mut total_time, mut max) = (0.0f64, 0.0f64);
    for i in &snapshot.instances {
        for m in i.metrics.iter().filter(|m| dotted(m.name) == name) {
            found = true;
            metric_type = m.metric_type;
            described = Some(m.description);
            let mut labels: Vec<(String, String)> = vec![("name".into(), i.name.clone())];
            if let Some(kind) = m.kind {
                labels.push((m.label.to_owned(), kind.to_owned()));
            }
            labels.extend(i.tags.iter().map(|(k, v)| (k.clone(), v.clone())));
            let matches = wanted
                .iter()
                .all(|(k, v)| labels.iter().any(|(lk, lv)| lk == k && lv == v));
            if matches {
                total += m.value;
                total_time += m.total_seconds.unwrap_or(0.0);
                max = max.max(m.max_seconds.unwrap_or(0.0));
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
    // As Micrometer measures each meter type: a counter its COUNT, a gauge
    // its VALUE, a timer its COUNT, TOTAL_TIME and MAX in seconds.
    let (unit, measurements) = match metric_type {
        MetricKind::Counter => (None, json!([{ "statistic": "COUNT", "value": total }])),
        MetricKind::Gauge => (None, json!([{ "statistic": "VALUE", "value": total }])),
        MetricKind::Timer => (
            Some("seconds"),
            json!([
                { "statistic": "COUNT", "value": total },
                { "statistic": "TOTAL_TIME", "value": total_time },
                { "statistic": "MAX", "value": max },
            ]),
        ),
    };
    Json(json!({
        "name": name,
        "description": described,
        "baseUnit": unit,
        "measurements": measurements,
        "availableTags": available,
    }))
    .into_response()
}
