//! The actuator over real HTTP: liveness never fails because a dependency
//! is down, readiness follows the opt-in, management is refused without the
//! application's authorization and changes nothing, Prometheus shows
//! Resilience4j's names, and scrapes never disturb the calls' accounting.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use resil::circuit_breaker::State as BreakerState;
use resil::registry_crate::Kind;
use resil::Registry;
use resil_web::actuator::{Actuator, ActuatorBuilder, BearerToken};
use serde_json::{json, Value};

const TOKEN: &str = "test-token-5f1c";

async fn serve(builder: ActuatorBuilder) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = builder.router();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

async fn get(url: &str) -> (u16, Value) {
    let r = reqwest::get(url).await.unwrap();
    let status = r.status().as_u16();
    (status, r.json().await.unwrap())
}

fn open_breaker(registry: &Registry, name: &str) {
    let breaker = registry.circuit_breaker(name);
    breaker.transition_to_open().unwrap();
    assert_eq!(breaker.state(), BreakerState::Open);
}

#[tokio::test]
async fn liveness_stays_up_and_health_answers_200_while_a_breaker_is_open() {
    let registry = Arc::new(Registry::new());
    open_breaker(&registry, "inventory");
    let url = serve(Actuator::builder(registry.clone())).await;
    assert_eq!(
        get(&format!("{url}/actuator/health/liveness")).await,
        (200, json!({"status": "UP"}))
    );
    assert_eq!(
        get(&format!("{url}/actuator/health/readiness")).await,
        (200, json!({"status": "UP"}))
    );
    let (code, health) = get(&format!("{url}/actuator/health")).await;
    assert_eq!(code, 200, "{health}");
    assert_eq!(health["status"], "UP");
    // The breaker's own state is shown, without deciding the status; it is
    // not allowed to fail (the registry's default), so DEGRADED, not DOWN.
    assert_eq!(
        health["components"]["circuitBreakers"]["status"],
        "DEGRADED"
    );
    assert_eq!(
        health["components"]["circuitBreakers"]["details"]["inventory"]["state"],
        "OPEN"
    );
}

#[tokio::test]
async fn readiness_fails_only_when_opted_in_and_only_for_instances_allowed_to_fail() {
    let registry = Arc::new(Registry::new());
    open_breaker(&registry, "payments");
    open_breaker(&registry, "recommendations");
    // `payments` opts in; `recommendations` keeps the default (not allowed).
    registry
        .allow_health_indicator_to_fail::<resil::circuit_breaker::CircuitBreaker>("payments", true);
    let url = serve(Actuator::builder(registry.clone()).readiness_from_health(true)).await;

    let (code, body) = get(&format!("{url}/actuator/health/readiness")).await;
    assert_eq!(code, 503);
    assert_eq!(body["status"], "OUT_OF_SERVICE");
    let down: Vec<&String> = body["components"].as_object().unwrap().keys().collect();
    assert_eq!(
        down,
        ["circuitBreakers:payments"],
        "only the instance allowed to fail"
    );
    assert_eq!(get(&format!("{url}/actuator/health/liveness")).await.0, 200);
    assert_eq!(get(&format!("{url}/actuator/health")).await.0, 503);

    registry.allow_health_indicator_to_fail::<resil::circuit_breaker::CircuitBreaker>(
        "payments", false,
    );
    assert_eq!(
        get(&format!("{url}/actuator/health/readiness")).await.0,
        200
    );
}

