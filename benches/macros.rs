//! The cost of the attribute macros: the same stack (Retry( CircuitBreaker(
//! Bulkhead( call )))) written as attributes, composed by hand from registry
//! handles held by the caller, and the bare fn, sync and async, on a call that
//! succeeds at once; and all five attributes on one async fn (Retry(
//! CircuitBreaker( RateLimiter( TimeLimiter( Bulkhead( call )))))), the stack
//! a service puts around each call to a dependency, beside the best hand
//! composition (`call_async_nested` at every layer). The target: the
//! five-attribute expansion costs at most 1.02x that hand composition.
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

/// Every attribute, with a quota no bench run can spend (a refused call would
/// wait, and `ready` below never waits).
#[resil::time_limiter(name = "bench-macros-five")]
#[resil::circuit_breaker(name = "bench-macros-five")]
#[resil::retry(name = "bench-macros-five")]
#[resil::rate_limiter(
    name = "bench-macros-five",
    limit_for_period = 4000000000,
    limit_refresh_period = "1s"
)]
#[resil::bulkhead(name = "bench-macros-five")]
async fn annotated_five(x: u64) -> Result<u64, Unavailable> {
    op_async(x).await
}

/// The same stack written by hand inside the user's own `async fn`, with the
/// user's body as the innermost future, as a service that composes by hand
/// writes it.
async fn hand_five_in_fn(h: &FiveHandles<'_>, x: u64) -> Result<u64, Unavailable> {
    h.0.call_async_nested(|| {
        h.1.call_async_nested(h.2.call_async_nested(
            h.3.call_async_nested(h.4.call_async(async move { op_async(x).await })),
        ))
    })
    .await
    .map_err(fn_error)
}

type FiveHandles<'a> = (
    &'a resil::retry::Retry,
    &'a resil::circuit_breaker::CircuitBreaker,
    &'a resil::rate_limiter::RateLimiter,
    &'a resil::time_limiter::TimeLimiter,
    &'a resil::bulkhead::Bulkhead,
);

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

/// A contender called with a fresh input each time (so nothing folds it),
/// as [`support::interleaved_ratio`] calls it.
fn counted<'a>(f: &'a (dyn Fn(u64) -> u64 + Sync + 'a)) -> impl FnMut() -> u64 + 'a {
    let mut x = 0u64;
    move || {
        x = x.wrapping_add(1);
        f(black_box(x))
    }
}

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

fn async_five(c: &mut Criterion) {
    // The attribute's first call applies its settings to the registry's
    // instances; the hand composition then holds the very same instances.
    ready(annotated_five(0)).unwrap();
    let retry = registry().retry("bench-macros-five");
    let breaker = registry().circuit_breaker("bench-macros-five");
    let limiter = registry().rate_limiter("bench-macros-five");
    let time_limiter = registry().time_limiter("bench-macros-five");
    let bulkhead = registry().bulkhead("bench-macros-five");
    let contenders: Vec<Contender<'_>> = vec![
        ("bare", Box::new(|x| ready(op_async(x)).unwrap())),
        (
            "hand-composed",
            Box::new(|x| {
                let (retry, breaker, limiter, time_limiter, bulkhead) =
                    (&*retry, &*breaker, &*limiter, &*time_limiter, &*bulkhead);
                ready(retry.call_async_nested(|| {
                    breaker.call_async_nested(limiter.call_async_nested(
                        time_limiter.call_async_nested(bulkhead.call_async(op_async(x))),
                    ))
                }))
                .map_err(fn_error)
                .unwrap()
            }),
        ),
        (
            "hand-composed in an async fn",
            Box::new(|x| {
                let h = (&*retry, &*breaker, &*limiter, &*time_limiter, &*bulkhead);
                ready(hand_five_in_fn(&h, x)).unwrap()
            }),
        ),
        ("annotated", Box::new(|x| ready(annotated_five(x)).unwrap())),
    ];
    bench_group(c, "macros: five attributes, async", &contenders);
    let group = "macros: five attributes, async";
    let annotated = &contenders[3];
    for hand in &contenders[1..3] {
        support::interleaved_ratio(
            group,
            (hand.0, counted(&hand.1)),
            (annotated.0, counted(&annotated.1)),
        );
    }
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = sync_stack, async_stack, async_five
}
criterion_main!(benches);
