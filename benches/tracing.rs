//! What resil's spans cost with no subscriber interested (issue 27 §6: "a
//! call allocates nothing more and costs at most 2 ns more"): the stack
//! Retry( CircuitBreaker( Bulkhead( call ))) on a call that succeeds at
//! once, sync and async, three ways side by side in one run:
//!
//! * `no spans`: the primitives composed by hand, the retry's loop without
//!   its attempt span (`call_*nested_without_spans`, the same loop);
//! * `spans`: the same composition with every span a protected call makes,
//!   as the expansion writes it: the `resil.call` span (the stack run
//!   through `__private::traced_call`, or for async awaited through
//!   `traced_async` when `call_spans_enabled()`) and the retry's
//!   `resil.attempt` spans;
//! * `annotated`: the attribute macros' expansion (spans included).
//!
//! A fourth group puts the `resil.call` span alone around the bare call.
//! After criterion's figures, an interleaved comparison prints the median
//! difference per call and ratio of `spans` and of `annotated` over
//! `no spans`, and the counting allocator prints allocations per call (zero
//! for all three).
//!
//! What is measured: with no subscriber, the call and the retry each check
//! `tracing`'s max level once (a relaxed load) and then run the code they
//! run untraced; the code with spans is out of line (an async call's traced
//! branch boxed). The async contenders run inside an async block, as an
//! annotated async fn awaits its stack. What distorts it: a 2-core machine
//! shared with other work makes
//! single runs noisy (compare within one run); the counting allocator adds a
//! relaxed atomic per allocation (there are none on these paths).

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use criterion::{criterion_group, criterion_main, Criterion};
use resil::__private::{call_spans_enabled, stack, traced_async, traced_call, CallTrace};
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

#[resil::retry(name = "bench-tracing-annotated")]
#[resil::circuit_breaker(name = "bench-tracing-annotated")]
#[resil::bulkhead(name = "bench-tracing-annotated")]
fn annotated(x: u64) -> Result<u64, Unavailable> {
    op(x)
}

#[resil::retry(name = "bench-tracing-annotated-async")]
#[resil::circuit_breaker(name = "bench-tracing-annotated-async")]
#[resil::bulkhead(name = "bench-tracing-annotated-async")]
async fn annotated_async(x: u64) -> Result<u64, Unavailable> {
    op_async(x).await
}

/// What the expansion writes for the hand-composed stack's call site.
static TRACE: CallTrace = CallTrace {
    instance: "bench-tracing-hand",
    aspects: "retry,circuit_breaker,bulkhead",
    retry: Some("bench-tracing-hand"),
    hedging: None,
    circuit_breaker: Some("bench-tracing-hand"),
    rate_limiter: None,
    time_limiter: None,
    bulkhead: Some("bench-tracing-hand"),
    chaos: None,
    throttler: None,
};

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
    for c in &contenders[1..] {
        interleaved(group, &contenders[0], c);
    }
}

fn sync_stack(c: &mut Criterion) {
    let retry = registry().retry("bench-tracing-hand");
    let breaker_handle = registry().circuit_breaker("bench-tracing-hand");
    let bulkhead = registry().bulkhead("bench-tracing-hand");
    let breaker = &*breaker_handle;
    let contenders: Vec<Contender<'_>> = vec![
        (
            "no spans",
            Box::new(|x| {
                retry
                    .call_nested_without_spans(|| breaker.call_nested(|| bulkhead.call(|| op(x))))
                    .map_err(fn_error)
                    .unwrap()
            }),
        ),
        (
            "spans",
            Box::new(|x| {
                // As the expansion writes them: `#[inline(always)]` on the
                // closures run from two places (with and without spans).
                traced_call(
                    &TRACE,
                    Some(&breaker_handle),
                    #[inline(always)]
                    || {
                        retry.call_nested(
                            #[inline(always)]
                            || breaker.call_nested(|| bulkhead.call(|| op(x))),
                        )
                    },
                )
                .map_err(fn_error)
                .unwrap()
            }),
        ),
        ("annotated", Box::new(|x| annotated(x).unwrap())),
    ];
    bench_group(c, "tracing off: retry+breaker+bulkhead, sync", &contenders);
}

