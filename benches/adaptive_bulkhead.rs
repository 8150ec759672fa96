//! The adaptive bulkhead's fast path next to the fixed bulkhead, tokio's
//! `Semaphore` and tower's `ConcurrencyLimit`, on one thread and on two
//! threads sharing one limiter, plus heap allocations per call.
//!
//! # The traffic this stands for
//!
//! Calls that find room under the limit (the case every call takes while
//! the downstream keeps up): take a slot, run a trivial call, give the slot
//! back. The adaptive bulkhead also reads the clock twice; a call slower
//! than `min_rtt_threshold` (100 µs) also folds its latency into the sample
//! window under a `try_lock`. `…, every call a sample` sets the threshold to
//! zero, so every call takes that lock: the price of a limit that follows
//! the downstream, and what this bench puts a figure on.
//! (Refusals and the limit's movement are tested in `tests/adaptive_bulkhead.rs`.)
//!
//! `…/class check` puts a figure on admission by criticality: the same
//! acquire and release with the class read from the task's context and
//! checked against its threshold (`try_acquire_permission`, a `CRITICAL`
//! call), with a class given (`try_acquire_permission_as`, a `SHEDDABLE`
//! call, whose threshold is half the limit), and without any class
//! (`try_acquire_permission_unclassified`, the plain limit), side by side.
//!
//! # What is measured
//!
//! As in `benches/bulkhead.rs`: one poll with a no-op waker must complete
//! each async call; on two threads, criterion's time is per *pair* of calls.
//! No peer adapts its limit: Netflix concurrency-limits is Java, so the fixed
//! limiters are the comparison.
//!
//! # What distorts it
//!
//! The counting allocator adds a relaxed atomic per allocation (none happen
//! here); on two threads both cores fight over the slot word and the window
//! lock's line; the machine is shared: compare ratios over several runs.

use std::convert::Infallible;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use criterion::{criterion_group, criterion_main, Criterion};
use resil::bulkhead::{AdaptiveBulkhead, AdaptiveBulkheadConfig, Bulkhead, BulkheadConfig};
use tower::limit::ConcurrencyLimit;
use tower::{service_fn, Service};

mod support;

#[global_allocator]
static ALLOC: support::CountingAllocator = support::CountingAllocator;

const LIMIT: usize = 100;

#[inline]
fn poll_once<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => unreachable!("an uncontended limiter never waits"),
    }
}

struct Contenders {
    adaptive: AdaptiveBulkhead,
    sampled: AdaptiveBulkhead,
    fixed: Bulkhead,
    semaphore: Arc<tokio::sync::Semaphore>,
}

impl Contenders {
    fn new() -> Self {
        Contenders {
            // Its limit starts (and, with calls this fast, stays) at 100:
            // every latency is under the 100 µs sample threshold.
            adaptive: AdaptiveBulkhead::new(
                "bench",
                AdaptiveBulkheadConfig::builder()
                    .initial_limit(LIMIT as u32)
                    .build()
                    .unwrap(),
            ),
            sampled: AdaptiveBulkhead::new(
                "bench",
                AdaptiveBulkheadConfig::builder()
                    .initial_limit(LIMIT as u32)
                    .min_rtt_threshold(std::time::Duration::ZERO)
                    .build()
                    .unwrap(),
            ),
            fixed: Bulkhead::new(
                "bench",
                BulkheadConfig::builder()
                    .max_concurrent_calls(LIMIT as u32)
                    .build()
                    .unwrap(),
            ),
            semaphore: Arc::new(tokio::sync::Semaphore::new(LIMIT)),
        }
    }
}

fn adaptive_call_async(c: &Contenders) -> u64 {
    poll_once(
        c.adaptive
            .call_async(async { Ok::<_, Infallible>(black_box(1)) }),
    )
    .unwrap()
}

fn sampled_call_async(c: &Contenders) -> u64 {
    poll_once(
        c.sampled
            .call_async(async { Ok::<_, Infallible>(black_box(1)) }),
    )
    .unwrap()
}

fn fixed_call_async(c: &Contenders) -> u64 {
    poll_once(
        c.fixed
            .call_async(async { Ok::<_, Infallible>(black_box(1)) }),
    )
    .unwrap()
}

