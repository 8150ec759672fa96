//! Seed 003's `order` experiment written with attributes: the aspect order is
//! fixed (Retry outside CircuitBreaker) whatever order the attributes are
//! written in, so every attempt is one sample in the breaker's window; the
//! per-fn `order` override puts the breaker outside, and it sees one logical
//! call. Both against a dependency that always fails (an HTTP 503).

use std::sync::atomic::{AtomicU32, Ordering};

use resil::{registry, Rejection};

#[derive(Debug, PartialEq)]
enum Failure {
    Dependency,
    Rejected(Rejection),
}

impl From<Rejection> for Failure {
    fn from(r: Rejection) -> Self {
        Failure::Rejected(r)
    }
}

static HTTP_CALLS: AtomicU32 = AtomicU32::new(0);

fn always_503() -> Result<u32, Failure> {
    HTTP_CALLS.fetch_add(1, Ordering::SeqCst);
    Err(Failure::Dependency)
}

// Written breaker-first, expanded retry-outside: the order table decides.
#[resil::circuit_breaker(
    name = "macros-order-retry-outside",
    sliding_window_size = 10,
    minimum_number_of_calls = 10
)]
#[resil::retry(
    name = "macros-order-retry-outside",
    max_attempts = 3,
    wait_duration = "0ms"
)]
fn retry_outside() -> Result<u32, Failure> {
    always_503()
}

#[resil::circuit_breaker(
    name = "macros-order-circuit-outside",
    sliding_window_size = 10,
    minimum_number_of_calls = 10,
    order = [circuit_breaker, retry]
)]
#[resil::retry(
    name = "macros-order-circuit-outside",
    max_attempts = 3,
    wait_duration = "0ms"
)]
fn circuit_outside() -> Result<u32, Failure> {
    always_503()
}

#[test]
fn retry_outside_the_breaker_gives_three_failed_samples_and_the_override_gives_one() {
    HTTP_CALLS.store(0, Ordering::SeqCst);
    assert_eq!(retry_outside(), Err(Failure::Dependency));
    let retry_outside = registry()
        .circuit_breaker("macros-order-retry-outside")
        .metrics()
        .failed_calls();

    assert_eq!(circuit_outside(), Err(Failure::Dependency));
    let circuit_outside = registry()
        .circuit_breaker("macros-order-circuit-outside")
        .metrics()
        .failed_calls();

    assert_eq!(
        (
            retry_outside,
            circuit_outside,
            HTTP_CALLS.load(Ordering::SeqCst)
        ),
        (3, 1, 6),
        "retryOutside failedSamples=3 circuitOutside failedSamples=1 httpCalls=6"
    );
    let retry = registry().retry("macros-order-retry-outside");
    assert_eq!(retry.metrics().failed_calls_with_retry(), 1);
}

static ASYNC_CALLS: AtomicU32 = AtomicU32::new(0);

#[resil::time_limiter(name = "macros-order-async", timeout_duration = "1s")]
#[resil::circuit_breaker(name = "macros-order-async", sliding_window_size = 10)]
#[resil::retry(name = "macros-order-async", max_attempts = 3, wait_duration = "0ms")]
async fn async_retry_outside(sku: &str) -> Result<u32, Failure> {
    ASYNC_CALLS.fetch_add(1, Ordering::SeqCst);
    if sku.is_empty() {
        return Ok(0);
    }
    Err(Failure::Dependency)
}

#[tokio::test(start_paused = true)]
async fn an_async_fn_gets_the_same_order_and_the_breaker_counts_each_attempt() {
    assert_eq!(async_retry_outside("sku-1").await, Err(Failure::Dependency));
    assert_eq!(ASYNC_CALLS.load(Ordering::SeqCst), 3);
    let breaker = registry().circuit_breaker("macros-order-async");
    assert_eq!(breaker.metrics().failed_calls(), 3);
    assert_eq!(async_retry_outside("").await, Ok(0));
    assert_eq!(breaker.metrics().successful_calls(), 1);
}

static GUARDED_CALLS: AtomicU32 = AtomicU32::new(0);

#[resil::retry(name = "macros-order-guarded", wait_duration = "0ms")]
#[resil::circuit_breaker(name = "macros-order-guarded", sliding_window_size = 10)]
fn guarded(fail: bool) -> Result<u32, Failure> {
    GUARDED_CALLS.fetch_add(1, Ordering::SeqCst);
    if fail {
        Err(Failure::Dependency)
    } else {
        Ok(1)
    }
}

#[test]
fn an_open_breaker_reaches_a_caller_without_fallback_as_its_own_error_and_is_not_retried() {
    // The first call applies the attribute's settings (replacing the instance,
    // as a reload would), so the breaker is forced open after it.
    assert_eq!(guarded(false), Ok(1));
    registry()
        .circuit_breaker("macros-order-guarded")
        .transition_to_forced_open()
        .unwrap();
    let out = guarded(true);
    assert!(
        matches!(&out, Err(Failure::Rejected(Rejection::CallNotPermitted(r))) if r.name() == "macros-order-guarded"),
        "{out:?}"
    );
    assert_eq!(
        GUARDED_CALLS.load(Ordering::SeqCst),
        1,
        "a refused call never runs, and is not retried"
    );
}
