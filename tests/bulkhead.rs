//! The semaphore bulkhead through the facade: defaults, seed 003's `bulkhead` and
//! `async` experiments, bounded waits, fairness, cancellation at every await
//! point, panics, run-time resizing, deadlines, events and a multi-threaded
//! stress test. Async tests run on paused tokio time; nothing sleeps for real.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::task::Poll;
use std::time::Duration;

use futures::poll;
use resil::bulkhead::{
    AcquireError, Bulkhead, BulkheadConfig, BulkheadEventKind, MAX_CONCURRENT_CALLS,
};
use resil::clock::{ManualClock, TokioClock};
use resil::{deadline, Error, ErrorKind};
use tokio::time::Instant;

const HOUR: Duration = Duration::from_secs(3600);

fn config(max: u32, wait: Duration) -> BulkheadConfig {
    BulkheadConfig::builder()
        .max_concurrent_calls(max)
        .max_wait_duration(wait)
        .build()
        .unwrap()
}

/// An async bulkhead on tokio's (paused) clock.
fn bulkhead(name: &str, max: u32, wait: Duration) -> Bulkhead {
    Bulkhead::with_clock(name, config(max, wait), TokioClock::new())
}

/// A downstream service whose calls stay in progress until released.
struct Downstream {
    arrived: AtomicUsize,
    active: AtomicUsize,
    gate: tokio::sync::Semaphore,
}

impl Downstream {
    fn new() -> Arc<Self> {
        Arc::new(Downstream {
            arrived: AtomicUsize::new(0),
            active: AtomicUsize::new(0),
            gate: tokio::sync::Semaphore::new(0),
        })
    }

    async fn handle(self: Arc<Self>, reply: u32) -> Result<u32, Infallible> {
        self.arrived.fetch_add(1, Ordering::SeqCst);
        self.active.fetch_add(1, Ordering::SeqCst);
        self.gate.acquire().await.unwrap().forget();
        self.active.fetch_sub(1, Ordering::SeqCst);
        Ok(reply)
    }

    fn release(&self, calls: usize) {
        self.gate.add_permits(calls);
    }

    fn arrived(&self) -> usize {
        self.arrived.load(Ordering::SeqCst)
    }

    fn active(&self) -> usize {
        self.active.load(Ordering::SeqCst)
    }

    /// Lets spawned tasks run until `n` calls are in progress (current-thread
    /// runtime: each yield runs every ready task once).
    async fn wait_active(&self, n: usize) {
        while self.active() < n {
            tokio::task::yield_now().await;
        }
    }
}

#[test]
fn the_defaults_are_resilience4j_defaults_25_calls_no_wait_fair() {
    let config = BulkheadConfig::default();
    assert_eq!(config.max_concurrent_calls(), 25);
    assert_eq!(config.max_wait_duration(), Duration::ZERO);
    assert!(config.fair_call_handling_enabled());

    let bulkhead = Bulkhead::new("inventory", config);
    assert_eq!(bulkhead.name(), "inventory");
    assert_eq!(bulkhead.config(), config);
    assert_eq!(bulkhead.available_concurrent_calls(), 25);
    let metrics = bulkhead.metrics();
    assert_eq!(metrics.max_allowed_concurrent_calls(), 25);
    assert_eq!(metrics.concurrent_calls(), 0);
    assert_eq!(metrics.waiting_calls(), 0);
    assert_eq!(metrics.rejected_calls(), 0);
}

#[test]
fn invalid_limits_are_rejected_naming_the_field_and_the_allowed_range() {
    let err = BulkheadConfig::builder()
        .max_concurrent_calls(0)
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "max_concurrent_calls");
    assert_eq!(
        err.to_string(),
        "invalid `max_concurrent_calls`: got 0, expected an integer in 1..=2147483647"
    );
    assert!(BulkheadConfig::builder()
        .max_concurrent_calls(MAX_CONCURRENT_CALLS + 1)
        .build()
        .is_err());

    let bulkhead = Bulkhead::new("reports", config(2, Duration::ZERO));
    let err = bulkhead.set_max_concurrent_calls(0).unwrap_err();
    assert_eq!(err.field(), "max_concurrent_calls");
    assert_eq!(
        bulkhead.config().max_concurrent_calls(),
        2,
        "a rejected change leaves the config as it was"
    );
}

