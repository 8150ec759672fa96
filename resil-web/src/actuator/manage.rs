//! The state-changing endpoints: every request is authorized first, and a
//! bad request changes nothing.
//!
//! Every attempt is audited: one log line (target `resil::management`;
//! INFO when granted, WARN when refused with 401 or 403) with the method,
//! the path, the outcome and the remote address when the server provides it
//! (`into_make_service_with_connect_info::<SocketAddr>`), never a header or
//! the token; and one count in the registry's
//! [`management_requests`](resil_registry::Registry::management_requests)
//! (`resil_management_requests_total{outcome=granted|unauthorized|forbidden}`).

use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, Request, State};
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use resil_registry::config::parse_duration;
use resil_registry::{ManagementOutcome, RegistryError, Transition};
use serde_json::{json, Map, Value};

use super::auth::Denied;
use super::{error, Ctx, Problem, Shared};

/// The largest management request body read.
const MAX_BODY: usize = 16 * 1024;

/// Authorizes and reads the JSON body (an empty body is `{}`), merging
/// query parameters in (`?ttl=30s`); the refusal response otherwise.
pub(crate) async fn authorized(
    ctx: &Ctx,
    request: Request,
) -> Result<Map<String, Value>, Response> {
    let (parts, body) = request.into_parts();
    let Some(authorize) = &ctx.authorize else {
        return Err(error(
            StatusCode::NOT_FOUND,
            "management endpoints are not enabled",
        ));
    };
    let verdict = authorize.authorize(&parts);
    audit(ctx, &parts, &verdict);
    match verdict {
        Ok(()) => {}
        Err(Denied::Unauthorized) => {
            let mut r = error(StatusCode::UNAUTHORIZED, "authentication required");
            r.headers_mut().insert(
                header::WWW_AUTHENTICATE,
                "Bearer".parse().expect("a valid header"),
            );
            return Err(r);
        }
        Err(Denied::Forbidden) => return Err(error(StatusCode::FORBIDDEN, "not allowed")),
    }
    let bytes = axum::body::to_bytes(Body::new(body), MAX_BODY)
        .await
        .map_err(|_| {
            error(
                StatusCode::PAYLOAD_TOO_LARGE,
                "the request body is over 16 KiB",
            )
        })?;
    let mut fields = if bytes.iter().all(u8::is_ascii_whitespace) {
        Map::new()
    } else {
        match serde_json::from_slice::<Value>(&bytes) {
            Ok(Value::Object(m)) => m,
            Ok(_) => {
                return Err(error(
                    StatusCode::BAD_REQUEST,
                    "the body must be a JSON object",
                ))
            }
            Err(e) => {
                return Err(error(
                    StatusCode::BAD_REQUEST,
                    format!("the body is not JSON: {e}"),
                ))
            }
        }
    };
    for pair in parts
        .uri
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
    {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        fields
            .entry(k.to_owned())
            .or_insert_with(|| Value::String(v.to_owned()));
    }
    Ok(fields)
}

/// One log line and one count per management attempt (see the module
/// docs). The path without its query (a reason may be personal), no header.
fn audit(ctx: &Ctx, parts: &axum::http::request::Parts, verdict: &Result<(), Denied>) {
    let outcome = match verdict {
        Ok(()) => ManagementOutcome::Granted,
        Err(Denied::Unauthorized) => ManagementOutcome::Unauthorized,
        Err(Denied::Forbidden) => ManagementOutcome::Forbidden,
    };
    ctx.registry.count_management_request(outcome);
    let remote = parts
        .extensions
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map(|c| c.0.to_string());
    let remote = remote.as_deref().unwrap_or("unknown");
    let method = parts.method.as_str();
    let path = parts.uri.path();
    match outcome {
        ManagementOutcome::Granted => tracing::info!(
            target: "resil::management",
            outcome = outcome.as_str(),
            method,
            path,
            remote,
            "management request granted: {method} {path} from {remote}"
        ),
        _ => tracing::warn!(
            target: "resil::management",
            outcome = outcome.as_str(),
            method,
            path,
            remote,
            "management request refused ({outcome}): {method} {path} from {remote}"
        ),
    }
}

