//! The client layer over real sockets: a hyper client wrapped in
//! `ResilienceLayer::builder(..).retry()/.hedge()`, calling an axum server
//! on 127.0.0.1. A POST without an `Idempotency-Key` is sent exactly once,
//! with the key it is retried, a GET is replayed with its body, a body
//! larger than the replay bound is sent once, hedging races a slow GET but
//! never a POST, and a call whose deadline is spent is not sent.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, Method, StatusCode};
use axum::routing::any;
use axum::Router;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use resil::retry::{IntervalFunction, RetryEvent, RetryEventKind};
use resil::{Error, ErrorKind, Registry};
use resil_web::http::HttpClassifier;
use resil_web::tower::client::{ReplayBody, ReplayMethods};
use resil_web::tower::ResilienceLayer;
use tower::{Layer, ServiceExt};

#[path = "support/budgets.rs"]
mod budgets;

/// What the downstream saw.
#[derive(Default)]
struct Seen {
    hits: AtomicUsize,
    bodies: Mutex<Vec<Bytes>>,
    /// Answer 503 to the first this many requests, then 200.
    failing: AtomicUsize,
    /// The first request waits this long (for the hedge to win).
    first_waits: Mutex<Option<Duration>>,
    /// Told of every request as it arrives.
    arrived: tokio::sync::Notify,
    /// The failing answers' status (503 when unset) and `Retry-After`.
    failing_status: Mutex<Option<StatusCode>>,
    retry_after: Mutex<Option<&'static str>>,
}

/// Keeps paused time still while requests cross real sockets: tokio does
/// not auto-advance paused time while a blocking task runs, so time moves
/// only by `tokio::time::advance` until the returned sender is dropped.
fn hold_the_clock() -> std::sync::mpsc::Sender<()> {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    tokio::task::spawn_blocking(move || {
        let _ = rx.recv();
    });
    tx
}

async fn record(State(seen): State<Arc<Seen>>, body: Bytes) -> (StatusCode, HeaderMap, Bytes) {
    let n = seen.hits.fetch_add(1, Ordering::SeqCst);
    seen.bodies.lock().unwrap().push(body.clone());
    seen.arrived.notify_one();
    if n == 0 {
        let wait = *seen.first_waits.lock().unwrap();
        if let Some(wait) = wait {
            tokio::time::sleep(wait).await;
            return (
                StatusCode::OK,
                HeaderMap::new(),
                Bytes::from_static(b"slow"),
            );
        }
    }
    if n < seen.failing.load(Ordering::SeqCst) {
        let status = seen.failing_status.lock().unwrap();
        let mut headers = HeaderMap::new();
        if let Some(wait) = *seen.retry_after.lock().unwrap() {
            headers.insert(http::header::RETRY_AFTER, wait.parse().unwrap());
        }
        let status = status.unwrap_or(StatusCode::SERVICE_UNAVAILABLE);
        return (status, headers, Bytes::from_static(b"busy"));
    }
    (StatusCode::OK, HeaderMap::new(), body)
}

async fn serve(seen: Arc<Seen>) -> String {
    let app = Router::new().route("/prices", any(record)).with_state(seen);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/prices")
}

type Hyper = HyperClient<HttpConnector, ReplayBody<Full<Bytes>>>;

fn hyper() -> Hyper {
    HyperClient::builder(TokioExecutor::new()).build_http()
}

fn registry() -> Registry {
    let registry = Registry::new();
    registry
        .configure_retry("prices", |b| {
            b.max_attempts(3).wait_duration(Duration::from_millis(10))
        })
        .unwrap();
    registry
        .configure_hedging("prices", |b| {
            b.delay(Duration::from_millis(50)).max_hedged_attempts(1)
        })
        .unwrap();
    registry
}

fn request(method: Method, url: &str, body: &'static str, key: bool) -> http::Request<Full<Bytes>> {
    let mut b = http::Request::builder().method(method).uri(url);
    if key {
        b = b.header("idempotency-key", "order-8e03978e");
    }
    b.body(Full::new(Bytes::from_static(body.as_bytes())))
        .unwrap()
}

async fn text(response: http::Response<hyper::body::Incoming>) -> (StatusCode, String) {
    let status = response.status();
    let body = response.into_body().collect().await.unwrap().to_bytes();
    (status, String::from_utf8(body.to_vec()).unwrap())
}

