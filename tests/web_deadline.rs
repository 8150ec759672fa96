//! Deadlines over the wire, the three-service test: A → B → C over real
//! HTTP (axum servers on 127.0.0.1:0), on paused tokio time moved only by
//! the test. A calls B inside a deadline; B reads it from the request
//! (`DeadlineLayer`), spends some of it, and calls C through a client layer,
//! which sends what is left less its margin; C sees exactly that budget.
//! When C hangs, B stops waiting as its deadline (A's less the margin)
//! passes, and A gets B's 504 before its own deadline. A tonic client
//! (`tonic::client::Grpc`) behind the client layer sends what is left as
//! `grpc-timeout` to tonic's server side over a socket.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::get;
use axum::Router;
use http_body_util::{BodyExt, Full};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use resil::Registry;
use resil_web::tower::client::{Client, ReplayBody};
use resil_web::tower::deadline::DeadlineLayer;
use resil_web::tower::{BreakerPredicates, ResilienceLayer};
use tokio::sync::Notify;
use tokio::time::Instant;
use tower::{Layer, ServiceExt};

type Hyper = HyperClient<HttpConnector, ReplayBody<Full<Bytes>>>;
type Downstream = Client<Hyper, BreakerPredicates>;

/// Keeps paused time still while requests cross real sockets (tokio does
/// not auto-advance paused time while a blocking task runs).
fn hold_the_clock() -> std::sync::mpsc::Sender<()> {
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    tokio::task::spawn_blocking(move || {
        let _ = rx.recv();
    });
    tx
}

fn client(registry: &Registry, name: &str) -> Downstream {
    ResilienceLayer::builder(registry, name)
        .client()
        .build()
        .layer(HyperClient::builder(TokioExecutor::new()).build_http())
}

async fn listen(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("http://{addr}")
}

/// C: records the budget it was sent and the deadline it runs in; answers
/// at once, or never.
#[derive(Default)]
struct C {
    header: Mutex<Option<String>>,
    remaining: Mutex<Option<Duration>>,
    hang: AtomicBool,
    arrived: Notify,
}

async fn c(State(c): State<Arc<C>>, headers: HeaderMap) -> &'static str {
    *c.header.lock().unwrap() = headers
        .get("x-envoy-expected-rq-timeout-ms")
        .map(|v| v.to_str().unwrap().to_owned());
    *c.remaining.lock().unwrap() = resil::deadline::remaining();
    c.arrived.notify_one();
    if c.hang.load(Ordering::SeqCst) {
        std::future::pending::<()>().await;
    }
    "stock: 7"
}

/// B: does 100 ms of its own work, then asks C.
struct B {
    downstream: Downstream,
    c_url: String,
    arrived: Notify,
    /// Set when B's handler is dropped before it finished (it stopped waiting).
    gave_up: Arc<AtomicBool>,
}

struct DroppedUnfinished(Arc<AtomicBool>, bool);

impl Drop for DroppedUnfinished {
    fn drop(&mut self) {
        if !self.1 {
            self.0.store(true, Ordering::SeqCst);
        }
    }
}

async fn b(State(b): State<Arc<B>>) -> (StatusCode, String) {
    let mut guard = DroppedUnfinished(b.gave_up.clone(), false);
    b.arrived.notify_one();
    tokio::time::sleep(Duration::from_millis(100)).await;
    let request = http::Request::get(format!("{}/stock", b.c_url))
        .body(Full::new(Bytes::new()))
        .unwrap();
    let answer = match b.downstream.clone().oneshot(request).await {
        Ok(response) => {
            let status = response.status();
            let body = response.into_body().collect().await.unwrap().to_bytes();
            (status, String::from_utf8(body.to_vec()).unwrap())
        }
        Err(error) => (StatusCode::BAD_GATEWAY, error.to_string()),
    };
    guard.1 = true;
    answer
}

struct Chain {
    registry: Registry,
    b: Arc<B>,
    c: Arc<C>,
    b_url: String,
}

