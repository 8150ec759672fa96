//! HTTP and gRPC classification with the attributes' instances: a reqwest
//! call against a real axum downstream, its statuses and transport errors
//! classified, `Retry-After` driving the breaker's open wait and the
//! retry's wait on a manual clock; tonic `Status` codes likewise.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use resil::circuit_breaker::{Outcome, State as BreakerState};
use resil::clock::ManualClock;
use resil::{Error, IntervalFunction, Registry};
use resil_web::grpc::GrpcClassifier;
use resil_web::http::{HttpClassifier, HttpError, StatusSet};

/// A downstream answering the status in `statuses[call]` (the last one
/// repeated), with `Retry-After: 2` on 429/503.
async fn downstream(statuses: Vec<u16>) -> (String, Arc<AtomicUsize>) {
    let calls = Arc::new(AtomicUsize::new(0));
    let state = (Arc::new(statuses), calls.clone());
    let app = Router::new()
        .route(
            "/price",
            get(
                |State((statuses, calls)): State<(Arc<Vec<u16>>, Arc<AtomicUsize>)>| async move {
                    let n = calls.fetch_add(1, Ordering::SeqCst);
                    let code = statuses[n.min(statuses.len() - 1)];
                    let mut headers = axum::http::HeaderMap::new();
                    if code == 429 || code == 503 {
                        headers.insert("retry-after", "2".parse().unwrap());
                    }
                    (StatusCode::from_u16(code).unwrap(), headers, "42")
                },
            ),
        )
        .with_state(state);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (format!("http://{addr}/price"), calls)
}

fn registry(clock: &ManualClock, classifier: &HttpClassifier) -> Registry {
    let registry = Registry::builder().clock(clock.clone()).build();
    let c = classifier.clone();
    registry
        .configure_circuit_breaker("price", move |b| {
            c.circuit_breaker(b.sliding_window_size(10).minimum_number_of_calls(10))
        })
        .unwrap();
    let c = classifier.clone();
    registry
        .configure_retry("price", move |b| {
            c.retry::<reqwest::Response>(
                b.max_attempts(3),
                IntervalFunction::fixed(Duration::from_millis(100)),
            )
        })
        .unwrap();
    registry
}

async fn price(
    registry: &Registry,
    classifier: &HttpClassifier,
    client: &reqwest::Client,
    url: &str,
) -> Result<String, Error<HttpError>> {
    let breaker = registry.circuit_breaker("price");
    let retry = registry.retry("price");
    let response = retry
        .call_async_nested(|| {
            breaker.call_async(async { classifier.check_reqwest(client.get(url).send().await) })
        })
        .await?;
    Ok(response.text().await.unwrap())
}

#[tokio::test]
async fn a_503_with_retry_after_sets_the_retry_wait_and_then_the_answer_comes() {
    let clock = ManualClock::new();
    let classifier = HttpClassifier::default();
    let registry = registry(&clock, &classifier);
    let (url, calls) = downstream(vec![500, 503, 200]).await;
    let client = reqwest::Client::new();
    let out = price(&registry, &classifier, &client, &url).await;
    assert_eq!(out.unwrap(), "42");
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    // 100 ms after the 500 (the interval), just past 2 s after the 503 (its
    // Retry-After, for which the 503 also opened the breaker: the third
    // attempt finds it half-open: its success is the first of the probes).
    assert_eq!(clock.elapsed(), Duration::from_millis(2_101));
    let breaker = registry.circuit_breaker("price");
    assert_eq!(breaker.state(), BreakerState::HalfOpen);
    assert_eq!(breaker.metrics().successful_calls(), 1);
}

