//! Rate limiter acquire, resil (cycle `RateLimiter` and token-bucket
//! `RefillRateLimiter`) vs governor 0.10, in one run.
//!
//! The traffic it stands for: a service calling a dependency well under its
//! quota, so the limiter never refuses and every call pays only the acquire —
//! the common case, and the one whose cost matters. Measured: one successful
//! acquire on a limiter whose quota is never exhausted (10⁹ permits per
//! second: one cycle per second for `RateLimiter`; one permit per nanosecond
//! with a capacity of 10⁹ for `RefillRateLimiter`; `Quota::per_second(10⁹)`
//! for governor, so all grant every call), on one thread and on two threads
//! hammering the same limiter. All three update a single `AtomicU64` by
//! compare-and-swap; the cycle limiter additionally compares the reading with
//! a cached cycle and reads its seqlocked schedule, and the refill limiter,
//! like governor, is GCRA (one "full again at" instant).
//!
//! The clocks differ, by design: governor and the refill limiter (whose
//! one-nanosecond permit interval needs it) read the TSC through quanta on
//! every acquire; resil's `RateLimiter::new` reads the coarse clock (one atomic
//! load, ±1 ms, always trailing real time so it never admits early) for refresh
//! periods of 50 ms and more, as here, and the TSC only for shorter periods. A
//! bare TSC read is measured alongside: on x86-64 `rdtsc` has a throughput of
//! one per ~35 cycles on some cores (AMD Zen), which on such machines is the
//! whole cost of a governor `check()`.
//!
//! What distorts it: the counting global allocator adds a relaxed increment to
//! every allocation (neither contender allocates on this path); on two threads
//! the figure is the time per call *of each thread*, dominated by the cache
//! line ping-pong of the shared atomic, and depends on how the machine's two
//! cores are shared with other work at the time.

use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use governor::{Quota, RateLimiter as Governor};
use resil::clock::{Clock, SharedClock};
use resil::rate_limiter::{
    RateLimiter, RateLimiterConfig, RefillRateLimiter, RefillRateLimiterConfig,
};

mod support;

#[global_allocator]
static ALLOC: support::CountingAllocator = support::CountingAllocator;

const PER_SECOND: u32 = 1_000_000_000;

fn resil_limiter() -> RateLimiter {
    let config = RateLimiterConfig::builder()
        .limit_for_period(PER_SECOND)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout_duration(Duration::ZERO)
        .build()
        .expect("a valid config");
    RateLimiter::new("bench", config)
}

fn refill_limiter() -> RefillRateLimiter {
    let config = RefillRateLimiterConfig::builder()
        .limit_for_period(PER_SECOND)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout_duration(Duration::ZERO)
        .build()
        .expect("a valid config");
    RefillRateLimiter::new("bench", config)
}

fn governor_limiter() -> governor::DefaultDirectRateLimiter {
    Governor::direct(Quota::per_second(
        NonZeroU32::new(PER_SECOND).expect("non-zero"),
    ))
}

fn one_thread(c: &mut Criterion) {
    let mut group = c.benchmark_group("rate_limiter/acquire/1 thread");
    let resil = resil_limiter();
    let refill = refill_limiter();
    let governor = governor_limiter();
    group.bench_function("resil try_acquire_permission", |b| {
        b.iter(|| black_box(resil.try_acquire_permission(black_box(1))))
    });
    group.bench_function("resil acquire_permission", |b| {
        b.iter(|| black_box(resil.acquire_permission(black_box(1)).is_ok()))
    });
    group.bench_function("resil refill try_acquire_permission", |b| {
        b.iter(|| black_box(refill.try_acquire_permission(black_box(1))))
    });
    group.bench_function("resil refill acquire_permission", |b| {
        b.iter(|| black_box(refill.acquire_permission(black_box(1)).is_ok()))
    });
    group.bench_function("governor check", |b| {
        b.iter(|| black_box(governor.check().is_ok()))
    });
    // The floor both pay: one reading of the TSC clock, nothing else.
    let clock = SharedClock::system();
    group.bench_function("bare SystemClock read", |b| {
        b.iter(|| black_box(clock.now_nanos()))
    });
    group.finish();
}

fn two_threads(c: &mut Criterion) {
    let mut group = c.benchmark_group("rate_limiter/acquire/2 threads");
    let resil = resil_limiter();
    let refill = refill_limiter();
    let governor = governor_limiter();
    group.bench_function("resil try_acquire_permission", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| {
                for _ in 0..n {
                    black_box(resil.try_acquire_permission(black_box(1)));
                }
            })
        })
    });
    group.bench_function("resil refill try_acquire_permission", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| {
                for _ in 0..n {
                    black_box(refill.try_acquire_permission(black_box(1)));
                }
            })
        })
    });
    group.bench_function("governor check", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| {
                for _ in 0..n {
                    black_box(governor.check().is_ok());
                }
            })
        })
    });
    group.finish();
}

fn allocations() {
    let resil = resil_limiter();
    let governor = governor_limiter();
    support::report_allocations(
        "resil try_acquire_permission",
        support::allocations_per_call(10_000, || {
            black_box(resil.try_acquire_permission(1));
        }),
    );
    support::report_allocations(
        "resil call",
        support::allocations_per_call(10_000, || {
            black_box(resil.call(|| Ok::<_, ()>(1)).is_ok());
        }),
    );
    support::report_allocations(
        "resil call_async (polled to completion, no wait)",
        support::allocations_per_call(10_000, || {
            black_box(
                futures::executor::block_on(resil.call_async(async { Ok::<_, ()>(1) })).is_ok(),
            );
        }),
    );
    let refill = refill_limiter();
    support::report_allocations(
        "resil refill try_acquire_permission",
        support::allocations_per_call(10_000, || {
            black_box(refill.try_acquire_permission(1));
        }),
    );
    support::report_allocations(
        "resil refill acquire_permission",
        support::allocations_per_call(10_000, || {
            black_box(refill.acquire_permission(1).is_ok());
        }),
    );
    support::report_allocations(
        "resil refill call",
        support::allocations_per_call(10_000, || {
            black_box(refill.call(|| Ok::<_, ()>(1)).is_ok());
        }),
    );
    support::report_allocations(
        "governor check",
        support::allocations_per_call(10_000, || {
            black_box(governor.check().is_ok());
        }),
    );
}

fn benches(c: &mut Criterion) {
    allocations();
    one_thread(c);
    two_threads(c);
}

criterion_group! {
    name = group;
    config = support::criterion();
    targets = benches
}
criterion_main!(group);
