//! `resil::reqwest::ResilienceMiddleware` in a reqwest-middleware chain,
//! against a local axum server: the same idempotency rule as the tower
//! client layer, statuses classified by `HttpClassifier` for the retry and
//! the breaker, and a refusal as a `Rejection` inside the chain's error;
//! and reqwest's own retry judged by the classifier.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::any;
use axum::Router;
use reqwest_middleware::ClientWithMiddleware;
use resil::circuit_breaker::State as BreakerState;
use resil::{Registry, Rejection};
use resil_web::http::HttpClassifier;
use resil_web::reqwest::ResilienceMiddleware;
use resil_web::tower::ResilienceLayer;

#[derive(Default)]
struct Seen {
    hits: AtomicUsize,
    bodies: Mutex<Vec<Bytes>>,
    failing: AtomicUsize,
}

async fn record(State(seen): State<Arc<Seen>>, body: Bytes) -> (StatusCode, Bytes) {
    let n = seen.hits.fetch_add(1, Ordering::SeqCst);
    seen.bodies.lock().unwrap().push(body.clone());
    if n < seen.failing.load(Ordering::SeqCst) {
        return (StatusCode::SERVICE_UNAVAILABLE, Bytes::from_static(b"busy"));
    }
    (StatusCode::OK, body)
}

async fn serve(seen: Arc<Seen>) -> String {
    let app = Router::new().route("/prices", any(record)).with_state(seen);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}/prices")
}

/// The chain with the retry and the breaker `prices`, whose window is
/// `window` calls.
fn client(registry: &Registry, window: u32) -> ClientWithMiddleware {
    registry
        .configure_retry("prices", |b| {
            b.max_attempts(3).wait_duration(Duration::from_millis(10))
        })
        .unwrap();
    registry
        .configure_circuit_breaker("prices", move |b| {
            b.sliding_window_size(window)
                .minimum_number_of_calls(window)
        })
        .unwrap();
    let layer = ResilienceLayer::builder(registry, "prices")
        .retry()
        .circuit_breaker()
        .classify(HttpClassifier::follow(registry, "prices"))
        .build();
    reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(ResilienceMiddleware::new(layer))
        .build()
}

#[tokio::test(start_paused = true)]
async fn a_post_without_a_key_is_sent_once_and_a_get_is_retried_with_its_body() {
    let seen = Arc::new(Seen::default());
    seen.failing.store(1, Ordering::SeqCst);
    let url = serve(seen.clone()).await;
    let registry = Registry::new();
    let client = client(&registry, 100);

    let response = client.post(&url).body("order=1").send().await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(
        seen.hits.load(Ordering::SeqCst),
        1,
        "sent once, its failure returned"
    );

    seen.failing.store(3, Ordering::SeqCst);
    let response = client.get(&url).body("sku=42").send().await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.text().await.unwrap(), "sku=42");
    assert_eq!(seen.hits.load(Ordering::SeqCst), 4);
    assert_eq!(
        *seen.bodies.lock().unwrap(),
        vec!["order=1", "sku=42", "sku=42", "sku=42"]
    );
    let m = registry.retry("prices").metrics();
    assert_eq!(
        (m.calls(), m.attempts(), m.successful_calls_with_retry()),
        (1, 3, 1)
    );

    // With its key, a POST is retried too.
    seen.failing.store(5, Ordering::SeqCst);
    let response = client
        .post(&url)
        .header("Idempotency-Key", "order-2")
        .body("order=2")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(seen.hits.load(Ordering::SeqCst), 6);
}

#[tokio::test(start_paused = true)]
async fn an_open_breaker_refuses_inside_the_chain_with_a_rejection() {
    let seen = Arc::new(Seen::default());
    seen.failing.store(usize::MAX, Ordering::SeqCst);
    let url = serve(seen.clone()).await;
    let registry = Registry::new();
    let client = client(&registry, 4);
    // Four 503 samples open the breaker (the retry stops at the refusal).
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), StatusCode::SERVICE_UNAVAILABLE);
    let error = client.get(&url).send().await.unwrap_err();
    assert_eq!(
        registry.circuit_breaker("prices").state(),
        BreakerState::Open
    );
    let reqwest_middleware::Error::Middleware(error) = error else {
        panic!("not a middleware error: {error:?}")
    };
    let rejection = error.downcast_ref::<Rejection>().unwrap();
    assert_eq!(rejection.name(), Some("prices"));
    assert_eq!(seen.hits.load(Ordering::SeqCst), 4);
}

#[tokio::test]
async fn reqwests_own_retry_is_judged_by_the_classifiers_statuses_and_resils_replay_rule() {
    use resil_web::http::StatusSet;

    let retrying = |classifier: HttpClassifier| {
        reqwest::Client::builder()
            .retry(classifier.reqwest_retry(reqwest::retry::for_host("127.0.0.1").no_budget()))
            .build()
            .unwrap()
    };
    let seen = Arc::new(Seen::default());
    let url = serve(seen.clone()).await;
    let hits = || seen.hits.load(Ordering::SeqCst);

    // A 503 is a failure: a GET is sent again, and its second answer is
    // the response.
    let client = retrying(HttpClassifier::default());
    seen.failing.store(1, Ordering::SeqCst);
    let response = client.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 200);
    assert_eq!(hits(), 2);

    // A POST is not safe to send twice: its 503 is the answer.
    seen.failing.store(hits() + 1, Ordering::SeqCst);
    let response = client.post(&url).body("order=1").send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(hits(), 3);

    // The classifier's sets decide: with 503 ignored, no GET is retried.
    let ignoring = retrying(
        HttpClassifier::builder()
            .ignore_status(StatusSet::parse("503").unwrap())
            .build(),
    );
    seen.failing.store(hits() + 1, Ordering::SeqCst);
    let response = ignoring.get(&url).send().await.unwrap();
    assert_eq!(response.status(), 503);
    assert_eq!(hits(), 4);
}

#[tokio::test(start_paused = true)]
async fn the_standard_pipeline_in_the_chain_gives_up_on_a_hung_downstream_at_its_total_timeout() {
    use resil::ErrorKind;

    let app = Router::new().route("/hang", any(std::future::pending::<&'static str>));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hang", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let registry = Registry::new();
    let layer = ResilienceLayer::standard_client(&registry, "prices")
        .unwrap()
        .total_timeout(Duration::from_millis(300))
        .build();
    let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
        .with(ResilienceMiddleware::new(layer))
        .build();

    let started = tokio::time::Instant::now();
    let error = client.get(&url).send().await.unwrap_err();
    // The 10 s attempt timeout never came: the 300 ms in all did.
    assert_eq!(started.elapsed(), Duration::from_millis(300));
    let reqwest_middleware::Error::Middleware(error) = error else {
        panic!("not a middleware error: {error:?}")
    };
    let rejection = error.downcast_ref::<Rejection>().unwrap();
    assert_eq!(rejection.kind(), ErrorKind::DeadlineExceeded);
    assert_eq!(rejection.name(), Some("prices"));
}
