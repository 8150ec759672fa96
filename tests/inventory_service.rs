//! The inventory service example over real HTTP: the service and its fake
//! downstream start on free 127.0.0.1 ports, and every assertion is about
//! what a client sees (answers, health, the breaker snapshot) and how many
//! requests reached the downstream.
//!
//! The service's instances come from the process-wide registry, as they do in
//! the example (and at an annotated fn's call site): this binary configures it
//! once, on a `ManualClock`, and its tests take turns, each starting from a
//! reset breaker and a fresh downstream.
//!
//! Deterministic: a breaker's open wait, an override's TTL and a rate-limit
//! cycle pass only when a test advances the clock; the retry's wait is zero and
//! the time limit an hour (the only primitives on tokio's clock), except where
//! a test shortens it on purpose; everything else is counted, never timed.

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
use std::sync::OnceLock;
use std::time::Duration;

use downstream::Mode;
use hyper::StatusCode;
use inventory::INSTANCE;
use resil::clock::ManualClock;
use resil::config::FileConfig;
use resil::registry_crate::Transition;
use resil::Registry;
use routes::Running;
use serde_json::Value;
use tokio::sync::{Mutex, MutexGuard};

/// The registry's clock, shared by every test (they take turns).
fn clock() -> &'static ManualClock {
    static CLOCK: OnceLock<ManualClock> = OnceLock::new();
    CLOCK.get_or_init(|| {
        let clock = ManualClock::new();
        // The example's config, with tokio's clock taken out of the outcomes:
        // no wait between attempts, and an hour's time limit, so a request
        // held up by a busy machine never times out.
        let file = FileConfig::from_file_with_env(
            routes::CONFIG,
            [
                ("RESIL_RETRY_INSTANCES_INVENTORY_QUERY_WAIT_DURATION", "0"),
                (
                    "RESIL_TIMELIMITER_INSTANCES_INVENTORY_QUERY_TIMEOUT_DURATION",
                    "1h",
                ),
            ],
        )
        .unwrap();
        let registry =
            routes::configure(Registry::builder().clock(clock.clone()).build(), file).unwrap();
        resil::init(registry).unwrap();
        clock
    })
}

/// One test's service, downstream and turn.
struct Test {
    running: Running,
    clock: &'static ManualClock,
    _turn: MutexGuard<'static, ()>,
}

impl std::ops::Deref for Test {
    type Target = Running;
    fn deref(&self) -> &Running {
        &self.running
    }
}

impl Test {
    /// Waits for its turn, then starts from a clean slate: a reset breaker,
    /// the configured sizes and limits, a new rate-limit cycle, and a fresh
    /// downstream.
    async fn start() -> Test {
        static TURN: Mutex<()> = Mutex::const_new(());
        let turn = TURN.lock().await;
        let clock = clock();
        let registry = resil::registry();
        registry.set_bulkhead_size(INSTANCE, 20).ok();
        registry.set_rate_limit(INSTANCE, 100).ok();
        registry
            .configure_time_limiter(INSTANCE, |b| b.timeout_duration(Duration::from_secs(3600)))
            .unwrap();
        let running = Running::start(SocketAddr::from(([127, 0, 0, 1], 0)))
            .await
            .unwrap();
        // Past any wait or TTL an earlier test left, into a new cycle.
        clock.advance(Duration::from_secs(24 * 3600));
        registry
            .transition_circuit_breaker(INSTANCE, Transition::Reset)
            .unwrap();
        Test {
            running,
            clock,
            _turn: turn,
        }
    }

    async fn stop(self) {
        let Test { running, _turn, .. } = self;
        running.stop().await;
    }
}

async fn get(running: &Test, path: &str) -> (StatusCode, Value) {
    let answer = http::get(running.service.addr(), path).await.unwrap();
    (answer.status, answer.json())
}

async fn post(running: &Test, path: &str) -> (StatusCode, Value) {
    let answer = http::post(running.service.addr(), path).await.unwrap();
    (answer.status, answer.json())
}

