//! End to end over real sockets: an axum route protected by the tower layer
//! (circuit breaker + bulkhead, HTTP classification, refusal responses),
//! whose handler makes a downstream call protected by the registry's
//! breaker, against the same route unprotected, in the same run.
//!
//! Traffic: one keep-alive HTTP/1.1 connection on loopback sending GETs back
//! to back (a client pool's steady state); the server on a 1-worker tokio
//! runtime. The socket round trip (tens of µs) dominates, which is the
//! point: the figure is how much of a real request the protection is. The
//! machine is shared and loopback latency is noisy: compare the two lines
//! of one run.

use std::time::{Duration, Instant};

use axum::body::Body;
use axum::routing::get;
use axum::Router;
use criterion::{criterion_group, criterion_main, Criterion};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use resil::Registry;
use resil_web::http::HttpClassifier;
use resil_web::tower::{RefusalResponses, ResilienceLayer};

mod support;

static REGISTRY: std::sync::LazyLock<Registry> = std::sync::LazyLock::new(Registry::new);

async fn unprotected() -> &'static str {
    "42"
}

async fn protected() -> Result<&'static str, axum::http::StatusCode> {
    // The downstream call, protected as an attribute would protect it.
    REGISTRY
        .circuit_breaker("e2e-downstream")
        .call_async(async { Ok::<_, std::io::Error>("42") })
        .await
        .map_err(|_| axum::http::StatusCode::SERVICE_UNAVAILABLE)
}

fn end_to_end(c: &mut Criterion) {
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let layer = ResilienceLayer::builder(&REGISTRY, "e2e-route")
        .circuit_breaker()
        .bulkhead()
        .classify(HttpClassifier::default())
        .respond(RefusalResponses::<Body>::new())
        .build();
    let app = Router::new()
        .route("/protected", get(protected).route_layer(layer))
        .route("/unprotected", get(unprotected));
    let listener = server
        .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
        .unwrap();
    let addr = listener.local_addr().unwrap();
    server.spawn(async move { axum::serve(listener, app).await.unwrap() });

    let client = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut sender = client.block_on(async {
        let stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.set_nodelay(true).unwrap();
        let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .unwrap();
        tokio::spawn(conn);
        sender
    });
    let mut g = c.benchmark_group("tower_end_to_end");
    g.measurement_time(Duration::from_secs(4));
    for path in ["/unprotected", "/protected"] {
        g.bench_function(path, |b| {
            b.iter_custom(|iters| {
                client.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let req = hyper::Request::get(path)
                            .header("host", "bench")
                            .body(Empty::<Bytes>::new())
                            .unwrap();
                        let response = sender.send_request(req).await.unwrap();
                        assert_eq!(response.status(), 200);
                        let _ = response.into_body().collect().await.unwrap();
                    }
                    start.elapsed()
                })
            })
        });
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = end_to_end
}
criterion_main!(benches);
