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
//!
//! Before criterion's timing, a latency phase sends the two routes'
//! requests interleaved (one protected, one unprotected, over the same
//! connection, so drift and noise fall on both alike), timing each request,
//! in several rounds; it prints each round's p50, p99 and throughput for
//! both routes and their ratios (`latency: …` lines), then the median
//! ratio over the rounds. Targets: p50 within 1 %, p99 within 2 %,
//! throughput at least 0.99×.

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

async fn unprotected() -> &'static str {
    "42"
}

/// The downstream call, protected by an attribute (the process-wide
/// registry's `e2e-downstream` breaker).
#[resil::circuit_breaker(name = "e2e-downstream")]
async fn downstream() -> Result<&'static str, std::io::Error> {
    Ok("42")
}

async fn protected() -> Result<&'static str, axum::http::StatusCode> {
    downstream()
        .await
        .map_err(|_| axum::http::StatusCode::SERVICE_UNAVAILABLE)
}

type Sender = hyper::client::conn::http1::SendRequest<Empty<Bytes>>;

/// One request's round trip.
async fn round_trip(sender: &mut Sender, path: &'static str) -> Duration {
    let start = Instant::now();
    let req = hyper::Request::get(path)
        .header("host", "bench")
        .body(Empty::<Bytes>::new())
        .unwrap();
    let response = sender.send_request(req).await.unwrap();
    assert_eq!(response.status(), 200);
    let _ = response.into_body().collect().await.unwrap();
    start.elapsed()
}

struct Latency {
    p50: Duration,
    p99: Duration,
    /// Requests a second, from the sum of the round trips.
    throughput: f64,
}

fn latency(mut samples: Vec<Duration>) -> Latency {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    let total: Duration = samples.iter().sum();
    Latency {
        p50: at(0.50),
        p99: at(0.99),
        throughput: samples.len() as f64 / total.as_secs_f64(),
    }
}

/// The latency phase: `rounds` rounds of `per_round` requests to each
/// route, interleaved; prints every round and the median ratios.
fn latency_phase(client: &tokio::runtime::Runtime, sender: &mut Sender) {
    // `cargo test --all-targets` runs benches once without `--bench`: a
    // token phase there, the real one under `cargo bench`.
    let bench = std::env::args().any(|a| a == "--bench");
    let (rounds, per_round, warm) = if bench {
        (5, 20_000, 2_000)
    } else {
        (1, 100, 10)
    };
    let mut ratios = (Vec::new(), Vec::new(), Vec::new());
    client.block_on(async {
        // Warm both routes (the layer's and the attribute's instances).
        for _ in 0..warm {
            round_trip(sender, "/unprotected").await;
            round_trip(sender, "/protected").await;
        }
        for round in 1..=rounds {
            let (mut bare, mut guarded) = (Vec::new(), Vec::new());
            for i in 0..per_round {
                // Alternate which goes first, so neither always follows the other.
                if i % 2 == 0 {
                    bare.push(round_trip(sender, "/unprotected").await);
                    guarded.push(round_trip(sender, "/protected").await);
                } else {
                    guarded.push(round_trip(sender, "/protected").await);
                    bare.push(round_trip(sender, "/unprotected").await);
                }
            }
            let (b, g) = (latency(bare), latency(guarded));
            let r50 = g.p50.as_secs_f64() / b.p50.as_secs_f64();
            let r99 = g.p99.as_secs_f64() / b.p99.as_secs_f64();
            let rt = g.throughput / b.throughput;
            println!(
                "latency: round {round}: unprotected p50 {:.1} µs p99 {:.1} µs {:.0}/s | \
                 protected p50 {:.1} µs p99 {:.1} µs {:.0}/s | ratio p50 {r50:.4} p99 {r99:.4} \
                 throughput {rt:.4}",
                b.p50.as_secs_f64() * 1e6,
                b.p99.as_secs_f64() * 1e6,
                b.throughput,
                g.p50.as_secs_f64() * 1e6,
                g.p99.as_secs_f64() * 1e6,
                g.throughput,
            );
            ratios.0.push(r50);
            ratios.1.push(r99);
            ratios.2.push(rt);
        }
    });
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "latency: median over {rounds} rounds: protected/unprotected p50 {:.4}, p99 {:.4}, \
         throughput {:.4}",
        median(&mut ratios.0),
        median(&mut ratios.1),
        median(&mut ratios.2),
    );
}

/// The same router called in process (no socket, no HTTP parsing): what the
/// protection costs the server per request, next to the round trip above.
fn in_process(c: &mut Criterion, app: &Router) {
    use tower::ServiceExt;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut g = c.benchmark_group("tower_end_to_end_in_process");
    for path in ["/unprotected", "/protected"] {
        g.bench_function(path, |b| {
            b.iter(|| {
                let req = axum::http::Request::get(path).body(Body::empty()).unwrap();
                let response = rt.block_on(app.clone().oneshot(req)).unwrap();
                response.status()
            })
        });
    }
    g.finish();
}

fn end_to_end(c: &mut Criterion) {
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let registry: &'static Registry = resil::registry();
    let layer = ResilienceLayer::builder(registry, "e2e-route")
        .circuit_breaker()
        .bulkhead()
        .classify(HttpClassifier::default())
        .respond(RefusalResponses::<Body>::new())
        .build();
    let app = Router::new()
        .route("/protected", get(protected).route_layer(layer))
        .route("/unprotected", get(unprotected));
    let app_for_in_process = app.clone();
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
    in_process(c, &app_for_in_process);
    latency_phase(&client, &mut sender);
    let mut g = c.benchmark_group("tower_end_to_end");
    g.measurement_time(Duration::from_secs(4));
    for path in ["/unprotected", "/protected"] {
        g.bench_function(path, |b| {
            b.iter_custom(|iters| {
                client.block_on(async {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        total += round_trip(&mut sender, path).await;
                    }
                    total
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
