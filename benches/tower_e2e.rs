//! End to end over real sockets: an axum route protected by the tower layer
//! (circuit breaker + bulkhead, HTTP classification, refusal responses),
//! whose handler makes a downstream call protected by the registry's
//! breaker (`#[resil::circuit_breaker]`), against the same route with the
//! same downstream call unprotected, in the same run.
//!
//! Traffic: one keep-alive HTTP/1.1 connection on loopback sending GETs back
//! to back (a client pool's steady state, one request in flight), the
//! server on a 1-worker tokio runtime, every request permitted (the
//! breaker closed, the bulkhead far from full: the traffic a healthy
//! service has, and the one where protection is pure overhead). The
//! downstream is an in-process client held in the router's state, as a
//! handler holds its HTTP or database client, not a second socket: a real
//! downstream's round trip would only dilute the ratio. (The state matters
//! for what axum itself costs: axum clones a route's service for every
//! request, into a new box unless it is zero-sized, so a stateless router
//! would make the unprotected route the one case that allocates nothing
//! there and charge the layer's 8-byte pointer with that allocation.) The socket round
//! trip (about 20 µs) dominates, which is the point: the figure is how much
//! of a real request the protection is.
//!
//! Routes, all on the same router and connection:
//! * `/unprotected`: the handler calls the downstream fn without an
//!   attribute;
//! * `/protected`: the same handler calling the protected downstream, with
//!   the layer applied to the handler (`Handler::layer`);
//! * `/protected-handler`: the same handler calling the protected
//!   downstream, wrapped with `ResilienceLayer::handler` (the same stack
//!   as an axum `Handler`, without axum's tower plumbing for a layered
//!   handler);
//! * `/identity`: the unprotected handler behind tower's `Identity` layer
//!   through `Handler::layer`: what axum's layering costs with a layer
//!   that does nothing (the part of `/protected`'s gap that is axum's);
//! * `/protected-route-layer`: the same as `/protected`, with the layer
//!   applied through axum's `MethodRouter::route_layer`;
//! * `/identity-route-layer`: `Identity` through `route_layer` (which boxes
//!   the layered route a second time: a clone of the boxed service and a
//!   boxed future per request, axum's);
//! * `/control`: the unprotected route again, under another path: its
//!   ratio to `/unprotected` is the bench's own noise and bias (an A/A
//!   test), the yardstick for every other ratio.
//!
//! How the ratios are computed (the `latency:` lines): a round is ten
//! cycles, and a cycle sends one block of 100 requests to each route in
//! turn (A B C …; the order rotates and reverses from cycle to cycle,
//! so every route takes every position and follows every other equally
//! often), timing each round trip and each block. Per round, each route's
//! p50 and p99 over its 1,000 round trips and its throughput (those
//! requests over its blocks' wall time) are divided by `/unprotected`'s of
//! the same round; the figures are the medians of those per-round ratios
//! over 401 rounds (`TOWER_E2E_ROUNDS` sets another count;
//! `TOWER_E2E_BLOCK` another block size, the cycles of a round then adding
//! up to 1,000 requests a route), with their interquartile range. A cycle
//! is about 15 ms and a round about 150 ms on a quiet machine: a burst of
//! another process's work (a compile on this shared 2-core machine) falls
//! on the blocks of every route of the rounds it hits, and the median
//! leaves the worst rounds out. Blocks
//! rather than single requests alternate because a service serves its own
//! route over and over: alternating request by request would make each
//! route run with the others' code in the caches, penalising the largest,
//! which no real service sees. Targets, `/protected` against
//! `/unprotected` (and `/protected-handler` against it): p50 within 1 %,
//! p99 within 2 %, throughput at least 0.99×.
//!
//! The in-process phase (`in process:` lines, first) calls the same router
//! without a socket, in the same interleaved rounds, and prints each
//! route's cost a request minus `/unprotected`'s: what the protection costs
//! the server itself, split further by two routes timed only there
//! (`/layer-only`: the layer around the unprotected handler;
//! `/attribute-only`: the protected downstream without the layer;
//! `/breaker-only`, `/bulkhead-only`: a layer of one aspect;
//! `/empty-layer`: a layer of no aspect, its fixed cost; `/map-response`:
//! tower's `MapResponseLayer` with an identity closure, what the least
//! wrapping layer costs; `/empty-handler`, `/breaker-handler`,
//! `/bulkhead-handler`: `ResilienceLayer::handler` with no aspect, or one,
//! around the unprotected handler).
//! With `TOWER_E2E_COLD=1` (`cargo bench --bench tower_e2e -- in_process`)
//! the in-process phase evicts the L1 and L2 caches before every request
//! (it writes one word in every line of a 2 MiB buffer, untimed), as a
//! server's kernel and socket work between two requests partly do: its
//! deltas are what each route costs a server whose caches went cold, the
//! reason the socket gap is larger than the warm in-process one.
//! Criterion's own timing of each route over the socket comes last, for
//! reference: it times the routes one after the other, so its
//! ratios carry the machine's drift and are not the bars' figures.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::State;
use axum::handler::Handler;
use axum::routing::get;
use axum::Router;
use criterion::{criterion_group, criterion_main, Criterion};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;
use resil::Registry;
use resil_web::http::HttpClassifier;
use resil_web::tower::{Builder, RefusalResponses, ResilienceLayer};
use tower::layer::util::Identity;