fn bad(field: &str, got: &Value, expected: &str) -> Problem {
    Problem(
        StatusCode::BAD_REQUEST,
        format!("invalid `{field}`: got {got}, expected {expected}"),
    )
}

fn registry_error(e: RegistryError) -> Response {
    let status = match e {
        RegistryError::NotFound { .. } => StatusCode::NOT_FOUND,
        RegistryError::IllegalOperation { .. } => StatusCode::CONFLICT,
        _ => StatusCode::BAD_REQUEST,
    };
    error(status, e.to_string())
}

fn ttl(fields: &Map<String, Value>) -> Result<Option<Duration>, Problem> {
    match fields.get("ttl") {
        None | Some(Value::Null) => Ok(None),
        Some(v @ Value::String(s)) => parse_duration(s).map(Some).map_err(|e| {
            bad(
                "ttl",
                v,
                &format!("a duration such as `30s` or `5m` ({})", e.reason()),
            )
        }),
        Some(v) => Err(bad("ttl", v, "a duration string such as `30s`")),
    }
}

const UPDATE_STATES: &str =
    "one of `CLOSE`, `FORCE_OPEN`, `DISABLE`, `METRICS_ONLY`, `HALF_OPEN`, `RESET`";

/// `POST /actuator/circuitbreakers/{name}` `{"updateState": "FORCE_OPEN",
/// "ttl": "30s", "reason": "…"}` (Resilience4j's `updateState`, plus a TTL
/// and a reason for FORCE_OPEN, DISABLE and METRICS_ONLY).
pub(crate) async fn circuit_breaker(
    State(ctx): Shared,
    Path(name): Path<String>,
    request: Request,
) -> Response {
    let fields = match authorized(&ctx, request).await {
        Ok(f) => f,
        Err(r) => return r.into_response(),
    };
    let registry = &ctx.registry;
    if registry
        .find::<resil_core::circuit_breaker::CircuitBreaker>(&name)
        .is_none()
    {
        return error(
            StatusCode::NOT_FOUND,
            format!("no circuit breaker named `{name}`"),
        );
    }
    let state = fields.get("updateState").cloned().unwrap_or(Value::Null);
    let ttl = match ttl(&fields) {
        Ok(t) => t,
        Err(r) => return r.into_response(),
    };
    let reason = match fields.get("reason") {
        None | Some(Value::Null) => "",
        Some(Value::String(s)) => s.as_str(),
        Some(v) => return bad("reason", v, "a string").into_response(),
    };
    let done = match state.as_str() {
        Some("FORCE_OPEN") => registry.force_open(&name, ttl, reason),
        Some("DISABLE") => registry.disable(&name, ttl, reason),
        Some("METRICS_ONLY") => registry.metrics_only(&name, ttl, reason),
        Some(other) => {
            let to = match other {
                "CLOSE" => Transition::Closed,
                "HALF_OPEN" => Transition::HalfOpen,
                "RESET" => Transition::Reset,
                _ => return bad("updateState", &state, UPDATE_STATES).into_response(),
            };
            if ttl.is_some() {
                return bad(
                    "ttl",
                    &fields["ttl"],
                    "no TTL: only FORCE_OPEN, DISABLE and METRICS_ONLY take one",
                )
                .into_response();
            }
            registry.transition_circuit_breaker(&name, to)
        }
        None => return bad("updateState", &state, UPDATE_STATES).into_response(),
    };
    match done {
        Ok(()) => {
            let snapshot = registry.snapshot();
            let i = snapshot.instance(resil_registry::Kind::CircuitBreaker, &name);
            Json(json!({
                "message": format!("circuit breaker '{name}' updated"),
                "state": i.and_then(|i| i.state),
            }))
            .into_response()
        }
        Err(e) => registry_error(e),
    }
}

