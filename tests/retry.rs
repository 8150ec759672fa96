//! Retry through the facade: defaults, interval sequences as a retry waits them,
//! classification, budget, deadlines, async waits and cancellation.
//!
//! Sync tests run on a `ManualClock` (a backoff advances it instead of sleeping);
//! async tests run on paused tokio time with a `TokioClock`.

use std::cell::Cell;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use resil::circuit_breaker::State;
use resil::clock::{ManualClock, TokioClock};
use resil::deadline;
use resil::error::{CallNotPermitted, DeadlineExceeded, RetryBudgetExhausted, Timeout};
use resil::event::EventStream;
use resil::retry::{
    IntervalFunction, Retry, RetryBudget, RetryBudgetConfig, RetryCause, RetryConfig, RetryEvent,
    RetryEventKind,
};
use resil::{Error, ErrorKind};

const MS: fn(u64) -> Duration = Duration::from_millis;

#[derive(Debug, Clone, PartialEq)]
enum Fault {
    Unavailable,
    BadRequest,
}

fn manual(config: RetryConfig) -> (Retry, ManualClock) {
    let clock = ManualClock::new();
    (Retry::with_clock("inventory", config, clock.clone()), clock)
}

/// Runs a call that always fails and returns the waits the clock saw between
/// attempts.
fn observed_waits(retry: &Retry, clock: &ManualClock) -> Vec<Duration> {
    let mut at = Vec::new();
    let _ = retry.call(|| -> Result<(), Fault> {
        at.push(clock.elapsed());
        Err(Fault::Unavailable)
    });
    at.windows(2).map(|w| w[1] - w[0]).collect()
}

fn waits_from(events: &mut EventStream<RetryEvent>) -> Vec<Duration> {
    events.drain().iter().filter_map(RetryEvent::wait).collect()
}

#[test]
fn the_default_config_makes_three_attempts_with_two_waits_of_500_ms() {
    let config = RetryConfig::default();
    assert_eq!(config.max_attempts(), 3);
    assert_eq!(config.wait_duration(), MS(500));
    let (retry, clock) = manual(config);
    let mut events = retry.subscribe();
    assert_eq!(observed_waits(&retry, &clock), [MS(500), MS(500)]);
    assert_eq!(waits_from(&mut events), [MS(500), MS(500)]);
    let m = retry.metrics();
    assert_eq!((m.calls(), m.attempts(), m.retry_attempts()), (1, 3, 2));
    assert_eq!(m.failed_calls_with_retry(), 1);
}

#[test]
fn the_default_budget_config_is_towers() {
    let config = RetryBudgetConfig::default();
    assert_eq!(config.window(), Duration::from_secs(10));
    assert_eq!(config.min_retries_per_second(), 10);
    assert_eq!(config.retry_ratio(), 0.2);
}

#[test]
fn max_attempts_counts_the_first_call() {
    for max in 1..=4u32 {
        let config = RetryConfig::builder()
            .max_attempts(max)
            .wait_duration(MS(10))
            .build()
            .unwrap();
        let (retry, _) = manual(config);
        let mut calls = 0;
        let out: Result<(), _> = retry.call(|| {
            calls += 1;
            Err(Fault::Unavailable)
        });
        assert_eq!(out, Err(Error::Call(Fault::Unavailable)));
        assert_eq!(calls, max);
        let m = retry.metrics();
        assert_eq!(m.attempts(), u64::from(max));
        assert_eq!(m.failed_calls_without_retry(), u64::from(max == 1));
        assert_eq!(m.failed_calls_with_retry(), u64::from(max > 1));
    }
}

#[test]
fn an_exponential_interval_is_waited_as_given() {
    let config = RetryConfig::builder()
        .max_attempts(5)
        .interval_function(IntervalFunction::exponential(MS(100), 1.5))
        .build()
        .unwrap();
    let (retry, clock) = manual(config);
    let mut events = retry.subscribe();
    let expected = [MS(100), MS(150), MS(225), Duration::from_micros(337_500)];
    assert_eq!(observed_waits(&retry, &clock), expected);
    assert_eq!(waits_from(&mut events), expected);
}

#[test]
fn a_capped_exponential_interval_never_waits_longer_than_the_cap() {
    let config = RetryConfig::builder()
        .max_attempts(6)
        .interval_function(IntervalFunction::exponential(MS(100), 2.0).with_max(MS(500)))
        .build()
        .unwrap();
    let (retry, clock) = manual(config);
    assert_eq!(
        observed_waits(&retry, &clock),
        [MS(100), MS(200), MS(400), MS(500), MS(500)]
    );
}

#[test]
fn a_zero_cap_is_a_config_error_not_a_retry_that_never_waits() {
    // The interval type has its own module; the facade re-exports it there and
    // at the root, and `retry::IntervalFunction` names the same type.
    let capped: resil::interval::IntervalFunction =
        resil::IntervalFunction::exponential(MS(100), 2.0).with_max(Duration::ZERO);
    let err = RetryConfig::builder()
        .interval_function(capped)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid `interval_function`: got max 0ns, expected max >= 1ms"
    );
    let err = RetryConfig::builder()
        .interval_function(IntervalFunction::randomized(MS(100), 0.5).with_max(Duration::ZERO))
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "interval_function");
}

#[test]
fn a_randomized_interval_waits_within_the_factor_and_varies() {
    let config = RetryConfig::builder()
        .max_attempts(11)
        .interval_function(IntervalFunction::randomized(MS(1000), 0.5))
        .build()
        .unwrap();
    let (retry, clock) = manual(config);
    let mut waits = Vec::new();
    for _ in 0..5 {
        waits.extend(observed_waits(&retry, &clock));
    }
    assert_eq!(waits.len(), 50);
    assert!(
        waits.iter().all(|w| (MS(500)..=MS(1500)).contains(w)),
        "{waits:?}"
    );
    waits.sort();
    waits.dedup();
    assert!(waits.len() > 1, "randomized waits must not all be equal");
}

