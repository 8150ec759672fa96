//! A CLOSED circuit breaker's `call` around a trivial function, side by side
//! with the bare function, `failsafe` 1.x and `recloser` 1.x, on one thread and
//! on two threads sharing one breaker.
//!
//! # The traffic this stands for
//!
//! A service calling a dependency that is healthy but not perfect: **2 % of
//! calls fail** (every 50th, spread evenly), so every window of 100 holds a
//! couple of failures and the breaker never opens. That is the case users
//! have, and it is every figure's main line. Each case has a success-only twin
//! (`… success-only`): a dependency that never failed within the last window,
//! where resil's shortcut for a window full of fast successes applies. It is
//! shown next to its mixed twin, never alone.
//!
//! # What is measured
//!
//! The breaker's own cost per call (permission, timing, classification,
//! recording). resil times every call for its slow-call rate (two clock
//! readings); the peers do not time calls at all. `resil` is the default
//! breaker, on the coarse clock (an atomic load per reading, ±1 ms);
//! `resil (SystemClock)` reads the TSC (nanoseconds; one inlined `rdtsc` a
//! reading, about 10 ns on this project's virtualised x86-64), to show what
//! precise timing costs. Two floor lines measure two `SystemClock` readings
//! and two bare `rdtsc` instructions, the least any precise timing can cost.
//!
//! On two threads, criterion's time per iteration is the wall time in which
//! *each* thread made one call: the time per **pair** of calls (throughput =
//! 2 / time). `floor: one contended atomic add + sub` is the cheapest thing
//! two threads can do to one shared cache line per call (a `fetch_add` and a
//! `fetch_sub`), measured in the same run: no shared breaker can beat the
//! line transfers it costs on this machine.
//!
//! # What distorts it
//!
//! The 2-thread figures depend on the two cores not being busy with other
//! work (the machine is shared: run it several times and compare ratios); the
//! trivial function makes the breaker's cost dominate, which is the point.
//! Heap allocations per call are asserted to be zero in `tests/allocations.rs`
//! (a counting allocator here would distort the timings).
//!
//! `tower-resilience`'s circuit breaker is not measured: it ships in the
//! `tower-resilience-circuitbreaker` crate behind the `circuitbreaker` feature,
//! which the workspace does not enable, and it can only be driven as a tower
//! `Service` (a `poll_ready` + boxed response future per call), so it would
//! measure tower's plumbing rather than the breaker.

use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};

use criterion::{criterion_group, criterion_main, BenchmarkGroup, Criterion};
use failsafe::CircuitBreaker as _;
use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use resil::clock::{Clock, SystemClock};

mod support;

/// Every 50th call fails: 2 %.
const FAIL_EVERY: u64 = 50;

#[derive(Debug)]
struct Unavailable;

/// The protected call: trivial, failing every `FAIL_EVERY`th time if `mixed`.
#[inline(never)]
fn dependency(i: u64, mixed: bool) -> Result<u64, Unavailable> {
    if mixed && black_box(i) % FAIL_EVERY == 0 {
        Err(Unavailable)
    } else {
        Ok(black_box(i))
    }
}

fn warmed(cb: CircuitBreaker, mixed: bool) -> CircuitBreaker {
    // The steady state: a full window of this traffic.
    for i in 0..1_000 {
        let _ = cb.call(|| dependency(i, mixed));
    }
    cb
}

fn resil_breaker(mixed: bool) -> CircuitBreaker {
    warmed(
        CircuitBreaker::new("bench", CircuitBreakerConfig::default()),
        mixed,
    )
}

fn resil_tsc_breaker(mixed: bool) -> CircuitBreaker {
    warmed(
        CircuitBreaker::with_clock("bench", CircuitBreakerConfig::default(), SystemClock),
        mixed,
    )
}

fn failsafe_breaker() -> impl failsafe::CircuitBreaker + Sync {
    failsafe::Config::new().build()
}

fn recloser_breaker() -> recloser::Recloser {
    recloser::Recloser::default()
}

/// The two traffic shapes, mixed first.
const TRAFFIC: [(bool, &str); 2] = [(true, ""), (false, " success-only")];

