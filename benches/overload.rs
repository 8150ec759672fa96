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
//! The variants: `defaults` is `InboundGuard::new` (a reference-counted
//! guard timing requests on the `CoarseClock`, at Sentinel's 1 ms
//! resolution: one relaxed load per reading); `SystemClock` times them on
//! the TSC instead (~14 ns a read on a virtual machine — two per request
//! were most of the cost when it was the default); `process_wide` is the
//! guard a process makes once (`InboundGuard::process_wide`: no reference
//! count per permit).
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
//! happen); the machine is shared: under `cargo bench` each guard is also
//! timed against its peer in alternating rounds of a few thousand requests,
//! and the median of the rounds' ratios is printed (`interleaved: median
//! …x`), which holds up under load far better than two criterion figures
//! taken a minute apart.

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
    let exact = InboundGuard::with_clock(InboundGuardConfig::default(), SystemClock);
    let process = InboundGuard::process_wide(InboundGuardConfig::default(), SystemClock);
    let process_coarse = InboundGuard::process_wide(InboundGuardConfig::default(), CoarseClock);
    let semaphore = std::sync::Arc::new(tokio::sync::Semaphore::new(1000));
    support::report_allocations(
        "guard try_enter + drop",
        support::allocations_per_call(10_000, || drop(guard.try_enter())),
    );
    let mut g = crit.benchmark_group("overload/decision");
    g.bench_function(
        "resil InboundGuard try_enter + drop (defaults: CoarseClock, Sentinel's 1 ms timing)",
        |b| b.iter(|| guard.try_enter().is_ok()),
    );
    g.bench_function(
        "resil InboundGuard try_enter + drop (SystemClock: nanosecond timing)",
        |b| b.iter(|| exact.try_enter().is_ok()),
    );
    g.bench_function(
        "resil InboundGuard try_enter + drop (process_wide, SystemClock)",
        |b| b.iter(|| process.try_enter().is_ok()),
    );
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
    let permit = || {
        u64::from(
            std::sync::Arc::clone(&semaphore)
                .try_acquire_owned()
                .is_ok(),
        )
    };
    for (name, guard) in [
        ("InboundGuard (defaults: CoarseClock)", &guard),
        ("InboundGuard (process_wide, CoarseClock)", &process_coarse),
    ] {
        support::interleaved_ratio(
            "overload/decision",
            ("tokio Semaphore permit", permit),
            (name, || guard.try_enter().is_ok()),
        );
    }
}

fn layer(crit: &mut Criterion) {
    let guard = InboundGuard::new(InboundGuardConfig::default());
    let mut guarded = InboundGuardLayer::new(guard).layer(inner());
    let mut exact = InboundGuardLayer::new(InboundGuard::with_clock(
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
    g.bench_function(
        "resil InboundGuardLayer poll_ready + call (defaults: CoarseClock)",
        |b| b.iter(|| call(&mut guarded)),
    );
    g.bench_function(
        "resil InboundGuardLayer poll_ready + call (SystemClock)",
        |b| b.iter(|| call(&mut exact)),
    );
    g.bench_function(
        "resil InboundGuardLayer poll_ready + call (process_wide, CoarseClock)",
        |b| b.iter(|| call(&mut coarse)),
    );
    g.bench_function("tower ConcurrencyLimit poll_ready + call", |b| {
        b.iter(|| call(&mut limited))
    });
    g.finish();
    // The target is a ratio on a shared machine: measured interleaved.
    let tower = "tower ConcurrencyLimit";
    for (name, guard) in [
        ("InboundGuardLayer (defaults: CoarseClock)", &mut guarded),
        ("InboundGuardLayer (SystemClock)", &mut exact),
        ("InboundGuardLayer (process_wide, CoarseClock)", &mut coarse),
    ] {
        support::interleaved_ratio(
            "overload/layer",
            (tower, || call(&mut limited)),
            (name, || call(guard)),
        );
    }
}

criterion_group! {
    name = groups;
    config = support::criterion();
    targets = decision, layer
}
criterion_main!(groups);