/// A → B → C; C reads its deadline from the request, or (a downstream
/// that ignores deadlines) does not.
async fn chain(c_reads_deadline: bool) -> Chain {
    let registry = Registry::new();
    let c_state = Arc::new(C::default());
    let mut c_app = Router::new().route("/stock", get(c));
    if c_reads_deadline {
        c_app = c_app.layer(DeadlineLayer::new());
    }
    let c_url = listen(c_app.with_state(c_state.clone())).await;
    let b_state = Arc::new(B {
        downstream: client(&registry, "c"),
        c_url,
        arrived: Notify::new(),
        gave_up: Arc::new(AtomicBool::new(false)),
    });
    let b_url = listen(
        Router::new()
            .route("/price", get(b))
            .layer(DeadlineLayer::new())
            .with_state(b_state.clone()),
    )
    .await;
    Chain {
        registry,
        b: b_state,
        c: c_state,
        b_url,
    }
}

/// A's call to B, inside a deadline of `budget`.
fn call_b(
    chain: &Chain,
    budget: Duration,
) -> tokio::task::JoinHandle<(Result<StatusCode, String>, Duration)> {
    let a = client(&chain.registry, "b");
    let request = http::Request::get(format!("{}/price", chain.b_url))
        .body(Full::new(Bytes::new()))
        .unwrap();
    tokio::spawn(async move {
        let started = Instant::now();
        let out = resil::deadline::within(budget, a.oneshot(request)).await;
        let status = match out {
            Ok(Ok(response)) => Ok(response.status()),
            Ok(Err(error)) => Err(error.to_string()),
            Err(spent) => Err(spent.to_string()),
        };
        (status, started.elapsed())
    })
}

#[tokio::test(start_paused = true)]
async fn c_receives_what_is_left_of_a_s_deadline_after_b_s_work_less_each_hop_s_margin() {
    let chain = chain(true).await;
    let _clock = hold_the_clock();
    let a = call_b(&chain, Duration::from_millis(1000));
    chain.b.arrived.notified().await;
    // B received 1000 − 5 ms and now does its 100 ms of work.
    tokio::time::advance(Duration::from_millis(100)).await;
    chain.c.arrived.notified().await;
    // 995 − 100 = 895 ms left in B; C is sent 895 − 5, and runs in it.
    assert_eq!(chain.c.header.lock().unwrap().as_deref(), Some("890"));
    assert_eq!(
        *chain.c.remaining.lock().unwrap(),
        Some(Duration::from_millis(890))
    );
    let (status, took) = a.await.unwrap();
    assert_eq!(status, Ok(StatusCode::OK));
    assert_eq!(took, Duration::from_millis(100));
    assert!(!chain.b.gave_up.load(Ordering::SeqCst));
}

#[tokio::test(start_paused = true)]
async fn b_stops_waiting_for_a_hung_c_when_a_s_deadline_passes() {
    // C ignores deadlines and hangs: only B's own deadline can end the wait.
    let chain = chain(false).await;
    chain.c.hang.store(true, Ordering::SeqCst);
    let _clock = hold_the_clock();
    let a = call_b(&chain, Duration::from_millis(1000));
    chain.b.arrived.notified().await;
    tokio::time::advance(Duration::from_millis(100)).await;
    chain.c.arrived.notified().await;
    // B's deadline is A's less A's margin: 995 ms after it began.
    tokio::time::advance(Duration::from_millis(894)).await;
    assert!(!chain.b.gave_up.load(Ordering::SeqCst), "B still has 1 ms");
    tokio::time::advance(Duration::from_millis(1)).await;
    let (status, took) = a.await.unwrap();
    // B dropped its call to C where it stood and answered 504 in time for A.
    assert_eq!(status, Ok(StatusCode::GATEWAY_TIMEOUT));
    assert_eq!(took, Duration::from_millis(995));
    assert!(chain.b.gave_up.load(Ordering::SeqCst));
    assert_eq!(chain.c.header.lock().unwrap().as_deref(), Some("890"));
}

