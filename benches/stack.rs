//! The five-aspect async stack, composed by hand as the README shows and in the
//! macros' order — Retry(CircuitBreaker(RateLimiter(TimeLimiter(Bulkhead(call)))))
//! — next to the same five from peer crates in the same order: backon's retry,
//! recloser's `AsyncRecloser`, governor's `check()`, `tokio::time::timeout` and
//! a `tokio::sync::Semaphore` permit. Also each resil layer alone and the bare
//! call, so the stack can be compared with the sum of its parts, and the stack
//! without each of its layers in turn, so each layer's marginal cost inside
//! the stack can be compared with its cost alone.
//!
//! # The traffic this stands for
//!
//! A handler calling one downstream through the full protection stack, the
//! downstream answering at once (a cache hit, a fast RPC) and failing 2 % of
//! the time with an error the retry does not retry (a business error the
//! caller handles): every call goes through every layer once, never waits,
//! never retries. The breaker's window holds those failures, so it records
//! every call. Quotas (25 concurrent calls, 10⁹ permits a second, 1 s timeout)
//! are never reached.
//!
//! # What is measured
//!
//! The cost the stack adds around a ready future, driven by one poll with a
//! no-op waker inside a current-thread tokio runtime's context (the timeout
//! layers need its timer). Both stacks' futures live on the stack; their
//! sizes are printed (`future size: …`). resil's layers read one clock reading
//! each where they need one (the breaker: the coarse clock; the rate limiter:
//! the coarse clock for a 1 s period); tokio's timeout reads tokio's clock.
//!
//! # What distorts it
//!
//! Other work on the shared 2-core machine (compare ratios over several runs).
//! Allocations per call are asserted to be zero for the resil stack in
//! `tests/allocations.rs`.

use std::future::Future;
use std::hint::black_box;
use std::num::NonZeroU32;
use std::pin::pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use backon::{ConstantBuilder, Retryable};
use criterion::{criterion_group, criterion_main, Criterion};
use governor::{Quota, RateLimiter as Governor};
use resil::bulkhead::{Bulkhead, BulkheadConfig};
use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
use resil::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil::retry::{Retry, RetryConfig};
use resil::time_limiter::{TimeLimiter, TimeLimiterConfig};
use resil::Error;

mod support;

const TIMEOUT: Duration = Duration::from_secs(1);
const PER_SECOND: u32 = 1_000_000_000;
const SLOTS: usize = 25;

/// One atomic on a cache line of its own.
#[derive(Default)]
#[repr(align(64))]
struct Line(AtomicU64);

/// The downstream's business error: handled by the caller, never retried.
#[derive(Debug, Clone, Copy, PartialEq)]
struct OutOfStock;

#[inline(never)]
fn dependency(i: u64) -> Result<u64, OutOfStock> {
    if black_box(i) % 50 == 0 {
        Err(OutOfStock)
    } else {
        Ok(i)
    }
}

/// Polls a future that is ready on its first poll.
#[inline]
fn ready<F: Future>(fut: F) -> F::Output {
    match pin!(fut).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => unreachable!("nothing in this stack waits"),
    }
}

struct Resil {
    retry: Retry,
    cb: CircuitBreaker,
    rl: RateLimiter,
    tl: TimeLimiter,
    bh: Bulkhead,
}

impl Resil {
    fn new() -> Self {
        Resil {
            retry: Retry::new(
                "stack",
                RetryConfig::builder()
                    .retry_on_error(|_: &OutOfStock| false)
                    .build()
                    .unwrap(),
            ),
            cb: CircuitBreaker::new("stack", CircuitBreakerConfig::default()),
            rl: RateLimiter::new(
                "stack",
                RateLimiterConfig::builder()
                    .limit_for_period(PER_SECOND)
                    .limit_refresh_period(Duration::from_secs(1))
                    .timeout_duration(Duration::ZERO)
                    .build()
                    .unwrap(),
            ),
            tl: TimeLimiter::new(
                "stack",
                TimeLimiterConfig::builder()
                    .timeout_duration(TIMEOUT)
                    .build()
                    .unwrap(),
            ),
            bh: Bulkhead::new(
                "stack",
                BulkheadConfig::builder()
                    .max_concurrent_calls(SLOTS as u32)
                    .build()
                    .unwrap(),
            ),
        }
    }