#[test]
fn a_bulkhead_is_a_cheap_shared_send_sync_debug_handle() {
    fn assert_traits<T: Clone + Send + Sync + std::fmt::Debug + 'static>() {}
    assert_traits::<Bulkhead>();
    let a = Bulkhead::new("reports", config(2, Duration::ZERO));
    let b = a.clone();
    let _held = a.try_acquire_permission().unwrap();
    assert_eq!(b.available_concurrent_calls(), 1, "clones share the slots");
    assert_eq!(
        format!("{a:?}"),
        "Bulkhead { name: \"reports\", max_concurrent_calls: 2, concurrent_calls: 1, waiting_calls: 0 }"
    );
}

#[test]
fn the_call_error_comes_back_as_call_and_the_slot_is_returned() {
    let bulkhead = Bulkhead::new("reports", config(1, Duration::ZERO));
    let out: Result<(), Error<&str>> = bulkhead.call(|| Err("downstream failed"));
    assert_eq!(out, Err(Error::Call("downstream failed")));
    assert_eq!(bulkhead.available_concurrent_calls(), 1);
}

/// Seed 003 `bulkhead`: `held=2 reportAvailable=0 reportRejected=1 payment=42`,
/// then `recovered reportAvailable=2 next=42`.
#[test]
fn seed_003_bulkhead_two_held_reports_refuse_the_third_while_an_independent_payment_bulkhead_still_serves(
) {
    let reports = Bulkhead::new("reports", config(2, Duration::ZERO));
    let payment = Bulkhead::new("payment", BulkheadConfig::default());
    let downstream_calls = AtomicUsize::new(0);
    let (entered_tx, entered_rx) = mpsc::channel::<()>();

    std::thread::scope(|s| {
        let mut releases = Vec::new();
        let mut holders = Vec::new();
        for _ in 0..2 {
            let (release_tx, release_rx) = mpsc::channel::<()>();
            releases.push(release_tx);
            let entered_tx = entered_tx.clone();
            let (reports, downstream_calls) = (&reports, &downstream_calls);
            holders.push(s.spawn(move || {
                reports.call(|| {
                    downstream_calls.fetch_add(1, Ordering::SeqCst);
                    entered_tx.send(()).unwrap();
                    release_rx.recv().unwrap(); // the paused downstream
                    Ok::<_, Infallible>("report")
                })
            }));
        }
        entered_rx.recv().unwrap();
        entered_rx.recv().unwrap();
        let held = downstream_calls.load(Ordering::SeqCst);

        let third = reports.call(|| {
            downstream_calls.fetch_add(1, Ordering::SeqCst);
            Ok::<_, Infallible>("report")
        });
        assert!(matches!(&third, Err(Error::BulkheadFull(r)) if r.name() == "reports"));
        assert_eq!(
            downstream_calls.load(Ordering::SeqCst),
            2,
            "the refused call never reached the downstream"
        );
        let pay = payment.call(|| Ok::<_, Infallible>(42)).unwrap();
        assert_eq!(
            format!(
                "held={held} reportAvailable={} reportRejected={} payment={pay}",
                reports.available_concurrent_calls(),
                reports.metrics().rejected_calls()
            ),
            "held=2 reportAvailable=0 reportRejected=1 payment=42"
        );

        for release in releases {
            release.send(()).unwrap();
        }
        for holder in holders {
            assert_eq!(holder.join().unwrap(), Ok("report"));
        }
    });

    let next = reports.call(|| Ok::<_, Infallible>(42)).unwrap();
    assert_eq!(
        format!(
            "recovered reportAvailable={} next={next}",
            reports.available_concurrent_calls()
        ),
        "recovered reportAvailable=2 next=42"
    );
}

