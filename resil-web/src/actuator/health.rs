//! `/actuator/health` and its `liveness` and `readiness` groups.

use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use resil_registry::{Health, Status};
use serde_json::{json, Map, Value};

use super::{Ctx, Shared};

/// The JSON key of a kind's component (Resilience4j's indicator names).
pub(crate) fn group(kind: &str) -> &'static str {
    match kind {
        "circuit_breaker" => "circuitBreakers",
        "rate_limiter" => "rateLimiters",
        "retry" => "retries",
        "bulkhead" => "bulkheads",
        "thread_pool_bulkhead" => "threadPoolBulkheads",
        "time_limiter" => "timeLimiters",
        "hedging" => "hedgings",
        "adaptive_bulkhead" => "adaptiveBulkheads",
        "chaos" => "chaos",
        _ => "other",
    }
}

/// Readiness: `(ready, the DOWN components that make it not ready)`.
fn readiness_of(ctx: &Ctx, health: &Health) -> (bool, Value) {
    if !ctx.readiness_from_health {
        return (true, json!({}));
    }
    let mut down = Map::new();
    for c in health
        .components
        .iter()
        .filter(|c| c.status == Status::Down)
    {
        down.insert(
            format!("{}:{}", group(c.kind), c.name),
            json!({ "status": "DOWN", "reason": c.reason }),
        );
    }
    (down.is_empty(), Value::Object(down))
}

fn readiness_status(ready: bool) -> &'static str {
    if ready {
        "UP"
    } else {
        "OUT_OF_SERVICE"
    }
}

fn code(ready: bool) -> StatusCode {
    if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    }
}

pub(crate) async fn liveness() -> Response {
    // The process answers: it is alive. No instance's state can change this.
    Json(json!({ "status": "UP" })).into_response()
}

pub(crate) async fn readiness(axum::extract::State(ctx): Shared) -> Response {
    let health = ctx.registry.health();
    let (ready, down) = readiness_of(&ctx, &health);
    let mut body = json!({ "status": readiness_status(ready) });
    if !ready {
        body["components"] = down;
    }
    (code(ready), Json(body)).into_response()
}

pub(crate) async fn health(axum::extract::State(ctx): Shared) -> Response {
    // One reading: each component's status is the registry's one verdict,
    // the same the dashboard and the event stream show.
    let health = ctx.registry.health();
    let (ready, down) = readiness_of(&ctx, &health);
    let mut components = Map::new();
    components.insert("liveness".into(), json!({ "status": "UP" }));
    let mut readiness = json!({ "status": readiness_status(ready) });
    if !ready {
        readiness["components"] = down;
    }
    components.insert("readiness".into(), readiness);
    // One component per kind, each instance with its own status: shown for
    // operators, never deciding the overall status on its own.
    let mut groups: Map<String, Value> = Map::new();
    for c in &health.components {
        let entry = groups
            .entry(group(c.kind))
            .or_insert_with(|| json!({ "status": "UP", "details": {} }));
        let mut details = json!({ "status": c.status.as_str() });
        if let Some(reason) = &c.reason {
            details["reason"] = json!(reason);
        }
        if let Some(state) = c.state {
            details["state"] = json!(state);
        }
        entry["details"][&c.name] = details;
        let worst = match (entry["status"].as_str(), c.status) {
            (_, Status::Down) | (Some("DOWN"), _) => "DOWN",
            (_, Status::Degraded) | (Some("DEGRADED"), _) => "DEGRADED",
            _ => "UP",
        };
        entry["status"] = json!(worst);
    }
    components.extend(groups);
    let body = json!({
        "status": readiness_status(ready),
        "components": components,
    });
    (code(ready), Json(body)).into_response()
}