#[tokio::test(start_paused = true)]
async fn a_deadline_aware_c_gives_up_first_and_its_504_comes_back_up_the_chain() {
    let chain = chain(true).await;
    chain.c.hang.store(true, Ordering::SeqCst);
    let _clock = hold_the_clock();
    let a = call_b(&chain, Duration::from_millis(1000));
    chain.b.arrived.notified().await;
    tokio::time::advance(Duration::from_millis(100)).await;
    chain.c.arrived.notified().await;
    // C's 890 ms end 5 ms before B's, 10 ms before A's.
    tokio::time::advance(Duration::from_millis(890)).await;
    let (status, took) = a.await.unwrap();
    assert_eq!(status, Ok(StatusCode::GATEWAY_TIMEOUT));
    assert_eq!(took, Duration::from_millis(990));
    assert!(
        !chain.b.gave_up.load(Ordering::SeqCst),
        "B got C's answer in time"
    );
}

#[tokio::test(start_paused = true)]
async fn a_request_that_arrives_with_its_budget_spent_is_answered_504_unhandled() {
    let chain = chain(true).await;
    let _clock = hold_the_clock();
    let response = reqwest::Client::new()
        .get(format!("{}/price", chain.b_url))
        .header("grpc-timeout", "0m")
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::GATEWAY_TIMEOUT);
    assert_eq!(response.text().await.unwrap(), "deadline exceeded");
    // B's handler never ran, so C was never asked.
    assert!(chain.c.header.lock().unwrap().is_none());
}

#[tokio::test(start_paused = true)]
async fn a_grpc_request_runs_in_its_grpc_timeout_and_a_spent_one_gets_deadline_exceeded() {
    use tower::service_fn;
    let handler = service_fn(|_: http::Request<()>| async {
        let left = resil::deadline::remaining();
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok::<_, std::convert::Infallible>(http::Response::new(format!("{left:?}")))
    });
    let svc = DeadlineLayer::new().layer(handler);
    let grpc = |timeout: &'static str| {
        http::Request::builder()
            .uri("/inventory.Stock/Get")
            .header("content-type", "application/grpc")
            .header("grpc-timeout", timeout)
            .body(())
            .unwrap()
    };
    // 250 ms: the handler runs in it, and is dropped when it is spent.
    let started = Instant::now();
    let response = svc.clone().oneshot(grpc("250m")).await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_millis(250));
    assert_eq!(
        response.status(),
        StatusCode::OK,
        "gRPC answers in its trailers"
    );
    assert_eq!(response.headers()["grpc-status"], "4");
    assert_eq!(response.headers()["content-type"], "application/grpc");
    // Spent on arrival: answered at once, unhandled.
    let response = svc.clone().oneshot(grpc("0n")).await.unwrap();
    assert_eq!(response.headers()["grpc-status"], "4");
    // A value the spec does not allow is no deadline: the handler runs to its end.
    let started = Instant::now();
    let response = svc.oneshot(grpc("1.5S")).await.unwrap();
    assert_eq!(started.elapsed(), Duration::from_secs(60));
    assert_eq!(response.into_body(), "None");
}

/// A UTF-8 string as a gRPC message: tonic's codec API, without prost.
#[derive(Debug, Clone, Copy, Default)]
struct Utf8;

impl tonic::codec::Codec for Utf8 {
    type Encode = String;
    type Decode = String;
    type Encoder = Utf8;
    type Decoder = Utf8;

    fn encoder(&mut self) -> Utf8 {
        Utf8
    }

    fn decoder(&mut self) -> Utf8 {
        Utf8
    }
}

impl tonic::codec::Encoder for Utf8 {
    type Item = String;
    type Error = tonic::Status;

    fn encode(
        &mut self,
        item: String,
        dst: &mut tonic::codec::EncodeBuf<'_>,
    ) -> Result<(), tonic::Status> {
        bytes::BufMut::put_slice(dst, item.as_bytes());
        Ok(())
    }
}

impl tonic::codec::Decoder for Utf8 {
    type Item = String;
    type Error = tonic::Status;

