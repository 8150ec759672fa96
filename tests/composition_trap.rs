//! Composing by hand with the plain `call` / `call_async` (not the `_nested`
//! forms) hands the breaker a `resil::Error<E>`. Every predicate written for
//! `E` must still mean what it says: a business error the breaker ignores is
//! ignored whether a bulkhead, a time limiter or a rate limiter sits inside,
//! and an inner refusal is classified by the predicates written for that
//! refusal (a failure when there are none), exactly as `call_nested` does.
//! The same holds for stacks of plain calls (`Error<Error<E>>`, up to four
//! levels), and for every primitive with predicates: the retry (an inner
//! refusal meets its struct's predicates or `retry_on_rejection`), the rate
//! limiter's drain predicate and hedging. What tells a primitive which
//! `resil::Error<…>` to look inside is a predicate written for `E`.
//! Resilience4j has no such trap: its decorators pass exceptions through.
//! Time is paused tokio time or a manual clock; nothing sleeps.

use std::time::Duration;

use resil::bulkhead::{Bulkhead, BulkheadConfig};
use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, CircuitBreakerConfigBuilder};
use resil::clock::{ManualClock, TokioClock};
use resil::error::{BulkheadFull, RequestNotPermitted, Timeout};
use resil::hedging::{Hedging, HedgingConfig};
use resil::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil::retry::{Retry, RetryConfig, RetryConfigBuilder};
use resil::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadConfig};
use resil::time_limiter::{TimeLimiter, TimeLimiterConfig};
use resil::Error;

#[derive(Debug, PartialEq)]
enum InvError {
    /// "No such SKU": says nothing about the inventory service's health.
    Business,
    /// The service is down.
    Down,
}

/// Ignores business errors, as a user writes it: for `InvError`.
fn breaker_ignoring_business_errors() -> CircuitBreaker {
    let config = CircuitBreakerConfig::builder()
        .ignore_error(|e: &InvError| *e == InvError::Business)
        .build()
        .unwrap();
    CircuitBreaker::new("inventory", config)
}

/// (successful, failed, ignored) as the breaker counted them.
fn counts(breaker: &CircuitBreaker) -> (u64, u64, u64) {
    let m = breaker.metrics();
    (m.successful_calls(), m.failed_calls(), m.ignored_calls())
}

fn one_slot_bulkhead() -> Bulkhead {
    let config = BulkheadConfig::builder()
        .max_concurrent_calls(1)
        .max_wait_duration(Duration::ZERO)
        .build()
        .unwrap();
    Bulkhead::new("inventory", config)
}

fn one_permit_limiter() -> RateLimiter {
    let config = RateLimiterConfig::builder()
        .limit_for_period(1)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout_duration(Duration::ZERO)
        .build()
        .unwrap();
    RateLimiter::with_clock("inventory", config, ManualClock::new())
}

#[test]
fn a_bulkhead_inside_a_breaker_keeps_the_business_error_ignored() {
    let breaker = breaker_ignoring_business_errors();
    let bulkhead = one_slot_bulkhead();

    let out = breaker.call(|| bulkhead.call(|| Err::<u32, _>(InvError::Business)));
    assert_eq!(out, Err(Error::Call(Error::Call(InvError::Business))));
    assert_eq!(counts(&breaker), (0, 0, 1), "a business error is ignored");

    let out = breaker.call(|| bulkhead.call(|| Err::<u32, _>(InvError::Down)));
    assert_eq!(out, Err(Error::Call(Error::Call(InvError::Down))));
    assert_eq!(counts(&breaker), (0, 1, 1), "an outage is a failure");

    let out = breaker.call(|| bulkhead.call(|| Ok::<u32, InvError>(7)));
    assert_eq!(out, Ok(7));
    assert_eq!(counts(&breaker), (1, 1, 1));
}

