//! The tower layer's throttler aspect: outermost, every answered request is
//! one request to it, HTTP 429 and 503 are the downstream's refusals, a
//! local refusal never calls the service, and an inner aspect's refusal (an
//! open breaker) counts nothing.

use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use http::{Request, Response, StatusCode};
use resil::{ErrorKind, Registry};
use resil_web::http::HttpClassifier;
use resil_web::tower::{RefusalResponses, ResilienceLayer};
use tower::{service_fn, Layer, Service, ServiceExt};

/// A service answering `status` and counting its calls.
fn answering(
    status: StatusCode,
    calls: Arc<AtomicU64>,
) -> impl Service<Request<()>, Response = Response<()>, Error = Infallible> + Clone {
    service_fn(move |_: Request<()>| {
        calls.fetch_add(1, Ordering::SeqCst);
        async move { Ok::<_, Infallible>(Response::builder().status(status).body(()).unwrap()) }
    })
}

#[tokio::test]
async fn a_downstream_answering_503_is_throttled_locally_and_every_request_is_counted() {
    let registry = Registry::new();
    let layer = ResilienceLayer::builder(&registry, "search")
        .throttler()
        .classify(HttpClassifier::default())
        .build();
    let calls = Arc::new(AtomicU64::new(0));
    let mut svc = layer.layer(answering(StatusCode::OK, calls.clone()));
    for _ in 0..10 {
        let r = svc.ready().await.unwrap().call(Request::new(())).await;
        assert_eq!(r.unwrap().status(), StatusCode::OK);
    }
    let throttler = registry.throttler("search");
    let m = throttler.metrics();
    assert_eq!((m.requests(), m.accepts()), (10, 10), "200 is accepted");

    let mut busy = layer.layer(answering(StatusCode::SERVICE_UNAVAILABLE, calls.clone()));
    let mut refused_locally = 0;
    for _ in 0..200 {
        match busy.ready().await.unwrap().call(Request::new(())).await {
            Ok(r) => assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE),
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Throttled);
                assert_eq!(e.name(), Some("search"));
                refused_locally += 1;
            }
        }
    }
    let m = throttler.metrics();
    // Every request counted once, whoever refused it; 503s are not accepts;
    // a local refusal never reached the service.
    assert_eq!((m.requests(), m.accepts()), (210, 10));
    assert_eq!(m.not_permitted_calls(), refused_locally);
    assert_eq!(calls.load(Ordering::SeqCst), 210 - refused_locally);
    assert!(m.rejection_probability() > 0.0);
}

#[tokio::test]
async fn an_open_breaker_inside_the_throttler_counts_nothing_for_it() {
    let registry = Registry::new();
    registry
        .circuit_breaker("search")
        .transition_to_forced_open()
        .unwrap();
    let layer = ResilienceLayer::builder(&registry, "search")
        .circuit_breaker()
        .throttler()
        .classify(HttpClassifier::default())
        .build();
    let calls = Arc::new(AtomicU64::new(0));
    let mut svc = layer.layer(answering(StatusCode::OK, calls.clone()));
    for _ in 0..20 {
        let e = svc
            .ready()
            .await
            .unwrap()
            .call(Request::new(()))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::CallNotPermitted);
    }
    assert_eq!(calls.load(Ordering::SeqCst), 0);
    let m = registry.throttler("search").metrics();
    assert_eq!((m.requests(), m.not_permitted_calls()), (0, 0));
    assert_eq!(
        layer.aspects().collect::<Vec<_>>(),
        [
            resil::options::Aspect::Throttler,
            resil::options::Aspect::CircuitBreaker
        ]
    );
}

#[tokio::test]
async fn a_server_answers_a_throttled_request_503_with_retry_after_and_a_rate_limited_one_429() {
    // A service behind both a throttler and a rate limiter, answering 503
    // itself: the throttler soon sheds locally, and its refusal is told
    // apart from the downstream's 503 (a body naming the throttler and a
    // `Retry-After`) and from the rate limiter's 429.
    let registry = Registry::new();
    registry
        .configure_rate_limiter("search", |b| {
            b.limit_for_period(1_000)
                .limit_refresh_period(std::time::Duration::from_secs(3_600))
                .timeout_duration(std::time::Duration::ZERO)
        })
        .unwrap();
    let layer = ResilienceLayer::builder(&registry, "search")
        .throttler()
        .rate_limiter()
        .classify(HttpClassifier::default())
        .respond(RefusalResponses::<String>::new())
        .build();
    let calls = Arc::new(AtomicU64::new(0));
    let counted = calls.clone();
    let mut svc = layer.layer(service_fn(move |_: Request<()>| {
        counted.fetch_add(1, Ordering::SeqCst);
        async move {
            Ok::<_, Infallible>(
                Response::builder()
                    .status(StatusCode::SERVICE_UNAVAILABLE)
                    .body(String::new())
                    .unwrap(),
            )
        }
    }));
    let mut throttled = 0;
    for _ in 0..200 {
        let r = svc
            .ready()
            .await
            .unwrap()
            .call(Request::new(()))
            .await
            .unwrap();
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        if r.body().is_empty() {
            assert!(
                r.headers().get("retry-after").is_none(),
                "the downstream's own 503"
            );
            continue;
        }
        throttled += 1;
        assert_eq!(r.headers()["retry-after"], "1");
        assert!(
            r.body()
                .starts_with("throttler 'search' shed the call locally"),
            "{}",
            r.body()
        );
    }
    assert!(throttled > 0);
    assert_eq!(calls.load(Ordering::SeqCst), 200 - throttled);
    assert_eq!(
        registry.throttler("search").metrics().not_permitted_calls(),
        throttled
    );

    // The same layer's rate limiter, spent: a 429, whatever the throttler
    // would have decided.
    registry.throttler("search").reset();
    let limiter = registry.rate_limiter("search");
    while limiter.try_acquire_permission(1) {}
    let r = svc
        .ready()
        .await
        .unwrap()
        .call(Request::new(()))
        .await
        .unwrap();
    assert_eq!(r.status(), StatusCode::TOO_MANY_REQUESTS);
}
