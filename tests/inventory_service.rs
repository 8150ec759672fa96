//! The inventory service example over real HTTP: the service and its fake
//! downstream start on free 127.0.0.1 ports, and every assertion is about
//! what a client sees (answers, health, the breaker snapshot) and how many
//! requests reached the downstream.
//!
//! Deterministic: the registry runs on a `ManualClock` (a breaker's open wait
//! and an override's TTL pass only when the test advances it), the retry's
//! wait is overridden to zero, and everything else is counted, never timed.

#[allow(dead_code)]
#[path = "../examples/inventory_service/downstream.rs"]
mod downstream;
#[allow(dead_code)]
#[path = "../examples/inventory_service/http.rs"]
mod http;
#[allow(dead_code)]
#[path = "../examples/inventory_service/inventory.rs"]
mod inventory;
#[allow(dead_code)]
#[path = "../examples/inventory_service/routes.rs"]
mod routes;

use std::net::SocketAddr;
use std::time::Duration;

use downstream::Mode;
use hyper::StatusCode;
use resil::clock::ManualClock;
use resil::config::FileConfig;
use resil::Registry;
use routes::Running;
use serde_json::Value;

/// The example's config, with real time taken out (the time limiter and the
/// retry's wait are the only primitives on tokio's clock): no wait between
/// attempts, and an hour's time limit so that a request held up by a busy
/// machine never times out. Plus any overrides a test adds.
fn config(extra: &[(&str, &str)]) -> FileConfig {
    let mut vars = vec![
        ("RESIL_RETRY_INSTANCES_INVENTORY_QUERY_WAIT_DURATION", "0"),
        (
            "RESIL_TIMELIMITER_INSTANCES_INVENTORY_QUERY_TIMEOUT_DURATION",
            "1h",
        ),
    ];
    vars.retain(|(key, _)| extra.iter().all(|(k, _)| k != key));
    vars.extend_from_slice(extra);
    FileConfig::from_file_with_env(routes::CONFIG, vars).unwrap()
}

