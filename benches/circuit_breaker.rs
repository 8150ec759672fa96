//! A CLOSED circuit breaker's `call` around a trivial function, side by side
//! with the bare function, `failsafe` 1.x and `recloser` 1.x, on one thread and
//! on two threads sharing one breaker; plus heap allocations per call.
//!
//! What is measured: the breaker's own overhead per successful call in the
//! steady state (a full window of successes). resil times every call for its
//! slow-call rate (two clock readings); the peers do not time calls at all.
//! `resil` is the default breaker, on the coarse clock (an atomic load per
//! reading, ±1 ms); `resil (SystemClock)` reads the TSC (nanoseconds, ~9 ns a
//! reading on a virtualised x86-64), to show what precise timing costs.
//!
//! What distorts it: the counting global allocator adds a relaxed atomic per
//! allocation (none of the contenders allocate per call, so it stays idle); the
//! 2-thread figures depend on the two cores not being busy with other work; the
//! trivial function makes the breaker's cost dominate, which is the point.
//!
//! `tower-resilience`'s circuit breaker is not measured: it ships in the
//! `tower-resilience-circuitbreaker` crate behind the `circuitbreaker` feature,
//! which the workspace does not enable, and it can only be driven as a tower
//! `Service` (a `poll_ready` + boxed response future per call), so it would
//! measure tower's plumbing rather than the breaker.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use failsafe::CircuitBreaker as _;
use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use resil::clock::SystemClock;

mod support;

#[global_allocator]
static ALLOC: support::CountingAllocator = support::CountingAllocator;

#[inline(never)]
fn trivial() -> Result<u64, u32> {
    Ok(black_box(42))
}

fn resil_breaker() -> CircuitBreaker {
    warmed(CircuitBreaker::new(
        "bench",
        CircuitBreakerConfig::default(),
    ))
}

fn resil_tsc_breaker() -> CircuitBreaker {
    warmed(CircuitBreaker::with_clock(
        "bench",
        CircuitBreakerConfig::default(),
        SystemClock,
    ))
}

fn warmed(cb: CircuitBreaker) -> CircuitBreaker {
    // The steady state: a window full of successes.
    for _ in 0..200 {
        let _ = cb.call(trivial);
    }
    cb
}

fn failsafe_breaker() -> impl failsafe::CircuitBreaker + Sync {
    failsafe::Config::new().build()
}

fn recloser_breaker() -> recloser::Recloser {
    recloser::Recloser::default()
}

fn single_thread(c: &mut Criterion) {
    let resil = resil_breaker();
    let resil_tsc = resil_tsc_breaker();
    let failsafe = failsafe_breaker();
    let recloser = recloser_breaker();
    let mut g = c.benchmark_group("circuit_breaker/1 thread");
    g.bench_function("bare fn", |b| b.iter(|| black_box(trivial())));
    g.bench_function("resil", |b| b.iter(|| black_box(resil.call(trivial))));
    g.bench_function("resil (SystemClock)", |b| {
        b.iter(|| black_box(resil_tsc.call(trivial)))
    });
    g.bench_function("failsafe", |b| b.iter(|| black_box(failsafe.call(trivial))));
    g.bench_function("recloser", |b| b.iter(|| black_box(recloser.call(trivial))));
    g.finish();
}

fn two_threads(c: &mut Criterion) {
    let resil = resil_breaker();
    let failsafe = failsafe_breaker();
    let recloser = recloser_breaker();
    let mut g = c.benchmark_group("circuit_breaker/2 threads, one breaker");
    g.bench_function("bare fn", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| {
                for _ in 0..n {
                    let _ = black_box(trivial());
                }
            })
        })
    });
    g.bench_function("resil", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| {
                for _ in 0..n {
                    let _ = black_box(resil.call(trivial));
                }
            })
        })
    });
    g.bench_function("failsafe", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| {
                for _ in 0..n {
                    let _ = black_box(failsafe.call(trivial));
                }
            })
        })
    });
    g.bench_function("recloser", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| {
                for _ in 0..n {
                    let _ = black_box(recloser.call(trivial));
                }
            })
        })
    });
    g.finish();
}

fn allocations(_: &mut Criterion) {
    let resil = resil_breaker();
    let failsafe = failsafe_breaker();
    let recloser = recloser_breaker();
    const CALLS: u64 = 10_000;
    support::report_allocations(
        "resil call",
        support::allocations_per_call(CALLS, || {
            black_box(resil.call(trivial)).ok();
        }),
    );
    support::report_allocations(
        "failsafe call",
        support::allocations_per_call(CALLS, || {
            black_box(failsafe.call(trivial)).ok();
        }),
    );
    support::report_allocations(
        "recloser call",
        support::allocations_per_call(CALLS, || {
            black_box(recloser.call(trivial)).ok();
        }),
    );
    support::report_allocations(
        "resil instance memory (bytes, count window 100)",
        resil.memory_footprint() as f64,
    );
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = allocations, single_thread, two_threads
}
criterion_main!(benches);