fn async_stack(c: &mut Criterion) {
    let retry = registry().retry("bench-tracing-hand-async");
    let breaker_handle = registry().circuit_breaker("bench-tracing-hand-async");
    let bulkhead = registry().bulkhead("bench-tracing-hand-async");
    let (retry, breaker, bulkhead) = (&*retry, &*breaker_handle, &*bulkhead);
    let breaker_handle = &breaker_handle;
    let contenders: Vec<Contender<'_>> = vec![
        // Both inside an async block, as the annotated fn's own body awaits
        // its stack.
        (
            "no spans",
            Box::new(|x| {
                ready(async {
                    retry
                        .call_async_nested_without_spans(|| {
                            breaker.call_async_nested(bulkhead.call_async(op_async(x)))
                        })
                        .await
                })
                .map_err(fn_error)
                .unwrap()
            }),
        ),
        (
            "spans",
            Box::new(|x| {
                // As the expansion writes it: the call's span decided before
                // the stack's future is made, the closures run from two
                // places marked `#[inline(always)]`.
                ready(async {
                    let make = stack(
                        #[inline(always)]
                        || {
                            retry.call_async_nested(
                                #[inline(always)]
                                || breaker.call_async_nested(bulkhead.call_async(op_async(x))),
                            )
                        },
                    );
                    if call_spans_enabled() {
                        traced_async(&TRACE, Some(breaker_handle), make()).await
                    } else {
                        make().await
                    }
                })
                .map_err(fn_error)
                .unwrap()
            }),
        ),
        (
            "annotated",
            Box::new(|x| ready(annotated_async(x)).unwrap()),
        ),
    ];
    bench_group(c, "tracing off: retry+breaker+bulkhead, async", &contenders);
}

/// The `resil.call` span alone around the bare call, sync and async.
fn one_span(c: &mut Criterion) {
    let contenders: Vec<Contender<'_>> = vec![
        (
            "bare",
            Box::new(|x| op(x).map_err(Error::Call).map_err(fn_error).unwrap()),
        ),
        (
            "in the call's span",
            Box::new(|x| {
                traced_call(
                    &TRACE,
                    None,
                    #[inline(always)]
                    || op(x).map_err(Error::Call),
                )
                .map_err(fn_error)
                .unwrap()
            }),
        ),
    ];
    bench_group(
        c,
        "tracing off: one span around the bare call, sync",
        &contenders,
    );
    let contenders: Vec<Contender<'_>> = vec![
        (
            "bare",
            Box::new(|x| {
                ready(async move { op_async(x).await.map_err(Error::Call) })
                    .map_err(fn_error)
                    .unwrap()
            }),
        ),
        (
            "in the call's span",
            Box::new(|x| {
                ready(async move {
                    let make = stack(
                        #[inline(always)]
                        || async move { op_async(x).await.map_err(Error::Call) },
                    );
                    if call_spans_enabled() {
                        traced_async(&TRACE, None, make()).await
                    } else {
                        make().await
                    }
                })
                .map_err(fn_error)
                .unwrap()
            }),
        ),
    ];
    bench_group(
        c,
        "tracing off: one span around the bare call, async",
        &contenders,
    );
}

/// `b` against `a`, robust to a busy machine: rounds of a few thousand
/// calls of each, alternating, so both see the same load; the medians of
/// the per-round difference (ns per call) and ratio are printed next to
/// criterion's figures.
fn interleaved(group: &str, a: &Contender<'_>, b: &Contender<'_>) {
    if !support::measuring() {
        return;
    }
    const ROUNDS: usize = 301;
    const CALLS: u64 = 4_000;
    let time = |f: &(dyn Fn(u64) -> u64 + Sync)| {
        let start = std::time::Instant::now();
        for x in 0..CALLS {
            black_box(f(black_box(x)));
        }
        start.elapsed().as_secs_f64() * 1e9 / CALLS as f64
    };
    let (mut diffs, mut ratios): (Vec<f64>, Vec<f64>) = (0..ROUNDS)
        .map(|round| {
            // Alternate which goes first, so neither always runs warm.
            let (ta, tb) = if round % 2 == 0 {
                let ta = time(&*a.1);
                (ta, time(&*b.1))
            } else {
                let tb = time(&*b.1);
                (time(&*a.1), tb)
            };
            (tb - ta, tb / ta)
        })
        .unzip();
    diffs.sort_by(f64::total_cmp);
    ratios.sort_by(f64::total_cmp);
    println!(
        "{group}: {} - {}, interleaved: median {:+.2} ns a call (quartiles {:+.2}..{:+.2}), {:.3}x",
        b.0,
        a.0,
        diffs[ROUNDS / 2],
        diffs[ROUNDS / 4],
        diffs[3 * ROUNDS / 4],
        ratios[ROUNDS / 2],
    );
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = one_span, sync_stack, async_stack
}
criterion_main!(benches);
