//! Time limiter overhead: `TimeLimiter::call_async` around a ready future vs bare
//! `tokio::time::timeout` around the same future, on current-thread tokio
//! runtimes, iterating inside one `block_on` (the same loop for every
//! contender), on 1 thread and on 2 threads sharing one limiter.
//!
//! The traffic this stands for: a handler awaiting a fast downstream (a cache
//! hit, a local call) under a generous timeout that never fires, which is how
//! nearly every call through a time limiter ends.
//!
//! A ready future is the worst case for a wrapper: the work costs nothing, so
//! the timer's set-up (a runtime-handle clone and an `Instant::now()`, in both
//! contenders) and the limiter's own bookkeeping are all that is measured. The
//! timer is never registered in the wheel, since the future is ready on its
//! first poll. What distorts it: the counting allocator (one relaxed atomic per
//! allocation, equal for every contender), and on 2 threads the limiter's
//! shared success counter, which the two threads contend on.
//!
//! Also reported: heap allocations per call, measured by polling each future
//! once by hand inside the runtime's context (so the runtime's own `block_on`
//! bookkeeping is not counted).

use std::future::{ready, Future};
use std::hint::black_box;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::task::{Context, Waker};
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use resil::time_limiter::{TimeLimiter, TimeLimiterConfig};

mod support;

#[global_allocator]
static ALLOC: support::CountingAllocator = support::CountingAllocator;

const TIMEOUT: Duration = Duration::from_secs(1);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a current-thread runtime")
}

fn limiter(cancel: bool) -> TimeLimiter {
    TimeLimiter::new(
        "bench",
        TimeLimiterConfig::builder()
            .timeout_duration(TIMEOUT)
            .cancel_running_future(cancel)
            .build()
            .expect("a valid config"),
    )
}

/// The contenders, each one call around a ready `Ok(u64)`.
#[derive(Clone, Copy)]
enum Contender {
    TokioTimeout,
    CallAsync,
    CallAsyncDetachable,
}

impl Contender {
    const ALL: [Contender; 3] = [
        Contender::TokioTimeout,
        Contender::CallAsync,
        Contender::CallAsyncDetachable,
    ];

    fn label(self) -> &'static str {
        match self {
            Contender::TokioTimeout => "tokio::time::timeout",
            Contender::CallAsync => "resil TimeLimiter::call_async",
            Contender::CallAsyncDetachable => {
                "resil TimeLimiter::call_async_detachable (cancel_running_future=false)"
            }
        }
    }

    fn limiter(self) -> TimeLimiter {
        limiter(!matches!(self, Contender::CallAsyncDetachable))
    }

    /// Runs `iters` calls inside one `block_on` and returns their wall time.
    fn run(self, rt: &tokio::runtime::Runtime, limiter: &TimeLimiter, iters: u64) -> Duration {
        rt.block_on(async {
            let start = Instant::now();
            for i in 0..iters {
                let work = ready(Ok::<u64, ()>(black_box(i)));
                match self {
                    Contender::TokioTimeout => {
                        let _ = black_box(tokio::time::timeout(TIMEOUT, work).await);
                    }
                    Contender::CallAsync => {
                        let _ = black_box(limiter.call_async(work).await);
                    }
                    Contender::CallAsyncDetachable => {
                        let _ = black_box(limiter.call_async_detachable(work).await);
                    }
                }
            }
            start.elapsed()
        })
    }

    /// Builds and polls one call to completion by hand.
    fn poll_once(self, limiter: &TimeLimiter, cx: &mut Context<'_>) {
        let work = ready(Ok::<u64, ()>(black_box(1)));
        let done = match self {
            Contender::TokioTimeout => pin!(tokio::time::timeout(TIMEOUT, work))
                .poll(cx)
                .is_ready(),
            Contender::CallAsync => pin!(limiter.call_async(work)).poll(cx).is_ready(),
            Contender::CallAsyncDetachable => pin!(limiter.call_async_detachable(work))
                .poll(cx)
                .is_ready(),
        };
        assert!(done, "a ready future completes on its first poll");
    }
}

fn report_allocations() {
    let rt = runtime();
    let _context = rt.enter();
    let mut cx = Context::from_waker(Waker::noop());
    for contender in Contender::ALL {
        let limiter = contender.limiter();
        let per_call =
            support::allocations_per_call(10_000, || contender.poll_once(&limiter, &mut cx));
        support::report_allocations(contender.label(), per_call);
    }
}

fn ready_future(c: &mut Criterion) {
    report_allocations();

    let mut group = c.benchmark_group("time_limiter/ready_future/1_thread");
    let rt = runtime();
    for contender in Contender::ALL {
        let limiter = contender.limiter();
        group.bench_function(contender.label(), |b| {
            b.iter_custom(|iters| contender.run(&rt, &limiter, iters))
        });
    }
    group.finish();

    let mut group = c.benchmark_group("time_limiter/ready_future/2_threads");
    let runtimes = [runtime(), runtime()];
    let next = AtomicUsize::new(0);
    for contender in Contender::ALL {
        let limiter = contender.limiter();
        group.bench_function(contender.label(), |b| {
            b.iter_custom(|iters| {
                support::on_threads(2, iters, |iters| {
                    let rt = &runtimes[next.fetch_add(1, Ordering::Relaxed) % 2];
                    contender.run(rt, &limiter, iters);
                })
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = ready_future
}
criterion_main!(benches);
