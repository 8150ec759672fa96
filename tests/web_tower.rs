//! The tower layer over real sockets: an axum route protected by
//! `ResilienceLayer`, called with reqwest. Refusals become 503/429/504 with
//! `Retry-After`, statuses are classified, and every permit comes back on
//! completion, cancellation and panic.

use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use axum::Router;
use resil::circuit_breaker::State as BreakerState;
use resil::Registry;
use resil_web::http::{HttpClassifier, StatusSet};
use resil_web::tower::{RefusalResponses, ResilienceLayer};
use tokio::sync::Notify;
use tower::{service_fn, Layer, Service, ServiceExt};

#[derive(Default)]
struct Downstream {
    calls: AtomicUsize,
    entered: Notify,
    release: Notify,
}

#[derive(serde::Deserialize)]
struct StatusQuery {
    retry_after: Option<String>,
    /// An IETF `RateLimit` field value to answer with.
    ratelimit: Option<String>,
}

async fn status(
    State(d): State<Arc<Downstream>>,
    Path(code): Path<u16>,
    Query(q): Query<StatusQuery>,
) -> (StatusCode, HeaderMap, &'static str) {
    d.calls.fetch_add(1, Ordering::SeqCst);
    let mut headers = HeaderMap::new();
    if let Some(after) = q.retry_after {
        headers.insert("retry-after", after.parse().unwrap());
    }
    if let Some(limit) = q.ratelimit {
        headers.insert("ratelimit", limit.parse().unwrap());
    }
    (StatusCode::from_u16(code).unwrap(), headers, "body")
}

async fn hold(State(d): State<Arc<Downstream>>) -> &'static str {
    d.calls.fetch_add(1, Ordering::SeqCst);
    d.entered.notify_one();
    d.release.notified().await;
    "released"
}

async fn never(State(d): State<Arc<Downstream>>) -> &'static str {
    d.calls.fetch_add(1, Ordering::SeqCst);
    std::future::pending().await
}