mod support;

/// The downstream's client, in process: it counts its calls.
#[derive(Default)]
struct Downstream {
    calls: AtomicU64,
}

impl Downstream {
    async fn price(&self) -> Result<&'static str, std::io::Error> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        Ok("42")
    }
}

/// The router's state: the downstream's client, shared.
#[derive(Clone, Default)]
struct App {
    downstream: Arc<Downstream>,
}

/// The downstream call, unprotected.
async fn downstream_bare(client: &Downstream) -> Result<&'static str, std::io::Error> {
    client.price().await
}

/// The same downstream call, protected by an attribute (the process-wide
/// registry's `e2e-downstream` breaker).
#[resil::circuit_breaker(name = "e2e-downstream")]
async fn downstream(client: &Downstream) -> Result<&'static str, std::io::Error> {
    client.price().await
}

async fn unprotected(State(app): State<App>) -> Result<&'static str, axum::http::StatusCode> {
    downstream_bare(&app.downstream)
        .await
        .map_err(|_| axum::http::StatusCode::SERVICE_UNAVAILABLE)
}

async fn protected(State(app): State<App>) -> Result<&'static str, axum::http::StatusCode> {
    downstream(&app.downstream)
        .await
        .map_err(|_| axum::http::StatusCode::SERVICE_UNAVAILABLE)
}

/// Routes timed in process only, to split `/protected`'s cost (see the
/// header).
const IN_PROCESS_ONLY: [&str; 9] = [
    "/empty-handler",
    "/breaker-handler",
    "/bulkhead-handler",
    "/layer-only",
    "/attribute-only",
    "/map-response",
    "/breaker-only",
    "/bulkhead-only",
    "/empty-layer",
];

/// The routes, the baseline first.
const ROUTES: [&str; 7] = [
    "/unprotected",
    "/protected",
    "/protected-handler",
    "/identity",
    "/protected-route-layer",
    "/identity-route-layer",
    "/control",
];

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

/// The number of rounds: `TOWER_E2E_ROUNDS`, else `default`. On a shared
/// machine a round's ratio moves by a few percent; the median of a few
/// hundred rounds moves by a few tenths of one.
fn rounds(default: usize) -> usize {
    std::env::var("TOWER_E2E_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

struct Latency {
    p50: Duration,
    p99: Duration,
    /// Requests a second over the block's wall time.
    throughput: f64,
}

/// One block's figures: its round trips and its wall time.
fn latency((mut samples, wall): (Vec<Duration>, Duration)) -> Latency {
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q).round() as usize];
    Latency {
        p50: at(0.50),
        p99: at(0.99),
        throughput: samples.len() as f64 / wall.as_secs_f64(),
    }
}