#[tokio::test]
async fn a_429_with_retry_after_opens_the_breaker_for_exactly_that_long() {
    let clock = ManualClock::new();
    let classifier = HttpClassifier::default();
    let registry = Registry::builder().clock(clock.clone()).build();
    let c = classifier.clone();
    registry
        .configure_circuit_breaker("price", move |b| c.circuit_breaker(b))
        .unwrap();
    let (url, _) = downstream(vec![429]).await;
    let client = reqwest::Client::new();
    let breaker = registry.circuit_breaker("price");
    let out = breaker
        .call_async(async { classifier.check_reqwest(client.get(&url).send().await) })
        .await;
    let Err(Error::Call(e)) = out else {
        panic!("expected the 429 back")
    };
    assert_eq!(
        (e.status(), e.retry_after()),
        (
            Some(reqwest::StatusCode::TOO_MANY_REQUESTS),
            Some(Duration::from_secs(2))
        )
    );
    assert_eq!(breaker.state(), BreakerState::Open);
    assert_eq!(breaker.remaining_open_wait(), Some(Duration::from_secs(2)));
    clock.advance(Duration::from_millis(1_999));
    assert!(breaker.try_acquire_permission().is_err());
    clock.advance(Duration::from_millis(2));
    assert!(
        breaker.try_acquire_permission().is_ok(),
        "half-open after exactly the Retry-After"
    );
}

#[tokio::test]
async fn a_business_403_is_ignored_by_the_breaker_and_not_retried() {
    let clock = ManualClock::new();
    let classifier = HttpClassifier::builder()
        .success_status(StatusSet::parse("200").unwrap())
        .ignore_status(StatusSet::parse("403").unwrap())
        .build();
    let registry = registry(&clock, &classifier);
    let (url, calls) = downstream(vec![403]).await;
    let out = price(&registry, &classifier, &reqwest::Client::new(), &url).await;
    let Err(Error::Call(e)) = out else {
        panic!("expected the 403 back")
    };
    assert!(e.is_ignored());
    assert_eq!(calls.load(Ordering::SeqCst), 1, "not retried");
    let m = registry.circuit_breaker("price").metrics();
    assert_eq!((m.ignored_calls(), m.failed_calls()), (1, 0));
}

#[tokio::test]
async fn a_refused_connection_is_a_transport_failure() {
    let clock = ManualClock::new();
    let classifier = HttpClassifier::default();
    let registry = registry(&clock, &classifier);
    // A port nobody listens on any more.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/price", listener.local_addr().unwrap());
    drop(listener);
    let out = price(&registry, &classifier, &reqwest::Client::new(), &url).await;
    let Err(Error::Call(HttpError::Transport(_))) = out else {
        panic!("expected a transport error, got {out:?}")
    };
    assert_eq!(
        registry.circuit_breaker("price").metrics().failed_calls(),
        3,
        "every attempt failed"
    );
}

#[test]
fn grpc_codes_are_failures_ignored_or_successes_and_a_pushback_opens_the_breaker() {
    use tonic::{Code, Status};
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let grpc = GrpcClassifier::default();
    registry
        .configure_circuit_breaker("stock", move |b| grpc.circuit_breaker(b))
        .unwrap();
    let breaker = registry.circuit_breaker("stock");
    for status in [
        Status::not_found("sku"),
        Status::invalid_argument("x"),
        Status::permission_denied("no"),
    ] {
        let _ = breaker.call(|| Err::<(), _>(status));
    }
    let _ = breaker.call(|| Err::<(), _>(Status::unavailable("down")));
    let _ = breaker.call(|| Err::<(), _>(Status::deadline_exceeded("slow")));
    let m = breaker.metrics();
    assert_eq!((m.ignored_calls(), m.failed_calls()), (3, 2));

    let mut pushed = Status::resource_exhausted("quota");
    pushed
        .metadata_mut()
        .insert("grpc-retry-pushback-ms", "1500".parse().unwrap());
    let _ = breaker.call(|| Err::<(), _>(pushed));
    assert_eq!(breaker.state(), BreakerState::Open);
    assert_eq!(
        breaker.remaining_open_wait(),
        Some(Duration::from_millis(1_500))
    );
    assert_eq!(
        GrpcClassifier::default().outcome(Code::Ok),
        Outcome::Success
    );
}