fn adaptive_call(c: &Contenders) -> u64 {
    c.adaptive
        .call(|| Ok::<_, Infallible>(black_box(1)))
        .unwrap()
}

fn tokio_acquire(c: &Contenders) {
    drop(black_box(poll_once(c.semaphore.acquire()).unwrap()));
}

fn tower_call<S: Service<u64, Response = u64, Error = Infallible>>(svc: &mut S) -> u64 {
    let mut cx = Context::from_waker(Waker::noop());
    match svc.poll_ready(&mut cx) {
        Poll::Ready(Ok(())) => {}
        _ => unreachable!("an uncontended limiter is always ready"),
    }
    poll_once(svc.call(black_box(1))).unwrap()
}

fn single_thread(crit: &mut Criterion) {
    let c = Contenders::new();
    support::report_allocations(
        "adaptive call_async",
        support::allocations_per_call(10_000, || {
            black_box(adaptive_call_async(&c));
        }),
    );
    support::report_allocations(
        "adaptive call",
        support::allocations_per_call(10_000, || {
            black_box(adaptive_call(&c));
        }),
    );
    let mut tower = ConcurrencyLimit::new(
        service_fn(|x: u64| std::future::ready(Ok::<_, Infallible>(x))),
        LIMIT,
    );
    let mut g = crit.benchmark_group("adaptive_bulkhead/1_thread");
    g.bench_function("resil AdaptiveBulkhead call_async", |b| {
        b.iter(|| adaptive_call_async(&c))
    });
    g.bench_function("resil AdaptiveBulkhead call", |b| {
        b.iter(|| adaptive_call(&c))
    });
    g.bench_function("resil Bulkhead call_async", |b| {
        b.iter(|| fixed_call_async(&c))
    });
    g.bench_function("tokio Semaphore acquire().await + drop", |b| {
        b.iter(|| tokio_acquire(&c))
    });
    g.bench_function("tower ConcurrencyLimit poll_ready + call", |b| {
        b.iter(|| tower_call(&mut tower))
    });
    g.finish();
}

fn class_check(crit: &mut Criterion) {
    use resil::Criticality;
    let c = Contenders::new();
    let b = &c.adaptive;
    support::report_allocations(
        "adaptive try_acquire_permission (class check)",
        support::allocations_per_call(10_000, || {
            drop(black_box(b.try_acquire_permission()));
        }),
    );
    let mut g = crit.benchmark_group("adaptive_bulkhead/class check");
    g.bench_function(
        "resil AdaptiveBulkhead acquire + drop, unclassified",
        |bench| bench.iter(|| b.try_acquire_permission_unclassified().is_ok()),
    );
    g.bench_function(
        "resil AdaptiveBulkhead acquire + drop, task's class (CRITICAL)",
        |bench| bench.iter(|| b.try_acquire_permission().is_ok()),
    );
    g.bench_function(
        "resil AdaptiveBulkhead acquire + drop, SHEDDABLE",
        |bench| bench.iter(|| b.try_acquire_permission_as(Criticality::Sheddable).is_ok()),
    );
    g.finish();
}

fn two_threads(crit: &mut Criterion) {
    let c = Contenders::new();
    let mut g = crit.benchmark_group("adaptive_bulkhead/2_threads");
    g.bench_function("resil AdaptiveBulkhead call_async", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| {
                (0..n).for_each(|_| {
                    black_box(adaptive_call_async(&c));
                })
            })
        })
    });
    g.bench_function(
        "resil AdaptiveBulkhead call_async, every call a sample",
        |b| {
            b.iter_custom(|iters| {
                support::on_threads(2, iters, |n| {
                    (0..n).for_each(|_| {
                        black_box(sampled_call_async(&c));
                    })
                })
            })
        },
    );
    g.bench_function("resil Bulkhead call_async", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| {
                (0..n).for_each(|_| {
                    black_box(fixed_call_async(&c));
                })
            })
        })
    });
    g.bench_function("tokio Semaphore acquire().await + drop", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| (0..n).for_each(|_| tokio_acquire(&c)))
        })
    });
    g.finish();
}

criterion_group! {
    name = groups;
    config = support::criterion();
    targets = single_thread, class_check, two_threads
}
criterion_main!(groups);