/// Serves the three routes behind `layer` on a free port; returns its base URL.
async fn serve(
    layer: ResilienceLayer<HttpClassifier, RefusalResponses<Body>>,
    downstream: Arc<Downstream>,
) -> String {
    let app = Router::new()
        .route("/status/{code}", get(status))
        .route("/hold", get(hold))
        .route("/never", get(never))
        .route_layer(layer)
        .with_state(downstream);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// The same three routes, each handler wrapped with
/// `ResilienceLayer::handler` instead of the layer applied to the router.
async fn serve_handlers(
    layer: ResilienceLayer<HttpClassifier, RefusalResponses<Body>>,
    downstream: Arc<Downstream>,
) -> String {
    let app = Router::new()
        .route("/status/{code}", get(layer.handler(status)))
        .route("/hold", get(layer.handler(hold)))
        .route("/never", get(layer.handler(never)))
        .with_state(downstream);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

fn server_layer(
    registry: &Registry,
    name: &str,
    classifier: HttpClassifier,
    aspects: impl FnOnce(resil_web::tower::Builder<'_>) -> resil_web::tower::Builder<'_>,
) -> ResilienceLayer<HttpClassifier, RefusalResponses<Body>> {
    aspects(ResilienceLayer::builder(registry, name))
        .classify(classifier)
        .respond(RefusalResponses::<Body>::new())
        .build()
}

fn retry_after(r: &reqwest::Response) -> Option<u64> {
    r.headers()
        .get("retry-after")
        .map(|v| v.to_str().unwrap().parse().unwrap())
}

/// A registry whose breaker `name` opens on two failures in a window of two
/// and stays open 60 s.
fn opens_after_two_failures(name: &str) -> Registry {
    let registry = Registry::new();
    registry
        .configure_circuit_breaker(name, |b| {
            b.sliding_window_size(2)
                .minimum_number_of_calls(2)
                .wait_duration_in_open_state(Duration::from_secs(60))
        })
        .unwrap();
    registry
}

#[tokio::test]
async fn an_open_breaker_answers_503_with_its_remaining_wait_and_never_calls_the_handler() {
    let registry = opens_after_two_failures("open");
    let d = Arc::new(Downstream::default());
    let layer = server_layer(&registry, "open", HttpClassifier::default(), |b| {
        b.circuit_breaker()
    });
    let url = serve(layer, d.clone()).await;
    let client = reqwest::Client::new();
    for _ in 0..2 {
        let r = client
            .get(format!("{url}/status/500"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status(), 500);
    }
    let breaker = registry.circuit_breaker("open");
    assert_eq!(breaker.state(), BreakerState::Open);
    let r = client
        .get(format!("{url}/status/200"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(
        retry_after(&r),
        Some(60),
        "the remaining open wait, rounded up"
    );
    assert!(r.text().await.unwrap().contains("'open'"));
    assert_eq!(
        d.calls.load(Ordering::SeqCst),
        2,
        "a refused request never reaches the handler"
    );
    assert_eq!(breaker.metrics().not_permitted_calls(), 1);
    assert_eq!(breaker.metrics().failed_calls(), 2);
}

#[tokio::test]
async fn a_429_with_retry_after_in_either_form_opens_the_breaker_for_that_long() {
    let registry = Registry::new();
    let d = Arc::new(Downstream::default());
    let layer = server_layer(&registry, "quota", HttpClassifier::default(), |b| {
        b.circuit_breaker()
    });
    let url = serve(layer, d.clone()).await;
    let client = reqwest::Client::new();
    let breaker = registry.circuit_breaker("quota");

    // Delay seconds.
    let r = client
        .get(format!("{url}/status/429?retry_after=7"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        r.status(),
        429,
        "the downstream's own answer passes through"
    );
    assert_eq!(breaker.state(), BreakerState::Open);
    let r = client
        .get(format!("{url}/status/200"))
        .send()
        .await
        .unwrap();
    assert_eq!((r.status().as_u16(), retry_after(&r)), (503, Some(7)));

    // An HTTP date two minutes ahead, on a 503.
    breaker.transition_to_closed().unwrap();
    let at = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(120));
    let r = client
        .get(format!("{url}/status/503"))
        .query(&[("retry_after", at)])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    let r = client
        .get(format!("{url}/status/200"))
        .send()
        .await
        .unwrap();
    let after = retry_after(&r).unwrap();
    assert!((118..=120).contains(&after), "{after}");
    assert_eq!(d.calls.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn a_429_whose_ratelimit_field_says_the_quota_is_spent_opens_the_breaker_for_its_reset() {
    let registry = Registry::new();
    let d = Arc::new(Downstream::default());
    let layer = server_layer(&registry, "ietf-quota", HttpClassifier::default(), |b| {
        b.circuit_breaker()
    });
    let url = serve(layer, d.clone()).await;
    let client = reqwest::Client::new();
    let breaker = registry.circuit_breaker("ietf-quota");
    let r = client
        .get(format!("{url}/status/429"))
        .query(&[("ratelimit", "\"day\";r=40;t=3600, \"burst\";r=0;t=9")])
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
    assert_eq!(breaker.state(), BreakerState::Open);
    let r = client
        .get(format!("{url}/status/200"))
        .send()
        .await
        .unwrap();
    assert_eq!((r.status().as_u16(), retry_after(&r)), (503, Some(9)));
    assert_eq!(d.calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn seed_003_mapping_200_is_a_success_403_is_ignored_anything_else_fails() {
    let registry = Registry::new();
    let classifier = HttpClassifier::builder()
        .success_status(StatusSet::parse("200").unwrap())
        .ignore_status(StatusSet::parse("403").unwrap())
        .build();
    let d = Arc::new(Downstream::default());
    let url = serve(
        server_layer(&registry, "price", classifier, |b| b.circuit_breaker()),
        d,
    )
    .await;
    let client = reqwest::Client::new();
    for code in [200, 403, 404, 201, 500] {
        let r = client
            .get(format!("{url}/status/{code}"))
            .send()
            .await
            .unwrap();
        assert_eq!(r.status().as_u16(), code);
    }
    let m = registry.circuit_breaker("price").metrics();
    assert_eq!(
        (m.successful_calls(), m.ignored_calls(), m.failed_calls()),
        (1, 1, 3)
    );
}

#[tokio::test]
async fn a_rate_limited_route_answers_429_with_the_time_to_the_next_permit() {
    let registry = Registry::new();
    registry
        .configure_rate_limiter("rl", |b| {
            b.limit_for_period(1)
                .limit_refresh_period(Duration::from_secs(30))
                .timeout_duration(Duration::ZERO)
        })
        .unwrap();
    let d = Arc::new(Downstream::default());
    let layer = server_layer(&registry, "rl", HttpClassifier::default(), |b| {
        b.circuit_breaker().rate_limiter()
    });
    let url = serve(layer, d.clone()).await;
    let client = reqwest::Client::new();
    let r = client
        .get(format!("{url}/status/200"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    let r = client
        .get(format!("{url}/status/200"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 429);
    let after = retry_after(&r).unwrap();
    assert!((1..=30).contains(&after), "{after}");
    // The IETF fields beside it: the quota and its window, none left, and
    // the same reset as `Retry-After`.
    let field = |name: &str| r.headers().get(name).unwrap().to_str().unwrap().to_owned();
    assert_eq!(field("ratelimit-policy"), "\"rl\";q=1;w=30");
    assert_eq!(field("ratelimit"), format!("\"rl\";r=0;t={after}"));
    assert_eq!(d.calls.load(Ordering::SeqCst), 1);
    // The breaker inside which the limiter refused counts it as a failure,
    // as the attributes do (an inner rejection is a failure by default).
    assert_eq!(registry.circuit_breaker("rl").metrics().failed_calls(), 1);
}

#[tokio::test]
async fn the_layer_counts_every_request_it_finished_as_passed_or_by_what_refused_it() {
    let registry = Registry::new();
    registry
        .configure_rate_limiter("counted", |b| {
            b.limit_for_period(2)
                .limit_refresh_period(Duration::from_secs(30))
                .timeout_duration(Duration::ZERO)
        })
        .unwrap();
    let d = Arc::new(Downstream::default());
    let layer = server_layer(&registry, "counted", HttpClassifier::default(), |b| {
        b.rate_limiter()
    });
    let url = serve(layer, d.clone()).await;
    let client = reqwest::Client::new();
    let mut statuses = Vec::new();
    for code in [200, 500, 200, 200] {
        let r = client
            .get(format!("{url}/status/{code}"))
            .send()
            .await
            .unwrap();
        statuses.push(r.status().as_u16());
    }
    assert_eq!(statuses, [200, 500, 429, 429]);
    // The 500 reached the handler: passed, whatever it answered.
    let counts = registry.layer_counts("counted");
    assert_eq!(counts.passed_requests(), 2);
    assert_eq!(
        counts.refused_requests(resil::ErrorKind::RequestNotPermitted),
        2
    );
    assert_eq!(counts.refused_requests(resil::ErrorKind::BulkheadFull), 0);
    let text = registry.prometheus_text();
    for line in [
        "resil_layer_requests_total{kind=\"passed\",name=\"counted\"} 2",
        "resil_layer_requests_total{kind=\"request_not_permitted\",name=\"counted\"} 2",
        "resilience4j_ratelimiter_calls_total{kind=\"failed\",name=\"counted\"} 2",
        "resilience4j_ratelimiter_calls_total{kind=\"successful\",name=\"counted\"} 2",
    ] {
        assert!(
            text.lines().any(|l| l == line),
            "missing `{line}` in\n{text}"
        );
    }
}

#[tokio::test]
async fn a_full_bulkhead_answers_503_and_gives_its_slot_back() {
    let registry = Registry::new();
    registry
        .configure_bulkhead("bh", |b| {
            b.max_concurrent_calls(1).max_wait_duration(Duration::ZERO)
        })
        .unwrap();
    let d = Arc::new(Downstream::default());
    let url = serve(
        server_layer(&registry, "bh", HttpClassifier::default(), |b| b.bulkhead()),
        d.clone(),
    )
    .await;
    let client = reqwest::Client::new();
    let held = tokio::spawn(client.get(format!("{url}/hold")).send());
    d.entered.notified().await;
    let r = client
        .get(format!("{url}/status/200"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 503);
    assert!(r.headers().get("retry-after").is_none());
    d.release.notify_one();
    assert_eq!(held.await.unwrap().unwrap().status(), 200);
    let r = client
        .get(format!("{url}/status/200"))
        .send()
        .await
        .unwrap();
    assert_eq!(r.status(), 200);
    assert_eq!(registry.bulkhead("bh").available_concurrent_calls(), 1);
}

#[tokio::test]
async fn a_waiting_bulkhead_calls_the_handler_once_a_slot_frees() {
    let registry = Registry::new();
    registry
        .configure_bulkhead("bw", |b| {
            b.max_concurrent_calls(1)
                .max_wait_duration(Duration::from_secs(30))
        })
        .unwrap();
    let d = Arc::new(Downstream::default());
    let url = serve(
        server_layer(&registry, "bw", HttpClassifier::default(), |b| b.bulkhead()),
        d.clone(),
    )
    .await;
    let client = reqwest::Client::new();
    let held = tokio::spawn(client.get(format!("{url}/hold")).send());
    d.entered.notified().await;
    let waiting = tokio::spawn(client.get(format!("{url}/status/200")).send());
    // The second request queues for the slot (not refused) until the holder ends.
    while registry.bulkhead("bw").metrics().waiting_calls() == 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(
        d.calls.load(Ordering::SeqCst),
        1,
        "the handler waits for the slot"
    );
    d.release.notify_one();
    assert_eq!(held.await.unwrap().unwrap().status(), 200);
    assert_eq!(waiting.await.unwrap().unwrap().status(), 200);
    assert_eq!(d.calls.load(Ordering::SeqCst), 2);
    assert_eq!(registry.bulkhead("bw").available_concurrent_calls(), 1);
}

#[tokio::test]
async fn a_timed_out_route_answers_504_and_the_breaker_counts_a_failure() {
    let registry = Registry::new();
    registry
        .configure_time_limiter("tl", |b| b.timeout_duration(Duration::from_millis(50)))
        .unwrap();
    let d = Arc::new(Downstream::default());
    let layer = server_layer(&registry, "tl", HttpClassifier::default(), |b| {
        b.circuit_breaker().time_limiter()
    });
    let url = serve(layer, d).await;
    let r = reqwest::get(format!("{url}/never")).await.unwrap();
    assert_eq!(r.status(), 504);
    assert_eq!(registry.time_limiter("tl").metrics().timeout_calls(), 1);
    assert_eq!(registry.circuit_breaker("tl").metrics().failed_calls(), 1);
}

// ---- the stack as an axum handler (`ResilienceLayer::handler`) ----

/// Classification, an open breaker's 503 and its `Retry-After`, as through
/// the layer: seed 003's mapping records 500 as a failure, ignores 403.
#[tokio::test]
async fn a_protected_handler_classifies_and_answers_an_open_breaker_with_503() {
    let registry = opens_after_two_failures("ph");
    let d = Arc::new(Downstream::default());
    let classifier = HttpClassifier::builder()
        .ignore_status(StatusSet::parse("403").unwrap())
        .build();
    let layer = server_layer(&registry, "ph", classifier, |b| b.circuit_breaker());
    let url = serve_handlers(layer, d.clone()).await;
    let client = reqwest::Client::new();
    let get = |code: u16| client.get(format!("{url}/status/{code}")).send();
    assert_eq!(get(200).await.unwrap().status(), 200);
    assert_eq!(get(403).await.unwrap().status(), 403);
    let breaker = registry.circuit_breaker("ph");
    let m = breaker.metrics();
    assert_eq!((m.successful_calls(), m.ignored_calls()), (1, 1));
    assert_eq!(get(500).await.unwrap().status(), 500);
    assert_eq!(breaker.state(), BreakerState::Open);
    let r = get(200).await.unwrap();
    assert_eq!(r.status(), 503);
    assert_eq!(retry_after(&r), Some(60));
    assert_eq!(
        d.calls.load(Ordering::SeqCst),
        3,
        "a refused request is not handled"
    );
    assert_eq!(breaker.metrics().not_permitted_calls(), 1);
}

/// A full bulkhead answers 503, a request queued for a slot is handled once
/// the slot frees, and every slot comes back.
#[tokio::test]
async fn a_protected_handler_queues_for_the_bulkhead_and_gives_its_slot_back() {
    let registry = Registry::new();
    registry
        .configure_bulkhead("phb", |b| {
            b.max_concurrent_calls(1)
                .max_wait_duration(Duration::from_secs(30))
        })
        .unwrap();
    let d = Arc::new(Downstream::default());
    let layer = server_layer(&registry, "phb", HttpClassifier::default(), |b| {
        b.bulkhead()
    });
    let url = serve_handlers(layer, d.clone()).await;
    let client = reqwest::Client::new();
    let held = tokio::spawn(client.get(format!("{url}/hold")).send());
    d.entered.notified().await;
    let waiting = tokio::spawn(client.get(format!("{url}/status/200")).send());
    let bulkhead = registry.bulkhead("phb");
    while bulkhead.metrics().waiting_calls() == 0 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        d.calls.load(Ordering::SeqCst),
        1,
        "the queued request waits"
    );
    d.release.notify_one();
    assert_eq!(held.await.unwrap().unwrap().status(), 200);
    assert_eq!(waiting.await.unwrap().unwrap().status(), 200);
    assert_eq!(d.calls.load(Ordering::SeqCst), 2);
    assert_eq!(bulkhead.available_concurrent_calls(), 1);
}

/// A handler that never answers gets the time limiter's 504, the breaker
/// counts a failure, and a client that gives up first (the request's
/// future dropped by the server) gives back its bulkhead slot.
#[tokio::test]
async fn a_protected_handler_times_out_with_504_and_a_dropped_request_frees_its_slot() {
    let registry = Registry::new();
    registry
        .configure_time_limiter("pht", |b| b.timeout_duration(Duration::from_millis(50)))
        .unwrap();
    let d = Arc::new(Downstream::default());
    let layer = server_layer(&registry, "pht", HttpClassifier::default(), |b| {
        b.circuit_breaker().time_limiter().bulkhead()
    });
    let url = serve_handlers(layer, d.clone()).await;
    let r = reqwest::get(format!("{url}/never")).await.unwrap();
    assert_eq!(r.status(), 504);
    assert_eq!(registry.time_limiter("pht").metrics().timeout_calls(), 1);
    assert_eq!(registry.circuit_breaker("pht").metrics().failed_calls(), 1);
    let bulkhead = registry.bulkhead("pht");
    assert_eq!(bulkhead.available_concurrent_calls(), 25);
    // A request dropped while its handler holds the slot (the client hung
    // up): the slot comes back and the breaker records nothing.
    let handler = server_layer(&registry, "pht", HttpClassifier::default(), |b| {
        b.circuit_breaker().time_limiter().bulkhead()
    })
    .handler(hold);
    let request = axum::http::Request::new(Body::empty());
    let mut fut = Box::pin(axum::handler::Handler::call(handler, request, d.clone()));
    assert!(poll_once(fut.as_mut()).is_pending());
    assert_eq!(bulkhead.available_concurrent_calls(), 24);
    drop(fut);
    assert_eq!(bulkhead.available_concurrent_calls(), 25);
    assert_eq!(
        registry.circuit_breaker("pht").metrics().buffered_calls(),
        1
    );
}

// ---- service level: a client stack, cancellation, panics, order ----

fn poll_once<F: Future>(fut: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

#[tokio::test]
async fn a_client_stack_reports_refusals_as_errors_and_transport_errors_as_failures() {
    let registry = Registry::new();
    registry
        .configure_circuit_breaker("client", |b| {
            b.sliding_window_size(2).minimum_number_of_calls(2)
        })
        .unwrap();
    let layer = ResilienceLayer::builder(&registry, "client")
        .circuit_breaker()
        .classify(HttpClassifier::default())
        .build();
    let mut svc = layer.layer(service_fn(|_: ()| async {
        Err::<http::Response<()>, _>(std::io::Error::from(std::io::ErrorKind::ConnectionReset))
    }));
    for _ in 0..2 {
        let e = svc.ready().await.unwrap().call(()).await.unwrap_err();
        assert!(matches!(e, resil::Error::Call(_)));
    }
    let e = svc.ready().await.unwrap().call(()).await.unwrap_err();
    assert_eq!(e.kind(), resil::ErrorKind::CallNotPermitted);
    assert_eq!(
        registry.circuit_breaker("client").metrics().failed_calls(),
        2
    );
}

#[tokio::test]
async fn a_dropped_future_gives_back_its_half_open_probe_and_its_bulkhead_slot() {
    let registry = Registry::new();
    registry
        .configure_circuit_breaker("drop", |b| {
            b.permitted_number_of_calls_in_half_open_state(1)
        })
        .unwrap();
    registry
        .configure_bulkhead("drop", |b| b.max_concurrent_calls(1))
        .unwrap();
    let breaker = registry.circuit_breaker("drop");
    breaker.transition_to_open().unwrap();
    breaker.transition_to_half_open().unwrap();
    let layer = ResilienceLayer::builder(&registry, "drop")
        .circuit_breaker()
        .bulkhead()
        .build();
    let mut svc = layer.layer(service_fn(|_: ()| std::future::pending::<Result<(), ()>>()));
    for _ in 0..3 {
        let mut fut = pin!(svc.ready().await.unwrap().call(()));
        assert!(poll_once(fut.as_mut()).is_pending());
        assert_eq!(registry.bulkhead("drop").available_concurrent_calls(), 0);
        // Dropped mid-call: the next round gets the only probe and slot again.
    }
    assert_eq!(registry.bulkhead("drop").available_concurrent_calls(), 1);
    assert_eq!(breaker.state(), BreakerState::HalfOpen);
    assert_eq!(breaker.metrics().not_permitted_calls(), 0);
}

#[tokio::test]
async fn a_future_dropped_while_queued_for_the_bulkhead_leaves_the_queue_and_gives_back_its_probe()
{
    let registry = Registry::new();
    registry
        .configure_circuit_breaker("queued", |b| {
            b.permitted_number_of_calls_in_half_open_state(2)
        })
        .unwrap();
    registry
        .configure_bulkhead("queued", |b| {
            b.max_concurrent_calls(1)
                .max_wait_duration(Duration::from_secs(30))
        })
        .unwrap();
    let breaker = registry.circuit_breaker("queued");
    let bulkhead = registry.bulkhead("queued");
    breaker.transition_to_open().unwrap();
    breaker.transition_to_half_open().unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let layer = ResilienceLayer::builder(&registry, "queued")
        .circuit_breaker()
        .bulkhead()
        .build();
    let mut svc = layer.layer(service_fn(move |_: ()| {
        c.fetch_add(1, Ordering::SeqCst);
        std::future::pending::<Result<(), ()>>()
    }));
    let mut holder = Box::pin(svc.ready().await.unwrap().call(()));
    assert!(poll_once(holder.as_mut()).is_pending());
    for _ in 0..3 {
        // The second probe queues for the slot (the inner service moved into
        // the future, not called) and is dropped while it waits.
        let mut queued = pin!(svc.ready().await.unwrap().call(()));
        assert!(poll_once(queued.as_mut()).is_pending());
        assert_eq!(bulkhead.metrics().waiting_calls(), 1);
    }
    assert_eq!(bulkhead.metrics().waiting_calls(), 0);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "a queued request is not called"
    );
    // Both probe slots are free again once the holder goes too: the next
    // two requests are permitted, and the slot is not lost.
    drop(holder);
    assert_eq!(bulkhead.available_concurrent_calls(), 1);
    assert_eq!(breaker.state(), BreakerState::HalfOpen);
    let mut first = pin!(svc.ready().await.unwrap().call(()));
    assert!(poll_once(first.as_mut()).is_pending());
    let mut second = pin!(svc.ready().await.unwrap().call(()));
    assert!(poll_once(second.as_mut()).is_pending());
    assert_eq!(breaker.metrics().not_permitted_calls(), 0);
    assert_eq!(bulkhead.metrics().rejected_calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_future_dropped_during_its_rate_limit_wait_is_never_called_and_gives_back_its_probe() {
    let registry = Registry::builder()
        .clock(resil::clock::TokioClock::new())
        .build();
    registry
        .configure_circuit_breaker("throttled", |b| {
            b.permitted_number_of_calls_in_half_open_state(1)
        })
        .unwrap();
    registry
        .configure_rate_limiter("throttled", |b| {
            b.limit_for_period(1)
                .limit_refresh_period(Duration::from_secs(1))
                .timeout_duration(Duration::from_secs(5))
        })
        .unwrap();
    let breaker = registry.circuit_breaker("throttled");
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let layer = ResilienceLayer::builder(&registry, "throttled")
        .circuit_breaker()
        .rate_limiter()
        .build();
    let mut svc = layer.layer(service_fn(move |_: ()| {
        c.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, ()>(()) }
    }));
    // Spend this cycle's permit with the breaker closed.
    svc.ready().await.unwrap().call(()).await.unwrap();
    breaker.transition_to_open().unwrap();
    breaker.transition_to_half_open().unwrap();
    {
        let mut waiting = pin!(svc.ready().await.unwrap().call(()));
        assert!(poll_once(waiting.as_mut()).is_pending());
        tokio::time::advance(Duration::from_millis(100)).await;
        assert!(poll_once(waiting.as_mut()).is_pending());
    }
    tokio::time::advance(Duration::from_secs(3)).await;
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the dropped request was never called"
    );
    // The only half-open probe came back: the next request gets it.
    svc.ready().await.unwrap().call(()).await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert_eq!(breaker.metrics().not_permitted_calls(), 0);
}

#[tokio::test]
async fn a_panicking_inner_future_leaks_no_slot_and_no_probe() {
    let registry = Registry::new();
    registry
        .configure_circuit_breaker("panic", |b| {
            b.permitted_number_of_calls_in_half_open_state(1)
        })
        .unwrap();
    registry
        .configure_bulkhead("panic", |b| b.max_concurrent_calls(1))
        .unwrap();
    let breaker = registry.circuit_breaker("panic");
    breaker.transition_to_open().unwrap();
    breaker.transition_to_half_open().unwrap();
    let layer = ResilienceLayer::builder(&registry, "panic")
        .circuit_breaker()
        .bulkhead()
        .build();
    let svc = layer.layer(service_fn(|fail: bool| async move {
        if fail {
            panic!("the handler panicked");
        }
        Ok::<_, ()>(())
    }));
    let joined = tokio::spawn(svc.clone().oneshot(true)).await;
    assert!(joined.unwrap_err().is_panic());
    assert_eq!(registry.bulkhead("panic").available_concurrent_calls(), 1);
    assert_eq!(svc.oneshot(false).await, Ok(()), "the probe slot came back");
    assert_eq!(breaker.state(), BreakerState::Closed);
}

#[tokio::test]
async fn a_breaker_refusal_takes_no_rate_limiter_permit_and_no_bulkhead_slot() {
    let registry = Registry::new();
    registry
        .configure_rate_limiter("order", |b| {
            b.limit_for_period(5)
                .limit_refresh_period(Duration::from_secs(60))
        })
        .unwrap();
    let layer = ResilienceLayer::builder(&registry, "order")
        .bulkhead()
        .rate_limiter()
        .circuit_breaker()
        .build();
    let svc = layer.layer(service_fn(|_: ()| async { Ok::<_, ()>(()) }));
    svc.clone().oneshot(()).await.unwrap();
    assert_eq!(registry.rate_limiter("order").available_permissions(), 4);
    registry
        .circuit_breaker("order")
        .transition_to_forced_open()
        .unwrap();
    let e = svc.oneshot(()).await.unwrap_err();
    assert_eq!(e.kind(), resil::ErrorKind::CallNotPermitted);
    assert_eq!(registry.rate_limiter("order").available_permissions(), 4);
    assert_eq!(registry.bulkhead("order").metrics().rejected_calls(), 0);
}

/// A registry on tokio's (paused) clock whose rate limiter `name` hands out
/// one permit a second and lets a request wait up to 5 s for one.
fn one_permit_a_second(name: &str) -> Registry {
    let registry = Registry::builder()
        .clock(resil::clock::TokioClock::new())
        .build();
    registry
        .configure_rate_limiter(name, |b| {
            b.limit_for_period(1)
                .limit_refresh_period(Duration::from_secs(1))
                .timeout_duration(Duration::from_secs(5))
        })
        .unwrap();
    registry
}

#[tokio::test(start_paused = true)]
async fn a_reserved_rate_limiter_permit_is_waited_for_before_the_call() {
    let registry = one_permit_a_second("wait");
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let layer = ResilienceLayer::builder(&registry, "wait")
        .rate_limiter()
        .build();
    let svc = layer.layer(service_fn(move |_: ()| {
        c.fetch_add(1, Ordering::SeqCst);
        async { Ok::<_, ()>(tokio::time::Instant::now()) }
    }));
    let start = tokio::time::Instant::now();
    svc.clone().oneshot(()).await.unwrap();
    let mut second = pin!(svc.oneshot(()));
    assert!(poll_once(second.as_mut()).is_pending());
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "not called before its permit's cycle"
    );
    let at = second.await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(at - start >= Duration::from_secs(1));
}

/// The time limiter times the bulkhead's wait and the inner call, as the
/// attributes nest them: a request queued for a slot past the timeout
/// times out, leaves the queue, and is never called.
#[tokio::test(start_paused = true)]
async fn the_time_limiter_times_the_bulkhead_wait_and_a_timed_out_request_leaves_the_queue() {
    let registry = Registry::builder()
        .clock(resil::clock::TokioClock::new())
        .build();
    registry
        .configure_bulkhead("tq", |b| {
            b.max_concurrent_calls(1)
                .max_wait_duration(Duration::from_secs(30))
        })
        .unwrap();
    registry
        .configure_time_limiter("tq", |b| b.timeout_duration(Duration::from_millis(200)))
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let c = calls.clone();
    let layer = ResilienceLayer::builder(&registry, "tq")
        .circuit_breaker()
        .time_limiter()
        .bulkhead()
        .build();
    let mut svc = layer.layer(service_fn(move |_: ()| {
        c.fetch_add(1, Ordering::SeqCst);
        std::future::pending::<Result<(), ()>>()
    }));
    let mut holder = Box::pin(svc.ready().await.unwrap().call(()));
    assert!(poll_once(holder.as_mut()).is_pending());
    let start = tokio::time::Instant::now();
    let queued = svc.ready().await.unwrap().call(());
    let out = queued.await;
    assert!(matches!(out, Err(resil::Error::Timeout(_))), "{out:?}");
    assert_eq!(
        tokio::time::Instant::now() - start,
        Duration::from_millis(200)
    );
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "the queued request is never called"
    );
    let bulkhead = registry.bulkhead("tq");
    assert_eq!(bulkhead.metrics().waiting_calls(), 0, "it left the queue");
    assert_eq!(registry.time_limiter("tq").metrics().timeout_calls(), 1);
    assert_eq!(registry.circuit_breaker("tq").metrics().failed_calls(), 1);
    // The holder times out as well, and its slot comes back.
    assert!(matches!(holder.await, Err(resil::Error::Timeout(_))));
    assert_eq!(bulkhead.available_concurrent_calls(), 1);
    assert_eq!(registry.time_limiter("tq").metrics().timeout_calls(), 2);
}

/// The rate limiter's wait comes before the time limiter's: a reserved
/// permit waited for longer than the timeout is not a timeout, and the
/// timer starts once the permit is there.
#[tokio::test(start_paused = true)]
async fn the_rate_limit_wait_is_not_timed_and_the_timer_starts_after_it() {
    let registry = one_permit_a_second("tr");
    registry
        .configure_time_limiter("tr", |b| b.timeout_duration(Duration::from_millis(300)))
        .unwrap();
    let layer = ResilienceLayer::builder(&registry, "tr")
        .rate_limiter()
        .time_limiter()
        .build();
    let svc = layer.layer(service_fn(|work: Duration| async move {
        tokio::time::sleep(work).await;
        Ok::<_, ()>(tokio::time::Instant::now())
    }));
    let start = tokio::time::Instant::now();
    svc.clone().oneshot(Duration::ZERO).await.unwrap();
    // Waits about 1 s for its permit, then works 250 ms: within 300 ms.
    let done = svc
        .clone()
        .oneshot(Duration::from_millis(250))
        .await
        .unwrap();
    assert!(
        done - start >= Duration::from_millis(1_250),
        "{:?}",
        done - start
    );
    // Waits for its permit again, then works past 300 ms: a timeout, 300 ms
    // after its permit, not after the request.
    let before = tokio::time::Instant::now();
    let out = svc.oneshot(Duration::from_secs(1)).await;
    assert!(matches!(out, Err(resil::Error::Timeout(_))), "{out:?}");
    let waited = tokio::time::Instant::now() - before;
    assert!(
        waited > Duration::from_millis(300) && waited <= Duration::from_millis(1_300),
        "{waited:?}"
    );
    let metrics = registry.time_limiter("tr").metrics();
    assert_eq!(
        (metrics.successful_calls(), metrics.timeout_calls()),
        (2, 1)
    );
}

/// A bulkhead's refusal happens inside the time limiter: the time limiter
/// counts it as a failed call (as an exception from the supplier), and the
/// breaker records it with its predicates.
#[tokio::test]
async fn a_bulkhead_refusal_inside_the_time_limiter_is_counted_there_as_a_failure() {
    let registry = Registry::new();
    registry
        .configure_bulkhead("tb", |b| {
            b.max_concurrent_calls(1).max_wait_duration(Duration::ZERO)
        })
        .unwrap();
    let layer = ResilienceLayer::builder(&registry, "tb")
        .time_limiter()
        .bulkhead()
        .build();
    let mut svc = layer.layer(service_fn(|_: ()| std::future::pending::<Result<(), ()>>()));
    let mut holder = Box::pin(svc.ready().await.unwrap().call(()));
    assert!(poll_once(holder.as_mut()).is_pending());
    let out = svc.ready().await.unwrap().call(()).await;
    assert!(matches!(out, Err(resil::Error::BulkheadFull(_))), "{out:?}");
    let metrics = registry.time_limiter("tb").metrics();
    assert_eq!((metrics.failed_calls(), metrics.successful_calls()), (1, 0));
    drop(holder);
    assert_eq!(registry.bulkhead("tb").available_concurrent_calls(), 1);
}

#[test]
fn the_time_to_the_next_permit_counts_reservations_and_the_open_wait_counts_down() {
    use resil::clock::ManualClock;
    use resil::rate_limiter::{RateLimiter, RateLimiterConfig};
    let clock = ManualClock::new();
    let limiter = RateLimiter::with_clock(
        "next",
        RateLimiterConfig::builder()
            .limit_for_period(2)
            .limit_refresh_period(Duration::from_secs(10))
            .timeout_duration(Duration::from_secs(60))
            .build()
            .unwrap(),
        clock.clone(),
    );
    assert_eq!(limiter.time_to_next_permit(), Duration::ZERO);
    assert!(limiter.try_acquire_permission(2));
    clock.advance(Duration::from_secs(3));
    assert_eq!(limiter.time_to_next_permit(), Duration::from_secs(7));
    // Two permits of the next cycle reserved: the next free one is a cycle later.
    assert_eq!(
        limiter.reserve_permission(2).unwrap(),
        Duration::from_secs(7)
    );
    assert_eq!(limiter.time_to_next_permit(), Duration::from_secs(17));
    clock.advance(Duration::from_secs(17));
    assert_eq!(limiter.time_to_next_permit(), Duration::ZERO);

    let registry = Registry::builder().clock(clock.clone()).build();
    registry
        .configure_circuit_breaker("wait", |b| {
            b.wait_duration_in_open_state(Duration::from_secs(30))
        })
        .unwrap();
    let breaker = registry.circuit_breaker("wait");
    assert_eq!(breaker.remaining_open_wait(), None);
    breaker.transition_to_open().unwrap();
    clock.advance(Duration::from_secs(12));
    assert_eq!(breaker.remaining_open_wait(), Some(Duration::from_secs(18)));
    breaker.transition_to_forced_open().unwrap();
    assert_eq!(
        breaker.remaining_open_wait(),
        None,
        "an operator's wait is not known"
    );
}

// The attribute and the layer share the process-wide registry's instance.
#[derive(Debug, PartialEq)]
struct Down;

impl From<resil::Rejection> for Down {
    fn from(_: resil::Rejection) -> Self {
        Down
    }
}

#[resil::circuit_breaker(name = "web-shared")]
fn attribute_call(fail: bool) -> Result<u32, Down> {
    if fail {
        Err(Down)
    } else {
        Ok(1)
    }
}

#[tokio::test]
async fn a_layer_and_an_attribute_with_the_same_name_share_one_breaker() {
    let layer = resil_web::tower::layer("web-shared");
    let svc = layer.layer(service_fn(|_: ()| async { Ok::<_, ()>(()) }));
    svc.clone().oneshot(()).await.unwrap();
    let _ = attribute_call(false);
    let breaker = resil::registry().circuit_breaker("web-shared");
    assert_eq!(
        breaker.metrics().successful_calls(),
        2,
        "one window for both"
    );
    breaker.transition_to_forced_open().unwrap();
    assert_eq!(attribute_call(false), Err(Down), "the attribute is refused");
    let e = svc.oneshot(()).await.unwrap_err();
    assert_eq!(e.kind(), resil::ErrorKind::CallNotPermitted);
}

#[tokio::test]
async fn a_layer_follows_its_instance_through_a_reconfiguration() {
    let registry = Registry::new();
    let layer = ResilienceLayer::builder(&registry, "follow")
        .circuit_breaker()
        .build();
    let svc = layer.layer(service_fn(|fail: bool| async move {
        if fail {
            Err(())
        } else {
            Ok(())
        }
    }));
    // A new configuration replaces the instance; the built layer sees it.
    registry
        .configure_circuit_breaker("follow", |b| {
            b.sliding_window_size(1).minimum_number_of_calls(1)
        })
        .unwrap();
    let _ = svc.clone().oneshot(true).await;
    assert_eq!(
        registry.circuit_breaker("follow").state(),
        BreakerState::Open
    );
    assert_eq!(
        svc.oneshot(false).await.unwrap_err().kind(),
        resil::ErrorKind::CallNotPermitted
    );
}

// Reproduces issue 27 (item 5): the layer's classifier did not follow a
// reload of the file it came from.
#[tokio::test]
async fn a_layer_classifies_by_the_reloaded_files_sets_without_being_rebuilt() {
    let file = |http: &str| {
        resil::config::FileConfig::from_yaml_str(&format!(
            "resilience4j.circuitbreaker.instances.inv:\n  sliding-window-size: 10\n  \
             minimum-number-of-calls: 10\nresil.http.instances.inv:\n{http}"
        ))
        .unwrap()
    };
    let registry = Registry::new();
    registry
        .reload(file("  record-status: [400-599]\n"))
        .unwrap();
    let layer = server_layer(
        &registry,
        "inv",
        HttpClassifier::follow(&registry, "inv"),
        |b| b.circuit_breaker(),
    );
    let url = serve(layer, Arc::new(Downstream::default())).await;
    let client = reqwest::Client::new();
    let get = |code: u16| client.get(format!("{url}/status/{code}")).send();
    assert_eq!(get(404).await.unwrap().status(), 404);
    let breaker = registry.circuit_breaker("inv");
    assert_eq!(breaker.metrics().failed_calls(), 1);

    registry
        .reload(file("  record-status: [400-599]\n  ignore-status: [404]\n"))
        .unwrap();
    assert_eq!(get(404).await.unwrap().status(), 404);
    assert_eq!(get(409).await.unwrap().status(), 409);
    let m = breaker.metrics();
    assert_eq!((m.failed_calls(), m.ignored_calls()), (2, 1));
}
