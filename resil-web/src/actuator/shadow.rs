//! Shadow trials over HTTP, behind the management authorization (a trial
//! shows configured values, and a promotion changes every instance's
//! settings): the running trial's report, staging a config or a kept
//! version as a trial, promoting it, discarding it.

use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use resil_registry::config::{FileConfig, Format};
use resil_registry::{ShadowError, VersionError};
use serde_json::{json, Map, Value};

use super::manage::authorized;
use super::{error, Shared};

fn shadow_error(e: ShadowError) -> Response {
    let status = match &e {
        ShadowError::NoTrial | ShadowError::Version(VersionError::Unknown(_)) => {
            StatusCode::NOT_FOUND
        }
        ShadowError::Invalid(_) => StatusCode::BAD_REQUEST,
        _ => StatusCode::CONFLICT,
    };
    let problems = match &e {
        ShadowError::Invalid(reload) => reload.problems(),
        _ => Vec::new(),
    };
    let mut r = error(status, e.to_string());
    if !problems.is_empty() {
        r = (
            status,
            Json(json!({ "error": e.to_string(), "problems": problems })),
        )
            .into_response();
    }
    r
}

/// The `by` field (who asks), `actuator` when absent, or why it is invalid.
fn by(fields: &Map<String, Value>) -> Result<String, String> {
    match fields.get("by") {
        None | Some(Value::Null) => Ok("actuator".to_owned()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(v) => Err(format!("invalid `by`: got {v}, expected a string")),
    }
}

/// `GET /actuator/shadow`: `{"trial": {"version", "by", "started",
/// "instances": [{"kind", "name", "live_state", "shadow_state",
/// "transitions": [{"from", "to", "at"}], "transition_count",
/// "would_have_refused", "would_have_waited", "would_have_retried",
/// "would_have_given_up", "unobserved", "predicate_panics", "failure_rate",
/// "slow_call_rate", "buffered_calls"}], "not_trialled"}}` (the states and
/// rates are a breaker's, `null` for the other kinds), `null` when no trial
/// runs.
pub(crate) async fn report(State(ctx): Shared, request: Request) -> Response {
    if let Err(r) = authorized(&ctx, request).await {
        return r;
    }
    Json(json!({ "trial": ctx.registry.shadow_trial() })).into_response()
}

/// `POST /actuator/shadow` `{"version": 3, "by": "alice"}` (a kept
/// version) or `{"config": "<text>", "format": "yaml"|"toml"|"properties",
/// "by": "alice"}`: stages it as a shadow trial; `201` with the trial.
pub(crate) async fn stage(State(ctx): Shared, request: Request) -> Response {
    let fields = match authorized(&ctx, request).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let who = match by(&fields) {
        Ok(w) => w,
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    let registry = &ctx.registry;
    let staged = match (fields.get("version"), fields.get("config")) {
        (Some(v), None) => match v.as_u64() {
            Some(id) => registry.stage_shadow_version(id, &who),
            None => {
                return error(
                    StatusCode::BAD_REQUEST,
                    format!("invalid `version`: got {v}, expected a version number"),
                )
            }
        },
        (None, Some(Value::String(text))) => {
            let format = match fields.get("format").and_then(Value::as_str).unwrap_or("yaml") {
                "yaml" | "yml" => Format::Yaml,
                "toml" => Format::Toml,
                "properties" => Format::Properties,
                other => {
                    return error(
                        StatusCode::BAD_REQUEST,
                        format!(
                            "invalid `format`: got `{other}`, expected one of `yaml`, `toml`, `properties`"
                        ),
                    )
                }
            };
            let no_env: [(&str, &str); 0] = [];
            match FileConfig::from_str_with_env(text, format, no_env) {
                Ok(file) => registry.stage_shadow(file, &who),
                Err(e) => {
                    let problems: Vec<String> =
                        e.problems().iter().map(ToString::to_string).collect();
                    return (
                        StatusCode::BAD_REQUEST,
                        Json(json!({
                            "error": format!("shadow trial refused: {e}"),
                            "problems": problems,
                        })),
                    )
                        .into_response();
                }
            }
        }
        _ => return error(
            StatusCode::BAD_REQUEST,
            "expected `version` (a kept config version) or `config` (the config text), not both",
        ),
    };
    match staged {
        Ok(trial) => (StatusCode::CREATED, Json(json!({ "trial": trial }))).into_response(),
        Err(e) => shadow_error(e),
    }
}

/// `POST /actuator/shadow/promote` `{"by": "alice"}`: applies the staged
/// version as a new version and ends the trial.
pub(crate) async fn promote(State(ctx): Shared, request: Request) -> Response {
    let fields = match authorized(&ctx, request).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let who = match by(&fields) {
        Ok(w) => w,
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    let registry = &ctx.registry;
    match registry.promote_shadow(&who) {
        Ok(report) => Json(json!({
            "message": "shadow trial promoted",
            "version": registry.active_config_version(),
            "replaced": report.replaced,
            "updatedInPlace": report.updated_in_place,
        }))
        .into_response(),
        Err(e) => shadow_error(e),
    }
}

/// `POST /actuator/shadow/discard` `{"by": "alice"}`: ends the trial
/// without applying it; its final report.
pub(crate) async fn discard(State(ctx): Shared, request: Request) -> Response {
    let fields = match authorized(&ctx, request).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let who = match by(&fields) {
        Ok(w) => w,
        Err(why) => return error(StatusCode::BAD_REQUEST, why),
    };
    match ctx.registry.discard_shadow(&who) {
        Ok(trial) => {
            Json(json!({ "message": "shadow trial discarded", "trial": trial })).into_response()
        }
        Err(e) => shadow_error(e),
    }
}
