//! The cost of the attribute macros: the same stack (Retry( CircuitBreaker(
//! Bulkhead( call )))) written as attributes, composed by hand from registry
//! handles held by the caller, and the bare fn, sync and async, on a call that
//! succeeds at once.
//!
//! What is measured: what the expansion adds over hand-written composition:
//! one `OnceLock` check (the per-call-site static holding every handle), the
//! handles' atomic loads (the hand-composed contender pays it too: it holds registry
//! handles), the extra async block around the body, and the result
//! conversion. Both stacks use the nested-aware `call_nested` /
//! `call_async_nested` of the retry and the breaker. Async
//! contenders are polled once with a no-op waker (every future here is ready
//! on the first poll), so no executor cost is included.
//!
//! What distorts it: the counting allocator adds a relaxed atomic per
//! allocation (there are none on these paths); a 2-core machine shared with
//! other work makes single runs noisy, so compare ratios within one run.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use criterion::{criterion_group, criterion_main, Criterion};
use resil::{registry, Error, Rejection};

mod support;

#[global_allocator]
static ALLOC: support::CountingAllocator = support::CountingAllocator;

#[derive(Debug)]
enum Unavailable {
    Down,
    Rejected,
}

impl From<Rejection> for Unavailable {
    fn from(_: Rejection) -> Self {
        Unavailable::Rejected
    }
}

#[inline(never)]
fn op(x: u64) -> Result<u64, Unavailable> {
    if black_box(x) == u64::MAX {
        Err(Unavailable::Down)
    } else {
        Ok(x + 1)
    }
}

async fn op_async(x: u64) -> Result<u64, Unavailable> {
    op(x)
}

#[resil::retry(name = "bench-macros-annotated")]
#[resil::circuit_breaker(name = "bench-macros-annotated")]
#[resil::bulkhead(name = "bench-macros-annotated")]
fn annotated(x: u64) -> Result<u64, Unavailable> {
    op(x)
}

#[resil::retry(name = "bench-macros-annotated-async")]
#[resil::circuit_breaker(name = "bench-macros-annotated-async")]
#[resil::bulkhead(name = "bench-macros-annotated-async")]
async fn annotated_async(x: u64) -> Result<u64, Unavailable> {
    op_async(x).await
}

fn fn_error(e: Error<Unavailable>) -> Unavailable {
    match e.into_rejection() {
        Ok(rejection) => rejection.into(),
        Err(call) => call,
    }
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

type Contender<'a> = (&'static str, Box<dyn Fn(u64) -> u64 + Sync + 'a>);

fn bench_group(c: &mut Criterion, group: &str, contenders: &[Contender<'_>]) {
    let mut g = c.benchmark_group(group);
    for (name, f) in contenders {
        g.bench_function(*name, |b| {
            let mut x = 0u64;
            b.iter(|| {
                x = x.wrapping_add(1);
                black_box(f(black_box(x)))
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

fn sync_stack(c: &mut Criterion) {
    let retry = registry().retry("bench-macros-hand");
    let breaker = registry().circuit_breaker("bench-macros-hand");
    let bulkhead = registry().bulkhead("bench-macros-hand");
    let contenders: Vec<Contender<'_>> = vec![
        ("bare", Box::new(|x| op(x).unwrap())),
        (
            "hand-composed",
            Box::new(|x| {
                retry
                    .call_nested(|| breaker.call_nested(|| bulkhead.call(|| op(x))))
                    .map_err(fn_error)
                    .unwrap()
            }),
        ),
        ("annotated", Box::new(|x| annotated(x).unwrap())),
    ];
    bench_group(c, "macros: retry+breaker+bulkhead, sync", &contenders);
}

fn async_stack(c: &mut Criterion) {
    let retry = registry().retry("bench-macros-hand-async");
    let breaker = registry().circuit_breaker("bench-macros-hand-async");
    let bulkhead = registry().bulkhead("bench-macros-hand-async");
    let contenders: Vec<Contender<'_>> = vec![
        ("bare", Box::new(|x| ready(op_async(x)).unwrap())),
        (
            "hand-composed",
            Box::new(|x| {
                let (retry, breaker, bulkhead) = (&*retry, &*breaker, &*bulkhead);
                ready(retry.call_async_nested(|| {
                    breaker.call_async_nested(bulkhead.call_async(op_async(x)))
                }))
                .map_err(fn_error)
                .unwrap()
            }),
        ),
        (
            "annotated",
            Box::new(|x| ready(annotated_async(x)).unwrap()),
        ),
    ];
    bench_group(c, "macros: retry+breaker+bulkhead, async", &contenders);
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = sync_stack, async_stack
}
criterion_main!(benches);
