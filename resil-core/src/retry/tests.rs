//! Unit tests of the retry loop: which clock method each path waits on, and
//! the bookkeeping the facade tests cannot see.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::*;
use crate::clock::Clock;

/// Records every wait, and how it was asked for, without waiting.
#[derive(Debug, Clone, Default)]
struct RecordingClock {
    waits: Arc<Mutex<Vec<(&'static str, Duration)>>>,
}

impl Clock for RecordingClock {
    fn now_nanos(&self) -> u64 {
        0
    }

    fn sleep(&self, duration: Duration) {
        self.waits.lock().push(("sleep", duration));
    }

    fn sleep_async(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        self.waits.lock().push(("sleep_async", duration));
        Box::pin(std::future::ready(()))
    }
}

fn failing_twice() -> impl FnMut() -> Result<u8, &'static str> {
    let mut calls = 0;
    move || {
        calls += 1;
        if calls <= 2 {
            Err("unavailable")
        } else {
            Ok(calls)
        }
    }
}

#[test]
fn the_sync_path_blocks_through_the_clocks_sleep() {
    let clock = RecordingClock::default();
    let retry = Retry::with_clock("r", RetryConfig::default(), clock.clone());
    assert_eq!(retry.call(failing_twice()), Ok(3));
    let ms500 = Duration::from_millis(500);
    assert_eq!(*clock.waits.lock(), [("sleep", ms500), ("sleep", ms500)]);
}

#[test]
fn the_async_path_awaits_the_clocks_timer_and_never_sleeps_the_thread() {
    let clock = RecordingClock::default();
    let retry = Retry::with_clock("r", RetryConfig::default(), clock.clone());
    let mut attempt = failing_twice();
    let out = futures::executor::block_on(retry.call_async(|| std::future::ready(attempt())));
    assert_eq!(out, Ok(3));
    let ms500 = Duration::from_millis(500);
    assert_eq!(
        *clock.waits.lock(),
        [("sleep_async", ms500), ("sleep_async", ms500)]
    );
}

#[test]
fn a_zero_wait_retries_without_asking_the_clock_to_wait() {
    let clock = RecordingClock::default();
    let config = RetryConfig::builder()
        .wait_duration(Duration::ZERO)
        .build()
        .unwrap();
    let retry = Retry::with_clock("r", config, clock.clone());
    assert_eq!(retry.call(failing_twice()), Ok(3));
    let mut attempt = failing_twice();
    let out = futures::executor::block_on(retry.call_async(|| std::future::ready(attempt())));
    assert_eq!(out, Ok(3));
    assert!(clock.waits.lock().is_empty());
}

#[test]
fn a_non_retryable_error_after_a_retry_counts_as_failed_with_retry() {
    let config = RetryConfig::builder()
        .retry_on_error(|e: &&str| *e == "unavailable")
        .build()
        .unwrap();
    let retry = Retry::with_clock("r", config, RecordingClock::default());
    let mut calls = 0;
    let out: Result<(), _> = retry.call(|| {
        calls += 1;
        Err(if calls == 1 {
            "unavailable"
        } else {
            "bad request"
        })
    });
    assert_eq!(out, Err(Error::Call("bad request")));
    let m = retry.metrics();
    assert_eq!((m.failed_calls_with_retry(), m.attempts()), (1, 2));
}

#[test]
fn metrics_count_nothing_for_a_retry_never_called() {
    let retry = Retry::new("idle", RetryConfig::default());
    assert_eq!(retry.metrics(), RetryMetrics::default());
    assert_eq!(retry.metrics().attempts(), 0);
}
