//! The client layer's aspects per request, side by side in one run with the
//! attributes doing the same over the same inner service, and with tower's
//! own `Retry` (a `Policy` that clones the request); and (group
//! `tower_layer_aspects`) the aspects `ResilienceLayer` gained in issue 31,
//! the adaptive bulkhead and chaos (switched off, as it is outside drills),
//! beside the same attributes around the same call.
//!
//! # The traffic this stands for
//!
//! A healthy downstream called by a client stack: nearly every request
//! succeeds on its first attempt, so the retry and the hedging only have to
//! stay out of the way (a real retry waits for hundreds of milliseconds,
//! which dwarfs any per-request cost). Each request is a `GET` with a
//! 16-byte body (what the layer buffers to replay it), built afresh per
//! request for every contender, and the inner service answers `200` at once
//! (a cache hit on the other side of a hop that costs nothing here): the
//! cost measured is the middleware's alone. The `POST` contender is a
//! request the layer refuses to replay (no `Idempotency-Key`): it goes
//! straight through. The deadline contender runs inside
//! `resil::deadline::within`, so the layer writes the budget header. The
//! standard pipeline (`ResilienceLayer::standard_client`) adds a breaker,
//! an attempt timeout, a bulkhead and the total timeout's deadline scope to
//! the retry.
//!
//! # What is measured
//!
//! `poll_ready` + `call` + one poll with a no-op waker, which completes the
//! request (every contender is ready at once). The layer boxes each
//! request's future and buffers the body (one `Bytes`); the attributes wrap
//! an `async fn` that sends a request it builds from shared parts (the
//! user's own replay code); tower's `Retry` clones the request through its
//! policy. Allocations per request are printed before timing.
//!
//! # What distorts it
//!
//! The counting allocator adds a relaxed atomic per allocation; the shared
//! 2-core machine adds noise (other engineers compiled during the runs
//! reported): compare ratios within one run, not absolute times.

use std::future::{ready, Future, Ready};
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use http::{Method, Request, Response};
use http_body_util::Full;
use resil_web::tower::client::ReplayBody;
use resil_web::tower::ResilienceLayer;
use tower::{service_fn, Layer, Service};

mod support;

#[global_allocator]
static ALLOC: support::CountingAllocator = support::CountingAllocator;

const BODY: &[u8; 16] = b"sku=42&region=eu";

type Answer = Result<Response<()>, std::io::Error>;

/// The downstream: answers 200 at once, whatever the body.
fn inner<B>(
) -> impl Service<Request<B>, Response = Response<()>, Error = std::io::Error, Future = Ready<Answer>>
       + Clone {
    service_fn(|_: Request<B>| ready(Ok(Response::new(()))))
}

fn get(method: Method) -> Request<Full<Bytes>> {
    Request::builder()
        .method(method)
        .uri("http://prices/sku")
        .body(Full::new(Bytes::from_static(BODY)))
        .unwrap()
}

#[inline]
fn poll_once<F: Future>(fut: F) -> F::Output {
    match pin!(fut).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => unreachable!("every request measured here completes on its first poll"),
    }
}

/// One request through `svc`: ready, call, one poll.
#[inline]
fn request<S: Service<Request<Full<Bytes>>>>(svc: &mut S, method: Method) -> bool {
    let mut cx = Context::from_waker(Waker::noop());
    let ready = svc.poll_ready(&mut cx).is_ready();
    ready & poll_once(svc.call(get(method))).is_ok()
}

fn contender(
    g: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    mut one: impl FnMut() -> bool,
) {
    let per = support::allocations_per_call(10_000, || assert!(one(), "{name}: a request failed"));
    support::report_allocations(name, per);
    g.bench_function(name, |b| b.iter(&mut one));
}

// The attributes' contenders: the same downstream call, replayable by
// construction (the fn rebuilds its request from the shared parts).
#[resil::retry(name = "bench-client")]
async fn retried(
    parts: &http::request::Parts,
    body: &Bytes,
) -> Result<Response<()>, std::io::Error> {
    let req = Request::from_parts(parts.clone(), Full::new(body.clone()));
    inner().call(req).await
}

#[resil::hedge(name = "bench-client")]
async fn hedged(
    parts: &http::request::Parts,
    body: &Bytes,
) -> Result<Response<()>, std::io::Error> {
    let req = Request::from_parts(parts.clone(), Full::new(body.clone()));
    inner().call(req).await
}

/// The attribute's caller buffers the request once, as the layer does.
fn by_attribute<F: Future<Output = Result<Response<()>, E>>, E>(
    f: impl Fn(http::request::Parts, Bytes) -> F,
) -> bool {
    let (parts, _) = get(Method::GET).into_parts();
    poll_once(f(parts, Bytes::from_static(BODY))).is_ok()
}

/// tower's `Retry`: the policy clones the request (its body is `Clone`).
#[derive(Clone)]
struct Attempts(usize);

impl<Res, E> tower::retry::Policy<Request<Full<Bytes>>, Res, E> for Attempts {
    type Future = Ready<()>;

    fn retry(
        &mut self,
        _: &mut Request<Full<Bytes>>,
        result: &mut Result<Res, E>,
    ) -> Option<Ready<()>> {
        match result {
            Err(_) if self.0 > 1 => {
                self.0 -= 1;
                Some(ready(()))
            }
            _ => None,
        }
    }

