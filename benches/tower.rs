//! The tower layer's overhead per request, side by side in one run with
//! tower's own `ConcurrencyLimit`, `RateLimit` and `Timeout` and with
//! tower-resilience's layers, each around the same trivial inner service
//! (`service_fn` answering a ready `Ok`), so the layers' cost dominates.
//!
//! Traffic: one task issuing requests back to back, each `poll_ready` +
//! `call` + one poll, which completes it (a cache hit, a health check, a
//! rejected request: the requests whose cost is the middleware's alone).
//! Every limit is set far above the load, so nothing waits or is refused;
//! the time limiters never fire (a ready future needs no timer in resil;
//! tower's `Timeout` builds a `Sleep` per request regardless).
//!
//! Allocations per request are counted (and printed as
//! `allocations per call: …`) before timing: tower-resilience boxes every
//! response future, resil and tower do not. The machine is shared: compare
//! the ratios within one run, not absolute times across runs.

use std::future::{ready, Future, Ready};
use std::pin::pin;
use std::task::{Context, Waker};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use resil::Registry;
use resil_web::tower::ResilienceLayer;
use tower::limit::{ConcurrencyLimitLayer, RateLimitLayer};
use tower::timeout::TimeoutLayer;
use tower::{service_fn, Layer, Service, ServiceBuilder};

mod support;

#[global_allocator]
static ALLOC: support::CountingAllocator = support::CountingAllocator;

type Inner = tower::util::ServiceFn<fn(u64) -> Ready<Result<u64, std::io::Error>>>;

fn inner() -> Inner {
    service_fn(|x: u64| ready(Ok(x)))
}

/// One request: ready, call, poll to completion (the inner future is ready,
/// so one poll does it, for every contender).
#[inline]
fn request<S: Service<u64>>(svc: &mut S, x: u64) -> bool {
    let mut cx = Context::from_waker(Waker::noop());
    let ready = svc.poll_ready(&mut cx).is_ready();
    let fut = pin!(svc.call(x));
    ready & fut.poll(&mut cx).is_ready()
}

fn contender<S: Service<u64>>(
    g: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    mut svc: S,
) {
    let mut x = 0u64;
    let per = support::allocations_per_call(10_000, || {
        x += 1;
        assert!(
            request(&mut svc, x),
            "{name}: a request did not complete at once"
        );
    });
    support::report_allocations(name, per);
    g.bench_function(name, |b| {
        b.iter(|| {
            x = x.wrapping_add(1);
            request(&mut svc, x)
        })
    });
}

fn registry() -> Registry {
    let registry = Registry::new();
    registry
        .configure_rate_limiter("bench", |b| {
            b.limit_for_period(1_000_000_000)
                .limit_refresh_period(Duration::from_secs(1))
        })
        .unwrap();
    registry
        .configure_bulkhead("bench", |b| b.max_concurrent_calls(1_000))
        .unwrap();
    registry
        .configure_time_limiter("bench", |b| b.timeout_duration(Duration::from_secs(10)))
        .unwrap();
    registry
}

fn layers(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    // Timers (tower's `Timeout`, tower-resilience) need a runtime context.
    let _enter = rt.enter();
    let registry = registry();
    let resil = |f: fn(resil_web::tower::Builder<'_>) -> resil_web::tower::Builder<'_>| {
        f(ResilienceLayer::builder(&registry, "bench")).build()
    };
    let trs_bulkhead = || {
        tower_resilience::bulkhead::BulkheadLayer::builder()
            .max_concurrent_calls(1_000)
            .build()
            .unwrap()
    };
    let trs_limiter = || {
        tower_resilience::ratelimiter::RateLimiterLayer::builder()
            .limit_for_period(1_000_000_000)
            .refresh_period(Duration::from_secs(1))
            .build()
            .unwrap()
    };
    let trs_timeout = || {
        tower_resilience::timelimiter::TimeLimiterLayer::builder()
            .timeout_duration(Duration::from_secs(10))
            .build()
    };
    let trs_breaker = || {
        tower_resilience::circuitbreaker::CircuitBreakerLayer::builder()
            .build()
            .unwrap()
    };

    let mut g = c.benchmark_group("tower_layer");
    contender(&mut g, "bare service", inner());

    contender(
        &mut g,
        "bulkhead/resil",
        resil(|b| b.bulkhead()).layer(inner()),
    );
    contender(
        &mut g,
        "bulkhead/tower ConcurrencyLimit",
        ConcurrencyLimitLayer::new(1_000).layer(inner()),
    );
    contender(
        &mut g,
        "bulkhead/tower-resilience",
        trs_bulkhead().layer(inner()),
    );

    contender(
        &mut g,
        "rate_limiter/resil",
        resil(|b| b.rate_limiter()).layer(inner()),
    );
    contender(
        &mut g,
        "rate_limiter/tower RateLimit",
        RateLimitLayer::new(1_000_000_000, Duration::from_secs(1)).layer(inner()),
    );
    contender(
        &mut g,
        "rate_limiter/tower-resilience",
        trs_limiter().layer(inner()),
    );

    contender(
        &mut g,
        "time_limiter/resil",
        resil(|b| b.time_limiter()).layer(inner()),
    );
    contender(
        &mut g,
        "time_limiter/tower Timeout",
        TimeoutLayer::new(Duration::from_secs(10)).layer(inner()),
    );
    contender(
        &mut g,
        "time_limiter/tower-resilience",
        trs_timeout().layer(inner()),
    );

    contender(
        &mut g,
        "circuit_breaker/resil",
        resil(|b| b.circuit_breaker()).layer(inner()),
    );
    contender(
        &mut g,
        "circuit_breaker/tower-resilience",
        trs_breaker().layer(inner()),
    );

    contender(
        &mut g,
        "stack/resil (breaker, limiter, timeout, bulkhead)",
        resil(|b| b.circuit_breaker().rate_limiter().time_limiter().bulkhead()).layer(inner()),
    );
    contender(
        &mut g,
        "stack/tower (RateLimit, Timeout, ConcurrencyLimit)",
        ServiceBuilder::new()
            .layer(RateLimitLayer::new(1_000_000_000, Duration::from_secs(1)))
            .layer(TimeoutLayer::new(Duration::from_secs(10)))
            .layer(ConcurrencyLimitLayer::new(1_000))
            .service(inner()),
    );
    contender(
        &mut g,
        "stack/tower-resilience (breaker, limiter, timeout, bulkhead)",
        ServiceBuilder::new()
            .layer(trs_breaker())
            .layer(trs_limiter())
            .layer(trs_timeout())
            .layer(trs_bulkhead())
            .service(inner()),
    );
    g.finish();
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = layers
}
criterion_main!(benches);
