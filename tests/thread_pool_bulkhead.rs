//! The thread-pool bulkhead through the facade. Workers are held with channels
//! and observed through channels; a generous timeout on each receive only
//! turns a hang into a failure, it is never the assertion.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use resil::error::BulkheadFull;
use resil::thread_pool_bulkhead::{
    ThreadPoolBulkhead, ThreadPoolBulkheadConfig, ThreadPoolBulkheadEventKind,
};
use resil::{Error, ErrorKind};

const GUARD: Duration = Duration::from_secs(20);

fn pool(name: &str, core: usize, max: usize, queue: usize) -> ThreadPoolBulkhead {
    ThreadPoolBulkhead::new(
        name,
        ThreadPoolBulkheadConfig::builder()
            .core_thread_pool_size(core)
            .max_thread_pool_size(max)
            .queue_capacity(queue)
            .build()
            .unwrap(),
    )
}

/// A task held until its release channel says go.
struct Held {
    release: mpsc::Sender<()>,
}

type Pending<'a> = Pin<Box<dyn Future<Output = Result<String, Error<()>>> + Send + 'a>>;

/// Submits a task (polls its call once) that reports on `started` when it
/// runs, then waits for its release; returns the release and the call.
async fn hold<'a>(pool: &'a ThreadPoolBulkhead, started: &mpsc::Sender<()>) -> (Held, Pending<'a>) {
    let (release, wait) = mpsc::channel();
    let started = started.clone();
    let mut call: Pending<'a> = Box::pin(pool.call_async(move || {
        started.send(()).unwrap();
        wait.recv_timeout(GUARD).expect("released");
        Ok(std::thread::current().name().unwrap().to_owned())
    }));
    assert!(futures::poll!(call.as_mut()).is_pending());
    (Held { release }, call)
}

#[test]
fn the_defaults_are_resilience4j_s() {
    let n = std::thread::available_parallelism().map_or(1, |n| n.get());
    let config = ThreadPoolBulkheadConfig::default();
    assert_eq!(config.core_thread_pool_size(), n.saturating_sub(1).max(1));
    assert_eq!(config.max_thread_pool_size(), n);
    assert_eq!(config.queue_capacity(), 100);
    assert_eq!(config.keep_alive_duration(), Duration::from_millis(20));
}

#[test]
fn invalid_sizes_are_config_errors_naming_the_field() {
    let err = ThreadPoolBulkheadConfig::builder()
        .core_thread_pool_size(0)
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "core_thread_pool_size");
    let err = ThreadPoolBulkheadConfig::builder()
        .core_thread_pool_size(2)
        .max_thread_pool_size(1)
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "max_thread_pool_size");
    assert_eq!(err.got(), "1");
}

#[tokio::test]
async fn a_full_pool_and_queue_reject_without_running_the_work() {
    let pool = pool("reports", 1, 1, 1);
    let (started_tx, started) = mpsc::channel();
    let (a, running) = hold(&pool, &started_tx).await;
    started.recv_timeout(GUARD).unwrap();
    let (b, queued) = hold(&pool, &started_tx).await;

    let m = pool.metrics();
    assert_eq!(
        (
            m.thread_pool_size(),
            m.active_thread_count(),
            m.queue_depth(),
            m.remaining_queue_capacity()
        ),
        (1, 1, 1, 0)
    );

    let ran = Arc::new(AtomicBool::new(false));
    let flag = ran.clone();
    let rejected = pool
        .call_async(move || {
            flag.store(true, Ordering::SeqCst);
            Ok::<_, ()>(String::new())
        })
        .await;
    assert_eq!(
        rejected,
        Err(Error::BulkheadFull(BulkheadFull::new("reports")))
    );
    assert_eq!(
        rejected.unwrap_err().map_call(|()| "").to_string(),
        "bulkhead 'reports' is full and does not permit further calls"
    );
    assert_eq!(pool.metrics().rejected_calls(), 1);

    a.release.send(()).unwrap();
    b.release.send(()).unwrap();
    assert_eq!(running.await.unwrap(), "reports-1");
    assert_eq!(queued.await.unwrap(), "reports-1");
    assert!(
        !ran.load(Ordering::SeqCst),
        "rejected work never runs, on any thread"
    );
}

#[tokio::test]
async fn the_caller_s_thread_never_runs_the_work() {
    let pool = pool("offload", 1, 1, 0);
    let caller = std::thread::current().id();
    let worker = pool
        .call_async(|| Ok::<_, ()>(std::thread::current().id()))
        .await
        .unwrap();
    assert_ne!(worker, caller);
}

#[tokio::test]
async fn a_task_s_error_comes_back_as_the_call_s_own_error() {
    let pool = pool("errors", 1, 1, 0);
    let out = pool.call_async(|| Err::<(), _>("disk full")).await;
    assert_eq!(out, Err(Error::Call("disk full")));
    assert_eq!(out.unwrap_err().kind(), ErrorKind::Call);
}

#[tokio::test]
async fn a_task_s_panic_is_resumed_in_the_awaiting_task() {
    let pool = pool("panicky", 1, 1, 0);
    let out = std::panic::AssertUnwindSafe(
        pool.call_async(|| -> Result<(), ()> { panic!("parser exploded") }),
    )
    .catch_unwind()
    .await;
    let payload = out.unwrap_err();
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"parser exploded"));
    assert_eq!(pool.call_async(|| Ok::<_, ()>(1)).await, Ok(1));
}