#[tokio::test(start_paused = true)]
async fn a_retried_post_without_an_idempotency_key_is_sent_exactly_once_and_its_failure_returned() {
    let seen = Arc::new(Seen::default());
    seen.failing.store(usize::MAX, Ordering::SeqCst);
    let url = serve(seen.clone()).await;
    let registry = registry();
    let layer = ResilienceLayer::builder(&registry, "prices")
        .retry()
        .classify(HttpClassifier::default())
        .build();
    let client = layer.layer(hyper());

    let response = client
        .clone()
        .oneshot(request(Method::POST, &url, "order=1", false))
        .await
        .unwrap();
    assert_eq!(
        text(response).await,
        (StatusCode::SERVICE_UNAVAILABLE, "busy".into())
    );
    assert_eq!(
        seen.hits.load(Ordering::SeqCst),
        1,
        "a POST without a key is sent once"
    );
    assert_eq!(
        registry.retry("prices").metrics().calls(),
        0,
        "it never went through the retry"
    );

    // PATCH likewise; with the key, the same POST is retried to the end.
    client
        .clone()
        .oneshot(request(Method::PATCH, &url, "x", false))
        .await
        .unwrap();
    assert_eq!(seen.hits.load(Ordering::SeqCst), 2);
    let response = client
        .oneshot(request(Method::POST, &url, "order=1", true))
        .await
        .unwrap();
    assert_eq!(
        text(response).await,
        (StatusCode::SERVICE_UNAVAILABLE, "busy".into()),
        "the last failing response is the answer"
    );
    assert_eq!(
        seen.hits.load(Ordering::SeqCst),
        5,
        "with its key the POST made 3 attempts"
    );
    let m = registry.retry("prices").metrics();
    assert_eq!(
        (m.calls(), m.attempts(), m.failed_calls_with_retry()),
        (1, 3, 1)
    );
    let bodies = seen.bodies.lock().unwrap();
    assert!(
        bodies[2..].iter().all(|b| b == "order=1"),
        "every attempt sent the body"
    );
}

#[tokio::test(start_paused = true)]
async fn a_get_is_replayed_with_its_body_until_it_succeeds() {
    let seen = Arc::new(Seen::default());
    seen.failing.store(2, Ordering::SeqCst);
    let url = serve(seen.clone()).await;
    let registry = registry();
    let client = ResilienceLayer::builder(&registry, "prices")
        .circuit_breaker()
        .retry()
        .classify(HttpClassifier::default())
        .build()
        .layer(hyper());

    let response = client
        .oneshot(request(Method::GET, &url, "sku=42", false))
        .await
        .unwrap();
    assert_eq!(text(response).await, (StatusCode::OK, "sku=42".into()));
    assert_eq!(seen.hits.load(Ordering::SeqCst), 3);
    assert_eq!(*seen.bodies.lock().unwrap(), vec!["sku=42"; 3]);
    let m = registry.retry("prices").metrics();
    assert_eq!((m.attempts(), m.successful_calls_with_retry()), (3, 1));
    // Each attempt was a breaker sample: two failures, one success.
    let b = registry.circuit_breaker("prices").metrics();
    assert_eq!((b.failed_calls(), b.successful_calls()), (2, 1));
}

#[tokio::test(start_paused = true)]
async fn a_body_larger_than_the_replay_bound_is_sent_once_whole() {
    let seen = Arc::new(Seen::default());
    seen.failing.store(usize::MAX, Ordering::SeqCst);
    let url = serve(seen.clone()).await;
    let registry = registry();
    // Every method may be replayed here: the bound alone holds it back.
    let client = ResilienceLayer::builder(&registry, "prices")
        .retry()
        .replay_methods(ReplayMethods::Any)
        .max_replay_body(4)
        .classify(HttpClassifier::default())
        .build()
        .layer(hyper());

    let response = client
        .oneshot(request(Method::PUT, &url, "0123456789", false))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(seen.hits.load(Ordering::SeqCst), 1);
    assert_eq!(*seen.bodies.lock().unwrap(), vec!["0123456789"]);
}