#[test]
fn an_exponential_random_interval_stays_within_the_factor_around_each_step() {
    let config = RetryConfig::builder()
        .max_attempts(5)
        .interval_function(IntervalFunction::exponential_random(MS(100), 2.0, 0.25))
        .build()
        .unwrap();
    let (retry, clock) = manual(config);
    for _ in 0..20 {
        let waits = observed_waits(&retry, &clock);
        for (n, wait) in waits.iter().enumerate() {
            let base = 100.0 * 2f64.powi(n as i32);
            let ms = wait.as_secs_f64() * 1000.0;
            assert!(
                (base * 0.75 - 1e-6..=base * 1.25 + 1e-6).contains(&ms),
                "wait {n}: {ms} ms around {base} ms"
            );
        }
    }
}

#[test]
fn a_call_that_recovers_succeeds_with_retry_and_returns_the_value() {
    let (retry, clock) = manual(RetryConfig::default());
    let mut events = retry.subscribe();
    let mut calls = 0;
    let out = retry.call(|| {
        calls += 1;
        if calls == 1 {
            Err(Fault::Unavailable)
        } else {
            Ok("in stock")
        }
    });
    assert_eq!(out, Ok("in stock"));
    assert_eq!(clock.elapsed(), MS(500));
    assert_eq!(
        events.drain(),
        [
            RetryEvent::new(
                "inventory",
                RetryEventKind::Retry {
                    attempt: 1,
                    wait: MS(500),
                    cause: RetryCause::Error,
                }
            ),
            RetryEvent::new("inventory", RetryEventKind::Success { attempts: 2 }),
        ]
    );
    let m = retry.metrics();
    assert_eq!(m.successful_calls_with_retry(), 1);
    assert_eq!((m.calls(), m.attempts()), (1, 2));
}

#[test]
fn a_first_time_success_counts_without_retry_and_never_waits() {
    let (retry, clock) = manual(RetryConfig::default());
    for _ in 0..3 {
        assert_eq!(retry.call(|| Ok::<_, Fault>(1)), Ok(1));
    }
    assert_eq!(clock.elapsed(), Duration::ZERO);
    let m = retry.metrics();
    assert_eq!(m.successful_calls_without_retry(), 3);
    assert_eq!((m.calls(), m.attempts(), m.retry_attempts()), (3, 3, 0));
}

// Issue 6, item 6: Resilience4j publishes SUCCESS only for a success that
// needed retries (`RetryImpl.onComplete`: `numOfAttempts > 0`).
#[test]
fn a_first_attempt_success_publishes_no_event_sync_and_async() {
    let (retry, _) = manual(RetryConfig::default());
    let mut events = retry.subscribe();
    assert_eq!(retry.call(|| Ok::<_, Fault>(1)), Ok(1));
    assert_eq!(retry.call_nested(|| Ok::<_, Error<Fault>>(2)), Ok(2));
    let out = futures::executor::block_on(retry.call_async(|| async { Ok::<_, Fault>(3) }));
    assert_eq!(out, Ok(3));
    assert_eq!(events.drain(), []);
    assert_eq!(retry.metrics().successful_calls_without_retry(), 3);
}

// Resilience4j's `RetryImpl.onError`: an exception the retry predicate turns
// down publishes IGNORED_ERROR, whether `ignoreExceptions` or a
// `retryOnException` predicate that does not accept it turned it down.
#[test]
fn an_error_no_retry_predicate_accepts_publishes_ignored_error_not_error() {
    let config = RetryConfig::builder()
        .retry_on_error(|e: &Fault| *e == Fault::Unavailable)
        .build()
        .unwrap();
    let (retry, _) = manual(config);
    let mut events = retry.subscribe();
    let mut calls = 0;
    let out: Result<(), _> = retry.call(|| {
        calls += 1;
        Err(if calls == 1 {
            Fault::Unavailable
        } else {
            Fault::BadRequest
        })
    });
    assert_eq!(out, Err(Error::Call(Fault::BadRequest)));
    let events = events.drain();
    assert_eq!(
        events[1],
        RetryEvent::new(
            "inventory",
            RetryEventKind::IgnoredError {
                attempts: 2,
                cause: RetryCause::Error,
            }
        )
    );
    assert_eq!(events.len(), 2, "{events:?}");
    assert!(matches!(
        events[0].kind(),
        RetryEventKind::Retry { attempt: 1, .. }
    ));
}

#[test]
fn retry_on_error_restricts_retries_to_the_errors_it_accepts() {
    let config = RetryConfig::builder()
        .retry_on_error(|e: &Fault| *e == Fault::Unavailable)
        .wait_duration(MS(10))
        .build()
        .unwrap();
    let (retry, _) = manual(config);
    let mut calls = 0;
    let out: Result<(), _> = retry.call(|| {
        calls += 1;
        Err(Fault::BadRequest)
    });
    assert_eq!(out, Err(Error::Call(Fault::BadRequest)));
    assert_eq!(calls, 1);
    assert_eq!(retry.metrics().failed_calls_without_retry(), 1);
}

#[test]
fn a_predicate_for_another_error_type_never_matches_so_one_retry_serves_many_call_sites() {
    let config = RetryConfig::builder()
        .retry_on_error(|e: &std::io::Error| e.kind() == std::io::ErrorKind::TimedOut)
        .wait_duration(MS(10))
        .build()
        .unwrap();
    let (retry, _) = manual(config);
    let mut io_calls = 0;
    let _: Result<(), _> = retry.call(|| {
        io_calls += 1;
        Err(std::io::Error::from(std::io::ErrorKind::TimedOut))
    });
    let mut other_calls = 0;
    let _: Result<(), _> = retry.call(|| {
        other_calls += 1;
        Err(Fault::Unavailable)
    });
    assert_eq!((io_calls, other_calls), (3, 1));
}

