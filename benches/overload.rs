//! The server-wide inbound guard's decision next to tower's
//! `ConcurrencyLimit`, as a bare decision and as a tower layer around a
//! ready service, plus heap allocations per request.
//!
//! # The traffic this stands for
//!
//! Requests a healthy service admits (the case every request takes while
//! it keeps up): the guard counts the request in flight, reads the clock,
//! checks the CPU reading (no BBR check below the CPU threshold) and adds
//! to its window; the permit's drop records the response time. The
//! `max-rps` variant also sums the window on every decision.
//! `ConcurrencyLimit` takes and gives back a tokio semaphore permit.
//!
//! The variants: `defaults` is `InboundGuard::new` (timing requests on the
//! TSC); `process_wide` is the guard a process makes once
//! (`InboundGuard::process_wide`: never freed; a request costs the same,
//! since no permit holds a reference count); `CoarseClock` times requests
//! at Sentinel's 1 ms resolution (one relaxed load per reading instead of a
//! TSC read, which costs ~5-14 ns on a virtual machine).
//! (Refusals and the BBR check are tested in `tests/inbound_guard.rs`.)
//!
//! # What is measured
//!
//! One request on one thread: a decision plus its release, or
//! `poll_ready` + `call` + one poll of the response future (a ready inner
//! service). Both layers wrap the same `service_fn`.
//!
//! # What distorts it
//!
//! The counting allocator adds a relaxed atomic per allocation (none
//! happen); the machine is shared: under `cargo bench` each guard layer
//! is also timed against `ConcurrencyLimit` in interleaved rounds
//! (`overload/layer: … / ConcurrencyLimit, interleaved: …`); report those.

use std::convert::Infallible;
use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use criterion::{criterion_group, criterion_main, Criterion};
use resil::clock::{CoarseClock, SystemClock};
use resil::inbound::{InboundGuard, InboundGuardConfig};
use resil_web::tower::InboundGuardLayer;
use tower::limit::ConcurrencyLimit;
use tower::{service_fn, Layer, Service};

mod support;

#[global_allocator]
static ALLOC: support::CountingAllocator = support::CountingAllocator;

#[inline]
fn poll_once<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => unreachable!("a ready service answers at once"),
    }
}

type Req = http::Request<()>;
type Resp = http::Response<()>;

fn call<S: Service<Req, Response = Resp, Error = Infallible>>(svc: &mut S) -> u16 {
    let mut cx = Context::from_waker(Waker::noop());
    match svc.poll_ready(&mut cx) {
        Poll::Ready(Ok(())) => {}
        _ => unreachable!("an uncontended limiter is always ready"),
    }
    poll_once(svc.call(http::Request::new(())))
        .unwrap()
        .status()
        .as_u16()
}

fn inner() -> impl Service<
    Req,
    Response = Resp,
    Error = Infallible,
    Future = std::future::Ready<Result<Resp, Infallible>>,
> + Clone {
    service_fn(|_: Req| std::future::ready(Ok::<_, Infallible>(http::Response::new(()))))
}

fn decision(crit: &mut Criterion) {
    let guard = InboundGuard::new(InboundGuardConfig::default());
    let with_rps = InboundGuard::new(InboundGuardConfig::builder().max_rps(1e12).build().unwrap());
    let coarse = InboundGuard::with_clock(InboundGuardConfig::default(), CoarseClock);
    let process = InboundGuard::process_wide(InboundGuardConfig::default(), SystemClock);
    let process_coarse = InboundGuard::process_wide(InboundGuardConfig::default(), CoarseClock);
    let semaphore = std::sync::Arc::new(tokio::sync::Semaphore::new(1000));
    support::report_allocations(
        "guard try_enter + drop",
        support::allocations_per_call(10_000, || drop(guard.try_enter())),
    );
    let mut g = crit.benchmark_group("overload/decision");
    g.bench_function("resil InboundGuard try_enter + drop (defaults)", |b| {
        b.iter(|| guard.try_enter().is_ok())
    });
    g.bench_function(
        "resil InboundGuard try_enter + drop (CoarseClock: Sentinel's 1 ms timing)",
        |b| b.iter(|| coarse.try_enter().is_ok()),
    );
    g.bench_function("resil InboundGuard try_enter + drop (process_wide)", |b| {
        b.iter(|| process.try_enter().is_ok())
    });
    g.bench_function(
        "resil InboundGuard try_enter + drop (process_wide, CoarseClock)",
        |b| b.iter(|| process_coarse.try_enter().is_ok()),
    );
    g.bench_function(
        "resil InboundGuard try_enter + drop (max-rps: window summed)",
        |b| b.iter(|| with_rps.try_enter().is_ok()),
    );
    g.bench_function(
        "tokio Semaphore try_acquire_owned + drop (ConcurrencyLimit's permit)",
        |b| {
            b.iter(|| {
                std::sync::Arc::clone(&semaphore)
                    .try_acquire_owned()
                    .is_ok()
            })
        },
    );
    g.finish();
}

fn layer(crit: &mut Criterion) {
    let guard = InboundGuard::new(InboundGuardConfig::default());
    let mut guarded = InboundGuardLayer::new(guard).layer(inner());
    let mut process = InboundGuardLayer::new(InboundGuard::process_wide(
        InboundGuardConfig::default(),
        SystemClock,
    ))
    .layer(inner());
    let mut coarse = InboundGuardLayer::new(InboundGuard::process_wide(
        InboundGuardConfig::default(),
        CoarseClock,
    ))
    .layer(inner());
    let mut limited = ConcurrencyLimit::new(inner(), 1000);
    support::report_allocations(
        "InboundGuardLayer request",
        support::allocations_per_call(10_000, || {
            call(&mut guarded);
        }),
    );
    support::report_allocations(
        "ConcurrencyLimit request",
        support::allocations_per_call(10_000, || {
            call(&mut limited);
        }),
    );
    let mut g = crit.benchmark_group("overload/layer");
    g.bench_function("resil InboundGuardLayer poll_ready + call", |b| {
        b.iter(|| call(&mut guarded))
    });
    g.bench_function(
        "resil InboundGuardLayer poll_ready + call (process_wide)",
        |b| b.iter(|| call(&mut process)),
    );
    g.bench_function(
        "resil InboundGuardLayer poll_ready + call (process_wide, CoarseClock)",
        |b| b.iter(|| call(&mut coarse)),
    );
    g.bench_function("tower ConcurrencyLimit poll_ready + call", |b| {
        b.iter(|| call(&mut limited))
    });
    g.finish();

    // Each guard layer against `ConcurrencyLimit` in interleaved rounds.
    let report = "overload/layer";
    let mut limited_ = limited.clone();
    support::interleaved_ratio(
        report,
        ("ConcurrencyLimit", || call(&mut limited_)),
        ("InboundGuardLayer (defaults)", || call(&mut guarded)),
    );
    let mut limited_ = limited.clone();
    support::interleaved_ratio(
        report,
        ("ConcurrencyLimit", || call(&mut limited_)),
        ("InboundGuardLayer (process_wide)", || call(&mut process)),
    );
    support::interleaved_ratio(
        report,
        ("ConcurrencyLimit", || call(&mut limited)),
        ("InboundGuardLayer (process_wide, CoarseClock)", || {
            call(&mut coarse)
        }),
    );
}

criterion_group! {
    name = groups;
    config = support::criterion();
    targets = decision, layer
}
criterion_main!(groups);