#[test]
fn a_refusal_inside_a_plain_call_is_classified_by_the_predicates_for_that_refusal() {
    let config = CircuitBreakerConfig::builder()
        .ignore_error(|e: &InvError| *e == InvError::Business)
        .ignore_error(|_: &BulkheadFull| true)
        .build()
        .unwrap();
    let breaker = CircuitBreaker::new("inventory", config);
    let bulkhead = one_slot_bulkhead();
    let held = bulkhead.try_acquire_permission().unwrap();
    let out = breaker.call(|| bulkhead.call(|| Ok::<u32, InvError>(7)));
    assert!(matches!(out, Err(Error::Call(Error::BulkheadFull(_)))));
    assert_eq!(
        counts(&breaker),
        (0, 0, 1),
        "ignored, as written for BulkheadFull"
    );
    drop(held);

    // With a record list that does not name the refusal, it is a success, as
    // a `BulkheadFullException` missing from Resilience4j's
    // `recordExceptions` is.
    let config = CircuitBreakerConfig::builder()
        .record_error(|e: &InvError| *e == InvError::Down)
        .build()
        .unwrap();
    let breaker = CircuitBreaker::new("inventory", config);
    let held = bulkhead.try_acquire_permission().unwrap();
    let out = breaker.call(|| bulkhead.call(|| Ok::<u32, InvError>(7)));
    assert!(matches!(out, Err(Error::Call(Error::BulkheadFull(_)))));
    assert_eq!(
        counts(&breaker),
        (1, 0, 0),
        "a refusal the record list does not name is a success"
    );
    drop(held);
    let out = breaker.call(|| bulkhead.call(|| Err::<u32, _>(InvError::Down)));
    assert!(out.is_err());
    assert_eq!(
        counts(&breaker),
        (1, 1, 0),
        "the listed error, through the bulkhead, is a failure"
    );
}

#[test]
fn a_rate_limiter_inside_a_breaker_keeps_the_business_error_ignored() {
    let breaker = breaker_ignoring_business_errors();
    let limiter = one_permit_limiter();

    let out = breaker.call(|| limiter.call(|| Err::<u32, _>(InvError::Business)));
    assert_eq!(out, Err(Error::Call(Error::Call(InvError::Business))));
    assert_eq!(counts(&breaker), (0, 0, 1));

    // The permit is spent: the limiter refuses, a failure for the breaker.
    let out = breaker.call(|| limiter.call(|| Ok::<u32, InvError>(7)));
    assert!(matches!(
        out,
        Err(Error::Call(Error::RequestNotPermitted(_)))
    ));
    assert_eq!(counts(&breaker), (0, 1, 1));
}

#[test]
fn predicates_written_for_the_nested_error_type_itself_still_win() {
    // A user who worked around the trap by writing for `Error<InvError>`.
    let config = CircuitBreakerConfig::builder()
        .ignore_error(|e: &InvError| *e == InvError::Business)
        .record_error(|e: &Error<InvError>| matches!(e, Error::Call(InvError::Down)))
        .build()
        .unwrap();
    let breaker = CircuitBreaker::new("inventory", config);
    let bulkhead = one_slot_bulkhead();
    let out = breaker.call(|| bulkhead.call(|| Err::<u32, _>(InvError::Down)));
    assert!(out.is_err());
    assert_eq!(counts(&breaker), (0, 1, 0));
}

#[tokio::test(start_paused = true)]
async fn a_time_limiter_inside_a_breaker_keeps_the_business_error_ignored() {
    let breaker = breaker_ignoring_business_errors();
    let limiter = TimeLimiter::new(
        "inventory",
        TimeLimiterConfig::builder()
            .timeout_duration(Duration::from_secs(1))
            .build()
            .unwrap(),
    );

    let out = breaker
        .call_async(limiter.call_async(async { Err::<u32, _>(InvError::Business) }))
        .await;
    assert_eq!(out, Err(Error::Call(Error::Call(InvError::Business))));
    assert_eq!(counts(&breaker), (0, 0, 1));

    let out = breaker
        .call_async(limiter.call_async(async { Err::<u32, _>(InvError::Down) }))
        .await;
    assert_eq!(out, Err(Error::Call(Error::Call(InvError::Down))));
    assert_eq!(counts(&breaker), (0, 1, 1));

    // A timeout is a failure by default.
    let out = breaker
        .call_async(limiter.call_async(std::future::pending::<Result<u32, InvError>>()))
        .await;
    assert!(matches!(out, Err(Error::Call(Error::Timeout(_)))));
    assert_eq!(counts(&breaker), (0, 2, 1));
}