#[test]
fn ignore_wins_over_retry_and_is_counted_apart_from_failures() {
    let config = RetryConfig::builder()
        .retry_on_error(|_: &Fault| true)
        .ignore_error(|e: &Fault| *e == Fault::BadRequest)
        .build()
        .unwrap();
    let (retry, clock) = manual(config);
    let mut events = retry.subscribe();
    let mut calls = 0;
    let out: Result<(), _> = retry.call(|| {
        calls += 1;
        Err(Fault::BadRequest)
    });
    assert_eq!(out, Err(Error::Call(Fault::BadRequest)));
    assert_eq!((calls, clock.elapsed()), (1, Duration::ZERO));
    assert_eq!(
        events.drain(),
        [RetryEvent::new(
            "inventory",
            RetryEventKind::IgnoredError {
                attempts: 1,
                cause: RetryCause::Error,
            }
        )]
    );
    let m = retry.metrics();
    assert_eq!(m.ignored_error_calls(), 1);
    assert_eq!(
        m.failed_calls_without_retry() + m.failed_calls_with_retry(),
        0
    );
    assert_eq!(m.calls(), 1);
}

#[test]
fn a_retried_result_that_recovers_returns_the_good_value() {
    let config = RetryConfig::builder()
        .retry_on_result(|v: &Option<u32>| v.is_none())
        .build()
        .unwrap();
    let (retry, _) = manual(config);
    let mut calls = 0;
    let out = retry.call(|| {
        calls += 1;
        Ok::<Option<u32>, Fault>(if calls < 3 { None } else { Some(7) })
    });
    assert_eq!(out, Ok(Some(7)));
    assert_eq!(retry.metrics().successful_calls_with_retry(), 1);
}

#[test]
fn a_retried_result_that_never_recovers_returns_the_last_value_and_counts_as_failed() {
    let config = RetryConfig::builder()
        .retry_on_result(|v: &Option<u32>| v.is_none())
        .build()
        .unwrap();
    let (retry, clock) = manual(config);
    let mut events = retry.subscribe();
    let out = retry.call(|| Ok::<Option<u32>, Fault>(None));
    assert_eq!(out, Ok(None));
    assert_eq!(clock.elapsed(), MS(1000));
    let last = events.drain().pop().unwrap();
    assert_eq!(
        last,
        RetryEvent::new(
            "inventory",
            RetryEventKind::Error {
                attempts: 3,
                cause: RetryCause::Result,
            }
        )
    );
    let m = retry.metrics();
    assert_eq!(m.failed_calls_with_retry(), 1);
    assert_eq!(
        m.successful_calls_with_retry() + m.successful_calls_without_retry(),
        0
    );
}

#[test]
fn an_open_breaker_inside_the_retry_is_not_retried_in_a_tight_loop() {
    let (retry, clock) = manual(RetryConfig::default());
    let mut events = retry.subscribe();
    let mut calls = 0;
    let out: Result<(), Error<Fault>> = retry.call_nested(|| {
        calls += 1;
        Err(CallNotPermitted::new("inventory-cb", State::Open).into())
    });
    assert_eq!(out.unwrap_err().kind(), ErrorKind::CallNotPermitted);
    assert_eq!((calls, clock.elapsed()), (1, Duration::ZERO));
    assert_eq!(
        events.drain(),
        [RetryEvent::new(
            "inventory",
            RetryEventKind::IgnoredError {
                attempts: 1,
                cause: RetryCause::Rejection(ErrorKind::CallNotPermitted),
            }
        )]
    );
    assert_eq!(retry.metrics().failed_calls_without_retry(), 1);
}

#[test]
fn an_inner_timeout_is_retried_and_inner_call_errors_follow_the_error_predicates() {
    let config = RetryConfig::builder()
        .retry_on_error(|e: &Fault| *e == Fault::Unavailable)
        .build()
        .unwrap();
    let (retry, _) = manual(config);
    let mut calls = 0;
    let out: Result<(), Error<Fault>> = retry.call_nested(|| {
        calls += 1;
        match calls {
            1 => Err(Timeout::new("inventory-tl", MS(800)).into()),
            2 => Err(Error::Call(Fault::Unavailable)),
            _ => Err(Error::Call(Fault::BadRequest)),
        }
    });
    assert_eq!(out, Err(Error::Call(Fault::BadRequest)));
    assert_eq!(calls, 3);
}

#[test]
fn the_rejection_policy_can_opt_in_to_retrying_a_refusal() {
    let config = RetryConfig::builder()
        .retry_on_rejection(|k| k == ErrorKind::BulkheadFull)
        .build()
        .unwrap();
    let (retry, _) = manual(config);
    let mut calls = 0;
    let out: Result<(), Error<Fault>> = retry.call_nested(|| {
        calls += 1;
        Err(resil::error::BulkheadFull::new("pool").into())
    });
    assert_eq!(out.unwrap_err().kind(), ErrorKind::BulkheadFull);
    assert_eq!(calls, 3);
}

fn budgeted(min_per_second: u32, ratio: f32, clock: &ManualClock) -> Retry {
    let budget = RetryBudget::with_clock(
        RetryBudgetConfig::builder()
            .min_retries_per_second(min_per_second)
            .retry_ratio(ratio)
            .build()
            .unwrap(),
        clock.clone(),
    );
    let config = RetryConfig::builder()
        .wait_duration(MS(100))
        .budget(budget)
        .build()
        .unwrap();
    Retry::with_clock("inventory", config, clock.clone())
}

