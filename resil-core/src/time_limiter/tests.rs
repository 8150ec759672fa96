use std::future::Future;
use std::pin::pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use futures::FutureExt;
use tokio::time::{sleep, Instant};

use super::*;
use crate::clock::TokioClock;
use crate::ErrorKind;

fn limiter(timeout_ms: u64, cancel: bool) -> TimeLimiter {
    TimeLimiter::with_clock(
        "inventory",
        TimeLimiterConfig::builder()
            .timeout_duration(Duration::from_millis(timeout_ms))
            .cancel_running_future(cancel)
            .build()
            .unwrap(),
        TokioClock::new(),
    )
}

/// Sets its flag when dropped: proves a future (and what it owns) is gone.
struct DropFlag(Arc<AtomicBool>);

impl Drop for DropFlag {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

fn slow_work(
    dropped: &Arc<AtomicBool>,
    finished: &Arc<AtomicBool>,
    takes: Duration,
) -> impl Future<Output = Result<&'static str, ()>> + Send + 'static {
    let guard = DropFlag(dropped.clone());
    let finished = finished.clone();
    async move {
        let _guard = guard;
        sleep(takes).await;
        finished.store(true, Ordering::SeqCst);
        Ok("done")
    }
}

#[tokio::test(start_paused = true)]
async fn a_future_that_finishes_in_time_is_never_timed_out() {
    let limiter = limiter(1000, true);
    let ready = limiter.call_async(async { Ok::<_, ()>(1) }).await;
    assert_eq!(ready, Ok(1));
    let start = Instant::now();
    let slowish = limiter
        .call_async(async {
            sleep(Duration::from_millis(999)).await;
            Ok::<_, ()>(2)
        })
        .await;
    assert_eq!(slowish, Ok(2));
    assert_eq!(start.elapsed(), Duration::from_millis(999));
    let m = limiter.metrics();
    assert_eq!(
        (m.successful_calls(), m.failed_calls(), m.timeout_calls()),
        (2, 0, 0)
    );
}

#[tokio::test(start_paused = true)]
async fn the_call_s_own_error_is_returned_and_counted_as_failed() {
    let limiter = limiter(1000, true);
    let out = limiter.call_async(async { Err::<(), _>("boom") }).await;
    assert_eq!(out, Err(Error::Call("boom")));
    assert_eq!(limiter.metrics().failed_calls(), 1);
    assert_eq!(limiter.metrics().successful_calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_drops_the_future_the_moment_the_wait_ends() {
    let limiter = limiter(800, true);
    let (dropped, finished) = (Arc::default(), Arc::default());
    let mut call = pin!(limiter.call_async(slow_work(&dropped, &finished, Duration::from_secs(5))));
    assert!(futures::poll!(call.as_mut()).is_pending());
    sleep(Duration::from_millis(799)).await;
    assert!(futures::poll!(call.as_mut()).is_pending());
    assert!(!dropped.load(Ordering::SeqCst));

    sleep(Duration::from_millis(1)).await;
    let Poll::Ready(Err(err)) = futures::poll!(call.as_mut()) else {
        panic!("expected a timeout at 800 ms");
    };
    assert_eq!(
        err,
        Error::Timeout(crate::error::Timeout::new(
            "inventory",
            Duration::from_millis(800)
        ))
    );
    // Dropped already, while `call` itself is still alive.
    assert!(dropped.load(Ordering::SeqCst));

    sleep(Duration::from_secs(10)).await;
    assert!(
        !finished.load(Ordering::SeqCst),
        "a cancelled future never resumes"
    );
    assert_eq!(limiter.metrics().timeout_calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn without_cancellation_the_work_finishes_on_a_spawned_task_after_the_timeout() {
    let limiter = limiter(800, false);
    let (dropped, finished) = (Arc::default(), Arc::default());
    let start = Instant::now();
    let out = limiter
        .call_async_detachable(slow_work(&dropped, &finished, Duration::from_secs(5)))
        .await;
    assert_eq!(out.unwrap_err().kind(), ErrorKind::Timeout);
    assert_eq!(start.elapsed(), Duration::from_millis(800));
    assert!(!finished.load(Ordering::SeqCst));
    assert!(!dropped.load(Ordering::SeqCst), "the work lives on");

    sleep(Duration::from_millis(4199)).await;
    assert!(!finished.load(Ordering::SeqCst));
    sleep(Duration::from_millis(1)).await;
    tokio::task::yield_now().await;
    assert!(
        finished.load(Ordering::SeqCst),
        "the detached work completed later"
    );
    assert!(dropped.load(Ordering::SeqCst), "and its result was dropped");
    let m = limiter.metrics();
    assert_eq!(
        (m.timeout_calls(), m.successful_calls()),
        (1, 0),
        "a late result is not counted"
    );
}

#[tokio::test(start_paused = true)]
async fn call_async_detachable_on_a_cancelling_limiter_cancels() {
    let limiter = limiter(800, true);
    let (dropped, finished) = (Arc::default(), Arc::default());
    let out = limiter
        .call_async_detachable(slow_work(&dropped, &finished, Duration::from_secs(5)))
        .await;
    assert_eq!(out.unwrap_err().kind(), ErrorKind::Timeout);
    assert!(dropped.load(Ordering::SeqCst));
    sleep(Duration::from_secs(10)).await;
    assert!(!finished.load(Ordering::SeqCst));
}

#[tokio::test(start_paused = true)]
async fn call_async_cannot_detach_a_borrowing_future_so_it_cancels_even_when_configured_not_to() {
    let limiter = limiter(800, false);
    let (dropped, finished) = (Arc::default(), Arc::default());
    let out = limiter
        .call_async(slow_work(&dropped, &finished, Duration::from_secs(5)))
        .await;
    assert_eq!(out.unwrap_err().kind(), ErrorKind::Timeout);
    assert!(dropped.load(Ordering::SeqCst));
    assert!(limiter.inner.warned_cannot_detach.load(Ordering::Relaxed));
}

#[tokio::test(start_paused = true)]
async fn a_deadline_shorter_than_the_timeout_ends_the_wait_with_deadline_exceeded() {
    let limiter = limiter(1000, true);
    let (dropped, finished) = (Arc::default(), Arc::default());
    let start = Instant::now();
    let out = deadline::within(Duration::from_millis(300), async {
        limiter
            .call_async(slow_work(&dropped, &finished, Duration::from_secs(5)))
            .await
    })
    .await;
    assert_eq!(start.elapsed(), Duration::from_millis(300));
    let err = out
        .expect("the limiter, not `within`, ended the wait")
        .unwrap_err();
    assert_eq!(
        err,
        Error::DeadlineExceeded(DeadlineExceeded::by("inventory"))
    );
    assert!(dropped.load(Ordering::SeqCst));
    let m = limiter.metrics();
    assert_eq!((m.deadline_exceeded_calls(), m.timeout_calls()), (1, 0));
}

#[tokio::test(start_paused = true)]
async fn a_deadline_longer_than_the_timeout_leaves_the_timeout_in_charge() {
    let limiter = limiter(200, true);
    let start = Instant::now();
    let out = deadline::within(Duration::from_millis(300), async {
        limiter
            .call_async(async {
                sleep(Duration::from_secs(5)).await;
                Ok::<_, ()>(())
            })
            .await
    })
    .await
    .unwrap();
    assert_eq!(start.elapsed(), Duration::from_millis(200));
    assert_eq!(out.unwrap_err().kind(), ErrorKind::Timeout);
}

#[tokio::test(start_paused = true)]
async fn a_spent_deadline_still_lets_a_ready_future_through_like_tokio_timeout() {
    let limiter = limiter(200, true);
    let out = deadline::within(Duration::from_millis(10), async {
        sleep(Duration::from_millis(10)).await;
        limiter.call_async(async { Ok::<_, ()>(1) }).await
    })
    .await;
    // `within` polls its future before its own timer, and so does the limiter.
    assert_eq!(out, Ok(Ok(1)));
}

#[tokio::test(start_paused = true)]
async fn events_report_each_outcome_with_the_time_waited() {
    let limiter = limiter(500, true);
    let mut events = limiter.subscribe();
    let _ = limiter
        .call_async(async {
            sleep(Duration::from_millis(20)).await;
            Ok::<_, ()>(())
        })
        .await;
    let _ = limiter.call_async(async { Err::<(), _>(()) }).await;
    let _ = limiter
        .call_async(std::future::pending::<Result<(), ()>>())
        .await;
    let _ = deadline::within(Duration::from_millis(100), async {
        limiter
            .call_async(std::future::pending::<Result<(), ()>>())
            .await
    })
    .await;
    let seen: Vec<_> = events
        .drain()
        .into_iter()
        .map(|e| (e.kind(), e.elapsed().unwrap().as_millis()))
        .collect();
    assert_eq!(
        seen,
        vec![
            (TimeLimiterEventKind::Success, 20),
            (TimeLimiterEventKind::Error, 0),
            (TimeLimiterEventKind::Timeout, 500),
            (TimeLimiterEventKind::DeadlineExceeded, 100),
        ]
    );
}

/// A future with three await points that counts how far it got.
fn three_steps(
    reached: Arc<AtomicUsize>,
    dropped: &Arc<AtomicBool>,
) -> impl Future<Output = Result<(), ()>> + Send + 'static {
    let guard = DropFlag(dropped.clone());
    async move {
        let _guard = guard;
        for _ in 0..3 {
            sleep(Duration::from_millis(10)).await;
            reached.fetch_add(1, Ordering::SeqCst);
        }
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn dropping_the_call_at_any_await_point_drops_the_work_and_records_nothing() {
    for detachable in [false, true] {
        for polls in 0..=3 {
            let limiter = limiter(1000, false);
            let (reached, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::default());
            let work = three_steps(reached.clone(), &dropped);
            let mut call = Box::pin(if detachable {
                limiter.call_async_detachable(work)
            } else {
                limiter.call_async(work)
            });
            for step in 0..polls {
                assert!(futures::poll!(call.as_mut()).is_pending());
                sleep(Duration::from_millis(10)).await;
                assert_eq!(reached.load(Ordering::SeqCst), step);
            }
            drop(call);
            assert!(dropped.load(Ordering::SeqCst), "polls={polls}");
            sleep(Duration::from_secs(5)).await;
            assert_eq!(reached.load(Ordering::SeqCst), polls.saturating_sub(1));
            assert_eq!(limiter.metrics(), TimeLimiterMetrics::default());
        }
    }
}

#[tokio::test(start_paused = true)]
async fn the_timeout_fires_even_when_the_future_always_spends_the_whole_coop_budget() {
    let limiter = limiter(100, true);
    let call = tokio::spawn(async move {
        limiter
            .call_async(async {
                loop {
                    tokio::task::consume_budget().await;
                }
                #[allow(unreachable_code)]
                Ok::<(), ()>(())
            })
            .await
    });
    // Let the call start its timer, then move paused time past it: the spinning
    // task never lets the runtime idle, so time would not auto-advance.
    tokio::task::yield_now().await;
    tokio::time::advance(Duration::from_millis(100)).await;
    // Give the scheduler plenty of turns (it checks timers every few dozen);
    // a timer starved of budget would leave the call spinning forever.
    for _ in 0..10_000 {
        if call.is_finished() {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(call.is_finished(), "the timeout never fired");
    let out = call.await.unwrap();
    assert_eq!(out.unwrap_err().kind(), ErrorKind::Timeout);
}

#[tokio::test(start_paused = true)]
async fn a_huge_timeout_does_not_overflow_the_instant() {
    let limiter = TimeLimiter::new(
        "patient",
        TimeLimiterConfig::builder()
            .timeout_duration(Duration::MAX)
            .build()
            .unwrap(),
    );
    assert_eq!(limiter.call_async(async { Ok::<_, ()>(3) }).await, Ok(3));
    assert!(limiter
        .call_async(std::future::pending::<Result<(), ()>>())
        .now_or_never()
        .is_none());
}

#[test]
fn debug_shows_name_config_and_metrics() {
    let limiter = TimeLimiter::new("t", TimeLimiterConfig::default());
    assert_eq!(
        format!("{limiter:?}"),
        "TimeLimiter { name: \"t\", config: TimeLimiterConfig { timeout_duration: 1s, \
         cancel_running_future: true }, metrics: TimeLimiterMetrics { successful: 0, failed: 0, \
         timeout: 0, deadline_exceeded: 0 } }"
    );
}

#[test]
fn the_handle_is_send_sync_and_its_future_is_send_when_the_work_is() {
    fn assert_send_sync<T: Send + Sync + Clone + fmt::Debug>() {}
    fn assert_send<T: Send>(_: &T) {}
    assert_send_sync::<TimeLimiter>();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let _guard = rt.enter();
    let limiter = TimeLimiter::new("t", TimeLimiterConfig::default());
    assert_send(&limiter.call_async(async { Ok::<_, ()>(()) }));
}

#[test]
fn counts_from_many_threads_add_up_exactly() {
    const THREADS: usize = 6;
    const CALLS: u64 = 500;
    let limiter = TimeLimiter::new("shared", TimeLimiterConfig::default());
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let limiter = &limiter;
            s.spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_time()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    for i in 0..CALLS {
                        let ok = (i + t as u64) % 4 != 0;
                        let _ = limiter
                            .call_async(async move {
                                if ok {
                                    Ok(())
                                } else {
                                    Err(())
                                }
                            })
                            .await;
                    }
                });
            });
        }
    });
    let m = limiter.metrics();
    assert_eq!(
        m.successful_calls() + m.failed_calls(),
        THREADS as u64 * CALLS
    );
    assert_eq!(m.failed_calls(), THREADS as u64 * CALLS / 4);
}

/// A future ready at its first poll is never timed out and needs no timer:
/// it completes outside any tokio runtime, where making a timer would panic.
#[test]
fn a_future_ready_at_its_first_poll_needs_no_timer() {
    let limiter = limiter(100, true);
    let out = futures::executor::block_on(limiter.call_async(async { Ok::<_, ()>(7) }));
    assert_eq!(out, Ok(7));
    let failed = futures::executor::block_on(limiter.call_async(async { Err::<u32, _>("no") }));
    assert_eq!(failed, Err(Error::Call("no")));
    let m = limiter.metrics();
    assert_eq!((m.successful_calls(), m.failed_calls()), (1, 1));
}

/// The timer starts when the first poll returns `Pending`: a future whose
/// first poll waits still times out after `timeout_duration` on tokio's clock.
#[tokio::test(start_paused = true)]
async fn the_timer_starts_when_the_first_poll_waits() {
    let limiter = limiter(100, true);
    let start = Instant::now();
    let out = limiter
        .call_async(async {
            sleep(Duration::from_millis(500)).await;
            Ok::<_, ()>(())
        })
        .await;
    assert_eq!(out.unwrap_err().kind(), ErrorKind::Timeout);
    assert_eq!(start.elapsed(), Duration::from_millis(100));
}
