//! The adaptive client-side throttler's cost per call, side by side with a
//! CLOSED circuit breaker (the bar: the throttler's decision costs
//! at most the breaker's), on one thread and on two threads sharing one
//! instance.
//!
//! # The traffic this stands for
//!
//! * **healthy, 2 % errors**: a client of a downstream that accepts almost
//!   everything (every 50th call fails): the probability stays 0, so every
//!   call is a decision without a draw plus one recorded outcome. The
//!   breaker beside it sees the same traffic.
//! * **refusing**: the downstream refuses every call (429 for minutes): the
//!   probability is near 1, most calls are refused locally after a draw,
//!   the rest are refused by the downstream. The breaker beside it is the
//!   OPEN breaker refusing.
//!
//! # What is measured
//!
//! Each instance's own cost per call around a trivial function: the
//! throttler's clock reading, totals load, draw and two `fetch_add`s; the
//! breaker's permission, two clock readings and its window. Both use the
//! default coarse clock. Allocations per call are printed (a counting
//! allocator, which distorts every line equally) and asserted zero in
//! `tests/allocations.rs`.
//!
//! # What distorts it
//!
//! The 2-thread lines depend on the two cores not being busy with other work
//! (the machine is shared: compare ratios from one run, not absolute times).
//! On two threads the throttler's two shared counters bounce between the
//! cores on every call, where a healthy breaker's window writes nothing.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use resil::throttler::{Throttler, ThrottlerConfig};

mod support;

#[global_allocator]
static ALLOC: support::CountingAllocator = support::CountingAllocator;

#[derive(Debug)]
struct Unavailable;

/// Every 50th call fails when `mixed`; every call when `refusing`.
#[inline(never)]
fn dependency(i: u64, refusing: bool) -> Result<u64, Unavailable> {
    if refusing || black_box(i) % 50 == 0 {
        Err(Unavailable)
    } else {
        Ok(black_box(i))
    }
}

fn instances(refusing: bool) -> (CircuitBreaker, Throttler) {
    let breaker = CircuitBreaker::new("bench", CircuitBreakerConfig::default());
    let throttler = Throttler::new("bench", ThrottlerConfig::default());
    for i in 0..1_000 {
        let _ = breaker.call(|| dependency(i, refusing));
        let _ = throttler.call(|| dependency(i, refusing));
    }
    (breaker, throttler)
}

fn single_thread(c: &mut Criterion) {
    let mut g = c.benchmark_group("throttler/1 thread");
    for (refusing, traffic) in [(false, "healthy, 2 % errors"), (true, "refusing")] {
        let (breaker, throttler) = instances(refusing);
        let mut i = 0u64;
        let mut next = move || {
            i = i.wrapping_add(1);
            i
        };
        g.bench_function(format!("bare fn, {traffic}"), |b| {
            b.iter(|| dependency(next(), refusing))
        });
        g.bench_function(format!("circuit breaker, {traffic}"), |b| {
            b.iter(|| {
                let i = next();
                breaker.call(|| dependency(i, refusing))
            })
        });
        g.bench_function(format!("throttler, {traffic}"), |b| {
            b.iter(|| {
                let i = next();
                throttler.call(|| dependency(i, refusing))
            })
        });
        support::report_allocations(
            &format!("throttler, {traffic}"),
            support::allocations_per_call(10_000, || {
                let _ = throttler.call(|| dependency(next(), refusing));
            }),
        );
    }
    g.finish();
}

fn two_threads(c: &mut Criterion) {
    let mut g = c.benchmark_group("throttler/2 threads, one instance, time per pair");
    let (breaker, throttler) = instances(false);
    g.bench_function("circuit breaker, healthy, 2 % errors", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| {
                for i in 0..n {
                    let _ = black_box(breaker.call(|| dependency(i, false)));
                }
            })
        })
    });
    g.bench_function("throttler, healthy, 2 % errors", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| {
                for i in 0..n {
                    let _ = black_box(throttler.call(|| dependency(i, false)));
                }
            })
        })
    });
    g.finish();
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = single_thread, two_threads
}
criterion_main!(benches);
