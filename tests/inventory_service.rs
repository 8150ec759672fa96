//! The inventory service example over real HTTP: the service and its fake
//! downstream start on free 127.0.0.1 ports, and every assertion is about
//! what a client sees (answers, `/inventory/attempts`, the actuator's health,
//! breaker details and metrics) and how many requests reached the downstream.
//!
//! The service's instances come from the process-wide registry, as they do in
//! the example (and at an annotated fn's call site): this binary configures it
//! once, on a `ManualClock`, and its tests take turns, each starting from a
//! reset breaker and a fresh downstream and client.
//!
//! Deterministic: a breaker's open wait, an override's TTL and a rate-limit
//! cycle pass only when a test advances the clock; the retry's wait is zero and
//! the time limit an hour (the only primitives on tokio's clock), except where
//! a test shortens it on purpose; everything else is counted, never timed.

#[allow(dead_code)]
#[path = "../examples/inventory_service/downstream.rs"]
mod downstream;
#[allow(dead_code)]
#[path = "../examples/inventory_service/inventory.rs"]
mod inventory;
#[allow(dead_code)]
#[path = "../examples/inventory_service/serve.rs"]
mod serve;
#[allow(dead_code)]
#[path = "../examples/inventory_service/service.rs"]
mod service;

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::OnceLock;
use std::time::Duration;

use downstream::Mode;
use inventory::INSTANCE;
use resil::clock::ManualClock;
use resil::config::FileConfig;
use resil::registry_crate::Transition;
use resil::Registry;
use serde_json::{json, Value};
use service::{Running, API};
use tokio::sync::{Mutex, MutexGuard};

const TOKEN: &str = "inventory-test-token-9d2e";

/// The downstream's classifier, following the process-wide registry's file
/// (the example's).
fn classifier() -> resil_web::http::HttpClassifier {
    static CLASSIFIER: OnceLock<resil_web::http::HttpClassifier> = OnceLock::new();
    CLASSIFIER
        .get_or_init(|| {
            clock();
            service::classifier(resil::registry())
        })
        .clone()
}

/// The registry's clock, shared by every test (they take turns).
fn clock() -> &'static ManualClock {
    static CLOCK: OnceLock<ManualClock> = OnceLock::new();
    CLOCK.get_or_init(|| {
        let clock = ManualClock::new();
        // The example's config, with tokio's clock taken out of the outcomes:
        // no wait between attempts, and an hour's time limit, so a request
        // held up by a busy machine never times out.
        let file = FileConfig::from_file_with_env(
            service::CONFIG,
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
            service::configure(Registry::builder().clock(clock.clone()).build(), file).unwrap();
        resil::init(registry).unwrap();
        clock
    })
}

/// One test's service, downstream and turn.
struct Test {
    running: Running,
    clock: &'static ManualClock,
    http: reqwest::Client,
    base: String,
    /// The breaker's cumulative counts when the test started, by kind.
    baseline: HashMap<&'static str, f64>,
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
    /// downstream and client.
    async fn start() -> Test {
        static TURN: Mutex<()> = Mutex::const_new(());
        let turn = TURN.lock().await;
        let clock = clock();
        let registry = resil::registry();
        registry.set_bulkhead_size(INSTANCE, 20).unwrap();
        registry.set_rate_limit(INSTANCE, 100).unwrap();
        registry.set_rate_limit(API, 50).unwrap();
        registry
            .configure_time_limiter(INSTANCE, |b| b.timeout_duration(Duration::from_secs(3600)))
            .unwrap();
        let running = Running::start(
            SocketAddr::from(([127, 0, 0, 1], 0)),
            Some(TOKEN),
            classifier(),
        )
        .await
        .unwrap();
        // Past any wait or TTL an earlier test left, into a new cycle.
        clock.advance(Duration::from_secs(24 * 3600));
        registry
            .transition_circuit_breaker(INSTANCE, Transition::Reset)
            .unwrap();
        let base = format!("http://{}", running.service.addr());
        let http = reqwest::Client::new();
        let mut baseline = HashMap::new();
        for kind in ["successful", "failed", "ignored", "not_permitted"] {
            baseline.insert(kind, total(&http, &base, kind).await);
        }
        Test {
            running,
            clock,
            http,
            base,
            baseline,
            _turn: turn,
        }
    }

    async fn stop(self) {
        let Test { running, _turn, .. } = self;
        running.stop().await;
    }