#[tokio::test]
async fn a_grpc_trailers_only_error_through_the_tower_layer_is_classified_by_its_code() {
    use resil_web::tower::ResilienceLayer;
    use tower::{service_fn, Layer, ServiceExt};
    let registry = Registry::new();
    let layer = ResilienceLayer::builder(&registry, "grpc")
        .circuit_breaker()
        .classify(GrpcClassifier::default())
        .build();
    let svc = layer.layer(service_fn(|code: &'static str| async move {
        let mut r = http::Response::new(());
        r.headers_mut().insert("grpc-status", code.parse().unwrap());
        Ok::<_, std::convert::Infallible>(r)
    }));
    for code in ["0", "5", "14", "4"] {
        // OK, NOT_FOUND, UNAVAILABLE, DEADLINE_EXCEEDED
        svc.clone().oneshot(code).await.unwrap();
    }
    let m = registry.circuit_breaker("grpc").metrics();
    assert_eq!(
        (m.successful_calls(), m.ignored_calls(), m.failed_calls()),
        (1, 1, 2)
    );
}

#[test]
fn a_config_files_status_keys_build_the_classifier_and_a_bad_one_names_its_key() {
    use resil::config::FileConfig;

    // Beside resil's own keys, which the loader still checks.
    let file = FileConfig::from_yaml_str(
        "resilience4j.circuitbreaker.instances.inventory.sliding-window-size: 10\n\
         resilience4j.retry.instances.prices.max-attempts: 2\n\
         resil:\n  http:\n    instances:\n      inventory:\n        \
         record-status: [500-599, 408]\n        ignore-status: [400-499]\n      \
         prices:\n        success-status: \"200\"\n        ignore-status: [403]\n",
    )
    .unwrap();
    let c = HttpClassifier::from_file(&file, "inventory").unwrap();
    let outcome = |c: &HttpClassifier, s: u16| c.outcome(http::StatusCode::from_u16(s).unwrap());
    assert_eq!(outcome(&c, 503), Outcome::Failure);
    assert_eq!(outcome(&c, 404), Outcome::Ignored);
    // `ignore-status` is checked first: 408 is in 400-499.
    assert_eq!(outcome(&c, 408), Outcome::Ignored);
    assert_eq!(outcome(&c, 200), Outcome::Success);
    let p = HttpClassifier::from_file(&file, "prices").unwrap();
    assert_eq!(outcome(&p, 200), Outcome::Success);
    assert_eq!(outcome(&p, 403), Outcome::Ignored);
    assert_eq!(outcome(&p, 404), Outcome::Failure);
    assert!(HttpClassifier::from_file(&file, "nobody").is_none());

    let toml = FileConfig::from_toml_str(
        "[resilience4j.retry.instances.inventory]\n\
         [resil.http.instances.inventory]\nrecord-status = [\"500-599\", 408]\n",
    )
    .unwrap();
    let t = HttpClassifier::from_file(&toml, "inventory").unwrap();
    assert_eq!(outcome(&t, 408), Outcome::Failure);
    assert_eq!(outcome(&t, 404), Outcome::Success);

    // A bad set is the loader's error now, with its line: the file does not
    // load at all.
    let e = FileConfig::from_yaml_str(
        "resilience4j.retry.instances.inventory: {}\n\
         resil.http.instances.inventory.record-status: [500-599, 60x]\n",
    )
    .unwrap_err();
    assert_eq!(
        e.problems()[0].path(),
        Some("resil.http.instances.inventory.record-status")
    );
    assert_eq!(
        e.to_string(),
        "1 problem in the configuration:\n  line 2: invalid \
         `resil.http.instances.inventory.record-status`: invalid status `60x` in \
         `500-599, 60x`: expected a status code (100-999) or a range of them such as `500-599`"
    );
}

/// The file a registry reloads: the breaker `inventory`, and its classifier's
/// keys (`resil.http.instances.inventory`, YAML lines indented by 8).
fn inventory_file(http: &str) -> String {
    format!(
        "resilience4j:\n  circuitbreaker:\n    instances:\n      inventory:\n        \
         sliding-window-size: 10\n        minimum-number-of-calls: 10\n\
         resil:\n  http:\n    instances:\n      inventory:\n{http}"
    )
}

/// One answer with `status`, judged by `classifier` inside `breaker`.
fn answer(
    breaker: &resil::registry_crate::Handle<resil::circuit_breaker::CircuitBreaker>,
    classifier: &HttpClassifier,
    status: u16,
) {
    let response = http::Response::builder().status(status).body(()).unwrap();
    let _ = breaker.call(|| classifier.check(response).map(|_| ()));
}