    fn clone_request(&mut self, req: &Request<Full<Bytes>>) -> Option<Request<Full<Bytes>>> {
        let mut copy = Request::new(req.body().clone());
        *copy.method_mut() = req.method().clone();
        *copy.uri_mut() = req.uri().clone();
        *copy.headers_mut() = req.headers().clone();
        Some(copy)
    }
}

fn client(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let _enter = rt.enter();
    let registry = resil::registry();
    registry
        .configure_hedging("bench-client", |b| b.delay(Duration::from_millis(50)))
        .unwrap();
    let layer =
        |f: fn(resil_web::tower::ClientBuilder<'_>) -> resil_web::tower::ClientBuilder<'_>| {
            f(ResilienceLayer::builder(registry, "bench-client").client()).build()
        };

    let mut g = c.benchmark_group("tower_client");
    let mut bare = inner::<Full<Bytes>>();
    contender(&mut g, "bare service", || request(&mut bare, Method::GET));

    let mut svc = layer(|b| b.retry()).layer(inner::<ReplayBody<Full<Bytes>>>());
    contender(&mut g, "retry/resil layer", || {
        request(&mut svc, Method::GET)
    });
    contender(&mut g, "retry/resil attribute", || {
        by_attribute(|p, b| async move { retried(&p, &b).await })
    });
    let mut tower_retry = tower::retry::RetryLayer::new(Attempts(3)).layer(inner::<Full<Bytes>>());
    contender(&mut g, "retry/tower Retry", || {
        request(&mut tower_retry, Method::GET)
    });

    let mut svc = layer(|b| b.hedge()).layer(inner::<ReplayBody<Full<Bytes>>>());
    contender(&mut g, "hedge/resil layer", || {
        request(&mut svc, Method::GET)
    });
    contender(&mut g, "hedge/resil attribute", || {
        by_attribute(|p, b| async move { hedged(&p, &b).await })
    });

    // Microsoft's standard pipeline: a total timeout, the retry, the
    // breaker, an attempt timeout and the concurrency limit.
    let mut svc = ResilienceLayer::standard_client(registry, "bench-standard")
        .unwrap()
        .build()
        .layer(inner::<ReplayBody<Full<Bytes>>>());
    contender(&mut g, "standard pipeline/resil layer", || {
        request(&mut svc, Method::GET)
    });

    let mut svc = layer(|b| b.retry()).layer(inner::<ReplayBody<Full<Bytes>>>());
    contender(&mut g, "retry/resil layer, POST sent once", || {
        request(&mut svc, Method::POST)
    });

    let mut svc = layer(|b| b).layer(inner::<ReplayBody<Full<Bytes>>>());
    contender(&mut g, "deadline header/resil layer", || {
        poll_once(resil::deadline::within(Duration::from_secs(5), async {
            request(&mut svc, Method::GET)
        }))
        .unwrap_or(false)
    });
    contender(&mut g, "deadline scope alone (baseline)", || {
        poll_once(resil::deadline::within(Duration::from_secs(5), async {
            request(&mut bare, Method::GET)
        }))
        .unwrap_or(false)
    });
    g.finish();
}

#[resil::bulkhead(name = "bench-aspects", kind = "adaptive")]
async fn adaptive(x: u64) -> Result<u64, std::io::Error> {
    Ok(x)
}

#[resil::chaos(name = "bench-aspects")]
async fn chaos_off(x: u64) -> Result<u64, std::io::Error> {
    Ok(x)
}

/// The adaptive bulkhead and chaos as layer aspects and as attributes,
/// around a `u64` service answering at once (the traffic of `benches/tower.rs`:
/// requests whose cost is the middleware's alone; the bulkhead's limit far
/// above the load, chaos off).
fn aspects(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let _enter = rt.enter();
    let registry = resil::registry();
    registry
        .configure_adaptive_bulkhead("bench-aspects", |b| b.initial_limit(1_000).max_limit(1_000))
        .unwrap();
    let service = || service_fn(|x: u64| ready(Ok::<_, std::io::Error>(x)));
    let one = |svc: &mut dyn FnMut(u64) -> bool, x: &mut u64| {
        *x = x.wrapping_add(1);
        svc(*x)
    };
    let mut g = c.benchmark_group("tower_layer_aspects");
    let mut x = 0u64;

    let mut bare = service();
    contender(&mut g, "bare service", || {
        one(&mut |x| poll_once(bare.call(x)).is_ok(), &mut x)
    });
    let mut svc = ResilienceLayer::builder(registry, "bench-aspects")
        .adaptive_bulkhead()
        .build()
        .layer(service());
    contender(&mut g, "adaptive_bulkhead/resil layer", || {
        one(
            &mut |x| {
                let mut cx = Context::from_waker(Waker::noop());
                svc.poll_ready(&mut cx).is_ready() && poll_once(svc.call(x)).is_ok()
            },
            &mut x,
        )
    });
    contender(&mut g, "adaptive_bulkhead/resil attribute", || {
        one(&mut |x| poll_once(adaptive(x)).is_ok(), &mut x)
    });
    let mut svc = ResilienceLayer::builder(registry, "bench-aspects")
        .chaos()
        .build()
        .layer(service());
    contender(&mut g, "chaos off/resil layer", || {
        one(
            &mut |x| {
                let mut cx = Context::from_waker(Waker::noop());
                svc.poll_ready(&mut cx).is_ready() && poll_once(svc.call(x)).is_ok()
            },
            &mut x,
        )
    });
    contender(&mut g, "chaos off/resil attribute", || {
        one(&mut |x| poll_once(chaos_off(x)).is_ok(), &mut x)
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = client, aspects
}
criterion_main!(benches);