#[test]
fn a_burst_of_failures_exhausts_the_budget_and_later_calls_fail_fast() {
    let clock = ManualClock::new();
    // A floor of 1 retry/s over the 10 s window: 10 retries, no ratio.
    let retry = budgeted(1, 0.0, &clock);
    let mut events = retry.subscribe();
    let attempts = AtomicU32::new(0);
    let mut outcomes = Vec::new();
    for _ in 0..10 {
        let out: Result<(), _> = retry.call(|| {
            attempts.fetch_add(1, Ordering::Relaxed);
            Err(Fault::Unavailable)
        });
        outcomes.push(out.unwrap_err().kind());
    }
    // Five calls get their two retries each, then the budget is spent.
    assert_eq!(attempts.load(Ordering::Relaxed), 5 * 3 + 5);
    assert_eq!(outcomes[..5], [ErrorKind::Call; 5]);
    assert_eq!(outcomes[5..], [ErrorKind::RetryBudgetExhausted; 5]);
    let m = retry.metrics();
    assert_eq!(m.failed_calls_with_retry(), 5);
    assert_eq!(m.failed_calls_without_retry(), 5);
    assert_eq!(m.retry_budget_exhausted_calls(), 5);
    assert_eq!((m.calls(), m.attempts()), (10, 20));
    let refused = events
        .drain()
        .into_iter()
        .filter(|e| matches!(e.kind(), RetryEventKind::RetryBudgetExhausted { .. }))
        .count();
    assert_eq!(refused, 5);
}

#[test]
fn the_budget_exhausted_error_names_the_retry() {
    let clock = ManualClock::new();
    let retry = budgeted(0, 0.0, &clock);
    let out: Result<(), _> = retry.call(|| Err(Fault::Unavailable));
    assert_eq!(
        out,
        Err(Error::RetryBudgetExhausted(RetryBudgetExhausted::new(
            "inventory"
        )))
    );
}

#[test]
fn the_budget_recovers_after_the_window() {
    let clock = ManualClock::new();
    let retry = budgeted(1, 0.0, &clock);
    for _ in 0..6 {
        let _: Result<(), _> = retry.call(|| Err(Fault::Unavailable));
    }
    let spent: Result<(), _> = retry.call(|| Err(Fault::Unavailable));
    assert_eq!(spent.unwrap_err().kind(), ErrorKind::RetryBudgetExhausted);
    clock.advance(Duration::from_secs(10));
    let mut calls = 0;
    let out: Result<(), _> = retry.call(|| {
        calls += 1;
        Err(Fault::Unavailable)
    });
    assert_eq!(out, Err(Error::Call(Fault::Unavailable)));
    assert_eq!(calls, 3, "the floor is back, so both retries ran");
}

#[test]
fn first_attempts_pay_for_retries_in_proportion() {
    let clock = ManualClock::new();
    let retry = budgeted(0, 0.5, &clock);
    for _ in 0..4 {
        assert_eq!(retry.call(|| Ok::<_, Fault>(())), Ok(()));
    }
    // 4 calls deposited 2 retries; this call deposits half a retry more.
    let mut calls = 0;
    let out: Result<(), _> = retry.call(|| {
        calls += 1;
        Err(Fault::Unavailable)
    });
    assert_eq!(calls, 3);
    assert_eq!(out, Err(Error::Call(Fault::Unavailable)));
    let out: Result<(), _> = retry.call(|| Err(Fault::Unavailable));
    assert_eq!(out.unwrap_err().kind(), ErrorKind::RetryBudgetExhausted);
}

/// Three stacked retries of three attempts each, 100 logical calls to a
/// dependency that always fails; returns the calls the dependency saw.
fn stacked_retries(budget: Option<RetryBudget>, clock: &ManualClock) -> u32 {
    let layer = |name: &str| {
        let mut config = RetryConfig::builder().wait_duration(Duration::ZERO);
        if let Some(budget) = &budget {
            config = config.budget(budget.clone());
        }
        Retry::with_clock(name.to_string(), config.build().unwrap(), clock.clone())
    };
    let (outer, middle, inner) = (layer("outer"), layer("middle"), layer("inner"));
    let bottom = Cell::new(0u32);
    for _ in 0..100 {
        let _ = outer.call_nested(|| {
            middle.call_nested(|| {
                inner.call(|| -> Result<(), Fault> {
                    bottom.set(bottom.get() + 1);
                    Err(Fault::Unavailable)
                })
            })
        });
    }
    bottom.get()
}

#[test]
fn one_budget_shared_by_stacked_retries_bounds_their_product() {
    let clock = ManualClock::new();
    assert_eq!(stacked_retries(None, &clock), 2700, "27x without a budget");
    let budget = RetryBudget::with_clock(
        RetryBudgetConfig::builder()
            .min_retries_per_second(0)
            .retry_ratio(0.2)
            .build()
            .unwrap(),
        clock.clone(),
    );
    // Every layer's first attempts deposit 0.2 of a retry and every layer's
    // retries withdraw from the same balance: 1.6x instead of 27x.
    assert_eq!(stacked_retries(Some(budget), &clock), 160);
}