async fn start_with(extra: &[(&str, &str)]) -> (Running, ManualClock) {
    let clock = ManualClock::new();
    let registry = routes::configure(
        Registry::builder().clock(clock.clone()).build(),
        config(extra),
    )
    .unwrap();
    let running = Running::start(registry, SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .unwrap();
    (running, clock)
}

async fn start() -> (Running, ManualClock) {
    start_with(&[]).await
}

async fn get(running: &Running, path: &str) -> (StatusCode, Value) {
    let answer = http::get(running.service.addr(), path).await.unwrap();
    (answer.status, answer.json())
}

async fn post(running: &Running, path: &str) -> (StatusCode, Value) {
    let answer = http::post(running.service.addr(), path).await.unwrap();
    (answer.status, answer.json())
}

async fn stock(running: &Running, sku: &str) -> Value {
    let (status, body) = get(running, &format!("/inventory/{sku}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

fn unknown(sku: &str, reason: &str) -> Value {
    serde_json::json!({ "sku": sku, "status": "UNKNOWN", "reason": reason })
}

/// The `inventory-query` breaker in the snapshot endpoint's answer.
async fn breaker(running: &Running) -> Value {
    let (status, body) = get(running, "/actuator/circuitbreakers").await;
    assert_eq!(status, StatusCode::OK);
    let instances = body["instances"].as_array().unwrap();
    assert!(
        instances.iter().all(|i| i["kind"] == "circuit_breaker"),
        "{body}"
    );
    instances
        .iter()
        .find(|i| i["name"] == "inventory-query")
        .cloned()
        .unwrap_or_else(|| panic!("no inventory-query breaker in {body}"))
}

fn metric(breaker: &Value, name: &str, kind: Option<&str>) -> f64 {
    breaker["metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name && m["kind"].as_str() == kind)
        .and_then(|m| m["value"].as_f64())
        .unwrap_or_else(|| panic!("no metric {name} {kind:?} in {breaker}"))
}

#[tokio::test]
async fn a_healthy_downstream_gives_the_real_stock_level_and_health_is_up() {
    let (running, _clock) = start().await;
    let body = stock(&running, "SKU-1").await;
    assert_eq!(
        body,
        serde_json::json!({
            "sku": "SKU-1",
            "status": "AVAILABLE",
            "available": downstream::stock_level("SKU-1"),
        })
    );
    assert_eq!(running.downstream.stock_requests(), 1);
    let (status, health) = get(&running, "/actuator/health").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(health["status"], "UP");
    let b = breaker(&running).await;
    assert_eq!(b["state"], "CLOSED");
    assert_eq!(metric(&b, "circuitbreaker_calls", Some("successful")), 1.0);
    running.stop().await;
}

#[tokio::test]
async fn a_failing_downstream_opens_the_breaker_after_its_window_then_the_service_answers_unknown_without_calling_it(
) {
    let (running, _clock) = start().await;
    running.downstream.set_mode(Mode::Failing);
    // Retry( CircuitBreaker( … )): each request is two attempts, two samples.
    // Window and minimum are 10: four requests leave it CLOSED at 8 failures.
    for n in 1..=4 {
        assert_eq!(
            stock(&running, "SKU-1").await,
            unknown("SKU-1", "inventory_connection")
        );
        assert_eq!(running.downstream.stock_requests(), 2 * n);
    }
    assert_eq!(breaker(&running).await["state"], "CLOSED");
    let (status, _) = get(&running, "/actuator/health").await;
    assert_eq!(status, StatusCode::OK);

    // The fifth request's two attempts fill the window: 100 % failures, OPEN.
    assert_eq!(
        stock(&running, "SKU-1").await,
        unknown("SKU-1", "inventory_connection")
    );
    assert_eq!(running.downstream.stock_requests(), 10);
    let b = breaker(&running).await;
    assert_eq!(b["state"], "OPEN");
    assert_eq!(metric(&b, "circuitbreaker_calls", Some("failed")), 10.0);
    assert_eq!(metric(&b, "circuitbreaker_failure_rate", None), 100.0);

    // From now on: an explicit degraded answer, and the downstream is spared.
    for _ in 0..3 {
        assert_eq!(
            stock(&running, "SKU-1").await,
            unknown("SKU-1", "call_not_permitted")
        );
    }
    assert_eq!(running.downstream.stock_requests(), 10);
    let b = breaker(&running).await;
    assert_eq!(
        metric(&b, "circuitbreaker_calls", Some("not_permitted")),
        3.0
    );

    let (status, health) = get(&running, "/actuator/health").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(health["status"], "DOWN");
    let component = health["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "circuit_breaker")
        .unwrap();
    assert_eq!(component["status"], "DOWN");
    assert!(
        component["reason"].as_str().unwrap().starts_with("OPEN"),
        "{component}"
    );
    running.stop().await;
}

#[tokio::test]
async fn an_open_breaker_lets_probes_through_after_its_wait_and_closes_when_the_downstream_recovered(
) {
    let (running, clock) = start().await;
    running.downstream.set_mode(Mode::Failing);
    for _ in 0..5 {
        stock(&running, "SKU-1").await;
    }
    assert_eq!(breaker(&running).await["state"], "OPEN");
    running.downstream.set_mode(Mode::Healthy);
    assert_eq!(
        stock(&running, "SKU-1").await,
        unknown("SKU-1", "call_not_permitted"),
        "still within the 10 s wait"
    );
    // OPEN is left strictly after the wait, on the registry's clock.
    clock.advance(Duration::from_secs(10) + Duration::from_millis(1));
    for _ in 0..3 {
        assert_eq!(stock(&running, "SKU-1").await["status"], "AVAILABLE");
    }
    assert_eq!(breaker(&running).await["state"], "CLOSED", "3 good probes");
    assert_eq!(running.downstream.stock_requests(), 13);
    running.stop().await;
}

#[tokio::test]
async fn out_of_stock_business_errors_are_answered_as_such_and_never_open_the_breaker() {
    let (running, _clock) = start().await;
    running.downstream.set_mode(Mode::OutOfStock);
    for _ in 0..30 {
        assert_eq!(
            stock(&running, "SKU-9").await,
            serde_json::json!({ "sku": "SKU-9", "status": "OUT_OF_STOCK", "available": 0 })
        );
    }
    // Neither retried nor counted: 30 requests, 30 downstream calls, all ignored.
    assert_eq!(running.downstream.stock_requests(), 30);
    let b = breaker(&running).await;
    assert_eq!(b["state"], "CLOSED");
    assert_eq!(metric(&b, "circuitbreaker_calls", Some("ignored")), 30.0);
    assert_eq!(metric(&b, "circuitbreaker_buffered_calls", None), 0.0);
    let (_, health) = get(&running, "/actuator/health").await;
    assert_eq!(health["status"], "UP");
    running.stop().await;
}

#[tokio::test]
async fn a_429_with_retry_after_opens_the_breaker_for_exactly_that_long() {
    let (running, clock) = start().await;
    running
        .downstream
        .set_mode(Mode::Throttled(Duration::from_secs(30)));
    assert_eq!(
        stock(&running, "SKU-1").await,
        unknown("SKU-1", "inventory_throttled")
    );
    assert_eq!(
        running.downstream.stock_requests(),
        1,
        "a 429 is not retried"
    );
    assert_eq!(breaker(&running).await["state"], "OPEN");
    running.downstream.set_mode(Mode::Healthy);
    // The configured wait (10 s) is not what counts: Retry-After's 30 s is.
    clock.advance(Duration::from_secs(20));
    assert_eq!(
        stock(&running, "SKU-1").await,
        unknown("SKU-1", "call_not_permitted")
    );
    clock.advance(Duration::from_secs(10) + Duration::from_millis(1));
    assert_eq!(stock(&running, "SKU-1").await["status"], "AVAILABLE");
    assert_eq!(running.downstream.stock_requests(), 2);
    running.stop().await;
}

#[tokio::test]
async fn an_operator_forces_the_breaker_open_with_a_ttl_and_a_reason_and_it_expires_on_time() {
    let (running, clock) = start().await;
    assert_eq!(stock(&running, "SKU-1").await["status"], "AVAILABLE");

    let (status, body) = post(
        &running,
        "/actuator/circuitbreakers/inventory-query/forced-open?ttl=30m&reason=failover+drill",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let b = &body["instances"][0];
    assert_eq!(b["state"], "FORCED_OPEN");
    let o = &b["manual_override"];
    assert_eq!(o["mode"], "FORCED_OPEN");
    assert_eq!(o["previous"], "CLOSED");
    assert_eq!(o["reason"], "failover drill");
    let secs = |v: &Value| v["secs"].as_u64().unwrap();
    assert_eq!(secs(&o["until"]) - secs(&o["since"]), 30 * 60);

    assert_eq!(
        stock(&running, "SKU-1").await,
        unknown("SKU-1", "call_not_permitted")
    );
    assert_eq!(
        running.downstream.stock_requests(),
        1,
        "refused without a call"
    );
    let (status, health) = get(&running, "/actuator/health").await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(
        health["reason"]
            .as_str()
            .unwrap()
            .contains("failover drill"),
        "{health}"
    );
    assert_eq!(breaker(&running).await["state"], "FORCED_OPEN");

    // Just before the TTL: still forced open. At the TTL: back to CLOSED.
    clock.advance(Duration::from_secs(30 * 60 - 1));
    assert_eq!(breaker(&running).await["state"], "FORCED_OPEN");
    clock.advance(Duration::from_secs(1));
    let b = breaker(&running).await;
    assert_eq!(b["state"], "CLOSED");
    assert!(b["manual_override"].is_null(), "{b}");
    assert_eq!(stock(&running, "SKU-1").await["status"], "AVAILABLE");
    assert_eq!(running.downstream.stock_requests(), 2);
    running.stop().await;
}

#[tokio::test]
async fn management_endpoints_disable_close_and_reset_the_breaker_by_name() {
    let (running, _clock) = start().await;
    running.downstream.set_mode(Mode::Failing);
    for _ in 0..5 {
        stock(&running, "SKU-1").await;
    }
    assert_eq!(breaker(&running).await["state"], "OPEN");

    // DISABLED: every call passes (and fails, and is not recorded).
    let (status, body) = post(
        &running,
        "/actuator/circuitbreakers/inventory-query/disabled?reason=investigating",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(body["instances"][0]["state"], "DISABLED");
    assert_eq!(
        stock(&running, "SKU-1").await,
        unknown("SKU-1", "inventory_connection")
    );
    assert_eq!(running.downstream.stock_requests(), 12);

    let (_, body) = post(&running, "/actuator/circuitbreakers/inventory-query/closed").await;
    assert_eq!(body["instances"][0]["state"], "CLOSED");
    assert!(body["instances"][0]["manual_override"].is_null());

    let (_, body) = post(&running, "/actuator/circuitbreakers/inventory-query/reset").await;
    let b = &body["instances"][0];
    assert_eq!(b["state"], "CLOSED");
    assert_eq!(metric(b, "circuitbreaker_buffered_calls", None), 0.0);
    running.stop().await;
}

#[tokio::test]
async fn management_mistakes_get_a_clear_error_naming_what_is_wrong() {
    let (running, _clock) = start().await;
    stock(&running, "SKU-1").await;
    let (status, body) = post(&running, "/actuator/circuitbreakers/nope/forced-open").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(body["error"].as_str().unwrap().contains("nope"), "{body}");

    let (status, body) = post(
        &running,
        "/actuator/circuitbreakers/inventory-query/open-sesame",
    )
    .await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("forced-open, disabled, closed or reset"),
        "{body}"
    );

    let (status, body) = post(
        &running,
        "/actuator/circuitbreakers/inventory-query/forced-open?ttl=soon",
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(body["error"].as_str().unwrap().contains("`ttl`"), "{body}");
    assert_eq!(
        breaker(&running).await["state"],
        "CLOSED",
        "nothing changed"
    );

    let (status, _) = get(&running, "/actuator/circuitbreakers/inventory-query/reset").await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    running.stop().await;
}

#[tokio::test]
async fn the_rate_limiter_refuses_past_its_limit_with_a_degraded_answer_the_breaker_does_not_count()
{
    // One cycle never ends on the manual clock: 3 permits in all.
    let (running, _clock) = start_with(&[(
        "RESIL_RATELIMITER_INSTANCES_INVENTORY_QUERY_LIMIT_FOR_PERIOD",
        "3",
    )])
    .await;
    for _ in 0..3 {
        assert_eq!(stock(&running, "SKU-1").await["status"], "AVAILABLE");
    }
    for _ in 0..12 {
        assert_eq!(
            stock(&running, "SKU-1").await,
            unknown("SKU-1", "request_not_permitted")
        );
    }
    assert_eq!(running.downstream.stock_requests(), 3);
    let b = breaker(&running).await;
    assert_eq!(
        b["state"], "CLOSED",
        "our own refusals are not the downstream's failures"
    );
    assert_eq!(metric(&b, "circuitbreaker_calls", Some("failed")), 0.0);
    running.stop().await;
}

#[tokio::test]
async fn a_full_bulkhead_answers_unknown_at_once_and_its_slots_come_back_when_the_calls_end() {
    let (running, _clock) = start().await;
    // Resized at run time, through the registry's management API.
    running
        .registry
        .set_bulkhead_size(inventory::INSTANCE, 2)
        .unwrap();
    let bulkhead = running.registry.bulkhead(inventory::INSTANCE);
    running.downstream.set_mode(Mode::Holding);
    let addr = running.service.addr();
    let held: Vec<_> = (0..2)
        .map(|_| tokio::spawn(async move { http::get(addr, "/inventory/SKU-1").await }))
        .collect();
    running.downstream.held(2).await;
    assert_eq!(bulkhead.available_concurrent_calls(), 0);

    assert_eq!(
        stock(&running, "SKU-1").await,
        unknown("SKU-1", "bulkhead_full")
    );
    assert_eq!(
        running.downstream.stock_requests(),
        2,
        "refused without a call"
    );

    running.downstream.release();
    for request in held {
        let answer = request.await.unwrap().unwrap();
        assert_eq!(answer.json()["status"], "AVAILABLE");
    }
    assert_eq!(bulkhead.available_concurrent_calls(), 2);
    let b = breaker(&running).await;
    assert_eq!(metric(&b, "circuitbreaker_calls", Some("successful")), 2.0);
    assert_eq!(metric(&b, "circuitbreaker_calls", Some("failed")), 0.0);
    assert_eq!(
        metric(&b, "circuitbreaker_calls", Some("ignored")),
        1.0,
        "our own bulkhead's refusal is not the downstream's failure"
    );
    running.stop().await;
}

#[tokio::test]
async fn a_downstream_that_never_answers_times_out_and_the_abandoned_attempts_give_their_slots_back(
) {
    // Real time passes here (2 × 20 ms), but the outcome cannot depend on it:
    // a held request only ends when released, which happens after the answer.
    let (running, _clock) = start_with(&[(
        "RESIL_TIMELIMITER_INSTANCES_INVENTORY_QUERY_TIMEOUT_DURATION",
        "20ms",
    )])
    .await;
    running.downstream.set_mode(Mode::Holding);
    assert_eq!(stock(&running, "SKU-1").await, unknown("SKU-1", "timeout"));
    // A timeout is retried (resil's default for refusals): two attempts.
    assert_eq!(running.downstream.stock_requests(), 2);
    let bulkhead = running.registry.bulkhead(inventory::INSTANCE);
    assert_eq!(
        bulkhead.available_concurrent_calls(),
        20,
        "the timed-out attempts were dropped, and their permits with them"
    );
    let b = breaker(&running).await;
    assert_eq!(metric(&b, "circuitbreaker_calls", Some("failed")), 2.0);
    running.downstream.release();
    running.stop().await;
}

#[tokio::test]
async fn the_downstream_control_endpoint_switches_its_behaviour_over_http() {
    let (running, _clock) = start().await;
    let control = running.downstream_server.addr();
    let answer = http::post(control, "/control/out-of-stock").await.unwrap();
    assert_eq!(answer.status, StatusCode::OK);
    assert_eq!(running.downstream.mode(), Mode::OutOfStock);
    let answer = http::post(control, "/control/throttle?retry_after=7")
        .await
        .unwrap();
    assert_eq!(answer.json()["mode"], "throttle (Retry-After: 7)");
    assert_eq!(
        running.downstream.mode(),
        Mode::Throttled(Duration::from_secs(7))
    );
    let answer = http::post(control, "/control/hold").await.unwrap();
    assert_eq!(answer.json()["mode"], "hold");
    let answer = http::post(control, "/control/release").await.unwrap();
    assert_eq!(answer.json()["mode"], "healthy");
    let answer = http::post(control, "/control/slow?ms=soon").await.unwrap();
    assert_eq!(answer.status, StatusCode::BAD_REQUEST);
    assert!(answer.json()["error"].as_str().unwrap().contains("`ms`"));
    running.stop().await;
}
