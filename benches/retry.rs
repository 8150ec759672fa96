//! The retry success path: a call whose first attempt succeeds, through resil's
//! `Retry` (default config: 3 attempts, 500 ms), through `backon` 1.6
//! (`ConstantBuilder`, 3 retries, 500 ms), and bare, on the same trivial fn.
//!
//! The traffic this stands for: a healthy dependency, where nearly every call
//! succeeds on its first attempt and the retry only has to stay out of the
//! way (retries themselves wait for hundreds of milliseconds, which dwarfs any
//! per-call cost).
//!
//! What is measured: the per-call overhead a retry adds when it does not retry:
//! resil's decision context, one striped metrics counter and one relaxed load to
//! see whether anyone listens for events; backon's backoff construction.
//! Async contenders are polled once with a no-op waker (the future is ready on
//! the first poll), so no executor cost is included; every contender's future
//! lives on the stack, and, in the "in a task" cases, in memory as a task's
//! future is (the compiler may keep a small future alone on the stack in
//! registers, which flatters it). Two threads share one `Retry` (its counters are striped
//! per thread); each backon call builds its own backoff, so shares nothing.
//!
//! What distorts it: the counting allocator adds a relaxed atomic per
//! allocation (there are none on these paths); on a 2-core machine shared with
//! other work, the 2-thread figures are noisy.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use backon::{BlockingRetryable, ConstantBuilder, Retryable};
use criterion::{criterion_group, criterion_main, Criterion};
use resil::retry::{Retry, RetryConfig};

mod support;

#[global_allocator]
static ALLOC: support::CountingAllocator = support::CountingAllocator;

#[derive(Debug)]
struct Unavailable;

#[inline(never)]
fn op(x: u64) -> Result<u64, Unavailable> {
    if black_box(x) == u64::MAX {
        Err(Unavailable)
    } else {
        Ok(x + 1)
    }
}

async fn op_async(x: u64) -> Result<u64, Unavailable> {
    op(x)
}

/// Polls a future that must be ready at once (the success path never waits).
#[inline]
fn ready<F: Future>(fut: F) -> F::Output {
    let mut cx = Context::from_waker(Waker::noop());
    match pin!(fut).poll(&mut cx) {
        Poll::Ready(out) => out,
        Poll::Pending => unreachable!("the success path never waits"),
    }
}

/// [`ready`], with the future kept in memory, as it is in a real task (a
/// task's future lives in the task's heap cell and is polled through a
/// pointer). Alone on the stack, the compiler may keep a small future in
/// registers, which no task allows.
#[inline]
fn ready_in_task<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    black_box(&mut fut);
    match fut.poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => unreachable!("the success path never waits"),
    }
}

fn backoff() -> ConstantBuilder {
    ConstantBuilder::default()
        .with_delay(Duration::from_millis(500))
        .with_max_times(2)
}

fn resil_retry() -> Retry {
    Retry::new("bench", RetryConfig::default())
}

type Contender<'a> = (&'static str, Box<dyn Fn(u64) -> u64 + Sync + 'a>);

fn sync_contenders(retry: &Retry) -> Vec<Contender<'_>> {
    vec![
        ("bare", Box::new(|x| op(x).unwrap())),
        ("resil", Box::new(move |x| retry.call(|| op(x)).unwrap())),
        (
            "backon",
            Box::new(|x| (|| op(x)).retry(backoff()).call().unwrap()),
        ),
    ]
}

fn async_contenders(retry: &Retry) -> Vec<Contender<'_>> {
    vec![
        ("bare", Box::new(|x| ready(op_async(x)).unwrap())),
        (
            "resil",
            Box::new(move |x| ready(retry.call_async(|| op_async(x))).unwrap()),
        ),
        (
            "backon",
            Box::new(|x| ready((|| op_async(x)).retry(backoff())).unwrap()),
        ),
        (
            "bare, in a task",
            Box::new(|x| ready_in_task(op_async(x)).unwrap()),
        ),
        (
            "resil, in a task",
            Box::new(move |x| ready_in_task(retry.call_async(|| op_async(x))).unwrap()),
        ),
        (
            "backon, in a task",
            Box::new(|x| ready_in_task((|| op_async(x)).retry(backoff())).unwrap()),
        ),
    ]
}

fn bench_group(c: &mut Criterion, group: &str, contenders: &[Contender<'_>]) {
    let mut g = c.benchmark_group(group);
    for (name, f) in contenders {
        g.bench_function(format!("{name}/1 thread"), |b| {
            let mut x = 0u64;
            b.iter(|| {
                x = x.wrapping_add(1);
                black_box(f(black_box(x)))
            })
        });
        g.bench_function(format!("{name}/2 threads"), |b| {
            b.iter_custom(|iters| {
                support::on_threads(2, iters, |n| {
                    for x in 0..n {
                        black_box(f(black_box(x)));
                    }
                })
            })
        });
        support::report_allocations(
            &format!("{group} {name}"),
            support::allocations_per_call(10_000, || {
                black_box(f(black_box(1)));
            }),
        );
    }
    g.finish();
}

fn sync_success(c: &mut Criterion) {
    let retry = resil_retry();
    bench_group(c, "retry success path, sync", &sync_contenders(&retry));
    assert_eq!(
        retry.metrics().calls(),
        retry.metrics().successful_calls_without_retry()
    );
}

fn async_success(c: &mut Criterion) {
    let retry = resil_retry();
    bench_group(c, "retry success path, async", &async_contenders(&retry));
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = sync_success, async_success
}
criterion_main!(benches);
