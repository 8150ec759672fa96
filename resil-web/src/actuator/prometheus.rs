//! `/actuator/prometheus`: the registry's metrics under the names the
//! Spring Boot 3 starter publishes through Micrometer, in the Prometheus
//! text format ([`Registry::prometheus_text`](resil_registry::Registry::prometheus_text)):
//! `resilience4j_retry_calls_total{kind="failed_with_retry",name="backendA"}`,
//! `resilience4j_circuitbreaker_calls_seconds_count{kind="successful",name="inventory"}`.

use axum::extract::State;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};

use super::Shared;

pub(crate) async fn scrape(State(ctx): Shared) -> Response {
    (
        [(CONTENT_TYPE, "text/plain; version=0.0.4; charset=utf-8")],
        ctx.registry.prometheus_text(),
    )
        .into_response()
}
