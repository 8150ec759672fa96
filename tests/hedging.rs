//! Hedging through the facade: Polly v8's semantics (delay, hedge on failure,
//! first acceptable outcome wins, last outcome when all fail), the retry
//! budget, permits given back by dropped losers, cancellation and panics, the
//! counters and events. Paused tokio time throughout: nothing sleeps for real.

use std::sync::atomic::{AtomicU32, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use resil::bulkhead::{Bulkhead, BulkheadConfig};
use resil::clock::TokioClock;
use resil::hedging::{Hedging, HedgingConfig, HedgingEventKind};
use resil::retry::{RetryBudget, RetryBudgetConfig};
use resil::time_limiter::{TimeLimiter, TimeLimiterConfig};
use resil::{deadline, Error, ErrorKind};
use tokio::time::{sleep, Instant};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn hedging(name: &str, hedges: u32, delay: Duration) -> Hedging {
    Hedging::with_clock(
        name,
        HedgingConfig::builder()
            .max_hedged_attempts(hedges)
            .delay(delay)
            .build()
            .unwrap(),
        TokioClock::new(),
    )
}

/// Counts attempts dropped before they finished (the losers).
#[derive(Clone, Default)]
struct Dropped(Arc<AtomicUsize>);

struct CountOnDrop {
    count: Arc<AtomicUsize>,
    armed: bool,
}

impl Drop for CountOnDrop {
    fn drop(&mut self) {
        if self.armed {
            self.count.fetch_add(1, Ordering::SeqCst);
        }
    }
}

impl Dropped {
    /// An attempt taking `took`, then returning `out`; counted if dropped first.
    async fn attempt<T>(
        self,
        took: Duration,
        out: Result<T, &'static str>,
    ) -> Result<T, &'static str> {
        let mut guard = CountOnDrop {
            count: self.0,
            armed: true,
        };
        sleep(took).await;
        guard.armed = false;
        out
    }

    fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

#[tokio::test(start_paused = true)]
async fn a_fast_first_attempt_wins_without_any_hedge() {
    let h = hedging("quotes", 2, ms(50));
    let out = h.call_async(|n| async move { Ok::<_, &str>(n) }).await;
    assert_eq!(out, Ok(0));
    let m = h.metrics();
    assert_eq!(
        (
            m.calls(),
            m.won_by_primary(),
            m.hedges_started(),
            m.won_by_hedge()
        ),
        (1, 1, 0, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn a_slow_first_attempt_is_hedged_after_the_delay_and_the_loser_is_dropped_at_once() {
    let h = hedging("quotes", 1, ms(50));
    let dropped = Dropped::default();
    let start = Instant::now();
    let d = dropped.clone();
    let out = h
        .call_async(|n| {
            let took = if n == 0 { ms(1000) } else { ms(10) };
            d.clone().attempt(took, Ok(n))
        })
        .await;
    assert_eq!(out, Ok(1));
    assert_eq!(
        start.elapsed(),
        ms(60),
        "hedge started at 50 ms, answered 10 ms later"
    );
    assert_eq!(
        dropped.get(),
        1,
        "the slow first attempt was dropped when the hedge won"
    );
    let m = h.metrics();
    assert_eq!(
        (m.hedges_started(), m.won_by_hedge(), m.won_by_primary()),
        (1, 1, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn the_first_attempt_still_wins_when_it_beats_the_hedge() {
    let h = hedging("quotes", 1, ms(50));
    let dropped = Dropped::default();
    let d = dropped.clone();
    let start = Instant::now();
    let out = h
        .call_async(|n| {
            let took = if n == 0 { ms(70) } else { ms(100) };
            d.clone().attempt(took, Ok(n))
        })
        .await;
    assert_eq!(out, Ok(0));
    assert_eq!(start.elapsed(), ms(70));
    assert_eq!(dropped.get(), 1, "the hedge lost and was dropped");
    let m = h.metrics();
    assert_eq!((m.hedges_started(), m.won_by_primary()), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn a_failed_attempt_starts_the_next_one_at_once_without_waiting_for_the_delay() {
    let h = hedging("quotes", 2, Duration::from_secs(2));
    let start = Instant::now();
    let out = h
        .call_async(|n| async move {
            sleep(ms(5)).await;
            if n < 2 {
                Err("503")
            } else {
                Ok(n)
            }
        })
        .await;
    assert_eq!(out, Ok(2));
    assert_eq!(
        start.elapsed(),
        ms(15),
        "three attempts back to back, no 2 s delay"
    );
    assert_eq!(h.metrics().hedges_started(), 2);
}

#[tokio::test(start_paused = true)]
async fn when_every_attempt_fails_the_last_outcome_is_returned() {
    let h = hedging("quotes", 2, ms(10));
    let start = Instant::now();
    let out = h
        .call_async(|n| async move {
            // 0 fails at 100 ms, 1 (started at 10) at 40 ms, 2 (started at 20) at 120 ms.
            let took = [100, 30, 100][n as usize];
            sleep(ms(took)).await;
            Err::<(), _>(["first", "second", "third"][n as usize])
        })
        .await;
    assert_eq!(
        out,
        Err(Error::Call("third")),
        "the attempt that failed last"
    );
    assert_eq!(start.elapsed(), ms(120));
    let m = h.metrics();
    assert_eq!((m.calls(), m.all_failed(), m.hedges_started()), (1, 1, 2));
}

#[tokio::test(start_paused = true)]
async fn a_zero_delay_starts_every_attempt_at_once_and_the_fastest_wins() {
    let h = hedging("quotes", 3, Duration::ZERO);
    let started = Arc::new(AtomicU32::new(0));
    let s = started.clone();
    let begin = Instant::now();
    let out = h
        .call_async(|n| {
            s.fetch_add(1, Ordering::SeqCst);
            async move {
                sleep(ms([40, 30, 10, 20][n as usize])).await;
                Ok::<_, &str>(n)
            }
        })
        .await;
    assert_eq!(out, Ok(2));
    assert_eq!(begin.elapsed(), ms(10));
    assert_eq!(started.load(Ordering::SeqCst), 4);
}

#[tokio::test(start_paused = true)]
async fn an_infinite_delay_hedges_only_on_failure() {
    let h = hedging("quotes", 1, Duration::MAX);
    let begin = Instant::now();
    let out = h
        .call_async(|n| async move {
            sleep(ms(5000)).await;
            Ok::<_, &str>(n)
        })
        .await;
    assert_eq!(out, Ok(0));
    assert_eq!(begin.elapsed(), ms(5000), "a slow attempt is waited for");
    assert_eq!(h.metrics().hedges_started(), 0);
}

#[tokio::test(start_paused = true)]
async fn an_error_no_predicate_handles_is_accepted_and_ends_the_call() {
    let h = Hedging::with_clock(
        "quotes",
        HedgingConfig::builder()
            .delay(ms(50))
            .handle_error(|status: &u16| *status >= 500)
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let out = h.call_async(|_| async { Err::<(), u16>(404) }).await;
    assert_eq!(out, Err(Error::Call(404)));
    assert_eq!(h.metrics().hedges_started(), 0, "a 404 is an answer");
    let out = h
        .call_async(|n| async move {
            if n == 0 {
                Err(503)
            } else {
                Ok(n)
            }
        })
        .await;
    assert_eq!(out, Ok(1), "a 503 starts the hedge at once");
}

#[tokio::test(start_paused = true)]
async fn a_handled_result_is_not_good_enough_and_starts_the_next_attempt() {
    let h = Hedging::with_clock(
        "quotes",
        HedgingConfig::builder()
            .delay(ms(50))
            .handle_result(|stock: &Vec<u32>| stock.is_empty())
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let out = h
        .call_async(|n| async move { Ok::<Vec<u32>, ()>(if n == 0 { vec![] } else { vec![7] }) })
        .await;
    assert_eq!(out, Ok(vec![7]));
    assert_eq!(h.metrics().won_by_hedge(), 1);
}

#[tokio::test(start_paused = true)]
async fn hedges_spend_the_retry_budget_and_stop_when_it_is_empty() {
    // No floor, half a retry per call: two calls pay for one hedge.
    let budget = RetryBudget::with_clock(
        RetryBudgetConfig::builder()
            .min_retries_per_second(0)
            .retry_ratio(0.5)
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let h = Hedging::with_clock(
        "quotes",
        HedgingConfig::builder()
            .max_hedged_attempts(3)
            .delay(ms(10))
            .budget(budget.clone())
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let slow = |n: u32| async move {
        sleep(ms(100)).await;
        Ok::<_, ()>(n)
    };
    // Call 1 deposits half a retry: no hedge can be paid for.
    assert_eq!(h.call_async(slow).await, Ok(0));
    // Call 2 deposits the other half: one hedge, then the budget is empty.
    assert_eq!(h.call_async(slow).await, Ok(0));
    let m = h.metrics();
    assert_eq!(m.hedges_started(), 1, "one hedge paid for by two calls");
    assert_eq!(
        m.budget_refused(),
        2,
        "one refusal per call that wanted more"
    );
    assert_eq!(budget.available_retries(), 0);
}

#[tokio::test(start_paused = true)]
async fn losers_give_their_bulkhead_slots_back_before_the_caller_sees_the_winner() {
    let bulkhead = Bulkhead::new(
        "replicas",
        BulkheadConfig::builder()
            .max_concurrent_calls(5)
            .build()
            .unwrap(),
    );
    let h = hedging("quotes", 2, ms(10));
    let b = &bulkhead;
    let out = h
        .call_async_nested(|n| {
            b.call_async(async move {
                sleep(ms([1000, 1000, 5][n as usize])).await;
                Ok::<_, ()>(n)
            })
        })
        .await;
    assert_eq!(out, Ok(2));
    assert_eq!(
        bulkhead.available_concurrent_calls(),
        5,
        "both losers were dropped with their slots"
    );
}

#[tokio::test(start_paused = true)]
async fn a_full_bulkhead_refusing_a_hedge_never_beats_the_attempt_still_running() {
    let bulkhead = Bulkhead::new(
        "replicas",
        BulkheadConfig::builder()
            .max_concurrent_calls(1)
            .build()
            .unwrap(),
    );
    let h = hedging("quotes", 1, ms(10));
    let b = &bulkhead;
    let out = h
        .call_async_nested(|n| {
            b.call_async(async move {
                sleep(ms(100)).await;
                Ok::<_, ()>(n)
            })
        })
        .await;
    assert_eq!(
        out,
        Ok(0),
        "the refused hedge failed; the first attempt answered"
    );
    assert_eq!(bulkhead.metrics().rejected_calls(), 1);
    assert_eq!(bulkhead.available_concurrent_calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_inner_timeout_is_a_failure_that_starts_the_next_hedge() {
    let limiter = TimeLimiter::new(
        "per-attempt",
        TimeLimiterConfig::builder()
            .timeout_duration(ms(30))
            .build()
            .unwrap(),
    );
    let h = hedging("quotes", 1, Duration::from_secs(2));
    let l = &limiter;
    let begin = Instant::now();
    let out = h
        .call_async_nested(|n| {
            l.call_async(async move {
                sleep(ms(if n == 0 { 1000 } else { 5 })).await;
                Ok::<_, ()>(n)
            })
        })
        .await;
    assert_eq!(out, Ok(1));
    assert_eq!(
        begin.elapsed(),
        ms(35),
        "timed out at 30 ms, hedge answered 5 ms later"
    );

    // Every attempt timing out: the last timeout is returned as is.
    let out = h
        .call_async_nested(|_| {
            l.call_async(async {
                sleep(ms(1000)).await;
                Ok::<u32, ()>(0)
            })
        })
        .await;
    assert_eq!(out.unwrap_err().kind(), ErrorKind::Timeout);
}

#[tokio::test(start_paused = true)]
async fn dropping_a_hedged_call_drops_every_attempt_and_frees_every_slot() {
    let bulkhead = Bulkhead::new(
        "replicas",
        BulkheadConfig::builder()
            .max_concurrent_calls(5)
            .build()
            .unwrap(),
    );
    let h = hedging("quotes", 3, ms(10));
    let b = &bulkhead;
    let call = h.call_async_nested(|n| {
        b.call_async(async move {
            sleep(ms(1000)).await;
            Ok::<_, ()>(n)
        })
    });
    let out = tokio::time::timeout(ms(25), call).await;
    assert!(out.is_err(), "cancelled after three attempts started");
    assert_eq!(bulkhead.available_concurrent_calls(), 5);
    let m = h.metrics();
    assert_eq!((m.cancelled(), m.calls(), m.hedges_started()), (1, 1, 2));
}

#[tokio::test(start_paused = true)]
async fn a_panicking_attempt_unwinds_the_call_and_leaks_no_slot() {
    let bulkhead = Bulkhead::new(
        "replicas",
        BulkheadConfig::builder()
            .max_concurrent_calls(5)
            .build()
            .unwrap(),
    );
    let h = hedging("quotes", 2, ms(10));
    let b = &bulkhead;
    let call = h.call_async_nested(|n| {
        b.call_async(async move {
            sleep(ms(if n == 1 { 5 } else { 1000 })).await;
            if n == 1 {
                panic!("attempt 1 panics");
            }
            Ok::<_, ()>(n)
        })
    });
    let out = std::panic::AssertUnwindSafe(call).catch_unwind().await;
    assert!(out.is_err(), "the panic reached the caller");
    assert_eq!(bulkhead.available_concurrent_calls(), 5);
    assert_eq!(h.metrics().cancelled(), 1);

    // A panicking attempt factory and a panicking predicate, likewise.
    let call = h.call_async(|n| {
        if n == 1 {
            panic!("the factory panics");
        }
        b.call_async(async {
            sleep(ms(1000)).await;
            Ok::<u32, ()>(0)
        })
    });
    assert!(std::panic::AssertUnwindSafe(call)
        .catch_unwind()
        .await
        .is_err());
    let picky = Hedging::with_clock(
        "picky",
        HedgingConfig::builder()
            .handle_result(|_: &u32| panic!("the predicate panics"))
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let call = picky.call_async(|n| b.call_async(async move { Ok::<u32, ()>(n) }));
    assert!(std::panic::AssertUnwindSafe(call)
        .catch_unwind()
        .await
        .is_err());
    assert_eq!(bulkhead.available_concurrent_calls(), 5);
    assert_eq!(h.metrics().cancelled() + picky.metrics().cancelled(), 3);
}

#[tokio::test(start_paused = true)]
async fn no_hedge_starts_once_the_deadline_is_spent() {
    let h = hedging("quotes", 2, ms(10));
    let started = Arc::new(AtomicU32::new(0));
    let s = started.clone();
    let out = deadline::within(ms(50), async {
        // The work reaches the hedged call just as the budget is spent.
        sleep(ms(50)).await;
        assert_eq!(deadline::remaining(), Some(Duration::ZERO));
        h.call_async(|_| {
            s.fetch_add(1, Ordering::SeqCst);
            async { Err::<(), _>("503") }
        })
        .await
    })
    .await;
    assert_eq!(out, Ok(Err(Error::Call("503"))));
    assert_eq!(
        started.load(Ordering::SeqCst),
        1,
        "the failure started no hedge"
    );
    assert_eq!(h.metrics().all_failed(), 1);
}

#[tokio::test(start_paused = true)]
async fn events_tell_the_story_of_each_call() {
    let h = hedging("quotes", 1, ms(10));
    let mut events = h.subscribe();
    let _ = h
        .call_async(|n| async move {
            sleep(ms(if n == 0 { 100 } else { 1 })).await;
            Ok::<_, ()>(n)
        })
        .await;
    let _ = h.call_async(|_| async { Err::<(), _>(()) }).await;
    let seen: Vec<_> = events
        .drain()
        .into_iter()
        .map(|e| (e.kind(), e.attempt()))
        .collect();
    assert_eq!(
        seen,
        [
            (HedgingEventKind::HedgeStarted, 1),
            (HedgingEventKind::WonByHedge, 1),
            (HedgingEventKind::HedgeStarted, 1),
            (HedgingEventKind::AllFailed, 2),
        ]
    );
}

/// Many concurrent calls with assorted timings on a multi-threaded runtime:
/// every call ends in exactly one outcome, every slot comes back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_concurrency_every_call_ends_in_exactly_one_outcome() {
    let bulkhead = Bulkhead::new(
        "replicas",
        BulkheadConfig::builder()
            .max_concurrent_calls(1000)
            .build()
            .unwrap(),
    );
    let h = Hedging::new(
        "quotes",
        HedgingConfig::builder()
            .max_hedged_attempts(2)
            .delay(Duration::from_micros(200))
            .build()
            .unwrap(),
    );
    let tasks: Vec<_> = (0..400u64)
        .map(|i| {
            let (h, b) = (h.clone(), bulkhead.clone());
            tokio::spawn(async move {
                let call = h.call_async_nested(|n| {
                    let b = b.clone();
                    async move {
                        b.call_async(async move {
                            let mix = (i * 7 + u64::from(n) * 13) % 5;
                            tokio::time::sleep(Duration::from_micros(mix * 150)).await;
                            if mix == 3 {
                                Err("503")
                            } else {
                                Ok(n)
                            }
                        })
                        .await
                    }
                });
                if i % 10 == 0 {
                    let _ = tokio::time::timeout(Duration::from_micros(100), call).await;
                } else {
                    let _ = call.await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let m = h.metrics();
    assert_eq!(m.calls(), 400);
    assert_eq!(
        m.won_by_primary() + m.won_by_hedge() + m.all_failed() + m.cancelled(),
        400
    );
    assert_eq!(bulkhead.available_concurrent_calls(), 1000);
}

#[test]
fn the_config_error_names_the_field_and_range() {
    let err = HedgingConfig::builder()
        .max_hedged_attempts(11)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid `max_hedged_attempts`: got 11, expected an integer in 1..=10"
    );
}
