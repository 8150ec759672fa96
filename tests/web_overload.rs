//! The criticality layer and the inbound guard over a real socket (axum):
//! a header and a route set the class every primitive the handler calls
//! admits by; the guard answers a refused request 503 with `Retry-After`
//! before the handler runs, as a layer in front of every route and as an
//! extractor.

use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::routing::get;
use axum::Router;
use resil::bulkhead::{AdaptiveBulkhead, AdaptiveBulkheadConfig};
use resil::clock::ManualClock;
use resil::inbound::{InboundGuard, InboundGuardConfig, Overload};
use resil::Criticality;
use resil_web::tower::{Admitted, CriticalityLayer, InboundGuardLayer, RequestCriticality};
use tokio::sync::Notify;

async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

async fn class(RequestCriticality(c): RequestCriticality) -> String {
    // The extractor and the task's context agree.
    assert_eq!(c, Criticality::current());
    c.to_string()
}

#[tokio::test]
async fn a_header_or_a_route_sets_the_class_the_handler_and_its_calls_see() {
    let app = Router::new()
        .route("/class", get(class))
        .layer(CriticalityLayer::from_default_header().at_most(Criticality::Critical))
        .merge(
            Router::new()
                .route("/prefetch", get(class))
                .layer(CriticalityLayer::fixed(Criticality::Sheddable)),
        );
    let base = serve(app).await;
    let client = reqwest::Client::new();
    let get = |path: &str, header: Option<&str>| {
        let mut req = client.get(format!("{base}{path}"));
        if let Some(h) = header {
            req = req.header("x-criticality", h);
        }
        async move { req.send().await.unwrap().text().await.unwrap() }
    };
    assert_eq!(
        get("/class", Some("sheddable_plus")).await,
        "SHEDDABLE_PLUS"
    );
    assert_eq!(get("/class", None).await, "CRITICAL");
    assert_eq!(get("/class", Some("urgent")).await, "CRITICAL");
    // Capped: a caller cannot claim CRITICAL_PLUS.
    assert_eq!(get("/class", Some("CRITICAL_PLUS")).await, "CRITICAL");
    assert_eq!(get("/prefetch", Some("CRITICAL")).await, "SHEDDABLE");
}

#[tokio::test]
async fn the_class_from_the_header_decides_admission_in_the_handler_s_bulkhead() {
    // A bulkhead of 2: SHEDDABLE gets in only while none is busy (50 %).
    let bulkhead = AdaptiveBulkhead::with_clock(
        "checkout",
        AdaptiveBulkheadConfig::builder()
            .initial_limit(2)
            .build()
            .unwrap(),
        ManualClock::new(),
    );
    let held = bulkhead
        .try_acquire_permission_as(Criticality::Critical)
        .unwrap();
    async fn work(State(b): State<AdaptiveBulkhead>) -> &'static str {
        match b.call_async(async { Ok::<_, ()>(()) }).await {
            Ok(()) => "admitted",
            Err(_) => "refused",
        }
    }
    let app = Router::new()
        .route("/work", get(work))
        .with_state(bulkhead.clone())
        .layer(CriticalityLayer::from_default_header());
    let base = serve(app).await;
    let client = reqwest::Client::new();
    let send = |class: &'static str| {
        let req = client
            .get(format!("{base}/work"))
            .header("x-criticality", class);
        async move { req.send().await.unwrap().text().await.unwrap() }
    };
    assert_eq!(send("SHEDDABLE").await, "refused");
    assert_eq!(send("CRITICAL").await, "admitted");
    let m = bulkhead.metrics();
    assert_eq!(m.rejected_calls_of(Criticality::Sheddable), 1);
    assert_eq!(m.rejected_calls_of(Criticality::Critical), 0);
    drop(held);
}

#[tokio::test]
async fn the_guard_in_front_of_every_route_answers_503_with_retry_after() {
    let guard = InboundGuard::with_clock(
        InboundGuardConfig::builder()
            .max_in_flight(1)
            .retry_after(Duration::from_millis(1500))
            .build()
            .unwrap(),
        ManualClock::new(),
    );
    let release = Arc::new(Notify::new());
    let entered = Arc::new(Notify::new());
    let (r, e) = (Arc::clone(&release), Arc::clone(&entered));
    let app = Router::new()
        .route(
            "/slow",
            get(move || {
                let (r, e) = (Arc::clone(&r), Arc::clone(&e));
                async move {
                    e.notify_one();
                    r.notified().await;
                    "done"
                }
            }),
        )
        .route("/fast", get(|| async { "fast" }))
        .layer(InboundGuardLayer::new(guard.clone()));
    let base = serve(app).await;
    let client = reqwest::Client::new();
    let slow = tokio::spawn(client.get(format!("{base}/slow")).send());
    entered.notified().await;
    let refused = client.get(format!("{base}/fast")).send().await.unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "2");
    release.notify_one();
    assert_eq!(slow.await.unwrap().unwrap().text().await.unwrap(), "done");
    let ok = client.get(format!("{base}/fast")).send().await.unwrap();
    assert_eq!(ok.text().await.unwrap(), "fast");
    let m = guard.metrics();
    assert_eq!((m.refused_for(Overload::InFlight), m.in_flight), (1, 0));
}

#[tokio::test]
async fn the_admitted_extractor_guards_one_handler() {
    let guard = InboundGuard::with_clock(
        InboundGuardConfig::builder()
            .max_in_flight(1)
            .build()
            .unwrap(),
        ManualClock::new(),
    );
    async fn handler(_: Admitted) -> &'static str {
        "admitted"
    }
    let app = Router::new()
        .route("/guarded", get(handler))
        .with_state(guard.clone());
    let base = serve(app).await;
    let client = reqwest::Client::new();
    assert_eq!(
        client
            .get(format!("{base}/guarded"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap(),
        "admitted"
    );
    let held = guard.try_enter().unwrap();
    let refused = client.get(format!("{base}/guarded")).send().await.unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "1");
    drop(held);
    assert_eq!(guard.metrics().in_flight, 0);
}

#[tokio::test]
async fn a_refusal_further_in_is_no_completion_for_the_guard() {
    let clock = ManualClock::new();
    let guard = InboundGuard::with_clock(InboundGuardConfig::default(), clock.clone());
    let app = Router::new()
        .route(
            "/shed",
            get(|| async { (axum::http::StatusCode::SERVICE_UNAVAILABLE, "shed") }),
        )
        .route("/ok", get(|| async { "ok" }))
        .layer(InboundGuardLayer::new(guard.clone()));
    let base = serve(app).await;
    let client = reqwest::Client::new();
    assert_eq!(
        client
            .get(format!("{base}/shed"))
            .send()
            .await
            .unwrap()
            .status(),
        503
    );
    assert_eq!(guard.metrics().completed_rps, 0.0);
    assert_eq!(
        client
            .get(format!("{base}/ok"))
            .send()
            .await
            .unwrap()
            .status(),
        200
    );
    assert!(guard.metrics().completed_rps > 0.0);
}