fn u32_field(
    fields: &Map<String, Value>,
    key: &str,
    expected: &str,
) -> Result<Option<u32>, Problem> {
    match fields.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            let n = match v {
                Value::Number(n) => n.as_u64(),
                Value::String(s) => s.parse::<u64>().ok(),
                _ => None,
            };
            match n.and_then(|n| u32::try_from(n).ok()).filter(|n| *n > 0) {
                Some(n) => Ok(Some(n)),
                None => Err(bad(key, v, expected)),
            }
        }
    }
}

/// `POST /actuator/ratelimiters/{name}` `{"limitForPeriod": 10,
/// "timeoutDuration": "1s"}` (Resilience4j's `changeLimitForPeriod` and
/// `changeTimeoutDuration`).
pub(crate) async fn rate_limiter(
    State(ctx): Shared,
    Path(name): Path<String>,
    request: Request,
) -> Response {
    let fields = match authorized(&ctx, request).await {
        Ok(f) => f,
        Err(r) => return r.into_response(),
    };
    let registry = &ctx.registry;
    if registry
        .find::<resil_core::rate_limiter::RateLimiter>(&name)
        .is_none()
    {
        return error(
            StatusCode::NOT_FOUND,
            format!("no rate limiter named `{name}`"),
        );
    }
    // Validate everything before changing anything.
    let limit = match u32_field(&fields, "limitForPeriod", "an integer >= 1") {
        Ok(l) => l,
        Err(r) => return r.into_response(),
    };
    let timeout = match fields.get("timeoutDuration") {
        None | Some(Value::Null) => None,
        Some(v @ Value::String(s)) => match parse_duration(s) {
            Ok(d) => Some(d),
            Err(e) => {
                return bad(
                    "timeoutDuration",
                    v,
                    &format!("a duration such as `500ms` ({})", e.reason()),
                )
                .into_response()
            }
        },
        Some(v) => {
            return bad("timeoutDuration", v, "a duration string such as `500ms`").into_response()
        }
    };
    if limit.is_none() && timeout.is_none() {
        return error(
            StatusCode::BAD_REQUEST,
            "nothing to change: give `limitForPeriod` or `timeoutDuration`",
        );
    }
    if let Some(limit) = limit {
        if let Err(e) = registry.set_rate_limit(&name, limit) {
            return registry_error(e);
        }
    }
    if let Some(timeout) = timeout {
        if let Err(e) = registry.set_rate_limiter_timeout(&name, timeout) {
            return registry_error(e);
        }
    }
    Json(json!({ "message": format!("rate limiter '{name}' updated") })).into_response()
}

/// `POST /actuator/bulkheads/{name}` `{"maxConcurrentCalls": 10}`.
pub(crate) async fn bulkhead(
    State(ctx): Shared,
    Path(name): Path<String>,
    request: Request,
) -> Response {
    let fields = match authorized(&ctx, request).await {
        Ok(f) => f,
        Err(r) => return r.into_response(),
    };
    let registry = &ctx.registry;
    if registry
        .find::<resil_core::bulkhead::Bulkhead>(&name)
        .is_none()
    {
        return error(StatusCode::NOT_FOUND, format!("no bulkhead named `{name}`"));
    }
    let size = match u32_field(&fields, "maxConcurrentCalls", "an integer >= 1") {
        Ok(Some(n)) => n,
        Ok(None) => {
            return bad("maxConcurrentCalls", &Value::Null, "an integer >= 1").into_response()
        }
        Err(r) => return r.into_response(),
    };
    match registry.set_bulkhead_size(&name, size) {
        Ok(()) => Json(json!({ "message": format!("bulkhead '{name}' updated") })).into_response(),
        Err(e) => registry_error(e),
    }
}
