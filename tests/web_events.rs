//! What an operator sees over HTTP tells the truth (issue 27): the event
//! endpoints answer in Resilience4j's DTO shapes with wall-clock times, the
//! event stream pushes a transition the moment it happens, health, dashboard
//! and stream give one verdict, and every management attempt is audited.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, UNIX_EPOCH};

use resil::circuit_breaker::CircuitBreaker;
use resil::clock::ManualClock;
use resil::Registry;
use resil_web::actuator::{Actuator, ActuatorBuilder, BearerToken};
use serde_json::{json, Value};

const TOKEN: &str = "audit-token-9b2e";

/// 2026-12-02T07:00:00.000Z.
fn origin() -> std::time::SystemTime {
    UNIX_EPOCH + Duration::from_millis(1_796_194_800_000)
}

async fn serve(builder: ActuatorBuilder) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = builder
        .router()
        .into_make_service_with_connect_info::<SocketAddr>();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

async fn get(url: &str) -> Value {
    reqwest::get(url).await.unwrap().json().await.unwrap()
}

fn trip(registry: &Registry, name: &str) {
    let breaker = registry.circuit_breaker(name);
    // Resilience4j's default window: 100 calls open it, 5 more are refused.
    for _ in 0..105 {
        let _ = breaker.call(|| Err::<(), _>("503"));
    }
    assert_eq!(breaker.state(), resil::circuit_breaker::State::Open);
}