/// The latency phase: `rounds` rounds of `cycles` cycles of one block of
/// `per_block` requests to each route; prints every round and the median
/// ratios.
fn latency_phase(client: &tokio::runtime::Runtime, sender: &mut Sender) {
    // `cargo test --all-targets` runs benches once without `--bench`: a
    // token phase there, the real one under `cargo bench`.
    let bench = std::env::args().any(|a| a == "--bench");
    let (rounds, cycles, per_block, warm) = if bench {
        {
            let per_block: usize = std::env::var("TOWER_E2E_BLOCK")
                .ok()
                .and_then(|v| v.parse().ok())
                .unwrap_or(100);
            (rounds(401), 1_000 / per_block, per_block, 1_000)
        }
    } else {
        (1, 2, 20, 10)
    };
    let n = ROUTES.len();
    // ratios[route][0..3]: p50, p99, throughput against `/unprotected`.
    let mut ratios = vec![[Vec::new(), Vec::new(), Vec::new()]; n];
    client.block_on(async {
        for path in ROUTES {
            for _ in 0..warm {
                round_trip(sender, path).await;
            }
        }
        for round in 1..=rounds {
            let mut samples = vec![Vec::with_capacity(cycles * per_block); n];
            let mut walls = vec![Duration::ZERO; n];
            for cycle in 0..cycles {
                // Each route's block in turn; the order rotates and reverses
                // from cycle to cycle, so every route takes every position
                // and follows every other equally often.
                let turn = round * cycles + cycle;
                let mut order: Vec<usize> = (0..n).map(|k| (k + turn / 2) % n).collect();
                if turn % 2 == 1 {
                    order.reverse();
                }
                for r in order {
                    let start = Instant::now();
                    for _ in 0..per_block {
                        samples[r].push(round_trip(sender, ROUTES[r]).await);
                    }
                    walls[r] += start.elapsed();
                }
            }
            let stats: Vec<Latency> = samples.into_iter().zip(walls).map(latency).collect();
            let base = &stats[0];
            let mut line = format!(
                "latency: round {round:2}: {} p50 {:.2} µs p99 {:.2} µs {:.0}/s",
                ROUTES[0],
                base.p50.as_secs_f64() * 1e6,
                base.p99.as_secs_f64() * 1e6,
                base.throughput,
            );
            for r in 1..n {
                let s = &stats[r];
                let r50 = s.p50.as_secs_f64() / base.p50.as_secs_f64();
                let r99 = s.p99.as_secs_f64() / base.p99.as_secs_f64();
                let rt = s.throughput / base.throughput;
                line += &format!(" | {} ×{r50:.4} ×{r99:.4} ×{rt:.4}", ROUTES[r]);
                ratios[r][0].push(r50);
                ratios[r][1].push(r99);
                ratios[r][2].push(rt);
            }
            println!("{line}");
        }
    });
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let spread = |v: &Vec<f64>| (v[v.len() / 4], v[v.len() * 3 / 4]);
    for r in 1..n {
        let [p50, p99, tput] = &mut ratios[r];
        let (m50, m99, mt) = (median(p50), median(p99), median(tput));
        let (q50, q99, qt) = (spread(p50), spread(p99), spread(tput));
        println!(
            "latency: median of {rounds} rounds: {} / {}: p50 {m50:.4} (IQR {:.4}–{:.4}), \
             p99 {m99:.4} (IQR {:.4}–{:.4}), throughput {mt:.4} (IQR {:.4}–{:.4})",
            ROUTES[r], ROUTES[0], q50.0, q50.1, q99.0, q99.1, qt.0, qt.1,
        );
    }
}