#[tokio::test(start_paused = true)]
async fn a_slow_get_is_hedged_and_a_post_is_not() {
    let seen = Arc::new(Seen::default());
    *seen.first_waits.lock().unwrap() = Some(Duration::from_secs(10));
    let url = serve(seen.clone()).await;
    let registry = registry();
    let client = ResilienceLayer::builder(&registry, "prices")
        .hedge()
        .classify(HttpClassifier::default())
        .build()
        .layer(hyper());

    let clock = hold_the_clock();
    let started = tokio::time::Instant::now();
    let call = tokio::spawn(
        client
            .clone()
            .oneshot(request(Method::GET, &url, "q", false)),
    );
    seen.arrived.notified().await;
    // The primary is in the downstream's hands; the hedge's delay passes.
    tokio::time::advance(Duration::from_millis(50)).await;
    let response = call.await.unwrap().unwrap();
    assert_eq!(text(response).await, (StatusCode::OK, "q".into()));
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(50),
        "the hedge answered"
    );
    assert_eq!(seen.hits.load(Ordering::SeqCst), 2);
    drop(clock);
    let m = registry.hedging("prices").metrics();
    assert_eq!((m.hedges_started(), m.won_by_hedge()), (1, 1));

    // A POST waits for its one attempt, however slow.
    let seen = Arc::new(Seen::default());
    *seen.first_waits.lock().unwrap() = Some(Duration::from_secs(10));
    let url = serve(seen.clone()).await;
    let response = client
        .oneshot(request(Method::POST, &url, "q", false))
        .await
        .unwrap();
    assert_eq!(text(response).await, (StatusCode::OK, "slow".into()));
    assert_eq!(seen.hits.load(Ordering::SeqCst), 1);
    assert_eq!(registry.hedging("prices").metrics().hedges_started(), 1);
}

#[tokio::test(start_paused = true)]
async fn by_default_a_put_and_a_delete_are_sent_once_and_any_replays_a_post() {
    let seen = Arc::new(Seen::default());
    seen.failing.store(usize::MAX, Ordering::SeqCst);
    let url = serve(seen.clone()).await;
    let registry = registry();
    // The default rule is RFC 9110's safe methods, as Microsoft's
    // `DisableForUnsafeHttpMethods`: a PUT or DELETE needs the key.
    let default = ResilienceLayer::builder(&registry, "prices")
        .retry()
        .classify(HttpClassifier::default())
        .build();
    default
        .layer(hyper())
        .oneshot(request(Method::PUT, &url, "p", false))
        .await
        .unwrap();
    default
        .layer(hyper())
        .oneshot(request(Method::DELETE, &url, "", false))
        .await
        .unwrap();
    assert_eq!(seen.hits.load(Ordering::SeqCst), 2);
    let any = ResilienceLayer::builder(&registry, "prices")
        .retry()
        .replay_methods(ReplayMethods::Any)
        .classify(HttpClassifier::default())
        .build()
        .layer(hyper());
    any.oneshot(request(Method::POST, &url, "p", false))
        .await
        .unwrap();
    assert_eq!(seen.hits.load(Ordering::SeqCst), 5);
}

#[tokio::test(start_paused = true)]
async fn a_call_whose_deadline_is_spent_is_not_sent() {
    let seen = Arc::new(Seen::default());
    let url = serve(seen.clone()).await;
    let registry = registry();
    let client = ResilienceLayer::builder(&registry, "prices")
        .retry()
        .classify(HttpClassifier::default())
        .build()
        .layer(hyper());
    // 3 ms left is within the default 5 ms margin: nothing goes out.
    let out = resil::deadline::within(
        Duration::from_millis(3),
        client.oneshot(request(Method::GET, &url, "", false)),
    )
    .await
    .unwrap();
    let Err(error) = out else { panic!("sent") };
    assert_eq!(error.kind(), ErrorKind::DeadlineExceeded);
    assert!(matches!(error, Error::DeadlineExceeded(_)));
    assert_eq!(seen.hits.load(Ordering::SeqCst), 0);
}

