//! Semaphore bulkhead fast path: an uncontended acquire + release around a
//! trivial call, next to `tokio::sync::Semaphore` (`try_acquire` + drop) and
//! tower's `ConcurrencyLimit` (`poll_ready` + `call` on a ready future), on one
//! thread and on two threads sharing one limiter, plus heap allocations per call.
//!
//! # The traffic this stands for
//!
//! A bulkhead sized for bursts that normal load never fills: 25 slots, at most
//! 2 in use, so every call takes a free slot and gives it back (the case users
//! hit on every call; waits and refusals are tested, not benchmarked). On two
//! threads, both hammer one bulkhead, as two worker threads of a runtime
//! serving requests to one downstream do.
//!
//! # What is measured
//!
//! The cost the limiter adds to a call that never waits. Async contenders are
//! driven by the same minimal executor: one poll with a no-op waker, which must
//! complete the future. On two threads, criterion's time per iteration is the
//! time in which *each* thread made one call: the time per **pair** of calls.
//! `floor: one contended atomic add + sub` is the cheapest possible shared
//! counter (one `fetch_add`, one `fetch_sub` per call), in the same run: a
//! bulkhead that takes and returns a slot in one shared word cannot beat it.
//!
//! # What distorts it
//!
//! The counting allocator adds a relaxed atomic per allocation (equally for
//! everyone); on two threads both contend for one cache line, so the figure is
//! dominated by cache-line transfers on this 2-core machine, and other work on
//! the (shared) machine adds noise: compare ratios over several runs.

use std::convert::Infallible;
use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};

use criterion::{criterion_group, criterion_main, Criterion};
use resil::bulkhead::{Bulkhead, BulkheadConfig};
use tower::limit::ConcurrencyLimit;
use tower::{service_fn, Service};

mod support;

#[global_allocator]
static ALLOC: support::CountingAllocator = support::CountingAllocator;

/// Slots for every contender: never exhausted here, so only the fast path runs.
const LIMIT: usize = 25;

/// Polls `fut` once with a no-op waker; every future measured here is ready on
/// its first poll.
#[inline]
fn poll_once<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => unreachable!("an uncontended limiter never waits"),
    }
}

type TowerLimit<F> = ConcurrencyLimit<tower::util::ServiceFn<F>>;

fn tower_limit(
) -> TowerLimit<impl FnMut(u64) -> std::future::Ready<Result<u64, Infallible>> + Clone> {
    ConcurrencyLimit::new(
        service_fn(|x: u64| std::future::ready(Ok::<_, Infallible>(x))),
        LIMIT,
    )
}

/// One call through tower's limiter: `poll_ready` takes the permit, `call`
/// moves it into the response future, polling that future completes it and
/// drops the permit.
#[inline]
fn tower_call<S>(svc: &mut S, x: u64) -> u64
where
    S: Service<u64, Response = u64, Error = Infallible>,
{
    let mut cx = Context::from_waker(Waker::noop());
    match svc.poll_ready(&mut cx) {
        Poll::Ready(Ok(())) => {}
        _ => unreachable!("an uncontended limiter is always ready"),
    }
    poll_once(svc.call(x)).unwrap()
}

struct Contenders {
    bulkhead: Bulkhead,
    semaphore: Arc<tokio::sync::Semaphore>,
}

impl Contenders {
    fn new() -> Self {
        let config = BulkheadConfig::builder()
            .max_concurrent_calls(LIMIT as u32)
            .build()
            .unwrap();
        Contenders {
            bulkhead: Bulkhead::new("bench", config),
            semaphore: Arc::new(tokio::sync::Semaphore::new(LIMIT)),
        }
    }
}

fn resil_permit(c: &Contenders) {
    drop(black_box(c.bulkhead.try_acquire_permission().unwrap()));
}

fn resil_call(c: &Contenders) -> u64 {
    c.bulkhead
        .call(|| Ok::<_, Infallible>(black_box(1)))
        .unwrap()
}

