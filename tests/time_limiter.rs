//! The time limiter through the facade: defaults, validation, timeouts with and
//! without cancellation, deadlines, and cancellation at every await point.
//! Paused tokio time throughout: nothing sleeps for real.

use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use resil::deadline;
use resil::error::{DeadlineExceeded, Timeout};
use resil::time_limiter::{TimeLimiter, TimeLimiterConfig, TimeLimiterEventKind};
use resil::{Error, ErrorKind};
use tokio::time::{sleep, Instant};

fn limiter(name: &str, timeout: Duration, cancel: bool) -> TimeLimiter {
    TimeLimiter::new(
        name,
        TimeLimiterConfig::builder()
            .timeout_duration(timeout)
            .cancel_running_future(cancel)
            .build()
            .unwrap(),
    )
}

/// Flags set when the work finishes and when it is dropped.
#[derive(Clone, Default)]
struct Witness {
    finished: Arc<AtomicBool>,
    dropped: Arc<AtomicBool>,
}

struct SetOnDrop(Arc<AtomicBool>);

impl Drop for SetOnDrop {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

impl Witness {
    fn work(&self, takes: Duration) -> impl Future<Output = Result<u32, String>> + Send + 'static {
        let guard = SetOnDrop(self.dropped.clone());
        let finished = self.finished.clone();
        async move {
            let _guard = guard;
            sleep(takes).await;
            finished.store(true, Ordering::SeqCst);
            Ok(42)
        }
    }

    fn finished(&self) -> bool {
        self.finished.load(Ordering::SeqCst)
    }

    fn dropped(&self) -> bool {
        self.dropped.load(Ordering::SeqCst)
    }
}

#[test]
fn the_defaults_are_one_second_and_cancel_the_running_future() {
    let config = TimeLimiterConfig::default();
    assert_eq!(config.timeout_duration(), Duration::from_secs(1));
    assert!(config.cancel_running_future());
}

#[test]
fn a_zero_timeout_is_a_config_error_naming_the_field() {
    let err = TimeLimiterConfig::builder()
        .timeout_duration(Duration::ZERO)
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "timeout_duration");
    assert_eq!(err.expected(), "a duration > 0");
}