#[tokio::test]
async fn the_event_endpoints_answer_in_resilience4j_dto_shapes_with_wall_clock_times() {
    let clock = ManualClock::new();
    let registry = Arc::new(
        Registry::builder()
            .clock(clock.clone())
            .wall_clock_origin(origin())
            .record_instance_events(true)
            .build(),
    );
    clock.advance(Duration::from_millis(123));
    trip(&registry, "inventory");
    // No wait between attempts: the manual clock never moves by itself.
    registry
        .configure_retry("search", |b| b.wait_duration(Duration::ZERO))
        .unwrap();
    let retry = registry.retry("search");
    let _ = retry.call(|| Err::<(), _>("down"));
    let url = serve(Actuator::builder(registry.clone())).await;

    let transitions = get(&format!(
        "{url}/actuator/circuitbreakerevents/inventory/STATE_TRANSITION"
    ))
    .await;
    assert_eq!(
        transitions,
        json!({"circuitBreakerEvents": [{
            "circuitBreakerName": "inventory",
            "type": "STATE_TRANSITION",
            "creationTime": "2026-12-02T07:00:00.123Z",
            "stateTransition": "CLOSED_TO_OPEN",
            "description": "circuit breaker 'inventory': STATE_TRANSITION CLOSED -> OPEN",
        }]})
    );
    let errors = get(&format!(
        "{url}/actuator/circuitbreakerevents/inventory/error"
    ))
    .await;
    let first = &errors["circuitBreakerEvents"][0];
    assert_eq!(first["type"], "ERROR");
    assert_eq!(first["durationInMs"], 0);
    assert_eq!(first["creationTime"], "2026-12-02T07:00:00.123Z");
    // Every event of the breaker, oldest first: the transition among the
    // calls, in the order they happened.
    let all = get(&format!("{url}/actuator/circuitbreakerevents")).await;
    let types: Vec<&str> = all["circuitBreakerEvents"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .collect();
    assert!(types.contains(&"STATE_TRANSITION") && types.contains(&"NOT_PERMITTED"));

    let retries = get(&format!("{url}/actuator/retryevents/search")).await;
    let last = retries["retryEvents"].as_array().unwrap().last().unwrap();
    assert_eq!(last["retryName"], "search");
    assert_eq!(last["type"], "ERROR");
    assert_eq!(last["numberOfAttempts"], 3);
}

/// The next server-sent event (its type and data), within `limit`.
async fn next_event(
    response: &mut reqwest::Response,
    buffer: &mut String,
    limit: Duration,
) -> Option<(String, Value)> {
    tokio::time::timeout(limit, async {
        loop {
            if let Some(end) = buffer.find("\n\n") {
                let block: String = buffer.drain(..end + 2).collect();
                let event = block.lines().find_map(|l| l.strip_prefix("event: "));
                let data = block.lines().find_map(|l| l.strip_prefix("data: "));
                if let (Some(event), Some(data)) = (event, data) {
                    return (event.to_owned(), serde_json::from_str(data).unwrap());
                }
                continue;
            }
            let chunk = response.chunk().await.unwrap().expect("the stream ended");
            buffer.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    })
    .await
    .ok()
}

#[tokio::test]
async fn the_event_stream_pushes_a_transition_the_moment_it_happens() {
    let registry = Arc::new(Registry::builder().wall_clock_origin(origin()).build());
    registry.circuit_breaker("inventory");
    // No poll tick for an hour: only a push can bring the transition.
    let url =
        serve(Actuator::builder(registry.clone()).stream_interval(Duration::from_secs(3600))).await;
    let mut response = reqwest::get(format!("{url}/actuator/stream/events"))
        .await
        .unwrap();
    let mut buffer = String::new();
    let (event, first) = next_event(&mut response, &mut buffer, Duration::from_secs(20))
        .await
        .expect("the instances at connection");
    assert_eq!(event, "instances");
    assert_eq!(first["instances"][0]["state"], "CLOSED");

    trip(&registry, "inventory");
    let mut seen = Vec::new();
    let transition = loop {
        let (event, data) = next_event(&mut response, &mut buffer, Duration::from_secs(20))
            .await
            .unwrap_or_else(|| panic!("no transition pushed; saw {seen:?}"));
        if data["type"] == "STATE_TRANSITION" {
            break (event, data);
        }
        seen.push(data);
    };
    assert_eq!(transition.0, "registry");
    let data = transition.1;
    assert_eq!(
        (data["kind"].as_str(), data["name"].as_str()),
        (Some("circuit_breaker"), Some("inventory"))
    );
    assert_eq!(data["event"]["stateTransition"], "CLOSED_TO_OPEN");
    assert_eq!(data["event"]["circuitBreakerName"], "inventory");
    assert_eq!(data["fields"]["to"], "OPEN");
    assert!(data["creationTime"].as_str().unwrap().ends_with('Z'));
}

#[tokio::test]
async fn health_dashboard_and_stream_agree_on_an_open_and_a_forced_open_breaker() {
    let registry = Arc::new(Registry::new());
    trip(&registry, "open");
    registry.circuit_breaker("forced");
    registry.force_open("forced", None, "INC-12").unwrap();
    // One instance allowed to fail the summary: its DOWN stays DOWN.
    trip(&registry, "essential");
    registry.allow_health_indicator_to_fail::<CircuitBreaker>("essential", true);
    let url =
        serve(Actuator::builder(registry.clone()).stream_interval(Duration::from_secs(3600))).await;

    let health = get(&format!("{url}/actuator/health")).await;
    let dashboard = get(&format!("{url}/actuator/dashboard/instances")).await;
    let mut response = reqwest::get(format!("{url}/actuator/stream/events"))
        .await
        .unwrap();
    let mut buffer = String::new();
    let (_, stream) = next_event(&mut response, &mut buffer, Duration::from_secs(20))
        .await
        .expect("the instances at connection");

    for (name, state, verdict) in [
        ("open", "OPEN", "DEGRADED"),
        ("forced", "FORCED_OPEN", "DEGRADED"),
        ("essential", "OPEN", "DOWN"),
    ] {
        let details = &health["components"]["circuitBreakers"]["details"][name];
        assert_eq!(
            (details["state"].as_str(), details["status"].as_str()),
            (Some(state), Some(verdict)),
            "health of {name}: {health}"
        );
        for (what, all) in [
            ("dashboard", &dashboard["instances"]),
            ("stream", &stream["instances"]),
        ] {
            let i = all
                .as_array()
                .unwrap()
                .iter()
                .find(|i| i["name"] == name)
                .unwrap();
            assert_eq!(
                (i["state"].as_str(), i["health"].as_str()),
                (Some(state), Some(verdict)),
                "{what} of {name}: {i}"
            );
        }
    }
    assert_eq!(
        health["components"]["circuitBreakers"]["details"]["forced"]["reason"],
        "FORCED_OPEN by an operator: INC-12"
    );
}

/// Collects the `resil::management` log lines of the threads it is the
/// default of.
#[derive(Default, Clone)]
struct Audit(Arc<Mutex<Vec<(tracing::Level, String, String)>>>);

impl tracing::Subscriber for Audit {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        if event.metadata().target() != "resil::management" {
            return;
        }
        struct All(String, String);
        impl tracing::field::Visit for All {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                } else {
                    self.1 += &format!("{}={value:?} ", field.name());
                }
            }
        }
        let mut all = All(String::new(), String::new());
        event.record(&mut all);
        self.0
            .lock()
            .unwrap()
            .push((*event.metadata().level(), all.0, all.1));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn every_management_attempt_is_one_log_line_and_one_count_and_never_shows_the_token() {
    let audit = Audit::default();
    let registry = Arc::new(Registry::new());
    registry.circuit_breaker("inventory");
    // One thread: the server and the client run where the collector is.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    tracing::subscriber::with_default(audit.clone(), || {
        tracing::callsite::rebuild_interest_cache();
        rt.block_on(async {
            let url =
                serve(Actuator::builder(registry.clone()).management(BearerToken::new(TOKEN)))
                    .await;
            let client = reqwest::Client::new();
            for auth in [
                None,
                Some("Bearer wrong-guess"),
                Some(&*format!("Bearer {TOKEN}")),
            ] {
                let mut req = client
                    .post(format!(
                        "{url}/actuator/circuitbreakers/inventory?reason=drill"
                    ))
                    .json(&json!({"updateState": "FORCE_OPEN"}));
                if let Some(a) = auth {
                    req = req.header("authorization", a);
                }
                req.send().await.unwrap();
            }
        });
    });
    let lines = audit.0.lock().unwrap().clone();
    let outcomes: Vec<(tracing::Level, &str)> = lines
        .iter()
        .map(|(level, message, _)| (*level, message.split(':').next().unwrap()))
        .collect();
    assert_eq!(
        outcomes,
        [
            (
                tracing::Level::WARN,
                "management request refused (unauthorized)"
            ),
            (
                tracing::Level::WARN,
                "management request refused (forbidden)"
            ),
            (tracing::Level::INFO, "management request granted"),
        ]
    );
    for (_, message, fields) in &lines {
        assert!(
            message.contains("POST /actuator/circuitbreakers/inventory from 127.0.0.1:"),
            "{message}"
        );
        assert!(fields.contains("remote=\"127.0.0.1:"), "{fields}");
        for secret in [TOKEN, "wrong-guess", "drill"] {
            assert!(!message.contains(secret) && !fields.contains(secret));
        }
    }
    let counts = registry.management_requests();
    assert_eq!(
        (counts.granted, counts.unauthorized, counts.forbidden),
        (1, 1, 1)
    );
    assert_eq!(registry.snapshot().management_requests, counts);
}