    /// The whole stack, as the README composes it: every layer around
    /// another takes the inner `resil::Error` with `call_async_nested`.
    fn call(&self, i: u64) -> impl Future<Output = Result<u64, Error<OutOfStock>>> + '_ {
        self.retry.call_async_nested(move || {
            self.cb.call_async_nested(
                self.rl.call_async_nested(
                    self.tl
                        .call_async_nested(self.bh.call_async(async move { dependency(i) })),
                ),
            )
        })
    }
}

/// The stack without one of its layers: the stack's time minus one of these
/// is that layer's marginal cost *inside* the stack, to set beside its cost
/// alone (`part: …`). A layer costing more inside than alone is where
/// composition costs.
impl Resil {
    fn without_retry(&self, i: u64) -> impl Future<Output = Result<u64, Error<OutOfStock>>> + '_ {
        self.cb.call_async_nested(
            self.rl.call_async_nested(
                self.tl
                    .call_async_nested(self.bh.call_async(async move { dependency(i) })),
            ),
        )
    }

    fn without_breaker(&self, i: u64) -> impl Future<Output = Result<u64, Error<OutOfStock>>> + '_ {
        self.retry.call_async_nested(move || {
            self.rl.call_async_nested(
                self.tl
                    .call_async_nested(self.bh.call_async(async move { dependency(i) })),
            )
        })
    }

    fn without_rate_limiter(
        &self,
        i: u64,
    ) -> impl Future<Output = Result<u64, Error<OutOfStock>>> + '_ {
        self.retry.call_async_nested(move || {
            self.cb.call_async_nested(
                self.tl
                    .call_async_nested(self.bh.call_async(async move { dependency(i) })),
            )
        })
    }

    fn without_time_limiter(
        &self,
        i: u64,
    ) -> impl Future<Output = Result<u64, Error<OutOfStock>>> + '_ {
        self.retry.call_async_nested(move || {
            self.cb.call_async_nested(
                self.rl
                    .call_async_nested(self.bh.call_async(async move { dependency(i) })),
            )
        })
    }

    fn without_bulkhead(
        &self,
        i: u64,
    ) -> impl Future<Output = Result<u64, Error<OutOfStock>>> + '_ {
        self.retry.call_async_nested(move || {
            self.cb.call_async_nested(
                self.rl
                    .call_async_nested(self.tl.call_async(async move { dependency(i) })),
            )
        })
    }
}

#[derive(Debug)]
enum PeerError {
    Rejected,
    Limited,
    Timeout,
    Full,
    Call(OutOfStock),
}

struct Peers {
    cb: recloser::AsyncRecloser,
    rl: governor::DefaultDirectRateLimiter,
    sem: tokio::sync::Semaphore,
}

impl Peers {
    fn new() -> Self {
        Peers {
            cb: recloser::AsyncRecloser::from(recloser::Recloser::default()),
            rl: Governor::direct(Quota::per_second(NonZeroU32::new(PER_SECOND).unwrap())),
            sem: tokio::sync::Semaphore::new(SLOTS),
        }
    }

    fn call(&self, i: u64) -> impl Future<Output = Result<u64, PeerError>> + '_ {
        (move || async move {
            self.cb
                .call(async move {
                    self.rl.check().map_err(|_| PeerError::Limited)?;
                    tokio::time::timeout(TIMEOUT, async move {
                        let _permit = self.sem.try_acquire().map_err(|_| PeerError::Full)?;
                        dependency(i).map_err(PeerError::Call)
                    })
                    .await
                    .map_err(|_| PeerError::Timeout)?
                })
                .await
                .map_err(|e| match e {
                    recloser::Error::Inner(e) => e,
                    recloser::Error::Rejected => PeerError::Rejected,
                })
        })
        .retry(
            ConstantBuilder::default()
                .with_delay(Duration::from_millis(500))
                .with_max_times(2),
        )
        .when(|e| !matches!(e, PeerError::Call(_)))
    }
}

