//! `/actuator/dashboard`: one page, no build step (HTML, CSS and JS in one
//! static string), showing every instance live; and
//! `/actuator/dashboard/instances`, the JSON it refreshes from.
//!
//! The page listens to `/actuator/stream/events`: each `instances` event
//! redraws every card, and each `registry` event (an operator's
//! transition, an override expiring) fetches a fresh snapshot at once, so a
//! forced-open breaker shows without waiting for the next tick. A poll every
//! five seconds covers a broken stream (the browser's `EventSource`
//! reconnects by itself). When management is enabled the page offers its
//! actions (force open, disable, close, reset a breaker; resize a bulkhead;
//! set a limiter's limit), sending the token typed in its header as
//! `Authorization: Bearer`; they go through the same endpoints, and so the
//! same authorization, as any other client. Names are inserted as text,
//! never as HTML.

use axum::extract::State;
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY};
use axum::response::{Html, IntoResponse, Response};
use axum::Json;
use serde_json::json;

use super::stream::instances;
use super::Shared;

const PAGE: &str = include_str!("dashboard.html");

/// The page, told whether management is enabled.
pub(crate) async fn page(State(ctx): Shared) -> Response {
    let managed = if ctx.authorize.is_some() {
        "true"
    } else {
        "false"
    };
    (
        [
            (CACHE_CONTROL, "no-store"),
            // Its own inline script and style, and requests to this origin only.
            (
                CONTENT_SECURITY_POLICY,
                "default-src 'self'; script-src 'unsafe-inline'; style-src 'unsafe-inline'",
            ),
        ],
        Html(PAGE.replace("__MANAGED__", managed)),
    )
        .into_response()
}

/// Every instance's state and metrics, as the event stream's `instances`.
pub(crate) async fn snapshot(State(ctx): Shared) -> Response {
    Json(json!({ "instances": instances(&ctx.registry.snapshot()) })).into_response()
}