#[tokio::test]
async fn management_is_off_unless_enabled() {
    let registry = Arc::new(Registry::new());
    registry.circuit_breaker("inventory");
    let url = serve(Actuator::builder(registry.clone())).await;
    let r = reqwest::Client::new()
        .post(format!("{url}/actuator/circuitbreakers/inventory"))
        .json(&json!({"updateState": "FORCE_OPEN"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 405);
    assert_eq!(
        registry.circuit_breaker("inventory").state(),
        BreakerState::Closed
    );
}

#[tokio::test]
async fn management_without_valid_authorization_is_refused_and_changes_nothing() {
    let registry = Arc::new(Registry::new());
    registry.circuit_breaker("inventory");
    let url = serve(Actuator::builder(registry.clone()).management(BearerToken::new(TOKEN))).await;
    let client = reqwest::Client::new();
    let post = |auth: Option<&str>, body: Value| {
        let mut req = client
            .post(format!("{url}/actuator/circuitbreakers/inventory"))
            .json(&body);
        if let Some(a) = auth {
            req = req.header("authorization", a.to_owned());
        }
        req.send()
    };
    let r = post(None, json!({"updateState": "FORCE_OPEN"}))
        .await
        .unwrap();
    assert_eq!(r.status(), 401);
    assert_eq!(r.headers()["www-authenticate"], "Bearer");
    let r = post(Some("Bearer wrong"), json!({"updateState": "FORCE_OPEN"}))
        .await
        .unwrap();
    assert_eq!(r.status(), 403);
    assert!(
        !r.text().await.unwrap().contains(TOKEN),
        "the secret never appears in a reply"
    );
    assert_eq!(
        registry.circuit_breaker("inventory").state(),
        BreakerState::Closed
    );
    assert!(registry.manual_override("inventory").is_none());

    let auth = format!("Bearer {TOKEN}");
    // A malformed TTL: 400 naming the parameter, nothing changed.
    let r = post(
        Some(&auth),
        json!({"updateState": "FORCE_OPEN", "ttl": "30 parsecs"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 400);
    let body: Value = r.json().await.unwrap();
    assert!(
        body["error"].as_str().unwrap().starts_with("invalid `ttl`"),
        "{body}"
    );
    assert_eq!(
        registry.circuit_breaker("inventory").state(),
        BreakerState::Closed
    );
    // An unknown state: 400 listing the allowed ones.
    let r = post(Some(&auth), json!({"updateState": "OPEN_SESAME"}))
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("FORCE_OPEN"));
    // An unknown name: 404, and no instance is created by asking.
    let r = client
        .post(format!("{url}/actuator/circuitbreakers/nobody"))
        .header("authorization", &auth)
        .json(&json!({"updateState": "FORCE_OPEN"}))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 404);
    assert!(registry
        .find::<resil::circuit_breaker::CircuitBreaker>("nobody")
        .is_none());

    // Authorized: forced open with a TTL and a reason.
    let r = post(
        Some(&auth),
        json!({"updateState": "FORCE_OPEN", "ttl": "30s", "reason": "db migration"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(r.json::<Value>().await.unwrap()["state"], "FORCED_OPEN");
    assert_eq!(
        registry.circuit_breaker("inventory").state(),
        BreakerState::ForcedOpen
    );
    let (_, details) = get(&format!("{url}/actuator/circuitbreakers/inventory")).await;
    assert_eq!(details["manualOverride"]["reason"], "db migration");
    let r = post(Some(&auth), json!({"updateState": "CLOSE"}))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        registry.circuit_breaker("inventory").state(),
        BreakerState::Closed
    );
}

#[tokio::test]
async fn limits_are_set_through_management_and_validated_first() {
    let registry = Arc::new(Registry::new());
    registry.rate_limiter("search");
    registry.bulkhead("search");
    let url = serve(Actuator::builder(registry.clone()).management(BearerToken::new(TOKEN))).await;
    let client = reqwest::Client::new();
    let post = |path: &str, body: Value| {
        client
            .post(format!("{url}/actuator/{path}"))
            .header("authorization", format!("Bearer {TOKEN}"))
            .json(&body)
            .send()
    };
    let r = post(
        "ratelimiters/search",
        json!({"limitForPeriod": 7, "timeoutDuration": "soon"}),
    )
    .await
    .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("`timeoutDuration`"));
    assert_eq!(
        registry.rate_limiter("search").config().limit_for_period(),
        50,
        "nothing changed"
    );
    let r = post("ratelimiters/search", json!({"limitForPeriod": 7}))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(
        registry.rate_limiter("search").config().limit_for_period(),
        7
    );
    let r = post("bulkheads/search", json!({"maxConcurrentCalls": 0}))
        .await
        .unwrap();
    assert_eq!(r.status(), 400);
    assert!(r.text().await.unwrap().contains("`maxConcurrentCalls`"));
    let r = post("bulkheads/search", json!({"maxConcurrentCalls": 3}))
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(registry.bulkhead("search").available_concurrent_calls(), 3);
}

#[tokio::test]
async fn prometheus_and_metrics_show_resilience4j_names() {
    let registry = Arc::new(Registry::new());
    let breaker = registry.circuit_breaker("backendA");
    let _ = breaker.call(|| Err::<(), _>("down"));
    let _ = breaker.call(|| Ok::<_, &str>(()));
    registry
        .configure_retry("backendA", |b| {
            b.max_attempts(2).wait_duration(Duration::ZERO)
        })
        .unwrap();
    let _ = registry.retry("backendA").call(|| Err::<(), _>("down"));
    let url = serve(Actuator::builder(registry.clone())).await;

    let text = reqwest::get(format!("{url}/actuator/prometheus"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    for sample in [
        "resilience4j_circuitbreaker_calls_seconds_count{kind=\"failed\",name=\"backendA\"} 1",
        "resilience4j_circuitbreaker_calls_seconds_count{kind=\"successful\",name=\"backendA\"} 1",
        "resilience4j_circuitbreaker_not_permitted_calls_total{kind=\"not_permitted\",name=\"backendA\"} 0",
        "resilience4j_retry_calls_total{kind=\"failed_with_retry\",name=\"backendA\"} 1",
        "# TYPE resilience4j_circuitbreaker_calls_seconds summary",
        "# TYPE resilience4j_circuitbreaker_calls_seconds_max gauge",
        "# TYPE resilience4j_circuitbreaker_not_permitted_calls_total counter",
        "resilience4j_circuitbreaker_state{name=\"backendA\",state=\"closed\"} 1",
    ] {
        assert!(
            text.lines().any(|l| l == sample),
            "missing `{sample}` in\n{text}"
        );
    }

    let (code, m) = get(&format!(
        "{url}/actuator/metrics/resilience4j.circuitbreaker.calls?tag=kind:failed"
    ))
    .await;
    assert_eq!(code, 200);
    assert_eq!(m["baseUnit"], "seconds");
    assert_eq!(
        m["measurements"][0],
        json!({"statistic": "COUNT", "value": 1.0})
    );
    assert_eq!(m["measurements"][1]["statistic"], "TOTAL_TIME");
    assert_eq!(m["measurements"][2]["statistic"], "MAX");
    assert_eq!(
        m["availableTags"],
        json!([{"tag": "name", "values": ["backendA"]}])
    );
    let (_, names) = get(&format!("{url}/actuator/metrics")).await;
    assert!(names["names"]
        .as_array()
        .unwrap()
        .contains(&json!("resilience4j.circuitbreaker.calls")));
    assert_eq!(
        get(&format!("{url}/actuator/metrics/resilience4j.nothing"))
            .await
            .0,
        404
    );
    assert_eq!(
        get(&format!(
            "{url}/actuator/metrics/resilience4j.circuitbreaker.calls?tag=kind"
        ))
        .await
        .0,
        400
    );
}

#[tokio::test]
async fn instance_lists_and_events_answer_in_resilience4j_shapes() {
    let registry = Arc::new(Registry::builder().record_instance_events(true).build());
    let breaker = registry.circuit_breaker("inventory");
    let _ = breaker.call(|| Err::<(), _>("down"));
    let _ = breaker.call(|| Ok::<_, &str>(()));
    registry.rate_limiter("search");
    registry.retry("search");
    registry.bulkhead("search");
    registry.time_limiter("search");
    let url = serve(Actuator::builder(registry.clone())).await;
    let (_, all) = get(&format!("{url}/actuator/circuitbreakers")).await;
    assert_eq!(all["circuitBreakers"]["inventory"]["state"], "CLOSED");
    assert_eq!(all["circuitBreakers"]["inventory"]["failedCalls"], 1.0);
    assert_eq!(all["circuitBreakers"]["inventory"]["bufferedCalls"], 2.0);
    assert_eq!(
        get(&format!("{url}/actuator/ratelimiters")).await.1,
        json!({"rateLimiters": ["search"]})
    );
    assert_eq!(
        get(&format!("{url}/actuator/retries")).await.1,
        json!({"retries": ["search"]})
    );
    assert_eq!(
        get(&format!("{url}/actuator/bulkheads")).await.1,
        json!({"bulkheads": ["search"]})
    );
    assert_eq!(
        get(&format!("{url}/actuator/timelimiters")).await.1,
        json!({"timeLimiters": ["search"]})
    );
    assert_eq!(
        get(&format!("{url}/actuator/circuitbreakers/nobody"))
            .await
            .0,
        404
    );

    let (_, events) = get(&format!(
        "{url}/actuator/circuitbreakerevents/inventory/ERROR"
    ))
    .await;
    let events = events["circuitBreakerEvents"].as_array().unwrap().clone();
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0]["circuitBreakerName"], "inventory");
    assert_eq!(events[0]["type"], "ERROR");
    let (_, events) = get(&format!("{url}/actuator/circuitbreakerevents")).await;
    let types: Vec<&str> = events["circuitBreakerEvents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert!(
        types.contains(&"ERROR") && types.contains(&"SUCCESS"),
        "{types:?}"
    );
    assert_eq!(
        get(&format!("{url}/actuator/circuitbreakerevents/nobody"))
            .await
            .0,
        404
    );
}

#[test]
fn scrapes_during_contended_calls_keep_the_accounting_identity_exact() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let registry = Arc::new(Registry::new());
    registry
        .configure_circuit_breaker("hot", |b| {
            b.sliding_window_size(1_000_000)
                .minimum_number_of_calls(1_000_000)
                .ignore_error(|e: &u32| *e == 1)
        })
        .unwrap();
    // The instance exists before the first scrape: a meter no instance has
    // published yet is a 404, as in Spring.
    let hot = registry.circuit_breaker("hot");
    let url = rt.block_on(serve(Actuator::builder(registry.clone())));
    let stop = Arc::new(AtomicBool::new(false));
    let scraper = {
        let stop = stop.clone();
        rt.spawn(async move {
            let client = reqwest::Client::new();
            let mut scrapes = 0u32;
            while !stop.load(Ordering::Relaxed) || scrapes < 3 {
                for path in [
                    "prometheus",
                    "circuitbreakers",
                    "health",
                    "metrics/resilience4j.circuitbreaker.calls",
                ] {
                    let r = client
                        .get(format!("{url}/actuator/{path}"))
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(r.status(), 200);
                }
                scrapes += 1;
            }
            scrapes
        })
    };
    const THREADS: u64 = 2;
    const CALLS: u64 = 20_000;
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let breaker = hot.clone();
            s.spawn(move || {
                for i in 0..CALLS {
                    let _ = breaker.call(|| match (i + t) % 3 {
                        0 => Ok(()),
                        1 => Err(1u32), // ignored
                        _ => Err(2u32), // failed
                    });
                }
            });
        }
    });
    stop.store(true, Ordering::Relaxed);
    assert!(rt.block_on(scraper).unwrap() >= 3);
    let snapshot = registry.snapshot();
    let i = snapshot.instance(Kind::CircuitBreaker, "hot").unwrap();
    let count = |kind| i.metric("circuitbreaker_calls", Some(kind)).unwrap() as u64;
    let not_permitted = i
        .metric("circuitbreaker_not_permitted_calls", Some("not_permitted"))
        .unwrap() as u64;
    assert_eq!(
        count("successful") + count("failed") + count("ignored") + not_permitted,
        THREADS * CALLS
    );
    let ignored = (0..THREADS)
        .map(|t| (0..CALLS).filter(|i| (i + t) % 3 == 1).count() as u64)
        .sum::<u64>();
    assert_eq!(count("ignored"), ignored);
}