async fn stock(running: &Test, sku: &str) -> Value {
    let (status, body) = get(running, &format!("/inventory/{sku}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

fn unknown(sku: &str, reason: &str) -> Value {
    serde_json::json!({ "sku": sku, "status": "UNKNOWN", "reason": reason })
}

/// The `inventory-query` breaker in the snapshot endpoint's answer.
async fn breaker(running: &Test) -> Value {
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

/// The breaker's window, both kinds together.
fn buffered(breaker: &Value) -> f64 {
    metric(breaker, "circuitbreaker_buffered_calls", Some("successful"))
        + metric(breaker, "circuitbreaker_buffered_calls", Some("failed"))
}

#[tokio::test]
async fn a_healthy_downstream_gives_the_real_stock_level_and_health_is_up() {
    let running = Test::start().await;
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
    let running = Test::start().await;
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

    // The downstream's outage is not this service's: an OPEN breaker is not
    // allowed to fail the health check (the default), so the service stays
    // in rotation and answers UNKNOWN.
    let (status, health) = get(&running, "/actuator/health").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(health["status"], "DEGRADED");
    let component = health["components"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["kind"] == "circuit_breaker")
        .unwrap();
    assert_eq!(component["status"], "DEGRADED");
    assert!(
        component["reason"].as_str().unwrap().starts_with("OPEN"),
        "{component}"
    );
    running.stop().await;
}

#[tokio::test]
async fn an_open_breaker_lets_probes_through_after_its_wait_and_closes_when_the_downstream_recovered(
) {
    let running = Test::start().await;
    let clock = running.clock;
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
    let running = Test::start().await;
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
    assert_eq!(buffered(&b), 0.0);
    let (_, health) = get(&running, "/actuator/health").await;
    assert_eq!(health["status"], "UP");
    running.stop().await;
}

#[tokio::test]
async fn a_429_with_retry_after_opens_the_breaker_for_exactly_that_long() {
    let running = Test::start().await;
    let clock = running.clock;
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
    let running = Test::start().await;
    let clock = running.clock;
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
    assert_eq!(
        status,
        StatusCode::OK,
        "a forced-open breaker is not allowed to fail"
    );
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
    let running = Test::start().await;
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
    assert_eq!(buffered(b), 0.0);
    running.stop().await;
}

#[tokio::test]
async fn management_mistakes_get_a_clear_error_naming_what_is_wrong() {
    let running = Test::start().await;
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
    let running = Test::start().await;
    // Through the registry's management API: 3 a period from the next cycle
    // on, and the next cycle starts when the manual clock says so.
    running.registry.set_rate_limit(INSTANCE, 3).unwrap();
    running.clock.advance(Duration::from_secs(1));
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
    // The next cycle brings 3 new permits, and only 3.
    running.clock.advance(Duration::from_secs(1));
    for _ in 0..3 {
        assert_eq!(stock(&running, "SKU-1").await["status"], "AVAILABLE");
    }
    assert_eq!(
        stock(&running, "SKU-1").await,
        unknown("SKU-1", "request_not_permitted")
    );
    assert_eq!(running.downstream.stock_requests(), 6);
    running.stop().await;
}

#[tokio::test]
async fn a_full_bulkhead_answers_unknown_at_once_and_its_slots_come_back_when_the_calls_end() {
    let running = Test::start().await;
    // Resized at run time, through the registry's management API.
    running.registry.set_bulkhead_size(INSTANCE, 2).unwrap();
    let bulkhead = running.registry.bulkhead(INSTANCE);
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
    let running = Test::start().await;
    // Code settings replace the instance; the service's handle follows.
    running
        .registry
        .configure_time_limiter(INSTANCE, |b| b.timeout_duration(Duration::from_millis(20)))
        .unwrap();
    running.downstream.set_mode(Mode::Holding);
    assert_eq!(stock(&running, "SKU-1").await, unknown("SKU-1", "timeout"));
    // A timeout is retried because the retry's `retry-exceptions` names it: two attempts.
    assert_eq!(running.downstream.stock_requests(), 2);
    let bulkhead = running.registry.bulkhead(INSTANCE);
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
    let running = Test::start().await;
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