#[tokio::test(start_paused = true)]
async fn a_timeout_inside_a_plain_call_async_meets_the_predicates_written_for_timeouts() {
    let config = CircuitBreakerConfig::builder()
        .ignore_error(|e: &InvError| *e == InvError::Business)
        .ignore_error(|_: &Timeout| true)
        .build()
        .unwrap();
    let breaker = CircuitBreaker::new("inventory", config);
    let limiter = TimeLimiter::new(
        "inventory",
        TimeLimiterConfig::builder()
            .timeout_duration(Duration::from_millis(10))
            .build()
            .unwrap(),
    );
    let out = breaker
        .call_async(limiter.call_async(std::future::pending::<Result<u32, InvError>>()))
        .await;
    assert!(matches!(out, Err(Error::Call(Error::Timeout(_)))));
    assert_eq!(counts(&breaker), (0, 0, 1));
}

#[tokio::test(start_paused = true)]
async fn a_bulkhead_and_a_rate_limiter_inside_an_async_breaker_keep_the_business_error_ignored() {
    let breaker = breaker_ignoring_business_errors();
    let bulkhead = one_slot_bulkhead();
    let out = breaker
        .call_async(bulkhead.call_async(async { Err::<u32, _>(InvError::Business) }))
        .await;
    assert_eq!(out, Err(Error::Call(Error::Call(InvError::Business))));
    assert_eq!(counts(&breaker), (0, 0, 1));

    let limiter = one_permit_limiter();
    let out = breaker
        .call_async(limiter.call_async(async { Err::<u32, _>(InvError::Business) }))
        .await;
    assert_eq!(out, Err(Error::Call(Error::Call(InvError::Business))));
    assert_eq!(counts(&breaker), (0, 0, 2));

    let out = breaker
        .call_async(limiter.call_async(async { Ok::<u32, InvError>(1) }))
        .await;
    assert!(matches!(
        out,
        Err(Error::Call(Error::RequestNotPermitted(
            RequestNotPermitted { .. }
        )))
    ));
    assert_eq!(counts(&breaker), (0, 1, 2));
}

#[test]
fn a_breaker_inside_a_rate_limiter_drains_on_the_call_error_written_for() {
    // The drain predicate looks inside `resil::Error<E>` too.
    let config = RateLimiterConfig::builder()
        .limit_for_period(5)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout_duration(Duration::ZERO)
        .drain_permissions_on_result(|r: Result<&u32, &InvError>| r == Err(&InvError::Down))
        .build()
        .unwrap();
    let limiter = RateLimiter::with_clock("partner", config, ManualClock::new());
    let breaker = breaker_ignoring_business_errors();
    let _ = limiter.call(|| breaker.call(|| Err::<u32, _>(InvError::Business)));
    assert_eq!(limiter.available_permissions(), 4);
    let _ = limiter.call(|| breaker.call(|| Err::<u32, _>(InvError::Down)));
    assert_eq!(limiter.available_permissions(), 0);
}

// Deeper stacks composed by hand: every level of `resil::Error<…>` is looked
// through, in sync and async forms, and by every primitive with predicates.

fn ignoring_every_refusal_struct(b: CircuitBreakerConfigBuilder) -> CircuitBreakerConfigBuilder {
    b.ignore_error(|_: &RequestNotPermitted| true)
        .ignore_error(|_: &Timeout| true)
        .ignore_error(|_: &BulkheadFull| true)
}