/// Seed 003 `async`: `syncWrapper serverActive=1 available=1`,
/// `asyncWrapper serverActive=1 available=0 rejected=BulkheadFull…`,
/// `asyncCompleted available=1`.
#[tokio::test(start_paused = true)]
async fn seed_003_async_a_sync_wrapper_frees_the_slot_while_the_work_runs_but_call_async_holds_it_until_the_work_ends(
) {
    let reports = bulkhead("reports", 1, Duration::ZERO);
    let server = Downstream::new();

    // The sync wrapper protects only the start of the work.
    let started = reports
        .call(|| Ok::<_, Infallible>(tokio::spawn(server.clone().handle(1))))
        .unwrap();
    server.wait_active(1).await;
    assert_eq!(
        format!(
            "syncWrapper serverActive={} available={}",
            server.active(),
            reports.available_concurrent_calls()
        ),
        "syncWrapper serverActive=1 available=1"
    );
    server.release(1);
    assert_eq!(started.await.unwrap(), Ok(1));

    // The async wrapper holds the slot for the whole work.
    let task = tokio::spawn({
        let (reports, server) = (reports.clone(), server.clone());
        async move { reports.call_async(server.handle(2)).await }
    });
    server.wait_active(1).await;
    let arrived = server.arrived();
    let rejected = reports.call_async(server.clone().handle(3)).await;
    assert_eq!(server.arrived(), arrived, "the refused work never started");
    let rejected = rejected.unwrap_err();
    assert_eq!(rejected.kind(), ErrorKind::BulkheadFull);
    assert_eq!(
        format!(
            "asyncWrapper serverActive={} available={} rejected={}",
            server.active(),
            reports.available_concurrent_calls(),
            rejected.kind()
        ),
        "asyncWrapper serverActive=1 available=0 rejected=bulkhead_full"
    );
    server.release(1);
    assert_eq!(task.await.unwrap(), Ok(2));
    assert_eq!(
        format!(
            "asyncCompleted available={}",
            reports.available_concurrent_calls()
        ),
        "asyncCompleted available=1"
    );
}

#[tokio::test(start_paused = true)]
async fn an_async_call_waits_for_a_slot_that_frees_within_max_wait_duration() {
    let reports = bulkhead("reports", 1, Duration::from_millis(100));
    let holder = tokio::spawn({
        let reports = reports.clone();
        async move {
            let _permit = reports.try_acquire_permission().unwrap();
            tokio::time::sleep(Duration::from_millis(60)).await;
        }
    });
    tokio::task::yield_now().await;
    assert_eq!(reports.available_concurrent_calls(), 0);

    let start = Instant::now();
    let out = reports.call_async(async { Ok::<_, Infallible>(42) }).await;
    assert_eq!(out, Ok(42));
    assert_eq!(start.elapsed(), Duration::from_millis(60));
    holder.await.unwrap();
    assert_eq!(reports.available_concurrent_calls(), 1);
    assert_eq!(reports.metrics().rejected_calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn an_async_call_is_refused_with_bulkhead_full_once_max_wait_duration_passes() {
    let reports = bulkhead("reports", 1, Duration::from_millis(100));
    let _held = reports.try_acquire_permission().unwrap();
    let ran = AtomicBool::new(false);

    let start = Instant::now();
    let out = reports
        .call_async(async {
            ran.store(true, Ordering::SeqCst);
            Ok::<_, Infallible>(())
        })
        .await;
    assert!(matches!(out, Err(Error::BulkheadFull(_))));
    assert_eq!(start.elapsed(), Duration::from_millis(100));
    assert!(!ran.load(Ordering::SeqCst));
    let metrics = reports.metrics();
    assert_eq!(metrics.rejected_calls(), 1);
    assert_eq!(metrics.waiting_calls(), 0);
}

#[test]
fn a_blocking_call_parks_until_another_thread_frees_a_slot() {
    let clock = ManualClock::new();
    let reports = Bulkhead::with_clock("reports", config(1, HOUR), clock);
    let held = reports.try_acquire_permission().unwrap();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| reports.call(|| Ok::<_, Infallible>(42)));
        while reports.metrics().waiting_calls() == 0 {
            std::thread::yield_now();
        }
        drop(held);
        assert_eq!(waiter.join().unwrap(), Ok(42));
    });
    assert_eq!(reports.available_concurrent_calls(), 1);
}