#[tokio::test(start_paused = true)]
async fn a_deadline_that_cannot_fit_the_next_backoff_ends_the_call_without_waiting() {
    let config = RetryConfig::builder()
        .max_attempts(5)
        .wait_duration(MS(400))
        .build()
        .unwrap();
    let retry = Retry::with_clock("inventory", config, TokioClock::new());
    let mut events = retry.subscribe();
    let start = tokio::time::Instant::now();
    let mut calls = 0;
    let out = deadline::within(Duration::from_secs(1), async {
        retry
            .call_async(|| {
                calls += 1;
                async { Err::<(), _>(Fault::Unavailable) }
            })
            .await
    })
    .await;
    assert_eq!(
        out,
        Ok(Err(Error::DeadlineExceeded(DeadlineExceeded::by(
            "inventory"
        ))))
    );
    assert_eq!(calls, 3, "attempts at 0, 400 and 800 ms");
    assert_eq!(
        start.elapsed(),
        MS(800),
        "the third backoff was not started"
    );
    assert_eq!(
        events.drain().pop(),
        Some(RetryEvent::new(
            "inventory",
            RetryEventKind::DeadlineExceeded {
                attempts: 3,
                wait: Some(MS(400)),
            }
        ))
    );
    let m = retry.metrics();
    assert_eq!(m.deadline_exceeded_calls(), 1);
    assert_eq!(m.failed_calls_with_retry(), 1);
    assert_eq!(m.attempts(), 3);
}

#[tokio::test(start_paused = true)]
async fn a_spent_deadline_starts_no_attempt() {
    let retry = Retry::with_clock("inventory", RetryConfig::default(), TokioClock::new());
    let mut calls = 0;
    let out = deadline::within(Duration::ZERO, async {
        retry
            .call_async(|| {
                calls += 1;
                async { Ok::<_, Fault>(()) }
            })
            .await
    })
    .await;
    assert_eq!(
        out.unwrap().unwrap_err().kind(),
        ErrorKind::DeadlineExceeded
    );
    assert_eq!(calls, 0);
    let m = retry.metrics();
    assert_eq!((m.calls(), m.attempts()), (1, 0));
    assert_eq!(m.failed_calls_without_retry(), 1);
}

#[tokio::test(start_paused = true)]
async fn an_async_retry_waits_on_the_timer_without_blocking_the_thread() {
    // A current-thread runtime: if the backoff blocked the thread, the ticker
    // could not run until the retry finished.
    let config = RetryConfig::builder()
        .wait_duration(MS(1000))
        .build()
        .unwrap();
    let retry = Retry::with_clock("inventory", config, TokioClock::new());
    let log = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let ticker = {
        let log = log.clone();
        tokio::spawn(async move {
            for i in 1..=3 {
                tokio::time::sleep(MS(300)).await;
                log.lock().push(format!("tick {i}"));
            }
        })
    };
    let start = tokio::time::Instant::now();
    let mut calls = 0;
    let out = retry
        .call_async(|| {
            calls += 1;
            let n = calls;
            let log = log.clone();
            async move {
                log.lock().push(format!("attempt {n}"));
                if n == 1 {
                    Err(Fault::Unavailable)
                } else {
                    Ok(n)
                }
            }
        })
        .await;
    ticker.await.unwrap();
    assert_eq!(out, Ok(2));
    assert_eq!(start.elapsed(), MS(1000));
    assert_eq!(
        *log.lock(),
        ["attempt 1", "tick 1", "tick 2", "tick 3", "attempt 2"]
    );
}

#[tokio::test(start_paused = true)]
async fn dropping_an_async_call_mid_backoff_counts_it_as_cancelled_with_its_attempts() {
    use futures::FutureExt;
    let retry = Retry::with_clock("inventory", RetryConfig::default(), TokioClock::new());
    let mut events = retry.subscribe();
    let mut call = Box::pin(retry.call_async(|| async { Err::<(), _>(Fault::Unavailable) }));
    assert!(
        call.as_mut().now_or_never().is_none(),
        "in the first backoff"
    );
    tokio::time::advance(MS(500)).await;
    assert!(
        call.as_mut().now_or_never().is_none(),
        "in the second backoff"
    );
    assert_eq!(
        retry.metrics().calls(),
        0,
        "a call in flight is not counted"
    );
    drop(call);
    let m = retry.metrics();
    assert_eq!(m.cancelled_calls(), 1);
    assert_eq!((m.calls(), m.attempts(), m.retry_attempts()), (1, 2, 1));
    assert_eq!(
        m.failed_calls_with_retry() + m.failed_calls_without_retry(),
        0
    );
    assert_eq!(waits_from(&mut events), [MS(500), MS(500)]);
}

#[tokio::test(start_paused = true)]
async fn dropping_an_async_call_mid_attempt_counts_the_attempt_it_started() {
    use futures::FutureExt;
    let retry = Retry::with_clock("inventory", RetryConfig::default(), TokioClock::new());
    let mut call = Box::pin(retry.call_async(std::future::pending::<Result<(), Fault>>));
    assert!(call.as_mut().now_or_never().is_none());
    drop(call);
    let m = retry.metrics();
    assert_eq!((m.cancelled_calls(), m.attempts()), (1, 1));
}

#[test]
fn a_panicking_closure_is_counted_as_cancelled() {
    let (retry, _) = manual(RetryConfig::default());
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _: Result<(), Error<Fault>> = retry.call(|| panic!("bug in the call"));
    }));
    assert!(caught.is_err());
    let m = retry.metrics();
    assert_eq!((m.cancelled_calls(), m.attempts()), (1, 1));
}

#[tokio::test(start_paused = true)]
async fn an_async_retry_on_result_that_never_recovers_returns_the_last_value() {
    let config = RetryConfig::builder()
        .retry_on_result(|v: &u32| *v == 0)
        .build()
        .unwrap();
    let retry = Retry::with_clock("inventory", config, TokioClock::new());
    let start = tokio::time::Instant::now();
    let out = retry.call_async(|| async { Ok::<u32, Fault>(0) }).await;
    assert_eq!(out, Ok(0));
    assert_eq!(start.elapsed(), MS(1000));
    assert_eq!(retry.metrics().failed_calls_with_retry(), 1);
}