#[test]
fn a_rate_limiter_inside_a_bulkhead_inside_a_sync_breaker_keeps_every_predicate() {
    let breaker = breaker_ignoring_business_errors();
    let bulkhead = one_slot_bulkhead();
    let limiter = one_permit_limiter();

    // `Error<Error<InvError>>` two levels deep.
    let out = breaker.call(|| bulkhead.call(|| limiter.call(|| Err::<u32, _>(InvError::Business))));
    assert_eq!(
        out,
        Err(Error::Call(Error::Call(Error::Call(InvError::Business))))
    );
    assert_eq!(counts(&breaker), (0, 0, 1), "a business error is ignored");

    // The limiter's permit is spent: its refusal, two levels down, is a
    // failure by default...
    let out = breaker.call(|| bulkhead.call(|| limiter.call(|| Ok::<u32, InvError>(1))));
    assert!(matches!(
        out,
        Err(Error::Call(Error::Call(Error::RequestNotPermitted(_))))
    ));
    assert_eq!(counts(&breaker), (0, 1, 1));

    // ...and meets the predicates written for it.
    let config = ignoring_every_refusal_struct(CircuitBreakerConfig::builder())
        .ignore_error(|e: &InvError| *e == InvError::Business)
        .build()
        .unwrap();
    let breaker = CircuitBreaker::new("inventory", config);
    let out = breaker.call(|| bulkhead.call(|| limiter.call(|| Ok::<u32, InvError>(1))));
    assert!(out.is_err());
    assert_eq!(
        counts(&breaker),
        (0, 0, 1),
        "ignored, as written for RequestNotPermitted"
    );
    let out = breaker.call(|| bulkhead.call(|| limiter.call(|| Err::<u32, _>(InvError::Down))));
    assert!(out.is_err());
    assert_eq!(
        counts(&breaker),
        (0, 0, 2),
        "the limiter refuses before the call"
    );
}

#[tokio::test(start_paused = true)]
async fn a_time_limiter_inside_a_bulkhead_inside_an_async_breaker_keeps_every_predicate() {
    let breaker = breaker_ignoring_business_errors();
    let bulkhead = one_slot_bulkhead();
    let limiter = TimeLimiter::new(
        "inventory",
        TimeLimiterConfig::builder()
            .timeout_duration(Duration::from_millis(10))
            .build()
            .unwrap(),
    );
    let out = breaker
        .call_async(
            bulkhead.call_async(limiter.call_async(async { Err::<u32, _>(InvError::Business) })),
        )
        .await;
    assert_eq!(
        out,
        Err(Error::Call(Error::Call(Error::Call(InvError::Business))))
    );
    assert_eq!(counts(&breaker), (0, 0, 1), "a business error is ignored");

    let out = breaker
        .call_async(
            bulkhead.call_async(limiter.call_async(async { Err::<u32, _>(InvError::Down) })),
        )
        .await;
    assert!(out.is_err());
    assert_eq!(counts(&breaker), (0, 1, 1), "an outage is a failure");

    // Predicates for `InvError` are what tell the breaker which
    // `resil::Error<…>` to look inside.
    let config = ignoring_every_refusal_struct(CircuitBreakerConfig::builder())
        .ignore_error(|e: &InvError| *e == InvError::Business)
        .build()
        .unwrap();
    let breaker = CircuitBreaker::new("inventory", config);
    let out = breaker
        .call_async(
            bulkhead
                .call_async(limiter.call_async(std::future::pending::<Result<u32, InvError>>())),
        )
        .await;
    assert!(matches!(
        out,
        Err(Error::Call(Error::Call(Error::Timeout(_))))
    ));
    assert_eq!(
        counts(&breaker),
        (0, 0, 1),
        "ignored, as written for Timeout"
    );
}

#[tokio::test]
async fn a_thread_pool_bulkhead_inside_an_async_breaker_keeps_the_business_error_ignored() {
    let breaker = breaker_ignoring_business_errors();
    let pool = ThreadPoolBulkhead::new(
        "inventory",
        ThreadPoolBulkheadConfig::builder()
            .core_thread_pool_size(1)
            .max_thread_pool_size(1)
            .build()
            .unwrap(),
    );
    let out = breaker
        .call_async(pool.call_async(|| Err::<u32, _>(InvError::Business)))
        .await;
    assert_eq!(out, Err(Error::Call(Error::Call(InvError::Business))));
    assert_eq!(counts(&breaker), (0, 0, 1));
    let out = breaker
        .call_async(pool.call_async(|| Err::<u32, _>(InvError::Down)))
        .await;
    assert!(out.is_err());
    assert_eq!(counts(&breaker), (0, 1, 1));
}

fn retry_with(config: RetryConfigBuilder) -> Retry {
    Retry::with_clock(
        "inventory",
        config.max_attempts(3).build().unwrap(),
        ManualClock::new(),
    )
}