fn single_thread(c: &mut Criterion) {
    let mut g = c.benchmark_group("circuit_breaker/1 thread");
    // What timing a call precisely costs at the least: the two readings
    // `resil (SystemClock)` takes per call, and nothing else.
    g.bench_function("floor: two SystemClock readings", |b| {
        b.iter(|| {
            let start = SystemClock.now_nanos();
            SystemClock.now_nanos().saturating_sub(black_box(start))
        })
    });
    // The instruction under each reading: no clock on this CPU can be read
    // for less (in a VM, `rdtsc` costs what the hypervisor makes it cost).
    #[cfg(target_arch = "x86_64")]
    g.bench_function("floor: two bare rdtsc", |b| {
        b.iter(|| {
            // SAFETY: `rdtsc` exists on every x86-64 CPU.
            let start = unsafe { std::arch::x86_64::_rdtsc() };
            unsafe { std::arch::x86_64::_rdtsc() }.wrapping_sub(black_box(start))
        })
    });
    for (mixed, suffix) in TRAFFIC {
        let resil = resil_breaker(mixed);
        let resil_tsc = resil_tsc_breaker(mixed);
        let failsafe = failsafe_breaker();
        let recloser = recloser_breaker();
        let mut i = 0u64;
        let mut next = move || {
            i = i.wrapping_add(1);
            i
        };
        g.bench_function(format!("bare fn{suffix}"), |b| {
            b.iter(|| dependency(next(), mixed))
        });
        g.bench_function(format!("resil{suffix}"), |b| {
            b.iter(|| {
                let i = next();
                resil.call(|| dependency(i, mixed))
            })
        });
        g.bench_function(format!("resil (SystemClock){suffix}"), |b| {
            b.iter(|| {
                let i = next();
                resil_tsc.call(|| dependency(i, mixed))
            })
        });
        g.bench_function(format!("recloser{suffix}"), |b| {
            b.iter(|| {
                let i = next();
                recloser.call(|| dependency(i, mixed))
            })
        });
        g.bench_function(format!("failsafe{suffix}"), |b| {
            b.iter(|| {
                let i = next();
                failsafe.call(|| dependency(i, mixed))
            })
        });
        assert_eq!(
            resil.state(),
            resil::circuit_breaker::State::Closed,
            "2 % failures never open the breaker"
        );
    }
    g.finish();
}

/// Each of two threads makes `iters` calls of `call(i)`; the time is per pair.
fn pair(
    g: &mut BenchmarkGroup<'_, criterion::measurement::WallTime>,
    name: &str,
    call: impl Fn(u64) + Sync,
) {
    g.bench_function(name, |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| {
                for i in 0..n {
                    call(i);
                }
            })
        })
    });
}

fn two_threads(c: &mut Criterion) {
    let mut g = c.benchmark_group("circuit_breaker/2 threads, one breaker, time per pair");
    let shared = AtomicU64::new(0);
    pair(&mut g, "floor: one contended atomic add + sub", |i| {
        shared.fetch_add(black_box(i), Ordering::AcqRel);
        shared.fetch_sub(black_box(i), Ordering::AcqRel);
    });
    for (mixed, suffix) in TRAFFIC {
        let resil = resil_breaker(mixed);
        let resil_tsc = resil_tsc_breaker(mixed);
        let failsafe = failsafe_breaker();
        let recloser = recloser_breaker();
        pair(&mut g, &format!("resil{suffix}"), |i| {
            let _ = black_box(resil.call(|| dependency(i, mixed)));
        });
        if mixed {
            pair(&mut g, &format!("resil (SystemClock){suffix}"), |i| {
                let _ = black_box(resil_tsc.call(|| dependency(i, mixed)));
            });
        }
        pair(&mut g, &format!("recloser{suffix}"), |i| {
            let _ = black_box(recloser.call(|| dependency(i, mixed)));
        });
        pair(&mut g, &format!("failsafe{suffix}"), |i| {
            let _ = black_box(failsafe.call(|| dependency(i, mixed)));
        });
        assert_eq!(resil.state(), resil::circuit_breaker::State::Closed);
    }
    g.finish();
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = single_thread, two_threads
}
criterion_main!(benches);
