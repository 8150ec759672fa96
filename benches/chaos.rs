//! Fault injection while it is off, next to the bare call: the figure behind
//! "when off it costs nothing measurable", plus heap allocations per call.
//!
//! # The traffic this stands for
//!
//! Every production call through an instance that exists for drills but is
//! not running one (the state it is in all but a few hours a year), sync and
//! async. `enabled, nothing drawn` is a drill running with a rate that spares
//! this call: the price a call pays while a drill is on.
//!
//! # What is measured
//!
//! A trivial call (returns its argument), bare and through the instance; an
//! async call is polled once with a no-op waker.
//!
//! # What distorts it
//!
//! At these sizes the loop and criterion's own overhead dominate, and a
//! difference under half a nanosecond is within run-to-run noise on this
//! shared machine: compare ratios over several runs.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use resil::chaos::{Chaos, ChaosConfig};

mod support;

#[global_allocator]
static ALLOC: support::CountingAllocator = support::CountingAllocator;

#[inline]
fn poll_once<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => unreachable!("nothing here waits"),
    }
}

#[inline(never)]
fn downstream(x: u64) -> Result<u64, u32> {
    Ok(black_box(x))
}

fn config(enabled: bool) -> ChaosConfig {
    ChaosConfig::builder()
        .inject_latency(if enabled { 0.0 } else { 1.0 }, Duration::from_secs(1))
        .inject_error(if enabled { 0.0 } else { 1.0 }, || 503u32)
        .enabled(enabled)
        .build()
        .unwrap()
}

fn benches(crit: &mut Criterion) {
    let off = Chaos::new("bench", config(false));
    let on = Chaos::new("bench", config(true));
    support::report_allocations(
        "chaos call_async, off",
        support::allocations_per_call(10_000, || {
            let _ = poll_once(off.call_async(async { downstream(1) }));
        }),
    );
    let mut g = crit.benchmark_group("chaos/sync");
    g.bench_function("bare call", |b| b.iter(|| downstream(black_box(1))));
    g.bench_function("resil Chaos call, off", |b| {
        b.iter(|| off.call(|| downstream(black_box(1))))
    });
    g.bench_function("resil Chaos call, enabled, nothing drawn", |b| {
        b.iter(|| on.call(|| downstream(black_box(1))))
    });
    g.finish();
    let mut g = crit.benchmark_group("chaos/async");
    g.bench_function("bare future", |b| {
        b.iter(|| poll_once(async { downstream(black_box(1)) }))
    });
    g.bench_function("resil Chaos call_async, off", |b| {
        b.iter(|| poll_once(off.call_async(async { downstream(black_box(1)) })))
    });
    g.bench_function("resil Chaos call_async, enabled, nothing drawn", |b| {
        b.iter(|| poll_once(on.call_async(async { downstream(black_box(1)) })))
    });
    g.finish();
}

criterion_group! {
    name = groups;
    config = support::criterion();
    targets = benches
}
criterion_main!(groups);