    fn decode(
        &mut self,
        src: &mut tonic::codec::DecodeBuf<'_>,
    ) -> Result<Option<String>, tonic::Status> {
        let n = bytes::Buf::remaining(src);
        let bytes = bytes::Buf::copy_to_bytes(src, n);
        String::from_utf8(bytes.to_vec())
            .map(Some)
            .map_err(|e| tonic::Status::internal(e.to_string()))
    }
}

/// The gRPC stock service: tonic's server side of a unary call, recording
/// the `grpc-timeout` it was sent and the deadline it runs in.
async fn grpc_stock(
    State(c): State<Arc<C>>,
    request: axum::extract::Request,
) -> http::Response<tonic::body::Body> {
    *c.header.lock().unwrap() = request
        .headers()
        .get("grpc-timeout")
        .map(|v| v.to_str().unwrap().to_owned());
    *c.remaining.lock().unwrap() = resil::deadline::remaining();
    let answer = tower::service_fn(|sku: tonic::Request<String>| async move {
        Ok::<_, tonic::Status>(tonic::Response::new(format!("{}: 7", sku.into_inner())))
    });
    let mut response = tonic::server::Grpc::new(Utf8).unary(answer, request).await;
    // HTTP/1.1 sends only the trailers the response declares.
    response.headers_mut().insert(
        http::header::TRAILER,
        http::HeaderValue::from_static("grpc-status, grpc-message"),
    );
    response
}

#[tokio::test(start_paused = true)]
async fn a_tonic_client_behind_the_layer_sends_what_is_left_of_the_deadline_as_grpc_timeout() {
    let c = Arc::new(C::default());
    let app = Router::new()
        .route("/inventory.Stock/Get", axum::routing::post(grpc_stock))
        .layer(DeadlineLayer::new())
        .with_state(c.clone());
    let url = listen(app).await;
    let registry = Registry::new();
    // tonic's client over the client layer over hyper, in HTTP/1.1: the
    // workspace builds neither tonic's transport nor hyper's HTTP/2, so
    // the request tonic marks HTTP/2 goes out as HTTP/1.1, with the same
    // gRPC framing, headers and trailers.
    let hyper =
        HyperClient::builder(TokioExecutor::new()).build_http::<ReplayBody<tonic::body::Body>>();
    let http1 = tower::util::MapRequest::new(hyper, |mut r: http::Request<_>| {
        *r.version_mut() = http::Version::HTTP_11;
        r
    });
    let channel = ResilienceLayer::builder(&registry, "stock")
        .client()
        .build()
        .layer(http1);
    let mut grpc = tonic::client::Grpc::with_origin(channel, url.parse().unwrap());

    let _clock = hold_the_clock();
    let answer = resil::deadline::within(Duration::from_millis(800), async {
        grpc.ready().await.unwrap();
        grpc.unary(
            tonic::Request::new("sku-42".to_owned()),
            "/inventory.Stock/Get".parse().unwrap(),
            Utf8,
        )
        .await
    })
    .await
    .unwrap()
    .unwrap();
    assert_eq!(answer.into_inner(), "sku-42: 7");
    // 800 ms less the 5 ms margin, in gRPC's own unit syntax; the service
    // runs in exactly that.
    assert_eq!(c.header.lock().unwrap().as_deref(), Some("795000u"));
    assert_eq!(
        *c.remaining.lock().unwrap(),
        Some(Duration::from_millis(795))
    );

    // 3 ms left is within the margin: the call is not sent at all.
    *c.header.lock().unwrap() = None;
    let spent = resil::deadline::within(Duration::from_millis(3), async {
        grpc.ready().await.unwrap();
        grpc.unary::<String, String, _>(
            tonic::Request::new("sku-42".to_owned()),
            "/inventory.Stock/Get".parse().unwrap(),
            Utf8,
        )
        .await
    })
    .await
    .unwrap();
    let status = spent.unwrap_err();
    assert!(status.message().contains("deadline"), "{status:?}");
    assert_eq!(*c.header.lock().unwrap(), None, "nothing arrived");
}