/// Issue 6 item 7: the blocking wait is measured *and parked* on the injected
/// clock. An hour-long wait on a `ManualClock` ends as soon as the clock is
/// advanced by an hour; before, the waiter slept an hour of real time first.
/// (The 60 s `recv_timeout` only turns a hang into a failure.)
#[test]
fn a_blocking_wait_on_a_manual_clock_ends_when_the_clock_is_advanced_not_when_real_time_passes() {
    let clock = ManualClock::new();
    let reports = Arc::new(Bulkhead::with_clock(
        "reports",
        config(1, HOUR),
        clock.clone(),
    ));
    let held = reports.try_acquire_permission().unwrap();
    let (tx, rx) = mpsc::channel();
    let waiter = {
        let reports = Arc::clone(&reports);
        std::thread::spawn(move || {
            let _ = tx.send(reports.call(|| Ok::<_, Infallible>(42)));
        })
    };
    while reports.metrics().waiting_calls() == 0 {
        std::thread::yield_now();
    }
    clock.advance(HOUR - Duration::from_nanos(1));
    clock.advance(Duration::from_nanos(1));
    let refused = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("the waiter must notice its clock passed max_wait_duration");
    assert!(
        matches!(refused, Err(Error::BulkheadFull(_))),
        "{refused:?}"
    );
    waiter.join().unwrap();
    drop(held);
    assert_eq!(reports.available_concurrent_calls(), 1);
    assert_eq!(reports.metrics().waiting_calls(), 0);
}

/// The same on paused tokio time: a blocking call on a `spawn_blocking` thread
/// with a `TokioClock` ends when `tokio::time::advance` passes its wait.
#[tokio::test(start_paused = true)]
async fn a_blocking_wait_on_paused_tokio_time_ends_when_tokio_time_is_advanced() {
    let reports = Arc::new(Bulkhead::with_clock(
        "reports",
        config(1, HOUR),
        TokioClock::new(),
    ));
    let held = reports.try_acquire_permission().unwrap();
    let (tx, rx) = mpsc::channel();
    let waiter = {
        let reports = Arc::clone(&reports);
        tokio::task::spawn_blocking(move || {
            let _ = tx.send(reports.call(|| Ok::<_, Infallible>(42)));
        })
    };
    while reports.metrics().waiting_calls() == 0 {
        tokio::task::yield_now().await;
    }
    tokio::time::advance(HOUR).await;
    let refused = tokio::task::spawn_blocking(move || rx.recv_timeout(Duration::from_secs(60)))
        .await
        .unwrap()
        .expect("the waiter must notice tokio's clock passed max_wait_duration");
    assert!(
        matches!(refused, Err(Error::BulkheadFull(_))),
        "{refused:?}"
    );
    waiter.await.unwrap();
    drop(held);
    assert_eq!(reports.available_concurrent_calls(), 1);
}