    async fn get(&self, path: &str) -> (u16, Value) {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap())
    }

    /// A management request with the service's bearer token.
    async fn manage(&self, name: &str, body: Value) -> (u16, Value) {
        let r = self
            .http
            .post(format!("{}/actuator/circuitbreakers/{name}", self.base))
            .bearer_auth(TOKEN)
            .json(&body)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.json().await.unwrap())
    }

    /// `/inventory/{sku}`, which must answer 200.
    async fn stock(&self, sku: &str) -> Value {
        let (status, body) = self.get(&format!("/inventory/{sku}")).await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// `/inventory/attempts`: a bare number, as the seed's controller answers.
    async fn attempts(&self) -> u64 {
        let (status, body) = self.get("/inventory/attempts").await;
        assert_eq!(status, 200);
        body.as_u64()
            .unwrap_or_else(|| panic!("not a number: {body}"))
    }

    /// The `inventory-query` breaker's details (Resilience4j's shape).
    async fn breaker(&self) -> Value {
        let (status, body) = self
            .get(&format!("/actuator/circuitbreakers/{INSTANCE}"))
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// `resilience4j.circuitbreaker.calls` of `kind`, through Actuator's
    /// metrics endpoint
    /// (`resilience4j.circuitbreaker.not.permitted.calls` for
    /// `not_permitted`), counted since this test started: the meters are
    /// cumulative, as Micrometer's are, and the tests share the instance.
    async fn calls(&self, kind: &str) -> f64 {
        self.total(kind).await - self.baseline[kind]
    }

    async fn total(&self, kind: &str) -> f64 {
        total(&self.http, &self.base, kind).await
    }
}

/// The breaker's cumulative count of `kind` calls.
async fn total(http: &reqwest::Client, base: &str, kind: &str) -> f64 {
    let meter = if kind == "not_permitted" {
        "resilience4j.circuitbreaker.not.permitted.calls"
    } else {
        "resilience4j.circuitbreaker.calls"
    };
    let body: Value = http
        .get(format!(
            "{base}/actuator/metrics/{meter}?tag=name:{INSTANCE}&tag=kind:{kind}"
        ))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    body["measurements"][0]["value"]
        .as_f64()
        .unwrap_or_else(|| panic!("no count in {body}"))
}

fn view(sku: &str, status: &str, degraded: bool, reason: &str) -> Value {
    json!({ "skuId": sku, "status": status, "degraded": degraded, "reason": reason })
}

fn available(sku: &str) -> Value {
    view(sku, "AVAILABLE", false, "CONFIRMED")
}

fn unknown(sku: &str, reason: &str) -> Value {
    view(sku, "UNKNOWN", true, reason)
}

#[tokio::test]
async fn a_healthy_downstream_gives_a_confirmed_answer_in_the_inventory_views_shape() {
    let t = Test::start().await;
    assert_eq!(t.stock("SKU-1").await, available("SKU-1"));
    assert_eq!(
        t.stock("SKU-1001?mode=success").await,
        available("SKU-1001")
    );
    assert_eq!(t.attempts().await, 2);
    assert_eq!(t.downstream.stock_requests(), 2);
    let (status, health) = t.get("/actuator/health").await;
    assert_eq!(status, 200);
    assert_eq!(health["status"], "UP");
    let b = t.breaker().await;
    assert_eq!(b["state"], "CLOSED");
    assert_eq!(t.calls("successful").await, 2.0);
    t.stop().await;
}

#[tokio::test]
async fn the_seeds_modes_connect_is_retried_fail_is_not_and_attempts_count_each_try() {
    let t = Test::start().await;
    // A refused connection: retried once (max-attempts 2), never reaching
    // the downstream.
    assert_eq!(
        t.stock("SKU-1001?mode=connect").await,
        unknown("SKU-1001", "inventory_connection")
    );
    assert_eq!(t.attempts().await, 2);
    assert_eq!(t.downstream.stock_requests(), 0);
    // A 503: a failure for the breaker, but only a connection failure is
    // retried.
    assert_eq!(
        t.stock("SKU-1001?mode=fail").await,
        unknown("SKU-1001", "inventory_unavailable")
    );
    assert_eq!(t.attempts().await, 3);
    assert_eq!(t.downstream.stock_requests(), 1);
    assert_eq!(t.calls("failed").await, 3.0, "every attempt is a sample");
    // Slow, under this test's hour-long time limit: answered.
    assert_eq!(t.stock("SKU-1001?mode=slow").await, available("SKU-1001"));
    assert_eq!(t.attempts().await, 4);
    // An unknown mode is the caller's mistake, named, and calls nothing.
    let (status, body) = t.get("/inventory/SKU-1?mode=explode").await;
    assert_eq!(status, 400);
    let error = body["error"].as_str().unwrap();
    assert!(
        error.contains("`mode`") && error.contains("explode"),
        "{body}"
    );
    assert!(error.contains("success, fail, connect, slow"), "{body}");
    assert_eq!(t.attempts().await, 4);
    t.stop().await;
}

#[tokio::test]
async fn a_failing_downstream_opens_the_breaker_after_its_window_and_the_service_stays_live_and_ready(
) {
    let t = Test::start().await;
    t.downstream.set_mode(Mode::Failing);
    // Window and minimum are 10; a 503 is one attempt: nine leave it CLOSED.
    for n in 1..=9 {
        assert_eq!(
            t.stock("SKU-1").await,
            unknown("SKU-1", "inventory_unavailable")
        );
        assert_eq!(t.downstream.stock_requests(), n);
    }
    assert_eq!(t.breaker().await["state"], "CLOSED");
    assert_eq!(
        t.stock("SKU-1").await,
        unknown("SKU-1", "inventory_unavailable")
    );
    let b = t.breaker().await;
    assert_eq!(b["state"], "OPEN");
    assert_eq!(b["failureRate"], 100.0);
    assert_eq!(b["bufferedCalls"], 10.0);

    // From now on: an explicit degraded answer, and the downstream is spared.
    for _ in 0..3 {
        assert_eq!(
            t.stock("SKU-1").await,
            unknown("SKU-1", "call_not_permitted")
        );
    }
    assert_eq!(t.downstream.stock_requests(), 10);
    assert_eq!(t.attempts().await, 10);
    assert_eq!(t.calls("not_permitted").await, 3.0);

    // The downstream's outage is not this service's: liveness and readiness
    // stay UP (200), the breaker's component says DEGRADED.
    for path in ["/actuator/health/liveness", "/actuator/health/readiness"] {
        let (status, body) = t.get(path).await;
        assert_eq!((status, &body["status"]), (200, &json!("UP")), "{path}");
    }
    let (status, health) = t.get("/actuator/health").await;
    assert_eq!(status, 200);
    let breakers = &health["components"]["circuitBreakers"];
    assert_eq!(breakers["status"], "DEGRADED", "{health}");
    assert_eq!(breakers["details"][INSTANCE]["state"], "OPEN", "{health}");
    t.stop().await;
}

#[tokio::test]
async fn an_open_breaker_lets_probes_through_after_its_wait_and_closes_when_the_downstream_recovered(
) {
    let t = Test::start().await;
    t.downstream.set_mode(Mode::Failing);
    for _ in 0..10 {
        t.stock("SKU-1").await;
    }
    assert_eq!(t.breaker().await["state"], "OPEN");
    t.downstream.set_mode(Mode::Success);
    assert_eq!(
        t.stock("SKU-1").await,
        unknown("SKU-1", "call_not_permitted"),
        "still within the 10 s wait"
    );
    // OPEN is left strictly after the wait, on the registry's clock.
    t.clock
        .advance(Duration::from_secs(10) + Duration::from_millis(1));
    for _ in 0..3 {
        assert_eq!(t.stock("SKU-1").await, available("SKU-1"));
    }
    assert_eq!(t.breaker().await["state"], "CLOSED", "3 good probes");
    assert_eq!(t.downstream.stock_requests(), 13);
    t.stop().await;
}

#[tokio::test]
async fn out_of_stock_is_a_confirmed_answer_never_retried_and_never_counted() {
    let t = Test::start().await;
    t.downstream.set_mode(Mode::OutOfStock);
    for _ in 0..30 {
        assert_eq!(
            t.stock("SKU-9").await,
            view("SKU-9", "OUT_OF_STOCK", false, "CONFIRMED")
        );
    }
    assert_eq!(t.downstream.stock_requests(), 30);
    let b = t.breaker().await;
    assert_eq!(b["state"], "CLOSED");
    assert_eq!(b["bufferedCalls"], 0.0);
    assert_eq!(t.calls("ignored").await, 30.0);
    t.stop().await;
}

#[tokio::test]
async fn a_429_with_retry_after_opens_the_breaker_for_exactly_that_long() {
    let t = Test::start().await;
    t.downstream
        .set_mode(Mode::Throttled(Duration::from_secs(30)));
    assert_eq!(
        t.stock("SKU-1").await,
        unknown("SKU-1", "inventory_unavailable")
    );
    assert_eq!(t.downstream.stock_requests(), 1, "a 429 is not retried");
    assert_eq!(t.breaker().await["state"], "OPEN");
    t.downstream.set_mode(Mode::Success);
    // The configured wait (10 s) is not what counts: Retry-After's 30 s is.
    t.clock.advance(Duration::from_secs(20));
    assert_eq!(
        t.stock("SKU-1").await,
        unknown("SKU-1", "call_not_permitted")
    );
    t.clock
        .advance(Duration::from_secs(10) + Duration::from_millis(1));
    assert_eq!(t.stock("SKU-1").await, available("SKU-1"));
    assert_eq!(t.downstream.stock_requests(), 2);
    t.stop().await;
}

#[tokio::test]
async fn an_operator_forces_the_breaker_open_with_a_ttl_and_a_reason_and_it_expires_on_time() {
    let t = Test::start().await;
    assert_eq!(t.stock("SKU-1").await, available("SKU-1"));

    // Without the token: refused, and nothing changes.
    let r = t
        .http
        .post(format!("{}/actuator/circuitbreakers/{INSTANCE}", t.base))
        .json(&json!({ "updateState": "FORCE_OPEN" }))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(t.breaker().await["state"], "CLOSED");

    let (status, body) = t
        .manage(
            INSTANCE,
            json!({ "updateState": "FORCE_OPEN", "ttl": "30m", "reason": "failover drill" }),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["state"], "FORCED_OPEN");
    let b = t.breaker().await;
    let o = &b["manualOverride"];
    assert_eq!(o["mode"], "FORCED_OPEN");
    assert_eq!(o["previous"], "CLOSED");
    assert_eq!(o["reason"], "failover drill");

    assert_eq!(
        t.stock("SKU-1").await,
        unknown("SKU-1", "call_not_permitted")
    );
    assert_eq!(t.downstream.stock_requests(), 1, "refused without a call");
    let (status, _) = t.get("/actuator/health/readiness").await;
    assert_eq!(status, 200, "a forced-open breaker does not fail readiness");

    // Just before the TTL: still forced open. At the TTL: back to CLOSED.
    t.clock.advance(Duration::from_secs(30 * 60 - 1));
    assert_eq!(t.breaker().await["state"], "FORCED_OPEN");
    t.clock.advance(Duration::from_secs(1));
    let b = t.breaker().await;
    assert_eq!(b["state"], "CLOSED");
    assert!(b["manualOverride"].is_null(), "{b}");
    assert_eq!(t.stock("SKU-1").await, available("SKU-1"));
    assert_eq!(t.downstream.stock_requests(), 2);
    t.stop().await;
}

#[tokio::test]
async fn management_disables_closes_and_resets_the_breaker_and_names_what_is_wrong() {
    let t = Test::start().await;
    t.downstream.set_mode(Mode::Failing);
    for _ in 0..10 {
        t.stock("SKU-1").await;
    }
    assert_eq!(t.breaker().await["state"], "OPEN");
    // DISABLED: every call passes (and fails, and is not recorded).
    let (status, body) = t
        .manage(
            INSTANCE,
            json!({ "updateState": "DISABLE", "reason": "investigating" }),
        )
        .await;
    assert_eq!(
        (status, &body["state"]),
        (200, &json!("DISABLED")),
        "{body}"
    );
    assert_eq!(
        t.stock("SKU-1").await,
        unknown("SKU-1", "inventory_unavailable")
    );
    assert_eq!(t.downstream.stock_requests(), 11);
    let (_, body) = t.manage(INSTANCE, json!({ "updateState": "CLOSE" })).await;
    assert_eq!(body["state"], "CLOSED");
    let (_, body) = t.manage(INSTANCE, json!({ "updateState": "RESET" })).await;
    assert_eq!(body["state"], "CLOSED");
    assert_eq!(t.breaker().await["bufferedCalls"], 0.0);

    // Mistakes: each named, nothing changed.
    let (status, body) = t
        .manage("nope", json!({ "updateState": "FORCE_OPEN" }))
        .await;
    assert_eq!(status, 404);
    assert!(body["error"].as_str().unwrap().contains("nope"), "{body}");
    let (status, body) = t
        .manage(INSTANCE, json!({ "updateState": "OPEN_SESAME" }))
        .await;
    assert_eq!(status, 400);
    assert!(
        body["error"].as_str().unwrap().contains("`updateState`"),
        "{body}"
    );
    let (status, body) = t
        .manage(
            INSTANCE,
            json!({ "updateState": "FORCE_OPEN", "ttl": "soon" }),
        )
        .await;
    assert_eq!(status, 400);
    assert!(body["error"].as_str().unwrap().contains("`ttl`"), "{body}");
    assert_eq!(t.breaker().await["state"], "CLOSED", "nothing changed");
    t.stop().await;
}

#[tokio::test]
async fn the_metrics_endpoint_answers_as_actuator_does_with_tag_filters() {
    let t = Test::start().await;
    t.stock("SKU-1").await;
    t.stock("SKU-1?mode=fail").await;
    t.stock("SKU-1?mode=out-of-stock").await;
    let (status, body) = t
        .get("/actuator/metrics/resilience4j.circuitbreaker.calls")
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["name"], "resilience4j.circuitbreaker.calls");
    assert!(body["description"].is_string(), "{body}");
    // A timer, as Micrometer measures one: count, total time and max, in seconds.
    assert_eq!(body["baseUnit"], "seconds", "{body}");
    let measurements = body["measurements"].as_array().unwrap();
    let statistics: Vec<&str> = measurements
        .iter()
        .map(|m| m["statistic"].as_str().unwrap())
        .collect();
    assert_eq!(statistics, ["COUNT", "TOTAL_TIME", "MAX"]);
    // This test's three calls, plus whatever earlier tests left (the
    // counters are cumulative, as Micrometer's are).
    assert!(measurements[0]["value"].as_f64().unwrap() >= 3.0, "{body}");
    let tags = body["availableTags"].as_array().unwrap();
    let tag = |name: &str| {
        tags.iter()
            .find(|t| t["tag"] == name)
            .unwrap_or_else(|| panic!("no tag {name} in {body}"))["values"]
            .clone()
    };
    assert_eq!(tag("kind"), json!(["failed", "ignored", "successful"]));
    assert_eq!(tag("name"), json!([INSTANCE]));

    // Filtered by name: the name tag is no longer offered, as Actuator does.
    let (status, filtered) = t
        .get("/actuator/metrics/resilience4j.circuitbreaker.calls?tag=name:inventory-query")
        .await;
    assert_eq!(status, 200);
    assert_eq!(filtered["measurements"], body["measurements"]);
    assert_eq!(filtered["availableTags"].as_array().unwrap().len(), 1);
    assert_eq!(filtered["availableTags"][0]["tag"], "kind");
    let (_, nobody) = t
        .get("/actuator/metrics/resilience4j.circuitbreaker.calls?tag=name:nobody")
        .await;
    assert_eq!(nobody["measurements"][0]["value"], 0.0);
    let (status, _) = t.get("/actuator/metrics/resilience4j.nothing").await;
    assert_eq!(status, 404);
    t.stop().await;
}

