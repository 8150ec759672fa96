//! Config versions over HTTP, behind the management authorization (the
//! versions show configured values, and a rollback changes every
//! instance's settings): the list, the key-level diff of two versions, and
//! the rollback to an earlier applied version.

use axum::extract::{Path, Request, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use resil_registry::{ConfigVersion, VersionError, VersionStatus};
use serde_json::{json, Value};

use super::manage::authorized;
use super::{error, Shared};

fn version_json(v: &ConfigVersion, active: Option<u64>) -> Value {
    let (status, problems) = match &v.status {
        VersionStatus::Applied => ("APPLIED", Vec::new()),
        VersionStatus::Refused(p) => ("REFUSED", p.clone()),
        VersionStatus::Shadow => ("SHADOW", Vec::new()),
    };
    json!({
        "id": v.id,
        "hash": v.hash,
        "time": v.at_iso8601(),
        "source": v.source.to_string(),
        "status": status,
        "active": Some(v.id) == active,
        "problems": problems,
        "rollbackOf": v.rollback_of,
        "promotedFrom": v.promoted_from,
    })
}

fn version_error(e: VersionError) -> Response {
    let status = match e {
        VersionError::Unknown(_) => StatusCode::NOT_FOUND,
        VersionError::Refused(_) | VersionError::Reload(_) => StatusCode::CONFLICT,
        _ => StatusCode::BAD_REQUEST,
    };
    error(status, e.to_string())
}

/// `GET /actuator/configversions`: `{"active", "versions": [{"id", "hash",
/// "time", "source", "status": "APPLIED"|"REFUSED"|"SHADOW", "active",
/// "problems", "rollbackOf", "promotedFrom"}]}`, oldest first.
pub(crate) async fn list(State(ctx): Shared, request: Request) -> Response {
    if let Err(r) = authorized(&ctx, request).await {
        return r;
    }
    let registry = &ctx.registry;
    let active = registry.active_config_version();
    let versions: Vec<Value> = registry
        .config_versions()
        .iter()
        .map(|v| version_json(v, active))
        .collect();
    Json(json!({ "active": active, "versions": versions })).into_response()
}

/// The version number in `key`, or why not.
fn id_field(fields: &serde_json::Map<String, Value>, key: &str) -> Result<u64, String> {
    let got = fields.get(key).cloned().unwrap_or(Value::Null);
    let n = match &got {
        Value::Number(n) => n.as_u64(),
        Value::String(s) => s.parse().ok(),
        _ => None,
    };
    n.ok_or_else(|| format!("invalid `{key}`: got {got}, expected a version number"))
}

/// `GET /actuator/configversions/diff?from=1&to=2`: `{"from", "to",
/// "changes": [{"key", "before", "after"}]}` (`null`: not set there).
pub(crate) async fn diff(State(ctx): Shared, request: Request) -> Response {
    let fields = match authorized(&ctx, request).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let (from, to) = match (id_field(&fields, "from"), id_field(&fields, "to")) {
        (Ok(a), Ok(b)) => (a, b),
        (Err(why), _) | (_, Err(why)) => return error(StatusCode::BAD_REQUEST, why),
    };
    match ctx.registry.config_diff(from, to) {
        Ok(changes) => {
            let changes: Vec<Value> = changes
                .iter()
                .map(|c| json!({ "key": c.key, "before": c.before, "after": c.after }))
                .collect();
            Json(json!({ "from": from, "to": to, "changes": changes })).into_response()
        }
        Err(e) => version_error(e),
    }
}

/// `POST /actuator/configversions/{id}/rollback` `{"by": "alice"}`:
/// applies version `id` again as a new version (source: management by
/// `by`, else `actuator`).
pub(crate) async fn rollback(
    State(ctx): Shared,
    Path(id): Path<String>,
    request: Request,
) -> Response {
    let fields = match authorized(&ctx, request).await {
        Ok(f) => f,
        Err(r) => return r,
    };
    let Ok(id) = id.parse::<u64>() else {
        return error(
            StatusCode::BAD_REQUEST,
            format!("invalid version `{id}`: expected a version number"),
        );
    };
    let by = match fields.get("by") {
        None | Some(Value::Null) => "actuator".to_owned(),
        Some(Value::String(s)) => s.clone(),
        Some(v) => {
            return error(
                StatusCode::BAD_REQUEST,
                format!("invalid `by`: got {v}, expected a string"),
            )
        }
    };
    let registry = &ctx.registry;
    match registry.rollback(id, &by) {
        Ok(report) => Json(json!({
            "message": format!("config version {id} applied again"),
            "version": registry.active_config_version(),
            "replaced": report.replaced,
            "updatedInPlace": report.updated_in_place,
        }))
        .into_response(),
        Err(e) => version_error(e),
    }
}