/// Reads server-sent events until one of type `event` whose data contains
/// `needle`; the whole stream is bounded by a generous timeout so a missing
/// event fails the test instead of hanging it.
async fn sse_until(
    response: &mut reqwest::Response,
    buffer: &mut String,
    event: &str,
    needle: &str,
) -> Value {
    let wanted = format!("event: {event}\n");
    tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            while let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                if block.starts_with(&wanted) && block.contains(needle) {
                    let data = block
                        .lines()
                        .find_map(|l| l.strip_prefix("data: "))
                        .unwrap();
                    return serde_json::from_str(data).unwrap();
                }
            }
            let chunk = response.chunk().await.unwrap().expect("the stream ended");
            buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    })
    .await
    .unwrap_or_else(|_| panic!("no `{event}` event containing `{needle}`"))
}

#[tokio::test]
async fn the_event_stream_shows_an_operators_transition_live() {
    let registry = Arc::new(Registry::new());
    registry.circuit_breaker("inventory");
    let url =
        serve(Actuator::builder(registry.clone()).stream_interval(Duration::from_millis(20))).await;
    let mut response = reqwest::get(format!("{url}/actuator/stream/events"))
        .await
        .unwrap();
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut buffer = String::new();
    let first = sse_until(&mut response, &mut buffer, "instances", "inventory").await;
    assert_eq!(first["instances"][0]["state"], "CLOSED");

    registry
        .force_open("inventory", None, "maintenance")
        .unwrap();
    let event = sse_until(&mut response, &mut buffer, "registry", "MANUAL_TRANSITION").await;
    assert_eq!(
        (event["kind"].as_str(), event["name"].as_str()),
        (Some("circuit_breaker"), Some("inventory"))
    );
    let now = sse_until(&mut response, &mut buffer, "instances", "FORCED_OPEN").await;
    assert_eq!(now["instances"][0]["name"], "inventory");
    assert_eq!(now["instances"][0]["state"], "FORCED_OPEN");
}