#[test]
fn a_plain_retry_classifies_an_inner_refusal_by_the_predicates_written_for_it() {
    let bulkhead = one_slot_bulkhead();
    let held = bulkhead.try_acquire_permission().unwrap();

    // Written for the bulkhead's refusal: retried, as `call_nested` would.
    let retry = retry_with(
        RetryConfig::builder()
            .retry_on_error(|e: &InvError| *e == InvError::Down)
            .retry_on_error(|_: &BulkheadFull| true),
    );
    let mut attempts = 0;
    let out = retry.call(|| {
        attempts += 1;
        bulkhead.call(|| Ok::<u32, InvError>(1))
    });
    assert!(matches!(out, Err(Error::Call(Error::BulkheadFull(_)))));
    assert_eq!(attempts, 3, "retried, as written for BulkheadFull");

    // Ignored, as written for it.
    let retry = retry_with(
        RetryConfig::builder()
            .retry_on_error(|e: &InvError| *e == InvError::Down)
            .ignore_error(|_: &BulkheadFull| true),
    );
    let out = retry.call(|| bulkhead.call(|| Ok::<u32, InvError>(1)));
    assert!(out.is_err());
    assert_eq!(retry.metrics().failed_calls_without_retry(), 0);
    assert_eq!(
        retry.metrics().ignored_error_calls(),
        1,
        "ignored, as written for BulkheadFull"
    );
    drop(held);
}

#[test]
fn a_plain_retry_sees_the_call_error_two_levels_down() {
    let breaker = breaker_ignoring_business_errors();
    let bulkhead = one_slot_bulkhead();
    let retry =
        retry_with(RetryConfig::builder().retry_on_error(|e: &InvError| *e == InvError::Down));

    let mut attempts = 0;
    let out = retry.call(|| {
        attempts += 1;
        breaker.call(|| bulkhead.call(|| Err::<u32, _>(InvError::Business)))
    });
    assert!(out.is_err());
    assert_eq!(attempts, 1, "a business error is not retried");

    let mut attempts = 0;
    let out = retry.call(|| {
        attempts += 1;
        breaker.call(|| bulkhead.call(|| Err::<u32, _>(InvError::Down)))
    });
    assert!(out.is_err());
    assert_eq!(attempts, 3, "an outage is retried");
}

#[test]
fn a_rate_limiter_drains_on_the_call_error_two_levels_down() {
    let config = RateLimiterConfig::builder()
        .limit_for_period(5)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout_duration(Duration::ZERO)
        .drain_permissions_on_result(|r: Result<&u32, &InvError>| r == Err(&InvError::Down))
        .build()
        .unwrap();
    let limiter = RateLimiter::with_clock("partner", config, ManualClock::new());
    let breaker = breaker_ignoring_business_errors();
    let bulkhead = one_slot_bulkhead();
    let _ = limiter.call(|| breaker.call(|| bulkhead.call(|| Err::<u32, _>(InvError::Business))));
    assert_eq!(limiter.available_permissions(), 4);
    let _ = limiter.call(|| breaker.call(|| bulkhead.call(|| Err::<u32, _>(InvError::Down))));
    assert_eq!(
        limiter.available_permissions(),
        0,
        "drained, as written for InvError"
    );
}

#[tokio::test(start_paused = true)]
async fn a_plain_hedging_sees_the_call_error_inside_a_bulkhead() {
    // Only outages are worth a hedge: a business error is an answer.
    let hedging = Hedging::with_clock(
        "inventory",
        HedgingConfig::builder()
            .delay(Duration::from_secs(10))
            .max_hedged_attempts(2)
            .handle_error(|e: &InvError| *e == InvError::Down)
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let bulkhead = Bulkhead::new(
        "inventory",
        BulkheadConfig::builder()
            .max_concurrent_calls(4)
            .build()
            .unwrap(),
    );
    let out = hedging
        .call_async(|_| bulkhead.call_async(async { Err::<u32, _>(InvError::Business) }))
        .await;
    assert!(out.is_err());
    assert_eq!(
        hedging.metrics().hedges_started(),
        0,
        "a business error is accepted"
    );
    let out = hedging
        .call_async(|_| bulkhead.call_async(async { Err::<u32, _>(InvError::Down) }))
        .await;
    assert!(out.is_err());
    assert_eq!(hedging.metrics().hedges_started(), 2, "an outage is hedged");
}