#[test]
fn counters_add_up_exactly_under_concurrent_calls() {
    let config = RetryConfig::builder()
        .wait_duration(Duration::ZERO)
        .ignore_error(|e: &Fault| *e == Fault::BadRequest)
        .build()
        .unwrap();
    let (retry, _) = manual(config);
    let threads = 4;
    let per_thread = 3000u32;
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                for i in 0..per_thread {
                    // i % 5: 0 → ok; 1 → ok on 2nd; 2 → ok on 3rd; 3 → fails 3×; 4 → ignored.
                    let mut attempt = 0;
                    let _ = retry.call(|| {
                        attempt += 1;
                        match i % 5 {
                            0 => Ok(()),
                            1 | 2 if attempt > i % 5 => Ok(()),
                            4 => Err(Fault::BadRequest),
                            _ => Err(Fault::Unavailable),
                        }
                    });
                }
            });
        }
    });
    let each = u64::from(per_thread / 5) * threads;
    let m = retry.metrics();
    assert_eq!(m.successful_calls_without_retry(), each);
    assert_eq!(m.successful_calls_with_retry(), 2 * each);
    assert_eq!(m.failed_calls_with_retry(), each);
    assert_eq!(m.ignored_error_calls(), each);
    assert_eq!(m.calls(), 5 * each);
    assert_eq!(m.attempts(), each * (1 + 2 + 3 + 3 + 1));
    assert_eq!(m.retry_attempts(), each * (1 + 2 + 2));
}

#[test]
fn a_retry_is_a_cheap_send_sync_clone_handle_sharing_its_metrics() {
    fn assert_send_sync<T: Send + Sync + Clone + std::fmt::Debug>() {}
    assert_send_sync::<Retry>();
    let (retry, _) = manual(RetryConfig::default());
    let clone = retry.clone();
    let _ = clone.call(|| Ok::<_, Fault>(()));
    assert_eq!(retry.metrics().calls(), 1);
    assert_eq!(retry.name(), "inventory");
    assert!(format!("{retry:?}").starts_with("Retry { name: \"inventory\""));
}

#[test]
fn an_async_call_future_is_send_when_its_parts_are() {
    fn assert_send<F: std::future::Future + Send>(_: F) {}
    let retry = Retry::new("inventory", RetryConfig::default());
    assert_send(retry.call_async(|| async { Ok::<_, Fault>(()) }));
}

// ---- Issue 6, item 14: Resilience4j's other retry options ----

#[derive(Debug, Clone, PartialEq)]
enum Http {
    TooManyRequests { retry_after: Duration },
    BadRequest,
}

#[test]
fn interval_bi_function_waits_what_the_failed_attempt_says() {
    let config = RetryConfig::builder()
        .max_attempts(4)
        .retry_on_result(|status: &u16| *status == 503)
        .interval_bi_function(|attempt, outcome: Result<&u16, &Http>| match outcome {
            Err(Http::TooManyRequests { retry_after }) => Some(*retry_after),
            Err(Http::BadRequest) => None,
            Ok(_) => Some(MS(10 * u64::from(attempt))),
        })
        .build()
        .unwrap();
    let (retry, clock) = manual(config);
    let mut events = retry.subscribe();
    let mut outcomes = vec![
        Ok(200u16),
        Ok(503),
        Err(Http::TooManyRequests {
            retry_after: MS(1500),
        }),
    ];
    let out = retry.call(|| outcomes.pop().unwrap());
    assert_eq!(out, Ok(200));
    assert_eq!(waits_from(&mut events), [MS(1500), MS(20)]);
    assert_eq!(clock.elapsed(), MS(1520));
}

#[test]
fn an_interval_bi_function_sees_the_call_s_own_error_through_a_nested_call() {
    let config = RetryConfig::builder()
        .interval_bi_function(|_, outcome: Result<&(), &Http>| match outcome {
            Err(Http::TooManyRequests { retry_after }) => Some(*retry_after),
            _ => None,
        })
        .build()
        .unwrap();
    let (retry, clock) = manual(config);
    let mut calls = 0;
    let out: Result<(), Error<Http>> = retry.call_nested(|| {
        calls += 1;
        Err(Error::Call(Http::TooManyRequests {
            retry_after: MS(700),
        }))
    });
    assert!(out.is_err());
    assert_eq!((calls, clock.elapsed()), (3, MS(1400)));
}

#[test]
fn an_interval_bi_function_for_other_types_leaves_the_interval_function_in_charge() {
    let config = RetryConfig::builder()
        .wait_duration(MS(40))
        .interval_bi_function(|_, _: Result<&u16, &Http>| Some(MS(1)))
        .build()
        .unwrap();
    let (retry, clock) = manual(config);
    assert_eq!(observed_waits(&retry, &clock), [MS(40), MS(40)]);
}

#[test]
fn an_interval_bi_function_can_stop_retrying_early() {
    let config = RetryConfig::builder()
        .max_attempts(5)
        .interval_bi_function(|_, outcome: Result<&(), &Http>| match outcome {
            Err(Http::BadRequest) => None,
            _ => Some(MS(100)),
        })
        .build()
        .unwrap();
    let (retry, clock) = manual(config);
    let mut events = retry.subscribe();
    let mut calls = 0;
    let out: Result<(), _> = retry.call(|| {
        calls += 1;
        Err(if calls < 2 {
            Http::TooManyRequests { retry_after: MS(5) }
        } else {
            Http::BadRequest
        })
    });
    assert_eq!(out, Err(Error::Call(Http::BadRequest)));
    assert_eq!((calls, clock.elapsed()), (2, MS(100)));
    assert_eq!(
        events.drain().pop(),
        Some(RetryEvent::new(
            "inventory",
            RetryEventKind::Error {
                attempts: 2,
                cause: RetryCause::Error,
            }
        ))
    );
    assert_eq!(retry.metrics().failed_calls_with_retry(), 1);
}

