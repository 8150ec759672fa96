//! `#[resil::hedge(name = "…")]`: the registry's hedging instance around an
//! async fn, just inside `retry` in the fixed order. A slow first run gets a
//! hedge after the file's `delay` and the first answer wins; the breaker
//! inside counts each finished attempt, the retry outside one outcome per
//! hedged group. Time is tokio's paused clock.
#![cfg(feature = "yaml")]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Once;
use std::time::Duration;

use resil::{registry, Registry, Rejection};

#[derive(Debug, Clone, PartialEq)]
enum AppError {
    Down,
    Refused,
}

impl From<Rejection> for AppError {
    fn from(_: Rejection) -> Self {
        AppError::Refused
    }
}

static INIT: Once = Once::new();

fn configured_registry() {
    INIT.call_once(|| {
        let r = Registry::from_yaml_str(
            "
resilience4j:
  hedging.instances:
    macros-hedge:
      delay: 150ms
      max-hedged-attempts: 1
    macros-hedge-retried:
      delay: 150ms
      max-hedged-attempts: 1
  retry.instances.macros-hedge-retried:
    max-attempts: 2
    wait-duration: 0ms
  circuitbreaker.instances.macros-hedge-retried:
    minimum-number-of-calls: 100
",
        )
        .unwrap();
        resil::init(r).unwrap();
    });
}

static SLOW_RUNS: AtomicU32 = AtomicU32::new(0);

#[resil::hedge(name = "macros-hedge")]
async fn quote(sku: String) -> Result<String, AppError> {
    if SLOW_RUNS.fetch_add(1, Ordering::SeqCst) == 0 {
        // The first run hangs well past the hedging delay.
        tokio::time::sleep(Duration::from_secs(10)).await;
        return Ok(format!("{sku} (slow)"));
    }
    Ok(format!("{sku} (hedge)"))
}

#[tokio::test(start_paused = true)]
async fn a_slow_first_run_gets_a_hedge_after_the_delay_and_the_first_answer_wins() {
    configured_registry();
    let started = tokio::time::Instant::now();
    assert_eq!(
        quote("sku-7".to_owned()).await,
        Ok("sku-7 (hedge)".to_owned())
    );
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(150),
        "the file's delay"
    );
    assert_eq!(SLOW_RUNS.load(Ordering::SeqCst), 2);
    let m = registry().hedging("macros-hedge").metrics();
    assert_eq!((m.hedges_started(), m.won_by_hedge()), (1, 1));
}

static FAILING_RUNS: AtomicU32 = AtomicU32::new(0);

#[resil::circuit_breaker(name = "macros-hedge-retried")]
#[resil::hedge(name = "macros-hedge-retried")]
#[resil::retry(name = "macros-hedge-retried")]
async fn always_down() -> Result<u32, AppError> {
    FAILING_RUNS.fetch_add(1, Ordering::SeqCst);
    Err(AppError::Down)
}

#[tokio::test(start_paused = true)]
async fn under_a_retry_each_group_is_one_outcome_and_the_breaker_counts_every_attempt() {
    configured_registry();
    assert_eq!(always_down().await, Err(AppError::Down));
    // 2 retry attempts × (1 run + 1 hedge started at once on the failure).
    assert_eq!(FAILING_RUNS.load(Ordering::SeqCst), 4);
    let hedging = registry().hedging("macros-hedge-retried").metrics();
    assert_eq!((hedging.all_failed(), hedging.hedges_started()), (2, 2));
    let breaker = registry().circuit_breaker("macros-hedge-retried");
    assert_eq!(
        breaker.metrics().failed_calls(),
        4,
        "inside the hedge: one sample per attempt"
    );
}