#[tokio::test(start_paused = true)]
async fn the_remaining_deadline_goes_out_in_the_timeout_header() {
    let seen = Arc::new(Mutex::new(None::<String>));
    let s = seen.clone();
    let app = Router::new().route(
        "/budget",
        any(move |headers: HeaderMap| {
            let s = s.clone();
            async move {
                *s.lock().unwrap() = headers
                    .get("x-envoy-expected-rq-timeout-ms")
                    .map(|v| v.to_str().unwrap().to_owned());
                "ok"
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let registry = registry();
    let client = ResilienceLayer::builder(&registry, "prices")
        .client()
        .deadline_margin(Duration::from_millis(20))
        .build()
        .layer(hyper());
    let url = format!("http://{addr}/budget");
    let _clock = hold_the_clock();
    resil::deadline::within(
        Duration::from_millis(750),
        client.oneshot(request(Method::GET, &url, "", false)),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(seen.lock().unwrap().as_deref(), Some("730"));
}

#[tokio::test(start_paused = true)]
async fn the_replay_rules_come_from_the_file_and_code_on_the_builder_wins() {
    let seen = Arc::new(Seen::default());
    seen.failing.store(usize::MAX, Ordering::SeqCst);
    let url = serve(seen.clone()).await;
    let registry = Registry::from_yaml_str(
        "
resilience4j.retry.instances.prices:
  max-attempts: 2
  wait-duration: 10ms
resil.http-client.instances.prices:
  replay-methods: idempotent
  max-replay-body: 4
",
    )
    .unwrap();
    let from_file = ResilienceLayer::builder(&registry, "prices")
        .retry()
        .classify(HttpClassifier::default())
        .build();
    // `idempotent`: a small PUT is replayed (the default, `safe`, would
    // send it once); a GET's 6-byte body is over the bound, sent once.
    from_file
        .layer(hyper())
        .oneshot(request(Method::PUT, &url, "p", false))
        .await
        .unwrap();
    assert_eq!(seen.hits.load(Ordering::SeqCst), 2, "the file's rule");
    from_file
        .layer(hyper())
        .oneshot(request(Method::GET, &url, "sku=42", false))
        .await
        .unwrap();
    assert_eq!(seen.hits.load(Ordering::SeqCst), 3, "the file's bound");

    // Code says `safe` and 1 KiB: the PUT is sent once, the GET replayed.
    let code = ResilienceLayer::builder(&registry, "prices")
        .retry()
        .replay_methods(ReplayMethods::Safe)
        .max_replay_body(1024)
        .classify(HttpClassifier::default())
        .build();
    code.layer(hyper())
        .oneshot(request(Method::PUT, &url, "p", false))
        .await
        .unwrap();
    assert_eq!(seen.hits.load(Ordering::SeqCst), 4, "code's rule wins");
    code.layer(hyper())
        .oneshot(request(Method::GET, &url, "sku=42", false))
        .await
        .unwrap();
    assert_eq!(
        seen.hits.load(Ordering::SeqCst),
        6,
        "code's rule and bound win"
    );
}

#[tokio::test(start_paused = true)]
async fn a_reload_changes_a_built_client_layers_replay_rules_and_its_retry() {
    let seen = Arc::new(Seen::default());
    seen.failing.store(usize::MAX, Ordering::SeqCst);
    let url = serve(seen.clone()).await;
    let file = |attempts: u32, methods: &str, max_body: &str| {
        resil::config::FileConfig::from_yaml_str(&format!(
            "
resilience4j.retry.instances.prices:
  max-attempts: {attempts}
  wait-duration: 10ms
resil.http-client.instances.prices:
  replay-methods: {methods}
  max-replay-body: {max_body}
"
        ))
        .unwrap()
    };
    let registry = Registry::new();
    registry.reload(file(2, "idempotent", "4")).unwrap();
    let client = ResilienceLayer::builder(&registry, "prices")
        .retry()
        .classify(HttpClassifier::default())
        .build()
        .layer(hyper());
    let hits = || seen.hits.load(Ordering::SeqCst);
    let send = |method: Method, body: &'static str| {
        client.clone().oneshot(request(method, &url, body, false))
    };
    send(Method::PUT, "p").await.unwrap();
    assert_eq!(hits(), 2, "idempotent: the PUT replayed, 2 attempts");
    send(Method::GET, "sku=42").await.unwrap();
    assert_eq!(hits(), 3, "6 bytes are over the 4-byte bound: sent once");

    // The same built client, after a reload.
    registry.reload(file(3, "safe", "1KiB")).unwrap();
    send(Method::PUT, "p").await.unwrap();
    assert_eq!(hits(), 4, "safe: the PUT is sent once");
    send(Method::GET, "sku=42").await.unwrap();
    assert_eq!(hits(), 7, "within 1 KiB: replayed, 3 attempts");
    assert_eq!(registry.retry("prices").metrics().attempts(), 3);
}

/// A registry whose instances time their windows, waits and open states on
/// paused tokio time.
fn on_tokio_time() -> Registry {
    Registry::builder()
        .clock(resil::clock::TokioClock::new())
        .build()
}

#[tokio::test(start_paused = true)]
async fn the_standard_client_has_microsofts_defaults_and_retries_a_503_three_times() {
    use resil::circuit_breaker::SlidingWindowType;

    let registry = on_tokio_time();
    let client = ResilienceLayer::standard_client(&registry, "prices")
        .unwrap()
        .build();
    let retry = registry.retry("prices");
    assert_eq!(retry.config().max_attempts(), 4, "the first and 3 retries");
    let backoff = retry.config().interval_function();
    assert_eq!(
        (backoff.initial(), backoff.multiplier()),
        (Some(Duration::from_secs(2)), Some(2.0))
    );
    assert!(backoff.randomization_factor().is_some(), "with jitter");
    let breaker = registry.circuit_breaker("prices");
    let b = breaker.config();
    assert_eq!(b.failure_rate_threshold(), 10.0);
    assert_eq!(b.minimum_number_of_calls(), 100);
    assert_eq!(
        (b.sliding_window_type(), b.sliding_window_size()),
        (SlidingWindowType::TimeBased, 30)
    );
    assert_eq!(b.wait_duration_in_open_state(), Duration::from_secs(5));
    assert_eq!(
        registry.time_limiter("prices").config().timeout_duration(),
        Duration::from_secs(10)
    );
    assert_eq!(
        registry.bulkhead("prices").config().max_concurrent_calls(),
        1000
    );
    assert!(format!("{client:?}").contains("total_timeout: Some(30s)"));

    // A downstream that is always busy: 4 attempts, about 2, 4 and 8 s
    // apart, and its last 503 is the answer.
    let mut events = retry.subscribe();
    let seen = Arc::new(Seen::default());
    seen.failing.store(usize::MAX, Ordering::SeqCst);
    let url = serve(seen.clone()).await;
    let started = tokio::time::Instant::now();
    let response = client
        .layer(hyper())
        .oneshot(request(Method::GET, &url, "", false))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(seen.hits.load(Ordering::SeqCst), 4);
    let waits = retry_waits(&mut events);
    assert_eq!(waits.len(), 3);
    for (wait, doubled) in waits.iter().zip([2, 4, 8]) {
        let doubled = Duration::from_secs(doubled);
        assert!(
            *wait >= doubled / 2 && *wait <= doubled * 3 / 2,
            "{waits:?}"
        );
    }
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[tokio::test(start_paused = true)]
async fn the_standard_clients_breaker_opens_at_100_calls_10_percent_failed_and_breaks_for_5_s() {
    let registry = on_tokio_time();
    let client = ResilienceLayer::standard_client(&registry, "prices")
        .unwrap()
        .build()
        .layer(hyper());
    let seen = Arc::new(Seen::default());
    seen.failing.store(usize::MAX, Ordering::SeqCst);
    let url = serve(seen.clone()).await;
    // POSTs without a key: one attempt each, one breaker sample each.
    let post = || {
        client
            .clone()
            .oneshot(request(Method::POST, &url, "order=1", false))
    };
    let breaker = registry.circuit_breaker("prices");
    for _ in 0..99 {
        assert_eq!(post().await.unwrap().status(), 503);
    }
    assert_eq!(
        breaker.state(),
        resil::circuit_breaker::State::Closed,
        "99 calls are under the minimum throughput"
    );
    assert_eq!(post().await.unwrap().status(), 503);
    assert_eq!(breaker.state(), resil::circuit_breaker::State::Open);
    let refused = post().await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::CallNotPermitted);
    assert_eq!(seen.hits.load(Ordering::SeqCst), 100);
    // Open for 5 s: just before, still refused; after, a probe goes out.
    tokio::time::sleep(Duration::from_millis(4999)).await;
    assert_eq!(
        post().await.unwrap_err().kind(),
        ErrorKind::CallNotPermitted
    );
    tokio::time::sleep(Duration::from_millis(2)).await;
    assert_eq!(post().await.unwrap().status(), 503);
    assert_eq!(seen.hits.load(Ordering::SeqCst), 101);
}

#[tokio::test(start_paused = true)]
async fn every_standard_default_yields_to_the_file_and_code_on_the_builder_wins() {
    let registry = Registry::from_yaml_str(
        "
resilience4j.retry.instances.prices:
  max-attempts: 2
  wait-duration: 10ms
resilience4j.circuitbreaker.instances.prices:
  minimum-number-of-calls: 5
resil.http-client.instances.prices:
  total-timeout: 1s
",
    )
    .unwrap();
    let layer = ResilienceLayer::standard_client(&registry, "prices")
        .unwrap()
        .build();
    let retry = registry.retry("prices");
    assert_eq!(retry.config().max_attempts(), 2);
    assert_eq!(
        retry.config().interval_function().interval(1),
        Duration::from_millis(10),
        "the file's backoff, not the preset's"
    );
    let b = registry.circuit_breaker("prices").config().clone();
    assert_eq!(b.minimum_number_of_calls(), 5, "the file's");
    assert_eq!(b.failure_rate_threshold(), 10.0, "the preset's");
    assert!(format!("{layer:?}").contains("total_timeout: Some(1s)"));

    let seen = Arc::new(Seen::default());
    seen.failing.store(usize::MAX, Ordering::SeqCst);
    let url = serve(seen.clone()).await;
    let response = layer
        .layer(hyper())
        .oneshot(request(Method::GET, &url, "", false))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(seen.hits.load(Ordering::SeqCst), 2, "the file's 2 attempts");

    // Code on the builder wins over the file: 50 ms in all, against a
    // downstream that takes 10 s.
    let code = ResilienceLayer::standard_client(&registry, "prices")
        .unwrap()
        .total_timeout(Duration::from_millis(50))
        .build()
        .layer(hyper());
    let slow = Arc::new(Seen::default());
    *slow.first_waits.lock().unwrap() = Some(Duration::from_secs(10));
    let url = serve(slow.clone()).await;
    let _clock = hold_the_clock();
    let call = tokio::spawn(code.oneshot(request(Method::GET, &url, "", false)));
    slow.arrived.notified().await;
    tokio::time::advance(Duration::from_millis(50)).await;
    let out = call.await.unwrap();
    assert_eq!(out.unwrap_err().kind(), ErrorKind::DeadlineExceeded);
}

/// The wait of every retry `events` published.
fn retry_waits(events: &mut resil::event::EventStream<RetryEvent>) -> Vec<Duration> {
    events
        .drain()
        .iter()
        .filter_map(|e| match e.kind() {
            RetryEventKind::Retry { wait, .. } => Some(wait),
            _ => None,
        })
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_503s_retry_after_is_the_wait_before_the_next_attempt() {
    let seen = Arc::new(Seen::default());
    seen.failing.store(1, Ordering::SeqCst);
    *seen.retry_after.lock().unwrap() = Some("2");
    let url = serve(seen.clone()).await;
    // The breaker's open state and the retry's wait on the same (paused) time.
    let registry = Registry::builder()
        .clock(resil::clock::TokioClock::new())
        .build();
    registry
        .configure_retry("prices", |b| {
            b.max_attempts(3).wait_duration(Duration::from_millis(10))
        })
        .unwrap();
    let mut events = registry.retry("prices").subscribe();
    let client = ResilienceLayer::builder(&registry, "prices")
        .circuit_breaker()
        .retry()
        .classify(HttpClassifier::default())
        .build()
        .layer(hyper());

    let started = tokio::time::Instant::now();
    let response = client
        .oneshot(request(Method::GET, &url, "sku=42", false))
        .await
        .unwrap();
    assert_eq!(text(response).await, (StatusCode::OK, "sku=42".into()));
    assert_eq!(seen.hits.load(Ordering::SeqCst), 2);
    // Just past the 2 s asked for (the breaker the 503 opened for 2 s is
    // half-open by then), not the retry's 10 ms.
    assert_eq!(retry_waits(&mut events), [Duration::from_millis(2001)]);
    assert!(started.elapsed() >= Duration::from_secs(2));
    // The 503 opened the breaker for its 2 s; the second attempt found it
    // half-open (its success the first sample there), not open.
    let breaker = registry.circuit_breaker("prices");
    assert_eq!(breaker.state(), resil::circuit_breaker::State::HalfOpen);
    let b = breaker.metrics();
    assert_eq!((b.successful_calls(), b.not_permitted_calls()), (1, 0));
}

#[tokio::test(start_paused = true)]
async fn a_retry_after_longer_than_the_retrys_longest_wait_ends_the_call_on_that_response() {
    let registry = Registry::new();
    registry
        .configure_retry("prices", |b| {
            b.max_attempts(3).interval_function(
                IntervalFunction::exponential(Duration::from_millis(10), 2.0)
                    .with_max(Duration::from_secs(30)),
            )
        })
        .unwrap();
    let mut events = registry.retry("prices").subscribe();
    let layer = ResilienceLayer::builder(&registry, "prices")
        .retry()
        .classify(HttpClassifier::default())
        .build();

    // 60 s is past the retry's 30 s: the 503 is the answer at once.
    let seen = Arc::new(Seen::default());
    seen.failing.store(usize::MAX, Ordering::SeqCst);
    *seen.retry_after.lock().unwrap() = Some("60");
    let url = serve(seen.clone()).await;
    let response = layer
        .layer(hyper())
        .oneshot(request(Method::GET, &url, "", false))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(response.headers()[http::header::RETRY_AFTER], "60");
    assert_eq!(seen.hits.load(Ordering::SeqCst), 1);
    assert!(retry_waits(&mut events).is_empty());
    let m = registry.retry("prices").metrics();
    assert_eq!((m.calls(), m.failed_calls_without_retry()), (1, 1));

    // 20 s is within it: waited for, twice, and the last 503 returned.
    *seen.retry_after.lock().unwrap() = Some("20");
    let response = layer
        .layer(hyper())
        .oneshot(request(Method::GET, &url, "", false))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(seen.hits.load(Ordering::SeqCst), 4);
    let twenty = Duration::from_secs(20) + Duration::from_millis(1);
    assert_eq!(retry_waits(&mut events), [twenty, twenty]);
    assert_eq!(
        registry.retry("prices").metrics().failed_calls_with_retry(),
        1
    );
}

/// A port nothing listens on.
async fn closed_port() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}/prices")
}

#[tokio::test(start_paused = true)]
async fn the_retrys_error_predicates_judge_the_clients_own_error() {
    type ClientError = hyper_util::client::legacy::Error;
    let url = closed_port().await;
    let registry = Registry::new();
    registry
        .configure_retry("ignoring", |b| {
            b.max_attempts(3)
                .wait_duration(Duration::from_millis(10))
                .ignore_error(|e: &ClientError| e.is_connect())
        })
        .unwrap();
    registry
        .configure_retry("retrying", |b| {
            b.max_attempts(3)
                .wait_duration(Duration::from_millis(10))
                .retry_on_error(|e: &ClientError| e.is_connect())
        })
        .unwrap();
    registry
        .configure_retry("refusing", |b| {
            b.max_attempts(3)
                .wait_duration(Duration::from_millis(10))
                .retry_on_error(|e: &ClientError| !e.is_connect())
        })
        .unwrap();
    for (name, attempts) in [("ignoring", 1), ("retrying", 3), ("refusing", 1)] {
        let out = ResilienceLayer::builder(&registry, name)
            .retry()
            .classify(HttpClassifier::default())
            .build()
            .layer(hyper())
            .oneshot(request(Method::GET, &url, "", false))
            .await;
        let Err(Error::Call(error)) = out else {
            panic!("{name}: not the client's error")
        };
        assert!(error.is_connect(), "{name}");
        let m = registry.retry(name).metrics();
        assert_eq!(m.attempts(), attempts, "{name}");
    }
    assert_eq!(
        registry.retry("ignoring").metrics().ignored_error_calls(),
        1
    );
    assert_eq!(
        registry
            .retry("refusing")
            .metrics()
            .failed_calls_without_retry(),
        1
    );
}

#[tokio::test(start_paused = true)]
async fn a_result_predicate_retries_a_response_the_classifier_passes_and_a_failing_one_can_end_in_max_retries(
) {
    type Response = http::Response<hyper::body::Incoming>;
    let registry = Registry::new();
    registry
        .configure_retry("prices", |b| {
            b.max_attempts(3)
                .wait_duration(Duration::from_millis(10))
                .retry_on_result(|r: &Response| r.status() == StatusCode::NOT_FOUND)
                .fail_after_max_attempts(true)
        })
        .unwrap();
    let layer = ResilienceLayer::builder(&registry, "prices")
        .retry()
        .classify(HttpClassifier::default())
        .build();

    // A 404 is no failure to the classifier; the result predicate retries it.
    let seen = Arc::new(Seen::default());
    seen.failing.store(1, Ordering::SeqCst);
    *seen.failing_status.lock().unwrap() = Some(StatusCode::NOT_FOUND);
    let url = serve(seen.clone()).await;
    let response = layer
        .layer(hyper())
        .oneshot(request(Method::GET, &url, "sku=42", false))
        .await
        .unwrap();
    assert_eq!(text(response).await, (StatusCode::OK, "sku=42".into()));
    assert_eq!(seen.hits.load(Ordering::SeqCst), 2);

    // A 503 to the end: a failed result, so `fail-after-max-attempts` holds.
    let seen = Arc::new(Seen::default());
    seen.failing.store(usize::MAX, Ordering::SeqCst);
    let url = serve(seen.clone()).await;
    let out = layer
        .layer(hyper())
        .oneshot(request(Method::GET, &url, "", false))
        .await;
    assert_eq!(out.unwrap_err().kind(), ErrorKind::MaxRetriesExceeded);
    assert_eq!(seen.hits.load(Ordering::SeqCst), 3);
}

/// An in-process downstream for the cancellation and panic cases: a request
/// whose body is `hang` never answers, `panic` panics, anything else is 503.
fn in_process() -> impl tower::Service<
    http::Request<ReplayBody<Full<Bytes>>>,
    Response = http::Response<()>,
    Error = std::io::Error,
    Future = impl std::future::Future<Output = std::io::Result<http::Response<()>>> + Send,
> + Clone
       + Send {
    tower::service_fn(|req: http::Request<ReplayBody<Full<Bytes>>>| async move {
        let body = req.into_body().collect().await.unwrap().to_bytes();
        match &body[..] {
            b"hang" => std::future::pending().await,
            b"panic" => panic!("the downstream's code panicked"),
            _ => Ok(http::Response::builder().status(503).body(()).unwrap()),
        }
    })
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_or_panicking_retried_request_gives_every_slot_back() {
    let registry = registry();
    registry
        .configure_bulkhead("prices", |b| b.max_concurrent_calls(1))
        .unwrap();
    let client = ResilienceLayer::builder(&registry, "prices")
        .retry()
        .bulkhead()
        .classify(HttpClassifier::default())
        .build()
        .layer(in_process());
    let bulkhead = registry.bulkhead("prices");

    // Dropped while its attempt waits on the downstream.
    let call = tokio::spawn(client.clone().oneshot(request(
        Method::GET,
        "http://d/",
        "hang",
        false,
    )));
    tokio::time::sleep(Duration::from_millis(1)).await;
    assert_eq!(bulkhead.available_concurrent_calls(), 0);
    call.abort();
    assert!(call.await.unwrap_err().is_cancelled());
    assert_eq!(bulkhead.available_concurrent_calls(), 1);
    assert_eq!(registry.retry("prices").metrics().cancelled_calls(), 1);

    // Dropped during the retry's backoff (after a 503).
    let call = tokio::spawn(client.clone().oneshot(request(
        Method::GET,
        "http://d/",
        "busy",
        false,
    )));
    tokio::time::sleep(Duration::from_millis(5)).await;
    call.abort();
    let _ = call.await;
    assert_eq!(bulkhead.available_concurrent_calls(), 1);
    assert_eq!(registry.retry("prices").metrics().cancelled_calls(), 2);

    // A panic in the downstream's code unwinds through the layer.
    let panicked = tokio::spawn(client.clone().oneshot(request(
        Method::GET,
        "http://d/",
        "panic",
        false,
    )));
    assert!(panicked.await.unwrap_err().is_panic());
    assert_eq!(bulkhead.available_concurrent_calls(), 1);
    let response = client
        .oneshot(request(Method::GET, "http://d/", "busy", false))
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
}

#[tokio::test]
async fn each_tenant_header_retries_on_its_own_budget() {
    let seen = Arc::new(Seen::default());
    seen.failing.store(usize::MAX, Ordering::SeqCst); // always 503
    let url = serve(seen.clone()).await;
    // A clock nobody advances: the budgets' windows never pass, and the
    // retry does not wait.
    let registry = Registry::builder()
        .clock(resil::clock::ManualClock::new())
        .build();
    registry
        .configure_retry("per-tenant", |b| {
            b.max_attempts(3)
                .wait_duration(Duration::ZERO)
                .budget(budgets::one_retry_budget())
        })
        .unwrap();
    let client = ResilienceLayer::builder(&registry, "per-tenant")
        .client()
        .retry_budget_per(resil_web::tower::client::RetryBudgetKey::Header(
            http::HeaderName::from_static("x-tenant"),
        ))
        .classify(HttpClassifier::default())
        .build()
        .layer(hyper());
    let send = |tenant: &'static str| {
        let mut req = request(Method::GET, &url, "", false);
        req.headers_mut()
            .insert("x-tenant", http::HeaderValue::from_static(tenant));
        client.clone().oneshot(req)
    };
    let hits = || seen.hits.load(Ordering::SeqCst);

    let err = send("noisy").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RetryBudgetExhausted);
    assert_eq!(hits(), 2, "noisy's one retry, then its budget refused");
    let err = send("noisy").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RetryBudgetExhausted);
    assert_eq!(hits(), 3, "no retry left for noisy");
    let _ = send("quiet").await;
    assert_eq!(hits(), 5, "quiet retries on its own budget");
    let budgets = registry.keyed_retry_budget("per-tenant");
    assert_eq!(budgets.counts().in_use, 2);
    assert_eq!(budgets.get("noisy").available_retries(), 0);
}