#[tokio::test]
async fn the_inbound_rate_limiter_layer_answers_429_with_retry_after_before_any_downstream_call() {
    let t = Test::start().await;
    // 2 a period from the next cycle on (the layer's limiter, `inventory-api`).
    t.registry.set_rate_limit(API, 2).unwrap();
    t.clock.advance(Duration::from_secs(1));
    for _ in 0..2 {
        assert_eq!(t.stock("SKU-1").await, available("SKU-1"));
    }
    let r = t
        .http
        .get(format!("{}/inventory/SKU-1", t.base))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
    let retry_after: u64 = r.headers()["retry-after"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap();
    assert_eq!(retry_after, 1, "the next cycle is at most a second away");
    assert_eq!(
        t.downstream.stock_requests(),
        2,
        "refused before the handler"
    );
    assert_eq!(t.attempts().await, 2, "/inventory/attempts is not limited");
    t.clock.advance(Duration::from_secs(1));
    assert_eq!(t.stock("SKU-1").await, available("SKU-1"));
    t.stop().await;
}

#[tokio::test]
async fn the_downstream_calls_rate_limiter_refuses_with_a_degraded_answer_the_breaker_does_not_count(
) {
    let t = Test::start().await;
    t.registry.set_rate_limit(INSTANCE, 3).unwrap();
    t.clock.advance(Duration::from_secs(1));
    for _ in 0..3 {
        assert_eq!(t.stock("SKU-1").await, available("SKU-1"));
    }
    for _ in 0..12 {
        assert_eq!(
            t.stock("SKU-1").await,
            unknown("SKU-1", "request_not_permitted")
        );
    }
    assert_eq!(t.downstream.stock_requests(), 3);
    let b = t.breaker().await;
    assert_eq!(
        b["state"], "CLOSED",
        "our own refusals are not the downstream's failures"
    );
    assert_eq!(t.calls("failed").await, 0.0);
    t.stop().await;
}

#[tokio::test]
async fn a_full_bulkhead_answers_unknown_at_once_and_its_slots_come_back_when_the_calls_end() {
    let t = Test::start().await;
    t.registry.set_bulkhead_size(INSTANCE, 2).unwrap();
    let bulkhead = t.registry.bulkhead(INSTANCE);
    t.downstream.set_mode(Mode::Holding);
    let held: Vec<_> = (0..2)
        .map(|_| {
            let request = t.http.get(format!("{}/inventory/SKU-1", t.base)).send();
            tokio::spawn(async move { request.await.unwrap().json::<Value>().await.unwrap() })
        })
        .collect();
    t.downstream.held(2).await;
    assert_eq!(bulkhead.available_concurrent_calls(), 0);
    assert_eq!(t.stock("SKU-1").await, unknown("SKU-1", "bulkhead_full"));
    assert_eq!(t.downstream.stock_requests(), 2, "refused without a call");
    t.downstream.release();
    for request in held {
        assert_eq!(request.await.unwrap(), available("SKU-1"));
    }
    assert_eq!(bulkhead.available_concurrent_calls(), 2);
    assert_eq!(t.calls("successful").await, 2.0);
    assert_eq!(
        t.calls("ignored").await,
        1.0,
        "our own bulkhead's refusal is not the downstream's failure"
    );
    t.stop().await;
}

#[tokio::test]
async fn a_downstream_that_never_answers_times_out_once_and_the_abandoned_attempt_gives_its_slot_back(
) {
    // Real time passes here (20 ms), but the outcome cannot depend on it: a
    // held request only ends when released, which happens after the answer.
    let t = Test::start().await;
    t.registry
        .configure_time_limiter(INSTANCE, |b| b.timeout_duration(Duration::from_millis(20)))
        .unwrap();
    t.downstream.set_mode(Mode::Holding);
    assert_eq!(t.stock("SKU-1").await, unknown("SKU-1", "timeout"));
    // Only a connection failure is retried: one attempt.
    assert_eq!(t.attempts().await, 1);
    let bulkhead = t.registry.bulkhead(INSTANCE);
    assert_eq!(
        bulkhead.available_concurrent_calls(),
        20,
        "the timed-out attempt was dropped, and its permit with it"
    );
    assert_eq!(t.calls("failed").await, 1.0);
    t.downstream.release();
    t.stop().await;
}

#[tokio::test]
async fn the_downstream_control_endpoint_switches_its_behaviour_over_http() {
    let t = Test::start().await;
    let control = format!("http://{}/control", t.downstream_server.addr());
    let post = |path: &str| t.http.post(format!("{control}/{path}")).send();
    let r = post("out-of-stock").await.unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(t.downstream.mode(), Mode::OutOfStock);
    let r: Value = post("throttle?retry_after=7")
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(r["mode"], "throttle (Retry-After: 7)");
    assert_eq!(t.downstream.mode(), Mode::Throttled(Duration::from_secs(7)));
    let r: Value = post("hold").await.unwrap().json().await.unwrap();
    assert_eq!(r["mode"], "hold");
    let r: Value = post("release").await.unwrap().json().await.unwrap();
    assert_eq!(r["mode"], "success");
    let r = post("slow?ms=soon").await.unwrap();
    assert_eq!(r.status(), 400);
    let r: Value = r.json().await.unwrap();
    assert!(r["error"].as_str().unwrap().contains("`ms`"));
    t.stop().await;
}