fn stack(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let _context = rt.enter();
    let resil = Resil::new();
    let peers = Peers::new();
    println!(
        "future size: resil stack {} B, peer stack {} B",
        std::mem::size_of_val(&resil.call(0)),
        std::mem::size_of_val(&peers.call(0)),
    );
    let mut g = c.benchmark_group("stack/1 thread, 2 % business errors");
    let mut i = 0u64;
    let mut next = move || {
        i = i.wrapping_add(1);
        i
    };
    // A cost both stacks pay inside their timeout layer: with tokio's
    // `test-util` feature (enabled for this package's tests, and so in its
    // benches) every reading checks whether time is paused.
    g.bench_function("floor: tokio Instant::now()", |b| {
        b.iter(|| black_box(tokio::time::Instant::now()))
    });
    // The read-modify-writes every resil stack call makes on its common
    // path, each on its own cache line, in the stack's order: the retry's call
    // counter (a plain load and store: the thread owns its stripe), the
    // breaker's window cursor, the rate limiter's CAS, the time limiter's call
    // counter (plain again), the bulkhead's slot taken and given back. The
    // four locked ones cannot overlap: an x86 locked instruction waits for
    // every earlier store to drain.
    let lines: [Line; 6] = Default::default();
    g.bench_function(
        "floor: the stack's 4 locked atomics and 2 plain counters",
        |b| {
            b.iter(|| {
                let plain = &lines[0].0;
                plain.store(plain.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                lines[1].0.fetch_add(1, Ordering::Relaxed);
                let v = lines[2].0.load(Ordering::Relaxed);
                let _ = lines[2]
                    .0
                    .compare_exchange(v, v + 1, Ordering::AcqRel, Ordering::Relaxed);
                let plain = &lines[3].0;
                plain.store(plain.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                lines[4].0.fetch_add(1, Ordering::Acquire);
                lines[4].0.fetch_sub(1, Ordering::Release);
            })
        },
    );
    g.bench_function("floor: one locked atomic", |b| {
        b.iter(|| lines[5].0.fetch_add(1, Ordering::Relaxed))
    });
    g.bench_function("bare call", |b| {
        b.iter(|| {
            let i = next();
            ready(async move { dependency(i) })
        })
    });
    g.bench_function("resil stack", |b| b.iter(|| ready(resil.call(next()))));
    g.bench_function("peer stack", |b| b.iter(|| ready(peers.call(next()))));
    // Each resil layer alone around the same call: the parts whose overheads
    // the stack should not exceed in sum.
    g.bench_function("part: retry", |b| {
        b.iter(|| {
            let i = next();
            ready(resil.retry.call_async(|| async move { dependency(i) }))
        })
    });
    g.bench_function("part: circuit breaker", |b| {
        b.iter(|| {
            let i = next();
            ready(resil.cb.call_async(async move { dependency(i) }))
        })
    });
    g.bench_function("part: rate limiter", |b| {
        b.iter(|| {
            let i = next();
            ready(resil.rl.call_async(async move { dependency(i) }))
        })
    });
    g.bench_function("part: time limiter", |b| {
        b.iter(|| {
            let i = next();
            ready(resil.tl.call_async(async move { dependency(i) }))
        })
    });
    g.bench_function("part: bulkhead", |b| {
        b.iter(|| {
            let i = next();
            ready(resil.bh.call_async(async move { dependency(i) }))
        })
    });
    g.bench_function("stack without: retry", |b| {
        b.iter(|| ready(resil.without_retry(next())))
    });
    g.bench_function("stack without: circuit breaker", |b| {
        b.iter(|| ready(resil.without_breaker(next())))
    });
    g.bench_function("stack without: rate limiter", |b| {
        b.iter(|| ready(resil.without_rate_limiter(next())))
    });
    g.bench_function("stack without: time limiter", |b| {
        b.iter(|| ready(resil.without_time_limiter(next())))
    });
    g.bench_function("stack without: bulkhead", |b| {
        b.iter(|| ready(resil.without_bulkhead(next())))
    });
    g.finish();
    assert_eq!(resil.cb.state(), State::Closed);
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = stack
}
criterion_main!(benches);