fn resil_call_async(c: &Contenders) -> u64 {
    poll_once(
        c.bulkhead
            .call_async(async { Ok::<_, Infallible>(black_box(1)) }),
    )
    .unwrap()
}

fn tokio_try_acquire(c: &Contenders) {
    drop(black_box(c.semaphore.try_acquire().unwrap()));
}

fn tokio_acquire_async(c: &Contenders) {
    drop(black_box(poll_once(c.semaphore.acquire()).unwrap()));
}

fn report_allocations() {
    let c = Contenders::new();
    let mut tower = tower_limit();
    let calls = 10_000;
    support::report_allocations(
        "resil try_acquire_permission + drop",
        support::allocations_per_call(calls, || resil_permit(&c)),
    );
    support::report_allocations(
        "resil call",
        support::allocations_per_call(calls, || {
            resil_call(&c);
        }),
    );
    support::report_allocations(
        "resil call_async",
        support::allocations_per_call(calls, || {
            resil_call_async(&c);
        }),
    );
    support::report_allocations(
        "tokio Semaphore try_acquire + drop",
        support::allocations_per_call(calls, || tokio_try_acquire(&c)),
    );
    support::report_allocations(
        "tokio Semaphore acquire().await + drop",
        support::allocations_per_call(calls, || tokio_acquire_async(&c)),
    );
    support::report_allocations(
        "tower ConcurrencyLimit poll_ready + call",
        support::allocations_per_call(calls, || {
            tower_call(&mut tower, 1);
        }),
    );
}

fn single_thread(crit: &mut Criterion) {
    report_allocations();
    let c = Contenders::new();
    let mut g = crit.benchmark_group("bulkhead/1_thread");
    g.bench_function("resil try_acquire_permission + drop", |b| {
        b.iter(|| resil_permit(&c))
    });
    g.bench_function("tokio Semaphore try_acquire + drop", |b| {
        b.iter(|| tokio_try_acquire(&c))
    });
    g.bench_function("resil call", |b| b.iter(|| resil_call(&c)));
    g.bench_function("resil call_async", |b| b.iter(|| resil_call_async(&c)));
    g.bench_function("tokio Semaphore acquire().await + drop", |b| {
        b.iter(|| tokio_acquire_async(&c))
    });
    let mut tower = tower_limit();
    g.bench_function("tower ConcurrencyLimit poll_ready + call", |b| {
        b.iter(|| tower_call(&mut tower, black_box(1)))
    });
    g.finish();
}

fn two_threads(crit: &mut Criterion) {
    let c = Contenders::new();
    let tower = tower_limit();
    let mut g = crit.benchmark_group("bulkhead/2_threads");
    let shared = std::sync::atomic::AtomicU64::new(0);
    g.bench_function("floor: one contended atomic add + sub", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| {
                (0..n).for_each(|i| {
                    shared.fetch_add(black_box(i), std::sync::atomic::Ordering::AcqRel);
                    shared.fetch_sub(black_box(i), std::sync::atomic::Ordering::AcqRel);
                })
            })
        })
    });
    g.bench_function("resil try_acquire_permission + drop", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| (0..n).for_each(|_| resil_permit(&c)))
        })
    });
    g.bench_function("tokio Semaphore try_acquire + drop", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| (0..n).for_each(|_| tokio_try_acquire(&c)))
        })
    });
    g.bench_function("resil call", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| {
                (0..n).for_each(|_| {
                    resil_call(&c);
                })
            })
        })
    });
    g.bench_function("resil call_async", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| {
                (0..n).for_each(|_| {
                    resil_call_async(&c);
                })
            })
        })
    });
    g.bench_function("tokio Semaphore acquire().await + drop", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| (0..n).for_each(|_| tokio_acquire_async(&c)))
        })
    });
    g.bench_function("tower ConcurrencyLimit poll_ready + call", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| {
                // Clones share one semaphore, as tower's per-connection clones do.
                let mut svc = tower.clone();
                (0..n).for_each(|i| {
                    tower_call(&mut svc, i);
                })
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