#[tokio::test(start_paused = true)]
async fn a_fast_future_is_never_timed_out() {
    let limiter = limiter("fast", Duration::from_millis(800), true);
    let witness = Witness::default();
    let out = limiter
        .call_async(witness.work(Duration::from_millis(799)))
        .await;
    assert_eq!(out, Ok(42));
    assert_eq!(limiter.metrics().successful_calls(), 1);
    assert_eq!(limiter.metrics().timeout_calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_with_cancellation_drops_the_work_and_it_never_finishes() {
    let limiter = limiter("inventory-query", Duration::from_millis(800), true);
    let witness = Witness::default();
    let start = Instant::now();
    let out = limiter
        .call_async(witness.work(Duration::from_secs(3)))
        .await;
    assert_eq!(start.elapsed(), Duration::from_millis(800));
    assert_eq!(
        out,
        Err(Error::Timeout(Timeout::new(
            "inventory-query",
            Duration::from_millis(800)
        )))
    );
    assert!(witness.dropped());
    sleep(Duration::from_secs(10)).await;
    assert!(!witness.finished());
}

#[tokio::test(start_paused = true)]
async fn a_timeout_without_cancellation_stops_waiting_but_the_work_completes_later() {
    let limiter = limiter("payment-capture", Duration::from_millis(800), false);
    let witness = Witness::default();
    let out = limiter
        .call_async_detachable(witness.work(Duration::from_secs(3)))
        .await;
    assert_eq!(out.unwrap_err().kind(), ErrorKind::Timeout);
    // The caller stopped waiting ≠ the downstream did not execute.
    assert!(!witness.finished());
    sleep(Duration::from_millis(2200)).await;
    tokio::task::yield_now().await;
    assert!(
        witness.finished(),
        "the side effect happened after the timeout"
    );
}

#[tokio::test(start_paused = true)]
async fn a_deadline_shorter_than_the_timeout_ends_the_wait_and_names_the_limiter() {
    let limiter = limiter("inventory-query", Duration::from_secs(1), true);
    let witness = Witness::default();
    let start = Instant::now();
    let out = deadline::within(Duration::from_millis(250), async {
        limiter
            .call_async(witness.work(Duration::from_secs(3)))
            .await
    })
    .await;
    assert_eq!(start.elapsed(), Duration::from_millis(250));
    assert_eq!(
        out,
        Ok(Err(Error::DeadlineExceeded(DeadlineExceeded::by(
            "inventory-query"
        ))))
    );
    assert!(witness.dropped());
    assert_eq!(limiter.metrics().deadline_exceeded_calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn events_follow_resilience4j_s_success_error_timeout() {
    let limiter = limiter("observed", Duration::from_millis(100), true);
    let mut events = limiter.subscribe();
    let _ = limiter.call_async(async { Ok::<_, ()>(()) }).await;
    let _ = limiter.call_async(async { Err::<(), _>(()) }).await;
    let _ = limiter
        .call_async(std::future::pending::<Result<(), ()>>())
        .await;
    let kinds: Vec<_> = events.drain().iter().map(|e| e.kind().as_str()).collect();
    assert_eq!(kinds, ["SUCCESS", "ERROR", "TIMEOUT"]);
    assert_eq!(TimeLimiterEventKind::Timeout.to_string(), "TIMEOUT");
}

#[tokio::test(start_paused = true)]
async fn cancelling_a_time_limited_call_at_each_await_point_leaves_nothing_behind() {
    for detachable in [false, true] {
        for polls in 0..=4 {
            let limiter = limiter("cancelled", Duration::from_secs(1), false);
            let steps = Arc::new(AtomicUsize::new(0));
            let dropped = Arc::new(AtomicBool::new(false));
            let work = {
                let (steps, guard) = (steps.clone(), SetOnDrop(dropped.clone()));
                async move {
                    let _guard = guard;
                    for _ in 0..4 {
                        sleep(Duration::from_millis(100)).await;
                        steps.fetch_add(1, Ordering::SeqCst);
                    }
                    Ok::<_, ()>(())
                }
            };
            let mut call = Box::pin(if detachable {
                limiter.call_async_detachable(work)
            } else {
                limiter.call_async(work)
            });
            for _ in 0..polls {
                assert!(futures::poll!(call.as_mut()).is_pending());
                sleep(Duration::from_millis(100)).await;
            }
            drop(call);
            assert!(
                dropped.load(Ordering::SeqCst),
                "the work went with the call"
            );
            let reached = steps.load(Ordering::SeqCst);
            sleep(Duration::from_secs(5)).await;
            assert_eq!(steps.load(Ordering::SeqCst), reached, "nothing runs on");
            let m = limiter.metrics();
            assert_eq!(
                m.successful_calls() + m.failed_calls() + m.timeout_calls(),
                0,
                "an abandoned call records no outcome"
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_timeout_around_a_thread_pool_call_skips_the_queued_task() {
    use resil::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadConfig};

    let pool = ThreadPoolBulkhead::new(
        "reports",
        ThreadPoolBulkheadConfig::builder()
            .core_thread_pool_size(1)
            .max_thread_pool_size(1)
            .queue_capacity(1)
            .build()
            .unwrap(),
    );
    let limiter = limiter("reports", Duration::from_millis(500), true);
    let (release, hold) = std::sync::mpsc::channel::<()>();
    let (started_tx, started) = std::sync::mpsc::channel();
    let busy = pool.call_async(move || {
        started_tx.send(()).unwrap();
        hold.recv().unwrap();
        Ok::<_, ()>("busy")
    });
    let mut busy = Box::pin(busy);
    assert!(futures::poll!(busy.as_mut()).is_pending());
    started
        .recv_timeout(Duration::from_secs(20))
        .expect("the first task started");

    let late = Arc::new(AtomicBool::new(false));
    let flag = late.clone();
    let out = limiter
        .call_async(pool.call_async(move || {
            flag.store(true, Ordering::SeqCst);
            Ok::<_, ()>("late")
        }))
        .await;
    assert_eq!(out.unwrap_err().kind(), ErrorKind::Timeout);

    release.send(()).unwrap();
    assert_eq!(busy.await, Ok("busy"));
    pool.call_async(|| Ok::<_, ()>(())).await.unwrap();
    assert!(
        !late.load(Ordering::SeqCst),
        "the task nobody waited for any more was skipped, not run late"
    );
    assert_eq!(pool.metrics().abandoned_calls(), 1);
}

// Issue 6, item 13: the timer started at `call_async`, so in Resilience4j's
// nesting, `rate_limiter.call_async(time_limiter.call_async(work))`, the rate
// limiter's wait for a permit was counted against the timeout.
#[tokio::test(start_paused = true)]
async fn the_timer_starts_at_the_first_poll_so_an_outer_rate_limiter_s_wait_is_not_counted() {
    use resil::clock::TokioClock;
    use resil::rate_limiter::{RateLimiter, RateLimiterConfig};

    let rl = RateLimiter::with_clock(
        "pricing",
        RateLimiterConfig::builder()
            .limit_for_period(1)
            .limit_refresh_period(Duration::from_secs(1))
            .timeout_duration(Duration::from_secs(5))
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let tl = limiter("pricing", Duration::from_millis(500), true);
    assert_eq!(rl.call_async(async { Ok::<_, String>(0) }).await, Ok(0)); // the cycle's permit

    let start = Instant::now();
    let witness = Witness::default();
    let out = rl
        .call_async(tl.call_async(witness.work(Duration::from_millis(100))))
        .await;
    // Waited ~1 s for the next cycle's permit, then ran 100 ms of a 500 ms budget.
    assert_eq!(out.map_err(|e| e.kind()), Ok(42));
    assert!(witness.finished());
    assert_eq!(tl.metrics().successful_calls(), 1);
    assert_eq!(tl.metrics().timeout_calls(), 0);
    assert!(start.elapsed() >= Duration::from_millis(1100));
}

#[tokio::test(start_paused = true)]
async fn a_time_limited_future_created_long_before_its_first_poll_still_gets_its_whole_timeout() {
    let tl = limiter("late", Duration::from_millis(500), true);
    let witness = Witness::default();
    let call = tl.call_async(witness.work(Duration::from_millis(400)));
    sleep(Duration::from_secs(10)).await; // created, not yet polled
    assert_eq!(call.await, Ok(42));
    assert_eq!(tl.metrics().timeout_calls(), 0);
}
