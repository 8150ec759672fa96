//! Primitives nested by hand: seed 003's `order` experiment (the nesting order
//! changes what the breaker counts) and an end-to-end deadline respected by
//! every layer. Time is a `ManualClock` or paused tokio time; nothing sleeps.

use std::cell::Cell;
use std::time::Duration;

use resil::bulkhead::{Bulkhead, BulkheadConfig};
use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
use resil::clock::{ManualClock, TokioClock};
use resil::deadline;
use resil::retry::{Retry, RetryConfig};
use resil::time_limiter::{TimeLimiter, TimeLimiterConfig};
use resil::{Error, ErrorKind};

#[derive(Debug, PartialEq)]
struct DependencyFailure;

fn retry_on_dependency_failures(clock: &ManualClock) -> Retry {
    let config = RetryConfig::builder()
        .max_attempts(3)
        .wait_duration(Duration::from_millis(100))
        .retry_on_error(|_: &DependencyFailure| true)
        .build()
        .unwrap();
    Retry::with_clock("order", config, clock.clone())
}

fn window_of_ten(clock: &ManualClock) -> CircuitBreaker {
    let config = CircuitBreakerConfig::builder()
        .sliding_window_size(10)
        .minimum_number_of_calls(10)
        .build()
        .unwrap();
    CircuitBreaker::with_clock("price", config, clock.clone())
}

#[test]
fn retry_outside_the_breaker_records_every_attempt_and_breaker_outside_records_the_logical_call() {
    let clock = ManualClock::new();
    let http_calls = Cell::new(0);
    let always_503 = || {
        http_calls.set(http_calls.get() + 1);
        Err::<u32, _>(DependencyFailure)
    };

    let retry = retry_on_dependency_failures(&clock);
    let breaker = window_of_ten(&clock);
    let out = retry.call_nested(|| breaker.call(always_503));
    assert_eq!(out, Err(Error::Call(DependencyFailure)));
    let retry_outside = breaker.metrics().failed_calls();

    let retry = retry_on_dependency_failures(&clock);
    let breaker = window_of_ten(&clock);
    let out = breaker.call(|| retry.call(always_503));
    assert!(matches!(
        out,
        Err(Error::Call(Error::Call(DependencyFailure)))
    ));
    let circuit_outside = breaker.metrics().failed_calls();

    // retryOutside failedSamples=3 circuitOutside failedSamples=1 httpCalls=6
    assert_eq!(
        (retry_outside, circuit_outside, http_calls.get()),
        (3, 1, 6)
    );
    assert_eq!(
        clock.elapsed(),
        Duration::from_millis(400),
        "two backoffs of 100 ms per logical call"
    );
}

#[test]
fn an_open_breaker_inside_a_retry_is_not_retried_in_a_tight_loop() {
    let clock = ManualClock::new();
    let retry = retry_on_dependency_failures(&clock);
    let breaker = window_of_ten(&clock);
    breaker.transition_to_open().unwrap();
    let http_calls = Cell::new(0);
    let out = retry.call_nested(|| {
        breaker.call(|| {
            http_calls.set(http_calls.get() + 1);
            Ok::<_, DependencyFailure>(42)
        })
    });
    assert_eq!(out.unwrap_err().kind(), ErrorKind::CallNotPermitted);
    assert_eq!(http_calls.get(), 0);
    assert_eq!(breaker.metrics().not_permitted_calls(), 1);
    assert_eq!(clock.elapsed(), Duration::ZERO, "no backoff was slept");
}

#[tokio::test(start_paused = true)]
async fn one_deadline_bounds_every_layer_of_a_stack() {
    let clock = TokioClock::new();
    let retry = Retry::with_clock(
        "stack",
        RetryConfig::builder()
            .max_attempts(5)
            .wait_duration(Duration::from_millis(200))
            .build()
            .unwrap(),
        clock,
    );
    let breaker = CircuitBreaker::with_clock("stack", CircuitBreakerConfig::default(), clock);
    let limiter = TimeLimiter::new(
        "stack",
        TimeLimiterConfig::builder()
            .timeout_duration(Duration::from_secs(1))
            .build()
            .unwrap(),
    );
    let bulkhead = Bulkhead::with_clock("stack", BulkheadConfig::default(), clock);
    let attempts = Cell::new(0);

    let started = tokio::time::Instant::now();
    let out = deadline::within(Duration::from_millis(700), async {
        retry
            .call_async_nested(|| async {
                attempts.set(attempts.get() + 1);
                breaker
                    .call_async(async {
                        limiter
                            .call_async(bulkhead.call_async(async {
                                tokio::time::sleep(Duration::from_millis(150)).await;
                                Err::<(), _>(DependencyFailure)
                            }))
                            .await
                    })
                    .await
                    .map_err(Error::flatten)
                    .map_err(Error::flatten)
            })
            .await
    })
    .await;

    // Attempt 1 fails at 150 ms, the backoff ends at 350 ms, attempt 2 fails at
    // 500 ms; its 200 ms backoff would end exactly at the 700 ms deadline,
    // leaving no time for a third attempt, so the retry refuses to start it.
    let out = out.expect("the retry refuses before the deadline fires");
    assert_eq!(out.unwrap_err().kind(), ErrorKind::DeadlineExceeded);
    assert_eq!(attempts.get(), 2);
    assert!(started.elapsed() <= Duration::from_millis(700));
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(breaker.metrics().failed_calls(), 2);
}