// Reproduces issue 27 (item 5): the classifier was read once, beside the
// registry, and a reload left it as it was.
#[test]
fn a_reload_changes_the_classifier_that_call_sites_and_layers_already_hold() {
    use resil::config::FileConfig;

    let registry = Registry::new();
    let file = |http: &str| FileConfig::from_yaml_str(&inventory_file(http)).unwrap();
    registry
        .reload(file("        record-status: [400-599]\n"))
        .unwrap();
    let classifier = HttpClassifier::follow(&registry, "inventory");
    // What a tower layer or a call site keeps: a clone, taken before the reload.
    let held = classifier.clone();
    let c = classifier.clone();
    registry
        .configure_circuit_breaker("inventory", move |b| c.circuit_breaker(b))
        .unwrap();
    let breaker = registry.circuit_breaker("inventory");
    assert_eq!(held.outcome(StatusCode::NOT_FOUND), Outcome::Failure);
    answer(&breaker, &held, 404);
    assert_eq!(breaker.metrics().failed_calls(), 1);

    let report = registry
        .reload(file(
            "        record-status: [400-599]\n        ignore-status: [404]\n",
        ))
        .unwrap();
    // The breaker's own settings did not change: it is the same instance.
    assert!(report.replaced.is_empty(), "{report:?}");
    assert_eq!(held.outcome(StatusCode::NOT_FOUND), Outcome::Ignored);
    assert_eq!(held.outcome(StatusCode::CONFLICT), Outcome::Failure);
    answer(&breaker, &held, 404);
    let m = breaker.metrics();
    assert_eq!((m.failed_calls(), m.ignored_calls()), (1, 1));

    // A file without the entry: back to the builder's sets (the defaults).
    registry
        .reload(
            FileConfig::from_yaml_str("resilience4j.circuitbreaker.instances.inventory: {}\n")
                .unwrap(),
        )
        .unwrap();
    assert_eq!(held.outcome(StatusCode::NOT_FOUND), Outcome::Success);
    assert_eq!(
        held.outcome(StatusCode::SERVICE_UNAVAILABLE),
        Outcome::Failure
    );
}

#[test]
fn a_refused_reload_leaves_the_classifier_as_it_was() {
    use resil::config::FileConfig;
    use resil::registry_crate::ReloadError;

    let registry = Registry::new();
    registry
        .reload(
            FileConfig::from_yaml_str(&inventory_file("        ignore-status: [404]\n")).unwrap(),
        )
        .unwrap();
    let classifier = HttpClassifier::follow(&registry, "inventory");
    assert_eq!(classifier.outcome(StatusCode::NOT_FOUND), Outcome::Ignored);

    // A typo in resil.http: the file is refused as a whole, with the line and
    // a suggestion, and nothing changes.
    let path = std::env::temp_dir().join(format!("resil-web-http-{}.yaml", std::process::id()));
    std::fs::write(
        &path,
        inventory_file("        record-status: [404]\n        ignore-statuses: [409]\n"),
    )
    .unwrap();
    let refused = registry.reload_file_with_env(&path, [("", ""); 0]);
    std::fs::remove_file(&path).unwrap();
    let Err(ReloadError::File(e)) = refused else {
        panic!("the reload must be refused: {refused:?}");
    };
    assert_eq!(e.problems().len(), 1, "{e}");
    assert!(
        e.to_string().contains(
            "line 12: unknown key `resil.http.instances.inventory.ignore-statuses`; did you mean \
             `ignore-status`?"
        ),
        "{e}"
    );
    assert_eq!(classifier.outcome(StatusCode::NOT_FOUND), Outcome::Ignored);

    // A valid resil.http beside a problem elsewhere (an error class nobody
    // registered): refused as a whole too.
    let other = FileConfig::from_yaml_str(
        "resilience4j.retry.instances.inventory.retry-errors: [no_such_class]\n\
         resil.http.instances.inventory.record-status: [404]\n",
    )
    .unwrap();
    assert!(matches!(registry.reload(other), Err(ReloadError::File(_))));
    assert_eq!(classifier.outcome(StatusCode::NOT_FOUND), Outcome::Ignored);
}