#[test]
fn fail_after_max_attempts_turns_the_last_retried_value_into_an_error() {
    let consumed = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let log = consumed.clone();
    let config = RetryConfig::builder()
        .retry_on_result(|v: &Option<u32>| v.is_none())
        .fail_after_max_attempts(true)
        .consume_result_before_retry_attempt(move |attempt, v: Option<u32>| {
            log.lock().push((attempt, v));
        })
        .build()
        .unwrap();
    assert!(config.fail_after_max_attempts());
    let (retry, clock) = manual(config);
    let mut events = retry.subscribe();
    let out = retry.call(|| Ok::<Option<u32>, Fault>(None));
    let err = out.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::MaxRetriesExceeded);
    assert_eq!(err.name(), Some("inventory"));
    assert_eq!(
        err.map_call(|_| "").to_string(),
        "retry 'inventory' gave up: the result was still unacceptable after the last attempt"
    );
    assert_eq!(clock.elapsed(), MS(1000));
    assert_eq!(
        events.drain().pop(),
        Some(RetryEvent::new(
            "inventory",
            RetryEventKind::Error {
                attempts: 3,
                cause: RetryCause::Result,
            }
        ))
    );
    // Every discarded value reached the hook, the last one included.
    assert_eq!(*consumed.lock(), [(1, None), (2, None), (3, None)]);
    let m = retry.metrics();
    assert_eq!(
        (m.failed_calls_with_retry(), m.calls(), m.attempts()),
        (1, 1, 3)
    );

    // Nested, the same error comes back in the caller's error type.
    let out: Result<Option<u32>, Error<Fault>> = retry.call_nested(|| Ok(None));
    assert_eq!(out.unwrap_err().kind(), ErrorKind::MaxRetriesExceeded);
}

#[test]
fn without_fail_after_max_attempts_the_last_value_is_returned_and_not_consumed() {
    let consumed = Arc::new(AtomicU32::new(0));
    let count = consumed.clone();
    let config = RetryConfig::builder()
        .retry_on_result(|v: &Option<u32>| v.is_none())
        .consume_result_before_retry_attempt(move |_, _: Option<u32>| {
            count.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap();
    assert!(!config.fail_after_max_attempts());
    let (retry, _) = manual(config);
    assert_eq!(retry.call(|| Ok::<Option<u32>, Fault>(None)), Ok(None));
    assert_eq!(
        consumed.load(Ordering::SeqCst),
        2,
        "before attempts 2 and 3"
    );
}

/// A pooled connection that must be handed back, never just dropped.
#[derive(Debug)]
struct Conn {
    status: u16,
    returned: Arc<AtomicU32>,
}

#[tokio::test(start_paused = true)]
async fn consume_result_before_retry_attempt_receives_each_discarded_value_async() {
    let returned = Arc::new(AtomicU32::new(0));
    let seen = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let log = seen.clone();
    let config = RetryConfig::builder()
        .max_attempts(4)
        .retry_on_result(|c: &Conn| c.status == 503)
        .consume_result_before_retry_attempt(move |attempt, c: Conn| {
            log.lock().push((attempt, c.status));
            c.returned.fetch_add(1, Ordering::SeqCst);
        })
        .build()
        .unwrap();
    let retry = Retry::with_clock("pool", config, TokioClock::new());
    let mut statuses = vec![200u16, 503, 503];
    let out = retry
        .call_async(|| {
            let conn = Conn {
                status: statuses.pop().unwrap(),
                returned: returned.clone(),
            };
            async move { Ok::<_, Fault>(conn) }
        })
        .await
        .unwrap();
    assert_eq!(out.status, 200);
    assert_eq!(*seen.lock(), [(1, 503), (2, 503)]);
    assert_eq!(returned.load(Ordering::SeqCst), 2);
}

#[test]
fn a_panicking_interval_bi_function_reaches_the_caller_and_counts_the_call_as_cancelled() {
    let config = RetryConfig::builder()
        .interval_bi_function(|_, _: Result<&(), &Fault>| -> Option<Duration> {
            panic!("bad header")
        })
        .build()
        .unwrap();
    let (retry, _) = manual(config);
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        retry.call(|| Err::<(), _>(Fault::Unavailable))
    }));
    assert!(out.is_err());
    assert_eq!(retry.metrics().cancelled_calls(), 1);
    assert_eq!(
        retry.call(|| Ok::<_, Fault>(1)),
        Ok(1),
        "the retry still works"
    );
}

// ---- Issue 6, item 8: composition keeps classification ----

#[test]
fn a_plain_call_around_another_primitive_still_applies_predicates_written_for_the_call_s_error() {
    // The user forgot `call_nested`: the closure returns `resil::Error<Fault>`.
    let config = RetryConfig::builder()
        .retry_on_error(|e: &Fault| *e == Fault::Unavailable)
        .build()
        .unwrap();
    let (retry, _) = manual(config);
    let mut calls = 0;
    let out: Result<(), Error<Error<Fault>>> = retry.call(|| {
        calls += 1;
        Err(Error::Call(Fault::Unavailable))
    });
    assert_eq!(out.unwrap_err().flatten(), Error::Call(Fault::Unavailable));
    assert_eq!(calls, 3, "a predicate for Fault sees inside Error<Fault>");

    let config = RetryConfig::builder()
        .ignore_error(|e: &Fault| *e == Fault::BadRequest)
        .build()
        .unwrap();
    let (retry, _) = manual(config);
    let mut calls = 0;
    let _: Result<(), Error<Error<Fault>>> = retry.call(|| {
        calls += 1;
        Err(Error::Call(Fault::BadRequest))
    });
    assert_eq!(calls, 1);
    assert_eq!(retry.metrics().ignored_error_calls(), 1);
}