/// `call_async_nested` on the bulkhead, the rate limiter and the time
/// limiter: one flat `resil::Error<E>` whose inner refusals stay refusals, and
/// a drain predicate written for the call's own result still sees it.
#[tokio::test(start_paused = true)]
async fn every_async_layer_nests_with_one_flat_error() {
    use resil::rate_limiter::{RateLimiter, RateLimiterConfig};

    #[derive(Debug, PartialEq)]
    struct Quota;

    let full = Bulkhead::new(
        "nested-full",
        BulkheadConfig::builder()
            .max_concurrent_calls(1)
            .max_wait_duration(Duration::ZERO)
            .build()
            .unwrap(),
    );
    let _slot = full.try_acquire_permission().unwrap();
    let tl = TimeLimiter::with_clock(
        "nested-tl",
        TimeLimiterConfig::builder()
            .timeout_duration(Duration::from_millis(100))
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let limiter = RateLimiter::with_clock(
        "nested-rl",
        RateLimiterConfig::builder()
            .limit_for_period(10)
            .limit_refresh_period(Duration::from_secs(60))
            .timeout_duration(Duration::ZERO)
            .drain_permissions_on_result(|r: Result<&u32, &Quota>| r == Err(&Quota))
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let open = Bulkhead::new("nested-open", BulkheadConfig::default());

    // An inner refusal through two nested layers stays the bulkhead's.
    let out: Result<u32, Error<Quota>> = limiter
        .call_async_nested(tl.call_async_nested(full.call_async(async { Ok(1) })))
        .await;
    assert_eq!(out.unwrap_err().kind(), ErrorKind::BulkheadFull);

    // A timeout inside the bulkhead stays a timeout.
    let out: Result<u32, Error<Quota>> = open
        .call_async_nested(tl.call_async(async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            Ok(1)
        }))
        .await;
    assert_eq!(out.unwrap_err().kind(), ErrorKind::Timeout);
    assert_eq!(open.available_concurrent_calls(), 25, "the slot came back");

    // The call's own error passes through flat, and drains the limiter.
    assert!(limiter.available_permissions() > 0);
    let out = limiter
        .call_async_nested(open.call_async(async { Err::<u32, _>(Quota) }))
        .await;
    assert_eq!(out, Err(Error::Call(Quota)));
    assert_eq!(limiter.available_permissions(), 0, "drained");
}

/// Every async layer stores the future it protects once and polls it in
/// place: a layer adds a few words, never a second copy (an `async fn`
/// taking the future would hold it twice, so a five-layer stack would hold
/// 2⁵ copies' worth of space).
#[test]
fn every_async_layer_stores_the_protected_future_once() {
    use resil::rate_limiter::{
        RateLimiter, RateLimiterConfig, RefillRateLimiter, RefillRateLimiterConfig,
    };

    const BIG: usize = 512;
    const LAYER: usize = 64;
    fn work() -> impl std::future::Future<Output = Result<u8, ()>> {
        let payload = [7u8; BIG];
        async move { Ok(std::hint::black_box(&payload)[0]) }
    }
    let work_size = std::mem::size_of_val(&work());
    assert!(work_size >= BIG);

    let breaker = CircuitBreaker::new("once", CircuitBreakerConfig::default());
    let limiter = RateLimiter::new("once", RateLimiterConfig::default());
    let refill = RefillRateLimiter::new("once", RefillRateLimiterConfig::default());
    let time_limiter = TimeLimiter::new("once", TimeLimiterConfig::default());
    let bulkhead = Bulkhead::new("once", BulkheadConfig::default());
    let retry = Retry::new("once", RetryConfig::default());

    let sizes = [
        (
            "circuit breaker",
            std::mem::size_of_val(&breaker.call_async(work())),
        ),
        (
            "rate limiter",
            std::mem::size_of_val(&limiter.call_async(work())),
        ),
        (
            "refill rate limiter",
            std::mem::size_of_val(&refill.call_async(work())),
        ),
        (
            "time limiter",
            std::mem::size_of_val(&time_limiter.call_async(work())),
        ),
        (
            "bulkhead",
            std::mem::size_of_val(&bulkhead.call_async(work())),
        ),
        ("retry", std::mem::size_of_val(&retry.call_async(work))),
    ];
    for (layer, size) in sizes {
        // The retry also holds its attempt's `resil.attempt` span (a
        // disabled one when nothing listens) beside the attempt.
        let own = match layer {
            "retry" => LAYER + std::mem::size_of::<tracing::Span>(),
            _ => LAYER,
        };
        assert!(
            size <= work_size + own,
            "{layer}: {size} bytes around a {work_size}-byte future"
        );
    }
}
