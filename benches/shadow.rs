//! What a shadow trial costs a circuit breaker's calls: the same CLOSED
//! breaker without a shadow, with a shadow attached, and with a shadow while
//! a second breaker is called by hand (the cost a user would pay running
//! "the new settings" as a second breaker themselves), side by side with the
//! bare function and `recloser` 1.x as the peer reference.
//!
//! # The traffic this stands for
//!
//! A service calling a dependency that is healthy but not perfect: **2 % of
//! calls fail** (every 50th), so neither the live settings nor the staged,
//! stricter ones (a 20 % threshold over a window of 50) open: the steady
//! state of a trial that finds nothing to report. Peers have no shadow
//! trial, so the peer line is only the reference cost of one breaker call.
//!
//! # What is measured and what distorts it
//!
//! The breaker's cost per call on one thread, on the coarse clock. "no
//! shadow" is the path every call takes while no trial runs (one relaxed
//! load more than before shadows existed); "with a shadow" adds the shadow's
//! read lock, admission and recording. The machine is shared with other
//! builds: compare ratios within one run, not absolute times. Heap
//! allocations per call are printed (and asserted to be zero in
//! `tests/allocations.rs`).

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};

mod support;

#[global_allocator]
static ALLOC: support::CountingAllocator = support::CountingAllocator;

#[derive(Debug)]
struct Unavailable;

#[inline(never)]
fn dependency(i: u64) -> Result<u64, Unavailable> {
    if black_box(i) % 50 == 0 {
        Err(Unavailable)
    } else {
        Ok(black_box(i))
    }
}

fn staged() -> CircuitBreakerConfig {
    CircuitBreakerConfig::builder()
        .sliding_window_size(50)
        .failure_rate_threshold(20.0)
        .build()
        .unwrap()
}

fn warmed(cb: &CircuitBreaker) {
    for i in 0..1_000 {
        let _ = cb.call(|| dependency(i));
    }
}

fn shadow(c: &mut Criterion) {
    let mut g = c.benchmark_group("shadow/1 thread, 2 % failures");
    let plain = CircuitBreaker::new("plain", CircuitBreakerConfig::default());
    warmed(&plain);
    let live = CircuitBreaker::new("live", CircuitBreakerConfig::default());
    let trial = live.start_shadow(staged());
    warmed(&live);
    let by_hand = CircuitBreaker::new("by-hand", CircuitBreakerConfig::default());
    let second = CircuitBreaker::new("second", staged());
    warmed(&by_hand);
    warmed(&second);
    let recloser = recloser::Recloser::default();

    let mut i = 0u64;
    support::report_allocations(
        "resil, no shadow",
        support::allocations_per_call(10_000, || {
            i += 1;
            let _ = plain.call(|| dependency(i));
        }),
    );
    support::report_allocations(
        "resil, with a shadow",
        support::allocations_per_call(10_000, || {
            i += 1;
            let _ = live.call(|| dependency(i));
        }),
    );

    let mut i = 0u64;
    g.bench_function("bare fn", |b| {
        b.iter(|| {
            i += 1;
            dependency(i)
        })
    });
    g.bench_function("resil, no shadow", |b| {
        b.iter(|| {
            i += 1;
            plain.call(|| dependency(i))
        })
    });
    g.bench_function("resil, with a shadow", |b| {
        b.iter(|| {
            i += 1;
            live.call(|| dependency(i))
        })
    });
    g.bench_function("resil, two breakers by hand", |b| {
        b.iter(|| {
            i += 1;
            let permit = second.try_acquire_permission();
            let out = by_hand.call(|| dependency(i));
            if let Ok(p) = permit {
                match &out {
                    Ok(v) => p.on_value(v),
                    Err(resil::Error::Call(e)) => p.on_error(e),
                    Err(_) => drop(p),
                }
            }
            out
        })
    });
    g.bench_function("recloser (one breaker, no trial)", |b| {
        b.iter(|| {
            i += 1;
            recloser.call(|| dependency(i))
        })
    });
    g.finish();
    assert_eq!(
        trial.call_totals().not_permitted(),
        0,
        "the trial never opened"
    );
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = shadow
}
criterion_main!(benches);
