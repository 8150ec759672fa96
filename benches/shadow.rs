//! What a shadow trial costs a call: first a circuit breaker's, the same CLOSED
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
//!
//! # The other kinds
//!
//! The second group measures a rate limiter (a limit no call reaches, the
//! shadow's neither), a bulkhead (one call at a time, far below either limit)
//! and a retry (2 % of calls fail once, then succeed; the live retry and its
//! shadow both retry them, without waiting), each without and with a shadow.
//! "no shadow" is what every call pays while no trial runs (a relaxed load of
//! the slot's flag and a branch more than before shadows existed, and for the
//! bulkhead's permit and the retry's call state an empty shadow field).

use std::hint::black_box;

use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use resil::bulkhead::{Bulkhead, BulkheadConfig};
use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use resil::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil::retry::{Retry, RetryConfig};
use resil::shadow::Shadowed;

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

/// A call whose first attempt fails 2 % of the time (every 50th call).
#[inline(never)]
fn flaky(i: u64, first: &mut bool) -> Result<u64, Unavailable> {
    if std::mem::take(first) && black_box(i) % 50 == 0 {
        Err(Unavailable)
    } else {
        Ok(black_box(i))
    }
}

fn other_kinds(c: &mut Criterion) {
    let mut g = c.benchmark_group("shadow/other kinds, 1 thread");
    let limits = |n| {
        RateLimiterConfig::builder()
            .limit_for_period(n)
            .limit_refresh_period(Duration::from_secs(1))
            .timeout_duration(Duration::ZERO)
            .build()
            .unwrap()
    };
    let plain_limiter = RateLimiter::new("plain", limits(1_000_000_000));
    let live_limiter = RateLimiter::new("live", limits(1_000_000_000));
    let limiter_trial = live_limiter.start_shadow(limits(500_000_000));
    let sizes = |n| {
        BulkheadConfig::builder()
            .max_concurrent_calls(n)
            .build()
            .unwrap()
    };
    let plain_bulkhead = Bulkhead::new("plain", sizes(25));
    let live_bulkhead = Bulkhead::new("live", sizes(25));
    let bulkhead_trial = live_bulkhead.start_shadow(sizes(10));
    let attempts = |n| {
        RetryConfig::builder()
            .max_attempts(n)
            .wait_duration(Duration::ZERO)
            .build()
            .unwrap()
    };
    let plain_retry = Retry::new("plain", attempts(3));
    let live_retry = Retry::new("live", attempts(3));
    let retry_trial = live_retry.start_shadow(attempts(2));

    let mut i = 0u64;
    for (what, live) in [
        ("rate limiter, no shadow", &plain_limiter),
        ("rate limiter, with a shadow", &live_limiter),
    ] {
        support::report_allocations(
            what,
            support::allocations_per_call(10_000, || {
                i += 1;
                let _ = live.call(|| dependency(i));
            }),
        );
        g.bench_function(what, |b| {
            b.iter(|| {
                i += 1;
                live.call(|| dependency(i))
            })
        });
    }
    for (what, live) in [
        ("bulkhead, no shadow", &plain_bulkhead),
        ("bulkhead, with a shadow", &live_bulkhead),
    ] {
        support::report_allocations(
            what,
            support::allocations_per_call(10_000, || {
                i += 1;
                let _ = live.call(|| dependency(i));
            }),
        );
        g.bench_function(what, |b| {
            b.iter(|| {
                i += 1;
                live.call(|| dependency(i))
            })
        });
    }
    for (what, live) in [
        ("retry, no shadow", &plain_retry),
        ("retry, with a shadow", &live_retry),
    ] {
        support::report_allocations(
            what,
            support::allocations_per_call(10_000, || {
                i += 1;
                let mut first = true;
                let _ = live.call(|| flaky(i, &mut first));
            }),
        );
        g.bench_function(what, |b| {
            b.iter(|| {
                i += 1;
                let mut first = true;
                live.call(|| flaky(i, &mut first))
            })
        });
    }
    g.finish();
    assert_eq!(limiter_trial.metrics().failed_acquisitions(), 0);
    assert_eq!(bulkhead_trial.metrics().rejected_calls(), 0);
    assert!(
        retry_trial.shadow_retries() > 0,
        "the trial saw the retries"
    );
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = shadow, other_kinds
}
criterion_main!(benches);