#[test]
fn a_blocking_call_is_refused_once_its_clock_says_max_wait_duration_passed() {
    let clock = ManualClock::new();
    let reports = Bulkhead::with_clock(
        "reports",
        config(1, Duration::from_millis(5)),
        clock.clone(),
    );
    let _held = reports.try_acquire_permission().unwrap();
    std::thread::scope(|s| {
        let waiter = s.spawn(|| reports.call(|| Ok::<_, Infallible>(42)));
        while reports.metrics().waiting_calls() == 0 {
            std::thread::yield_now();
        }
        clock.advance(Duration::from_millis(5));
        assert!(matches!(
            waiter.join().unwrap(),
            Err(Error::BulkheadFull(_))
        ));
    });
    assert_eq!(reports.metrics().rejected_calls(), 1);
    assert_eq!(reports.metrics().waiting_calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_fair_bulkhead_serves_waiters_in_arrival_order() {
    let reports = bulkhead("reports", 1, HOUR);
    let held = reports.try_acquire_permission().unwrap();
    let order = Arc::new(parking_lot::Mutex::new(Vec::new()));
    let mut tasks = Vec::new();
    for i in 0..5 {
        let (queued, order) = (reports.clone(), order.clone());
        tasks.push(tokio::spawn(async move {
            queued
                .call_async(async {
                    order.lock().push(i);
                    tokio::task::yield_now().await;
                    Ok::<_, Infallible>(())
                })
                .await
        }));
        // Let this task join the queue before the next one arrives.
        while reports.metrics().waiting_calls() <= i {
            tokio::task::yield_now().await;
        }
    }
    drop(held);
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    assert_eq!(*order.lock(), vec![0, 1, 2, 3, 4]);
    // A fair bulkhead with a queue refuses a newcomer's try even if it arrives
    // as a slot frees; with nobody waiting the slot is simply free.
    assert_eq!(reports.available_concurrent_calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn dropping_a_call_async_future_before_its_first_poll_takes_no_slot_and_runs_nothing() {
    let reports = bulkhead("reports", 1, HOUR);
    let ran = AtomicBool::new(false);
    let fut = reports.call_async(async {
        ran.store(true, Ordering::SeqCst);
        Ok::<_, Infallible>(())
    });
    assert_eq!(
        reports.available_concurrent_calls(),
        1,
        "creating takes nothing"
    );
    drop(fut);
    assert!(!ran.load(Ordering::SeqCst));
    assert_eq!(reports.available_concurrent_calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn dropping_a_call_async_future_while_it_waits_leaves_the_queue_and_leaks_nothing() {
    let reports = bulkhead("reports", 1, HOUR);
    let held = reports.try_acquire_permission().unwrap();
    let mut waiting = Box::pin(reports.call_async(async { Ok::<_, Infallible>(()) }));
    assert!(poll!(&mut waiting).is_pending());
    assert_eq!(reports.metrics().waiting_calls(), 1);
    drop(waiting);
    assert_eq!(reports.metrics().waiting_calls(), 0);
    drop(held);
    assert_eq!(reports.available_concurrent_calls(), 1);
    assert_eq!(
        reports.metrics().rejected_calls(),
        0,
        "a cancelled wait is no rejection"
    );
}

#[tokio::test(start_paused = true)]
async fn dropping_a_call_async_future_while_its_work_runs_returns_the_slot() {
    let reports = bulkhead("reports", 1, HOUR);
    let mut events = reports.subscribe();
    let mut running =
        Box::pin(reports.call_async(std::future::pending::<Result<(), Infallible>>()));
    assert!(poll!(&mut running).is_pending());
    assert_eq!(reports.available_concurrent_calls(), 0);
    drop(running);
    assert_eq!(reports.available_concurrent_calls(), 1);
    let kinds: Vec<_> = events.drain().iter().map(|e| e.kind()).collect();
    assert_eq!(
        kinds,
        [
            BulkheadEventKind::CallPermitted,
            BulkheadEventKind::CallFinished
        ]
    );
}

#[tokio::test(start_paused = true)]
async fn a_slot_handed_to_a_waiter_at_the_instant_it_is_dropped_passes_to_the_next_waiter() {
    let reports = bulkhead("reports", 1, HOUR);
    let held = reports.try_acquire_permission().unwrap();
    let mut first = Box::pin(reports.acquire_permission());
    assert!(poll!(&mut first).is_pending());
    let mut second = Box::pin(reports.call_async(async { Ok::<_, Infallible>(7) }));
    assert!(poll!(&mut second).is_pending());
    assert_eq!(reports.metrics().waiting_calls(), 2);

    drop(held); // hands the slot to `first`, which is never polled again
    assert_eq!(reports.metrics().waiting_calls(), 1);
    assert_eq!(reports.available_concurrent_calls(), 0);
    drop(first); // the slot it owned moves on

    assert_eq!(poll!(&mut second), Poll::Ready(Ok(7)));
    assert_eq!(reports.available_concurrent_calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_slot_handed_to_a_dropped_waiter_with_nobody_behind_it_becomes_free() {
    let reports = bulkhead("reports", 1, HOUR);
    let held = reports.try_acquire_permission().unwrap();
    let mut waiter = Box::pin(reports.acquire_permission());
    assert!(poll!(&mut waiter).is_pending());
    drop(held);
    assert_eq!(reports.available_concurrent_calls(), 0);
    drop(waiter);
    assert_eq!(reports.available_concurrent_calls(), 1);
    assert_eq!(reports.metrics().concurrent_calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_slot_granted_at_the_instant_the_wait_expires_is_kept_not_refused() {
    let reports = bulkhead("reports", 1, Duration::from_millis(100));
    let held = reports.try_acquire_permission().unwrap();
    let mut waiter = Box::pin(reports.call_async(async { Ok::<_, Infallible>(9) }));
    assert!(poll!(&mut waiter).is_pending());
    tokio::time::advance(Duration::from_millis(100)).await; // the wait has run out …
    drop(held); // … and the slot arrives at the same instant
    assert_eq!(poll!(&mut waiter), Poll::Ready(Ok(9)));
    assert_eq!(reports.metrics().rejected_calls(), 0);
    assert_eq!(reports.available_concurrent_calls(), 1);
}

#[test]
fn a_panic_inside_call_returns_the_slot() {
    let reports = Bulkhead::new("reports", config(1, Duration::ZERO));
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        reports.call(|| -> Result<(), Infallible> { panic!("report generator crashed") })
    }));
    assert!(outcome.is_err());
    assert_eq!(reports.available_concurrent_calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_panic_inside_call_async_work_returns_the_slot() {
    let reports = bulkhead("reports", 1, Duration::ZERO);
    let task = tokio::spawn({
        let reports = reports.clone();
        async move {
            reports
                .call_async(async {
                    tokio::task::yield_now().await;
                    if true {
                        panic!("report generator crashed");
                    }
                    Ok::<_, Infallible>(())
                })
                .await
        }
    });
    assert!(task.await.unwrap_err().is_panic());
    assert_eq!(reports.available_concurrent_calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn lowering_the_limit_keeps_calls_in_flight_and_refuses_new_ones_until_in_flight_drops_below_it(
) {
    let reports = bulkhead("reports", 3, Duration::ZERO);
    let a = reports.try_acquire_permission().unwrap();
    let b = reports.try_acquire_permission().unwrap();
    let c = reports.try_acquire_permission().unwrap();
    reports.set_max_concurrent_calls(2).unwrap();
    let metrics = reports.metrics();
    assert_eq!(metrics.concurrent_calls(), 3, "nothing was revoked");
    assert_eq!(metrics.max_allowed_concurrent_calls(), 2);
    assert_eq!(metrics.available_concurrent_calls(), 0);

    drop(a);
    assert!(
        reports.try_acquire_permission().is_err(),
        "two in flight still fill the new limit"
    );
    drop(b);
    let d = reports
        .try_acquire_permission()
        .expect("one in flight leaves room for one");
    drop((c, d));
    assert_eq!(reports.available_concurrent_calls(), 2);
    assert_eq!(reports.config().max_concurrent_calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn raising_the_limit_lets_waiting_calls_in_at_once() {
    let reports = bulkhead("reports", 1, HOUR);
    let _held = reports.try_acquire_permission().unwrap();
    let mut w1 = Box::pin(reports.call_async(async { Ok::<_, Infallible>(1) }));
    let mut w2 = Box::pin(reports.call_async(async { Ok::<_, Infallible>(2) }));
    assert!(poll!(&mut w1).is_pending());
    assert!(poll!(&mut w2).is_pending());
    reports.change_config(config(3, HOUR));
    assert_eq!(poll!(&mut w1), Poll::Ready(Ok(1)));
    assert_eq!(poll!(&mut w2), Poll::Ready(Ok(2)));
    assert_eq!(reports.available_concurrent_calls(), 2);
}

#[tokio::test(start_paused = true)]
async fn change_config_replaces_the_wait_and_fairness_for_calls_that_start_after_it() {
    let reports = bulkhead("reports", 1, Duration::ZERO);
    let next = BulkheadConfig::builder()
        .max_concurrent_calls(1)
        .max_wait_duration(Duration::from_millis(30))
        .fair_call_handling_enabled(false)
        .build()
        .unwrap();
    reports.change_config(next);
    assert_eq!(reports.config(), next);
    let _held = reports.try_acquire_permission().unwrap();
    let start = Instant::now();
    let out = reports.call_async(async { Ok::<_, Infallible>(()) }).await;
    assert!(matches!(out, Err(Error::BulkheadFull(_))));
    assert_eq!(start.elapsed(), Duration::from_millis(30));
}

#[tokio::test(start_paused = true)]
async fn a_wait_cut_by_the_deadline_fails_with_deadline_exceeded_naming_the_bulkhead() {
    let reports = bulkhead("reports", 1, Duration::from_secs(1));
    let _held = reports.try_acquire_permission().unwrap();
    let start = Instant::now();
    let out = deadline::within(Duration::from_millis(100), async {
        reports.call_async(async { Ok::<_, Infallible>(()) }).await
    })
    .await
    .expect("the bulkhead answers at the deadline, before `within` gives up");
    let err = out.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::DeadlineExceeded);
    assert_eq!(err.name(), Some("reports"));
    assert_eq!(start.elapsed(), Duration::from_millis(100));
    assert_eq!(reports.metrics().rejected_calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_wait_shorter_than_the_deadline_still_fails_with_bulkhead_full() {
    let reports = bulkhead("reports", 1, Duration::from_millis(50));
    let _held = reports.try_acquire_permission().unwrap();
    let out = deadline::within(Duration::from_secs(1), async {
        reports.call_async(async { Ok::<_, Infallible>(()) }).await
    })
    .await
    .unwrap();
    assert_eq!(out.unwrap_err().kind(), ErrorKind::BulkheadFull);
}

#[tokio::test(start_paused = true)]
async fn a_spent_deadline_refuses_even_a_free_slot_without_counting_a_rejection() {
    let reports = bulkhead("reports", 1, Duration::ZERO);
    let ran = AtomicBool::new(false);
    let out = deadline::within(Duration::ZERO, async {
        let sync = reports.call(|| {
            ran.store(true, Ordering::SeqCst);
            Ok::<_, Infallible>(())
        });
        let permit = reports.acquire_permission().await.map(drop);
        let call_async = reports
            .call_async(async {
                ran.store(true, Ordering::SeqCst);
                Ok::<_, Infallible>(())
            })
            .await;
        (sync, permit, call_async)
    })
    .await
    .expect("the inner future runs first at the deadline instant");
    assert_eq!(out.0.unwrap_err().kind(), ErrorKind::DeadlineExceeded);
    assert!(
        matches!(out.1, Err(AcquireError::DeadlineExceeded(ref d)) if d.name() == Some("reports"))
    );
    assert_eq!(out.2.unwrap_err().kind(), ErrorKind::DeadlineExceeded);
    assert!(!ran.load(Ordering::SeqCst));
    assert_eq!(reports.available_concurrent_calls(), 1);
    assert_eq!(reports.metrics().rejected_calls(), 0);
}

#[tokio::test(start_paused = true)]
async fn acquire_permission_converts_into_the_flat_error_with_the_question_mark() {
    async fn guarded(reports: &Bulkhead) -> Result<u32, Error<Infallible>> {
        let _permit = reports.acquire_permission().await?;
        Ok(5)
    }
    let reports = bulkhead("reports", 1, Duration::ZERO);
    assert_eq!(guarded(&reports).await, Ok(5));
    let _held = reports.try_acquire_permission().unwrap();
    assert_eq!(
        guarded(&reports).await.unwrap_err().kind(),
        ErrorKind::BulkheadFull
    );
}

#[tokio::test(start_paused = true)]
async fn subscribers_see_permitted_rejected_and_finished_events_in_order() {
    let reports = bulkhead("reports", 1, Duration::ZERO);
    let mut events = reports.subscribe();
    let held = reports.try_acquire_permission().unwrap();
    let _ = reports.call(|| Ok::<_, Infallible>(()));
    drop(held);
    let seen: Vec<_> = events
        .drain()
        .iter()
        .map(|e| (e.name().to_owned(), e.kind()))
        .collect();
    assert_eq!(
        seen,
        [
            ("reports".to_owned(), BulkheadEventKind::CallPermitted),
            ("reports".to_owned(), BulkheadEventKind::CallRejected),
            ("reports".to_owned(), BulkheadEventKind::CallFinished),
        ]
    );
}

#[test]
fn a_call_async_future_is_send_so_it_can_be_spawned() {
    fn assert_send<T: Send>(_: &T) {}
    let reports = Bulkhead::new("reports", BulkheadConfig::default());
    let fut = reports.call_async(async { Ok::<_, Infallible>(()) });
    assert_send(&fut);
}

#[derive(Default)]
struct Counters {
    in_flight: AtomicU32,
    high: AtomicU32,
    ok: AtomicU64,
    refused: AtomicU64,
}

impl Counters {
    fn enter(&self) {
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.high.fetch_max(now, Ordering::SeqCst);
    }

    fn leave(&self) {
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

const STRESS_THREADS: u64 = 4;
const STRESS_TASKS: u64 = 8;
const STRESS_CALLS: u64 = 300;

/// Runs sync callers on threads (one of them only tries) and async callers on a
/// two-worker runtime against one bulkhead, optionally resizing it all along.
fn stress(bulkhead: &Bulkhead, resize: bool) -> Arc<Counters> {
    let counters = Arc::new(Counters::default());
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let stop_resizing = AtomicBool::new(false);
    std::thread::scope(|s| {
        for t in 0..STRESS_THREADS {
            let counters = &counters;
            s.spawn(move || {
                for _ in 0..STRESS_CALLS {
                    if t == 0 {
                        match bulkhead.try_acquire_permission() {
                            Ok(_permit) => {
                                counters.enter();
                                std::thread::yield_now();
                                counters.leave();
                                counters.ok.fetch_add(1, Ordering::SeqCst);
                            }
                            Err(_) => {
                                counters.refused.fetch_add(1, Ordering::SeqCst);
                            }
                        }
                    } else {
                        bulkhead
                            .call(|| {
                                counters.enter();
                                std::thread::yield_now();
                                counters.leave();
                                Ok::<_, Infallible>(())
                            })
                            .unwrap();
                        counters.ok.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
        if resize {
            let stop = &stop_resizing;
            s.spawn(move || {
                let mut x = 7u32;
                while !stop.load(Ordering::SeqCst) {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    bulkhead
                        .set_max_concurrent_calls(1 + (x >> 16) % 4)
                        .unwrap();
                    std::thread::yield_now();
                }
            });
        }
        runtime.block_on(async {
            let tasks: Vec<_> = (0..STRESS_TASKS)
                .map(|_| {
                    let (bulkhead, counters) = (bulkhead.clone(), counters.clone());
                    tokio::spawn(async move {
                        for _ in 0..STRESS_CALLS {
                            bulkhead
                                .call_async(async {
                                    counters.enter();
                                    tokio::task::yield_now().await;
                                    counters.leave();
                                    Ok::<_, Infallible>(())
                                })
                                .await
                                .unwrap();
                            counters.ok.fetch_add(1, Ordering::SeqCst);
                        }
                    })
                })
                .collect();
            for task in tasks {
                task.await.unwrap();
            }
        });
        stop_resizing.store(true, Ordering::SeqCst);
    });
    counters
}

fn total_calls() -> u64 {
    (STRESS_THREADS + STRESS_TASKS) * STRESS_CALLS
}

#[test]
fn under_many_threads_and_tasks_in_flight_calls_never_exceed_the_limit_and_every_slot_returns() {
    for fair in [true, false] {
        let bulkhead = Bulkhead::new(
            "stress",
            config(3, HOUR)
                .to_builder()
                .fair_call_handling_enabled(fair)
                .build()
                .unwrap(),
        );
        let c = stress(&bulkhead, false);
        let high = c.high.load(Ordering::SeqCst);
        let (ok, refused) = (
            c.ok.load(Ordering::SeqCst),
            c.refused.load(Ordering::SeqCst),
        );
        assert!(
            high <= 3,
            "fair={fair}: {high} calls in flight with a limit of 3"
        );
        assert_eq!(ok + refused, total_calls(), "fair={fair}");
        let metrics = bulkhead.metrics();
        assert_eq!(metrics.rejected_calls(), refused, "fair={fair}");
        assert_eq!(metrics.available_concurrent_calls(), 3, "fair={fair}");
        assert_eq!(metrics.concurrent_calls(), 0, "fair={fair}");
        assert_eq!(metrics.waiting_calls(), 0, "fair={fair}");
    }
}

#[test]
fn resizing_under_load_never_exceeds_the_largest_limit_and_every_slot_returns() {
    let bulkhead = Bulkhead::new("stress", config(2, HOUR));
    let c = stress(&bulkhead, true);
    let high = c.high.load(Ordering::SeqCst);
    assert!(high <= 4, "{high} calls in flight with limits of at most 4");
    assert_eq!(
        c.ok.load(Ordering::SeqCst) + c.refused.load(Ordering::SeqCst),
        total_calls()
    );
    bulkhead.set_max_concurrent_calls(2).unwrap();
    let metrics = bulkhead.metrics();
    assert_eq!(metrics.concurrent_calls(), 0);
    assert_eq!(metrics.available_concurrent_calls(), 2);
    assert_eq!(metrics.waiting_calls(), 0);
}