/// The same router called in process (no socket, no HTTP parsing): what
/// each route costs the server itself. Blocks of requests to each route in
/// turn, in rounds ordered as the latency phase's, each block's mean time a
/// request; per round, each route's mean minus `/unprotected`'s; the
/// medians of those differences (`in process:` lines, in ns).
fn in_process(app: &Router) {
    use tower::ServiceExt;
    let bench = std::env::args().any(|a| a == "--bench");
    let cold = std::env::var_os("TOWER_E2E_COLD").is_some();
    let (rounds, per_block) = match (bench, cold) {
        (true, false) => (rounds(201), 2_000),
        (true, true) => (rounds(201), 100),
        (false, _) => (1, 10),
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut paths: Vec<&str> = ROUTES.into_iter().chain(IN_PROCESS_ONLY).collect();
    // For a profiler: `TOWER_E2E_ONLY=/layer-only perf record … -- --bench
    // in_process` runs that one route alone (and prints its own time).
    if let Ok(only) = std::env::var("TOWER_E2E_ONLY") {
        paths.retain(|p| *p == only);
        assert!(!paths.is_empty(), "TOWER_E2E_ONLY names no route: {only}");
    }
    let n = paths.len();
    // `TOWER_E2E_COLD=1`: before each request, write one word in every
    // cache line of a 2 MiB buffer, evicting the L1 and L2 caches as a
    // server's kernel and I/O between two requests partly do, and time the
    // requests alone. The deltas are then what each route costs a server
    // whose caches went cold.
    let mut sweep = match std::env::var_os("TOWER_E2E_COLD") {
        Some(_) => vec![0u64; (2 << 20) / 8],
        None => Vec::new(),
    };
    let mut block = |path: &'static str, count: usize| {
        rt.block_on(async {
            let mut spent = Duration::ZERO;
            for _ in 0..count {
                for word in sweep.iter_mut().step_by(8) {
                    *word = word.wrapping_add(1);
                }
                std::hint::black_box(&sweep);
                let start = Instant::now();
                let req = axum::http::Request::get(path).body(Body::empty()).unwrap();
                let response = app.clone().oneshot(req).await.unwrap();
                assert_eq!(response.status(), 200);
                spent += start.elapsed();
            }
            spent.as_secs_f64() * 1e9 / count as f64
        })
    };
    for path in &paths {
        block(path, per_block);
    }
    let mut deltas = vec![Vec::new(); n];
    let mut bases = Vec::new();
    for round in 1..=rounds {
        let mut order: Vec<usize> = (0..n).map(|k| (k + round) % n).collect();
        if round % 2 == 1 {
            order.reverse();
        }
        let mut means = vec![0.0; n];
        for r in order {
            means[r] = block(paths[r], per_block);
        }
        bases.push(means[0]);
        for r in 1..n {
            deltas[r].push(means[r] - means[0]);
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "in process: median of {rounds} rounds: {} {:.0} ns a request",
        paths[0],
        median(&mut bases)
    );
    for r in 1..n {
        let d = &mut deltas[r];
        let m = median(d);
        println!(
            "in process: median of {rounds} rounds: {} {m:+.0} ns (IQR {:+.0} to {:+.0})",
            paths[r],
            d[d.len() / 4],
            d[d.len() * 3 / 4],
        );
    }
}

fn end_to_end(c: &mut Criterion) {
    let only_in_process = std::env::args().any(|a| a.contains("in_process"));
    let server = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let registry: &'static Registry = resil::registry();
    // A layer of the chosen aspects, classifying and answering as a web
    // service does.
    let aspects = |name: &str, pick: fn(Builder<'static>) -> Builder<'static>| {
        pick(ResilienceLayer::builder(registry, name))
            .classify(HttpClassifier::default())
            .respond(RefusalResponses::<Body>::new())
            .build()
    };
    let layer = aspects("e2e-route", |b| b.circuit_breaker().bulkhead());
    let app = Router::new()
        .route("/unprotected", get(unprotected))
        .route("/protected", get(protected.layer(layer)))
        .route("/protected-handler", get(layer.handler(protected)))
        .route("/identity", get(unprotected.layer(Identity::new())))
        .route("/protected-route-layer", get(protected).route_layer(layer))
        .route(
            "/identity-route-layer",
            get(unprotected).route_layer(Identity::new()),
        )
        .route("/control", get(unprotected))
        .route("/layer-only", get(unprotected.layer(layer)))
        .route("/attribute-only", get(protected))
        .route(
            "/map-response",
            get(unprotected.layer(tower::util::MapResponseLayer::new(
                |r: axum::response::Response| r,
            ))),
        )
        .route(
            "/breaker-only",
            get(unprotected.layer(aspects("e2e-b", |b| b.circuit_breaker()))),
        )
        .route(
            "/bulkhead-only",
            get(unprotected.layer(aspects("e2e-h", |b| b.bulkhead()))),
        )
        .route(
            "/empty-layer",
            get(unprotected.layer(aspects("e2e-e", |b| b))),
        )
        .route(
            "/empty-handler",
            get(aspects("e2e-e", |b| b).handler(unprotected)),
        )
        .route(
            "/breaker-handler",
            get(aspects("e2e-b", |b| b.circuit_breaker()).handler(unprotected)),
        )
        .route(
            "/bulkhead-handler",
            get(aspects("e2e-h", |b| b.bulkhead()).handler(unprotected)),
        )
        .with_state(App::default());
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
    in_process(&app_for_in_process);
    if only_in_process {
        return;
    }
    latency_phase(&client, &mut sender);
    let mut g = c.benchmark_group("tower_end_to_end");
    for path in ROUTES {
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