#[test]
fn predicates_written_for_a_rejection_struct_classify_inner_rejections() {
    let config = RetryConfig::builder()
        .retry_on_error(|t: &Timeout| t.after() < Duration::from_secs(1))
        .ignore_error(|r: &resil::error::RequestNotPermitted| r.name() == "quota")
        .build()
        .unwrap();
    let (retry, _) = manual(config);

    // A short timeout is retried, a long one is not (the default would retry both).
    for (after, expected_calls) in [(MS(200), 3), (Duration::from_secs(2), 1)] {
        let mut calls = 0;
        let out: Result<(), Error<Fault>> = retry.call_nested(|| {
            calls += 1;
            Err(Timeout::new("tl", after).into())
        });
        assert_eq!(out.unwrap_err().kind(), ErrorKind::Timeout);
        assert_eq!(calls, expected_calls, "{after:?}");
    }

    let mut events = retry.subscribe();
    let out: Result<(), Error<Fault>> =
        retry.call_nested(|| Err(resil::error::RequestNotPermitted::new("quota").into()));
    assert_eq!(out.unwrap_err().kind(), ErrorKind::RequestNotPermitted);
    assert_eq!(retry.metrics().ignored_error_calls(), 1);
    assert_eq!(
        events.drain(),
        [RetryEvent::new(
            "inventory",
            RetryEventKind::IgnoredError {
                attempts: 1,
                cause: RetryCause::Rejection(ErrorKind::RequestNotPermitted),
            }
        )]
    );

    // The call's own errors keep following the predicates for their type: a
    // Fault has no `retry_on_error` predicate here, so it is not retried.
    let mut calls = 0;
    let _: Result<(), Error<Fault>> = retry.call_nested(|| {
        calls += 1;
        Err(Error::Call(Fault::Unavailable))
    });
    assert_eq!(calls, 1);
}

#[test]
fn a_business_error_ignored_by_the_retry_stays_ignored_across_a_breaker_and_a_bulkhead() {
    use resil::bulkhead::{Bulkhead, BulkheadConfig};
    use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};

    let clock = ManualClock::new();
    let cb = CircuitBreaker::with_clock(
        "inventory-cb",
        CircuitBreakerConfig::default(),
        clock.clone(),
    );
    let bh = Bulkhead::new("inventory-bh", BulkheadConfig::default());
    let retry = Retry::with_clock(
        "inventory",
        RetryConfig::builder()
            .ignore_error(|e: &Fault| *e == Fault::BadRequest)
            .build()
            .unwrap(),
        clock,
    );
    let mut calls = 0;
    let out = retry.call_nested(|| {
        calls += 1;
        cb.call(|| bh.call(|| Err::<(), _>(Fault::BadRequest)))
            .map_err(Error::flatten)
    });
    assert_eq!(out, Err(Error::Call(Fault::BadRequest)));
    assert_eq!(calls, 1);
    assert_eq!(retry.metrics().ignored_error_calls(), 1);
}

/// Collects the messages of debug events from the retry module.
#[derive(Default, Clone)]
struct Traces(Arc<parking_lot::Mutex<Vec<String>>>);

struct Message<'a>(&'a mut String);

impl tracing::field::Visit for Message<'_> {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            *self.0 = format!("{value:?}");
        }
    }
}

impl tracing::Subscriber for Traces {
    fn enabled(&self, meta: &tracing::Metadata<'_>) -> bool {
        meta.target().starts_with("resil_core::retry")
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        if *event.metadata().level() == tracing::Level::DEBUG {
            let mut text = String::new();
            event.record(&mut Message(&mut text));
            self.0.lock().push(text);
        }
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn predicates_that_can_never_match_the_errors_a_retry_sees_are_traced_once_per_instance() {
    let traces = Traces::default();
    tracing::subscriber::with_default(traces.clone(), || {
        // Other tests of this binary may have registered the event\'s callsite
        // (as "never") on threads without a subscriber: recompute it for ours.
        tracing::callsite::rebuild_interest_cache();
        let config = RetryConfig::builder()
            .ignore_error(|e: &std::io::Error| e.kind() == std::io::ErrorKind::InvalidInput)
            .build()
            .unwrap();
        let (retry, _) = manual(config.clone());
        for _ in 0..3 {
            let _: Result<(), _> = retry.call(|| Err(Fault::BadRequest));
        }
        let (other, _) = manual(config);
        let _: Result<(), _> = other.call(|| Err(Fault::Unavailable));
        // An error the predicates are written for is never traced.
        let _: Result<(), _> =
            other.call(|| Err(std::io::Error::from(std::io::ErrorKind::NotFound)));
    });
    let traces = traces.0.lock();
    assert_eq!(traces.len(), 2, "once per instance: {traces:?}");
    assert!(
        traces[0].contains("an error of type `retry::Fault` arrived")
            && traces[0].contains("written for `std::io::error::Error`")
            && traces[0].contains("call_nested"),
        "{}",
        traces[0]
    );
}

#[test]
fn each_error_predicate_runs_once_per_failed_attempt() {
    let retry_checks = Arc::new(AtomicU32::new(0));
    let ignore_checks = Arc::new(AtomicU32::new(0));
    let (r, i) = (retry_checks.clone(), ignore_checks.clone());
    let config = RetryConfig::builder()
        .retry_on_error(move |_: &Fault| {
            r.fetch_add(1, Ordering::SeqCst);
            true
        })
        .ignore_error(move |_: &Fault| {
            i.fetch_add(1, Ordering::SeqCst);
            false
        })
        .build()
        .unwrap();
    let (retry, _) = manual(config);
    let _: Result<(), _> = retry.call(|| Err(Fault::Unavailable));
    assert_eq!(retry_checks.load(Ordering::SeqCst), 3);
    assert_eq!(ignore_checks.load(Ordering::SeqCst), 3);
}