#[tokio::test]
async fn the_dashboard_page_is_one_static_page_offering_management_only_when_enabled() {
    let registry = Arc::new(Registry::new());
    registry.circuit_breaker("inventory");
    for (builder, managed) in [
        (Actuator::builder(registry.clone()), false),
        (
            Actuator::builder(registry.clone()).management(BearerToken::new(TOKEN)),
            true,
        ),
    ] {
        let url = serve(builder).await;
        let r = reqwest::get(format!("{url}/actuator/dashboard"))
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert!(r.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/html"));
        assert!(r.headers().contains_key("content-security-policy"));
        let page = r.text().await.unwrap();
        assert!(
            page.contains(&format!("const MANAGED = {managed};")),
            "{managed}"
        );
        assert!(!page.contains("__MANAGED__"));
        assert!(!page.contains(TOKEN), "the page never carries the secret");
        let (status, body) = get(&format!("{url}/actuator/dashboard/instances")).await;
        assert_eq!(status, 200);
        let breaker = body["instances"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["kind"] == "circuit_breaker" && i["name"] == "inventory")
            .cloned()
            .unwrap_or_else(|| panic!("no inventory breaker in {body}"));
        assert_eq!(breaker["state"], "CLOSED");
        assert_eq!(breaker["details"]["notPermittedCalls"], 0.0);
    }
}

#[tokio::test]
async fn the_keyed_endpoint_shows_each_family_and_its_noisiest_keys_never_every_key() {
    let registry = Registry::new();
    registry
        .configure_rate_limiter("tenant-api", |b| {
            b.limit_for_period(2)
                .limit_refresh_period(Duration::from_secs(60))
                .timeout_duration(Duration::ZERO)
        })
        .unwrap();
    let api = registry.keyed_rate_limiter("tenant-api");
    for _ in 0..5 {
        let _ = api.get("noisy").try_acquire(1);
    }
    for i in 0..30 {
        api.get(&format!("quiet-{i}")).try_acquire(1).unwrap();
    }
    let base = serve(Actuator::builder(registry)).await;
    let (status, body) = get(&format!("{base}/actuator/keyed")).await;
    assert_eq!(status, 200);
    let family = &body["keyedFamilies"][0];
    assert_eq!(family["name"], "tenant-api");
    assert_eq!(family["aspect"], "rate_limiter");
    assert_eq!(family["default"], "limit-for-period=2");
    assert_eq!(family["keys"]["inUse"], 31);
    assert_eq!(
        family["topByRefusals"],
        json!([{ "key": "noisy", "count": 3 }])
    );
    assert_eq!(
        family["topByCalls"][0],
        json!({ "key": "noisy", "count": 5 })
    );
    assert_eq!(
        family["topByCalls"].as_array().unwrap().len(),
        10,
        "a bounded top, not every key"
    );
}