#[tokio::test]
async fn shutdown_finishes_queued_work_and_the_threads_exit() {
    let pool = pool("closing", 1, 1, 5);
    let (started_tx, started) = mpsc::channel();
    let (a, running) = hold(&pool, &started_tx).await;
    started.recv_timeout(GUARD).unwrap();
    let (b, queued) = hold(&pool, &started_tx).await;
    pool.shutdown();
    assert_eq!(
        pool.call_async(|| Ok::<_, ()>(String::new()))
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::BulkheadFull
    );
    a.release.send(()).unwrap();
    b.release.send(()).unwrap();
    running.await.unwrap();
    queued.await.unwrap();
    let joined = tokio::task::spawn_blocking({
        let pool = pool.clone();
        move || pool.await_termination(GUARD)
    })
    .await
    .unwrap();
    assert!(joined);
    assert_eq!(pool.metrics().thread_pool_size(), 0);
}

#[tokio::test]
async fn events_are_permitted_then_finished_or_rejected() {
    let pool = pool("events", 1, 1, 0);
    let mut events = pool.subscribe();
    pool.call_async(|| Ok::<_, ()>(())).await.unwrap();
    let kinds: Vec<_> = events.drain().iter().map(|e| e.kind()).collect();
    assert_eq!(
        kinds,
        [
            ThreadPoolBulkheadEventKind::CallPermitted,
            ThreadPoolBulkheadEventKind::CallFinished
        ]
    );
}

/// A value whose drop panics, as a hostile or buggy user type may.
struct PanicsOnDrop;

impl Drop for PanicsOnDrop {
    fn drop(&mut self) {
        panic!("drop exploded");
    }
}

/// The pool's only thread still runs work: a call completes (a dead worker
/// would leave it queued forever, so the guard turns that hang into a failure).
async fn still_serves(pool: &ThreadPoolBulkhead) {
    let out = tokio::time::timeout(GUARD, pool.call_async(|| Ok::<_, ()>(7)))
        .await
        .expect("a later caller must not hang: the worker survived");
    assert_eq!(out, Ok(7));
}

// Issue 6, item 10: a worker died on a panicking drop and later callers hung.
#[tokio::test]
async fn a_result_whose_drop_panics_after_its_caller_left_does_not_kill_the_worker() {
    let pool = pool("droppy", 1, 1, 1);
    let (started_tx, started) = mpsc::channel();
    let (release, wait) = mpsc::channel::<()>();
    let mut call = Box::pin(pool.call_async(move || {
        started_tx.send(()).unwrap();
        wait.recv_timeout(GUARD).expect("released");
        Ok::<_, ()>(PanicsOnDrop)
    }));
    assert!(futures::poll!(call.as_mut()).is_pending());
    started.recv_timeout(GUARD).unwrap();
    drop(call); // the caller leaves; the result will be dropped on the worker
    release.send(()).unwrap();

    still_serves(&pool).await;
    still_serves(&pool).await;
    let m = pool.metrics();
    assert_eq!(
        (
            m.thread_pool_size(),
            m.active_thread_count(),
            m.finished_calls(),
            m.abandoned_calls()
        ),
        (1, 0, 3, 0)
    );
}

#[tokio::test]
async fn a_skipped_task_whose_captured_value_panics_on_drop_does_not_kill_the_worker() {
    let pool = pool("skippy", 1, 1, 1);
    let (started_tx, started) = mpsc::channel();
    let (a, running) = hold(&pool, &started_tx).await;
    started.recv_timeout(GUARD).unwrap();
    let captured = PanicsOnDrop;
    let mut skipped = Box::pin(pool.call_async(move || {
        let _keep = &captured;
        Ok::<_, ()>(String::from("never"))
    }));
    assert!(futures::poll!(skipped.as_mut()).is_pending());
    drop(skipped); // queued, its caller gone: the worker skips it and drops `captured`
    a.release.send(()).unwrap();
    assert_eq!(running.await.unwrap(), "skippy-1");

    still_serves(&pool).await;
    let m = pool.metrics();
    assert_eq!(
        (
            m.thread_pool_size(),
            m.active_thread_count(),
            m.queue_depth(),
            m.finished_calls(),
            m.abandoned_calls()
        ),
        (1, 0, 0, 2, 1)
    );
}

#[tokio::test]
async fn a_task_s_panic_whose_payload_panics_on_drop_after_its_caller_left_does_not_kill_the_worker(
) {
    let pool = pool("payload", 1, 1, 1);
    let (started_tx, started) = mpsc::channel();
    let (release, wait) = mpsc::channel::<()>();
    let mut call = Box::pin(pool.call_async(move || -> Result<(), ()> {
        started_tx.send(()).unwrap();
        wait.recv_timeout(GUARD).expect("released");
        std::panic::panic_any(PanicsOnDrop)
    }));
    assert!(futures::poll!(call.as_mut()).is_pending());
    started.recv_timeout(GUARD).unwrap();
    drop(call);
    release.send(()).unwrap();

    still_serves(&pool).await;
    let m = pool.metrics();
    assert_eq!((m.thread_pool_size(), m.finished_calls()), (1, 2));
}
