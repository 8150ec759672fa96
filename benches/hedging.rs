//! Hedging next to a hand-written `select` of two attempts, in the three
//! shapes a hedged call takes, plus heap allocations per call.
//!
//! # The traffic this stands for
//!
//! * `first_ready`: the common case a hedge exists for: the first attempt
//!   answers at once (a replica cache hit, a fast read) and no hedge is ever
//!   started. The hand-written version is `select(attempt 0, sleep(delay)
//!   then attempt 1)`, the code a user writes without a library.
//! * `parallel`: `delay = 0`, both attempts start at once, the first is
//!   still pending and the second answers: a latency-critical read raced
//!   against two replicas. Hand-written: `select(attempt 0, attempt 1)`.
//! * `failover`: the first attempt fails at once and the hedge answers (a
//!   replica that refuses its connection). Hand-written: `match attempt 0 {
//!   Err(_) => attempt 1, ok => ok }`.
//!
//! # What is measured
//!
//! The cost of the machinery around attempts that cost nothing themselves,
//! polled once with a no-op waker inside a tokio runtime context (the
//! hand-written version's `sleep` needs one). Hedging also counts the
//! outcome and honours predicates, a budget and a deadline; the hand-written
//! versions do none of that.
//!
//! # What distorts it
//!
//! The counting allocator adds a relaxed atomic per allocation (a hedge
//! allocates its box and the Vec that holds it); the shared 2-core machine
//! adds noise: compare ratios over several runs.

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use futures::future::{self, Either};
use resil::hedging::{Hedging, HedgingConfig};

mod support;

#[global_allocator]
static ALLOC: support::CountingAllocator = support::CountingAllocator;

const DELAY: Duration = Duration::from_millis(50);

#[inline]
fn poll_once<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    match fut.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => unreachable!("every call measured here completes on its first poll"),
    }
}

/// An attempt that answers at once.
async fn answers(n: u32) -> Result<u32, u32> {
    Ok(black_box(n))
}

/// An attempt that fails at once.
async fn fails(n: u32) -> Result<u32, u32> {
    Err(black_box(n))
}

type Outcome = Result<u32, u32>;

/// Attempt 0 never answers; attempt 1 answers at once.
fn first_pending(n: u32) -> Either<future::Pending<Outcome>, future::Ready<Outcome>> {
    if n == 0 {
        Either::Left(future::pending())
    } else {
        Either::Right(future::ready(Ok(black_box(n))))
    }
}

fn hedging(delay: Duration) -> Hedging {
    Hedging::new(
        "bench",
        HedgingConfig::builder().delay(delay).build().unwrap(),
    )
}

fn resil_first_ready(h: &Hedging) -> Result<u32, resil::Error<u32>> {
    poll_once(h.call_async(answers))
}

fn select_first_ready() -> Result<u32, u32> {
    let hedge = async {
        tokio::time::sleep(DELAY).await;
        answers(1).await
    };
    match poll_once(future::select(pin!(answers(0)), pin!(hedge))) {
        Either::Left((out, _)) | Either::Right((out, _)) => out,
    }
}

fn resil_parallel(h: &Hedging) -> Result<u32, resil::Error<u32>> {
    poll_once(h.call_async(first_pending))
}

fn select_parallel() -> Result<u32, u32> {
    match poll_once(future::select(first_pending(0), first_pending(1))) {
        Either::Left((out, _)) | Either::Right((out, _)) => out,
    }
}

fn resil_failover(h: &Hedging) -> Result<u32, resil::Error<u32>> {
    poll_once(h.call_async(|n| async move {
        if n == 0 {
            fails(n).await
        } else {
            answers(n).await
        }
    }))
}

fn hand_failover() -> Result<u32, u32> {
    poll_once(async {
        match fails(0).await {
            Err(_) => answers(1).await,
            ok => ok,
        }
    })
}

fn benches(crit: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let _cx = rt.enter();
    let slow = hedging(DELAY);
    let at_once = hedging(Duration::ZERO);
    let calls = 10_000;
    for (what, per_call) in [
        (
            "hedging first_ready",
            support::allocations_per_call(calls, || {
                let _ = black_box(resil_first_ready(&slow));
            }),
        ),
        (
            "select first_ready",
            support::allocations_per_call(calls, || {
                let _ = black_box(select_first_ready());
            }),
        ),
        (
            "hedging parallel",
            support::allocations_per_call(calls, || {
                let _ = black_box(resil_parallel(&at_once));
            }),
        ),
        (
            "select parallel",
            support::allocations_per_call(calls, || {
                let _ = black_box(select_parallel());
            }),
        ),
        (
            "hedging failover",
            support::allocations_per_call(calls, || {
                let _ = black_box(resil_failover(&slow));
            }),
        ),
        (
            "hand-written failover",
            support::allocations_per_call(calls, || {
                let _ = black_box(hand_failover());
            }),
        ),
    ] {
        support::report_allocations(what, per_call);
    }

    let mut g = crit.benchmark_group("hedging/first_ready");
    g.bench_function("resil Hedging", |b| b.iter(|| resil_first_ready(&slow)));
    g.bench_function("hand-written select + sleep", |b| {
        b.iter(select_first_ready)
    });
    g.finish();
    let mut g = crit.benchmark_group("hedging/parallel");
    g.bench_function("resil Hedging (delay 0)", |b| {
        b.iter(|| resil_parallel(&at_once))
    });
    g.bench_function("hand-written select", |b| b.iter(select_parallel));
    g.finish();
    let mut g = crit.benchmark_group("hedging/failover");
    g.bench_function("resil Hedging", |b| b.iter(|| resil_failover(&slow)));
    g.bench_function("hand-written match", |b| b.iter(hand_failover));
    g.finish();
}

criterion_group! {
    name = groups;
    config = support::criterion();
    targets = benches
}
criterion_main!(groups);
