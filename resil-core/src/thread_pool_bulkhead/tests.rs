//! Workers are held with gates and observed through channels, never timed: a
//! `GUARD` timeout only turns a hang into a failure.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::time::Instant;

use futures::FutureExt;
use parking_lot::{Condvar, Mutex};

use super::*;
use crate::ErrorKind;

const GUARD: Duration = Duration::from_secs(20);

fn pool(name: &str, core: usize, max: usize, queue: usize) -> ThreadPoolBulkhead {
    ThreadPoolBulkhead::new(
        name,
        ThreadPoolBulkheadConfig::builder()
            .core_thread_pool_size(core)
            .max_thread_pool_size(max)
            .queue_capacity(queue)
            .keep_alive_duration(Duration::from_secs(3600))
            .build()
            .unwrap(),
    )
}

/// Holds tasks until opened.
#[derive(Clone, Default)]
struct Gate(Arc<(Mutex<bool>, Condvar)>);

impl Gate {
    fn open(&self) {
        *self.0 .0.lock() = true;
        self.0 .1.notify_all();
    }

    fn wait(&self) {
        let mut open = self.0 .0.lock();
        let until = Instant::now() + GUARD;
        while !*open {
            assert!(
                !self.0 .1.wait_until(&mut open, until).timed_out(),
                "gate never opened"
            );
        }
    }
}

/// A task that reports it started, waits for the gate, then returns its label
/// and the name of the thread it ran on.
fn held(
    gate: &Gate,
    started: &mpsc::Sender<&'static str>,
    label: &'static str,
) -> impl FnOnce() -> Result<(&'static str, String), ()> + Send + 'static {
    let (gate, started) = (gate.clone(), started.clone());
    move || {
        started.send(label).unwrap();
        gate.wait();
        Ok((label, std::thread::current().name().unwrap().to_owned()))
    }
}

type Call<'a, T> = Pin<Box<dyn Future<Output = Result<T, Error<()>>> + Send + 'a>>;

/// Polls a call once, which submits it; asserts it is now waiting.
async fn submitted<'a, T: 'a>(
    call: impl Future<Output = Result<T, Error<()>>> + Send + 'a,
) -> Call<'a, T> {
    let mut call: Call<'a, T> = Box::pin(call);
    assert!(
        futures::poll!(call.as_mut()).is_pending(),
        "accepted calls wait for their result"
    );
    call
}

fn started(rx: &mpsc::Receiver<&'static str>) -> &'static str {
    rx.recv_timeout(GUARD)
        .expect("the task should have started")
}

fn never_runs(
    ran: &Arc<AtomicBool>,
) -> impl FnOnce() -> Result<(&'static str, String), ()> + Send + 'static {
    let ran = ran.clone();
    move || {
        ran.store(true, Ordering::SeqCst);
        Ok(("never", String::new()))
    }
}

#[tokio::test]
async fn threads_start_lazily_to_core_then_the_queue_fills_then_threads_grow_to_max_then_calls_are_rejected(
) {
    let pool = pool("grow", 1, 3, 1);
    let gate = Gate::default();
    let (tx, rx) = mpsc::channel();
    assert_eq!(
        pool.metrics().thread_pool_size(),
        0,
        "no thread before the first task"
    );

    let a = submitted(pool.call_async(held(&gate, &tx, "a"))).await;
    assert_eq!(started(&rx), "a");
    let b = submitted(pool.call_async(held(&gate, &tx, "b"))).await;
    let m = pool.metrics();
    assert_eq!((m.thread_pool_size(), m.active_thread_count()), (1, 1));
    assert_eq!(
        (m.queue_depth(), m.remaining_queue_capacity()),
        (1, 0),
        "b waits in the queue"
    );

    let c = submitted(pool.call_async(held(&gate, &tx, "c"))).await;
    assert_eq!(
        started(&rx),
        "c",
        "a full queue starts a thread above the core size"
    );
    let d = submitted(pool.call_async(held(&gate, &tx, "d"))).await;
    assert_eq!(started(&rx), "d");

    let ran = Arc::new(AtomicBool::new(false));
    let e = pool.call_async(never_runs(&ran)).await;
    assert_eq!(
        e.unwrap_err(),
        Error::BulkheadFull(BulkheadFull::new("grow"))
    );
    let m = pool.metrics();
    assert_eq!(
        (
            m.thread_pool_size(),
            m.active_thread_count(),
            m.queue_depth()
        ),
        (3, 3, 1)
    );
    assert_eq!((m.permitted_calls(), m.rejected_calls()), (4, 1));

    gate.open();
    let (a, b, c, d) = (
        a.await.unwrap(),
        b.await.unwrap(),
        c.await.unwrap(),
        d.await.unwrap(),
    );
    assert_eq!(a, ("a", "grow-1".to_owned()));
    assert_eq!((b.0, c.0, d.0), ("b", "c", "d"));
    let mut names = vec![a.1, b.1, c.1, d.1];
    names.sort();
    names.dedup();
    assert_eq!(names, ["grow-1", "grow-2", "grow-3"]);
    assert!(!ran.load(Ordering::SeqCst), "a rejected task never runs");
    let m = pool.metrics();
    assert_eq!((m.active_thread_count(), m.finished_calls()), (0, 4));
}

#[tokio::test]
async fn a_zero_capacity_queue_hands_a_task_only_to_an_idle_thread() {
    let pool = pool("handoff", 1, 1, 0);
    let gate = Gate::default();
    let (tx, rx) = mpsc::channel();
    let a = submitted(pool.call_async(held(&gate, &tx, "a"))).await;
    assert_eq!(started(&rx), "a");

    let ran = Arc::new(AtomicBool::new(false));
    let b = pool.call_async(never_runs(&ran)).await;
    assert_eq!(
        b.unwrap_err().kind(),
        ErrorKind::BulkheadFull,
        "no idle thread, no queue"
    );
    assert_eq!(pool.metrics().queue_depth(), 0);

    gate.open();
    assert_eq!(a.await.unwrap().0, "a");
    // The thread that ran `a` is idle from the moment `a`'s result arrived.
    let c = pool.call_async(held(&gate, &tx, "c")).await.unwrap();
    assert_eq!(c, ("c", "handoff-1".to_owned()));
    assert!(!ran.load(Ordering::SeqCst));
    assert_eq!(pool.metrics().remaining_queue_capacity(), 0);
}

#[tokio::test]
async fn with_a_zero_capacity_queue_extra_threads_start_at_once_up_to_max() {
    let pool = pool("direct", 1, 2, 0);
    let gate = Gate::default();
    let (tx, rx) = mpsc::channel();
    let a = submitted(pool.call_async(held(&gate, &tx, "a"))).await;
    let b = submitted(pool.call_async(held(&gate, &tx, "b"))).await;
    let mut both = [started(&rx), started(&rx)];
    both.sort();
    assert_eq!(both, ["a", "b"]);
    assert_eq!(pool.metrics().thread_pool_size(), 2);
    let ran = Arc::new(AtomicBool::new(false));
    assert_eq!(
        pool.call_async(never_runs(&ran)).await.unwrap_err().kind(),
        ErrorKind::BulkheadFull
    );
    gate.open();
    a.await.unwrap();
    b.await.unwrap();
    assert!(!ran.load(Ordering::SeqCst));
}

#[tokio::test]
async fn threads_above_the_core_size_exit_after_the_keep_alive_and_core_threads_stay() {
    let pool = ThreadPoolBulkhead::new(
        "shrink",
        ThreadPoolBulkheadConfig::builder()
            .core_thread_pool_size(1)
            .max_thread_pool_size(3)
            .queue_capacity(0)
            .keep_alive_duration(Duration::from_millis(5))
            .build()
            .unwrap(),
    );
    let gate = Gate::default();
    let (tx, rx) = mpsc::channel();
    let calls = [
        submitted(pool.call_async(held(&gate, &tx, "a"))).await,
        submitted(pool.call_async(held(&gate, &tx, "b"))).await,
        submitted(pool.call_async(held(&gate, &tx, "c"))).await,
    ];
    for _ in 0..3 {
        started(&rx);
    }
    assert_eq!(pool.metrics().thread_pool_size(), 3);
    gate.open();
    for call in calls {
        call.await.unwrap();
    }
    let shrunk = pool
        .handle
        .pool
        .wait_for_exit(Instant::now() + GUARD, |m| m.thread_pool_size() == 1);
    assert!(
        shrunk,
        "threads above the core size should have exited: {:?}",
        pool.metrics()
    );
    // The core thread is still there to take work.
    let d = pool.call_async(held(&gate, &tx, "d")).await.unwrap();
    assert_eq!(d.0, "d");
    assert_eq!(pool.metrics().thread_pool_size(), 1);
}

/// A minimal subscriber: numbered spans, a per-thread stack of entered spans,
/// and a log of events with the span that was current when each was recorded.
#[derive(Default)]
struct Recorder {
    next: AtomicU64,
    spans: Mutex<HashMap<u64, &'static tracing::Metadata<'static>>>,
    events: Arc<Mutex<Vec<Recorded>>>,
}

/// The thread an event was recorded on, and the name of the span current there.
type Recorded = (String, Option<&'static str>);

thread_local! {
    static ENTERED: RefCell<Vec<tracing::span::Id>> = const { RefCell::new(Vec::new()) };
}

impl tracing::Subscriber for Recorder {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, attrs: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let id = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.spans.lock().insert(id, attrs.metadata());
        tracing::span::Id::from_u64(id)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, _: &tracing::Event<'_>) {
        let spans = self.spans.lock();
        let span = ENTERED.with(|s| s.borrow().last().map(|id| spans[&id.into_u64()].name()));
        let thread = std::thread::current().name().unwrap_or("").to_owned();
        self.events.lock().push((thread, span));
    }
    fn enter(&self, id: &tracing::span::Id) {
        ENTERED.with(|s| s.borrow_mut().push(id.clone()));
    }
    fn exit(&self, _: &tracing::span::Id) {
        ENTERED.with(|s| s.borrow_mut().pop());
    }
    fn current_span(&self) -> tracing_core::span::Current {
        let spans = self.spans.lock();
        match ENTERED.with(|s| s.borrow().last().cloned()) {
            Some(id) => {
                let meta = spans[&id.into_u64()];
                tracing_core::span::Current::new(id, meta)
            }
            None => tracing_core::span::Current::none(),
        }
    }
}

#[tokio::test(flavor = "current_thread")]
async fn the_caller_s_span_is_current_on_the_worker_while_the_task_runs() {
    use tracing::Instrument;

    let recorder = Recorder::default();
    let events = Arc::clone(&recorder.events);
    let _default = tracing::subscriber::set_default(recorder);
    let pool = pool("traced", 1, 1, 0);

    let span = tracing::info_span!("checkout");
    let caller_span = span.id();
    let (seen_span, seen_name, same_subscriber) = pool
        .call_async(|| {
            tracing::info!("querying the warehouse");
            let current = tracing::Span::current();
            Ok::<_, ()>((
                current.id(),
                current.metadata().map(|m| m.name()),
                tracing::dispatcher::get_default(|d| d.is::<Recorder>()),
            ))
        })
        .instrument(span)
        .await
        .unwrap();
    assert!(caller_span.is_some());
    assert_eq!((seen_span, seen_name), (caller_span, Some("checkout")));
    assert!(
        same_subscriber,
        "the caller's subscriber is the worker's default while the task runs"
    );
    let outside = pool
        .call_async(|| {
            tracing::info!("no span here");
            Ok::<_, ()>(())
        })
        .await;
    assert_eq!(outside, Ok(()));
    tracing::info!("back on the caller");
    assert_eq!(
        *events.lock(),
        [
            ("traced-1".to_owned(), Some("checkout")),
            ("traced-1".to_owned(), None),
            (std::thread::current().name().unwrap_or("").to_owned(), None),
        ],
        "the worker's events reach the caller's subscriber, inside the caller's span if there is one, \
         and the span is exited when the task ends"
    );
}

#[tokio::test]
async fn a_panicking_task_panics_in_the_awaiting_task_and_the_pool_keeps_its_thread() {
    let pool = pool("fragile", 1, 1, 0);
    let out = AssertUnwindSafe(pool.call_async(|| -> Result<(), ()> { panic!("boom") }))
        .catch_unwind()
        .await;
    let payload = out.expect_err("the task's panic reaches the caller");
    assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));

    let thread = pool
        .call_async(|| Ok::<_, ()>(std::thread::current().name().map(String::from)))
        .await
        .unwrap();
    assert_eq!(
        thread.as_deref(),
        Some("fragile-1"),
        "the same worker survived"
    );
    let m = pool.metrics();
    assert_eq!(
        (
            m.thread_pool_size(),
            m.active_thread_count(),
            m.finished_calls()
        ),
        (1, 0, 2)
    );
}

#[tokio::test]
async fn shutdown_refuses_new_tasks_finishes_queued_ones_and_joins_the_threads() {
    let pool = pool("closing", 1, 1, 2);
    let gate = Gate::default();
    let (tx, rx) = mpsc::channel();
    let a = submitted(pool.call_async(held(&gate, &tx, "a"))).await;
    assert_eq!(started(&rx), "a");
    let b = submitted(pool.call_async(held(&gate, &tx, "b"))).await;
    let c = submitted(pool.call_async(held(&gate, &tx, "c"))).await;

    pool.shutdown();
    let ran = Arc::new(AtomicBool::new(false));
    let refused = pool.call_async(never_runs(&ran)).await;
    assert_eq!(refused.unwrap_err().kind(), ErrorKind::BulkheadFull);
    assert!(
        !pool.await_termination(Duration::ZERO),
        "a worker is still busy"
    );

    gate.open();
    assert_eq!(a.await.unwrap().0, "a");
    assert_eq!(
        b.await.unwrap().0,
        "b",
        "queued work still runs after shutdown"
    );
    assert_eq!(c.await.unwrap().0, "c");
    assert!(pool.await_termination(GUARD));
    assert_eq!(pool.metrics().thread_pool_size(), 0);
    assert!(!ran.load(Ordering::SeqCst));
}

/// Sends on its channel when the thread that owns it exits.
struct OnThreadExit(mpsc::Sender<String>);

impl Drop for OnThreadExit {
    fn drop(&mut self) {
        let _ = self
            .0
            .send(std::thread::current().name().unwrap_or("").to_owned());
    }
}

thread_local! {
    static EXIT: RefCell<Option<OnThreadExit>> = const { RefCell::new(None) };
}

#[tokio::test]
async fn dropping_the_last_handle_lets_the_workers_exit() {
    let pool = pool("dropped", 2, 2, 0);
    let other_handle = pool.clone();
    let (tx, rx) = mpsc::channel();
    for _ in 0..2 {
        let tx = tx.clone();
        pool.call_async(move || {
            EXIT.with(|e| *e.borrow_mut() = Some(OnThreadExit(tx)));
            Ok::<_, ()>(())
        })
        .await
        .unwrap();
    }
    assert_eq!(
        pool.metrics().thread_pool_size(),
        2,
        "a new core thread per task"
    );
    drop(pool);
    assert!(
        rx.recv_timeout(Duration::from_millis(0)).is_err(),
        "a clone still holds the pool open"
    );
    drop(other_handle);
    let mut exited = [
        rx.recv_timeout(GUARD).unwrap(),
        rx.recv_timeout(GUARD).unwrap(),
    ];
    exited.sort();
    assert_eq!(exited, ["dropped-1", "dropped-2"]);
}

#[tokio::test]
async fn a_queued_task_whose_caller_left_is_skipped_and_a_running_one_finishes() {
    let pool = pool("abandon", 1, 1, 2);
    let gate = Gate::default();
    let (tx, rx) = mpsc::channel();
    let finished_a = Arc::new(AtomicBool::new(false));
    let a = {
        let (gate, tx, finished_a) = (gate.clone(), tx.clone(), finished_a.clone());
        submitted(pool.call_async(move || {
            tx.send("a").unwrap();
            gate.wait();
            finished_a.store(true, Ordering::SeqCst);
            Ok(("a", String::new()))
        }))
        .await
    };
    assert_eq!(started(&rx), "a");
    let ran_b = Arc::new(AtomicBool::new(false));
    let b = submitted(pool.call_async(never_runs(&ran_b))).await;
    let c = submitted(pool.call_async(held(&gate, &tx, "c"))).await;
    drop(a);
    drop(b);
    gate.open();
    assert_eq!(c.await.unwrap().0, "c");
    assert!(
        finished_a.load(Ordering::SeqCst),
        "running work runs to the end"
    );
    assert!(
        !ran_b.load(Ordering::SeqCst),
        "queued work nobody waits for is skipped"
    );
    let m = pool.metrics();
    assert_eq!(
        (m.permitted_calls(), m.finished_calls(), m.abandoned_calls()),
        (3, 2, 1)
    );
}

#[tokio::test(start_paused = true)]
async fn a_spent_deadline_refuses_the_task_before_it_is_queued() {
    let pool = pool("late", 1, 1, 0);
    let ran = Arc::new(AtomicBool::new(false));
    let out = deadline::within(Duration::ZERO, pool.call_async(never_runs(&ran))).await;
    assert_eq!(
        out,
        Ok(Err(Error::DeadlineExceeded(DeadlineExceeded::by("late"))))
    );
    let m = pool.metrics();
    assert_eq!(
        (
            m.permitted_calls(),
            m.rejected_calls(),
            m.thread_pool_size()
        ),
        (0, 0, 0)
    );
    assert!(!ran.load(Ordering::SeqCst));
}

#[tokio::test(start_paused = true)]
async fn a_task_still_queued_when_the_deadline_passes_is_skipped() {
    let pool = pool("queued", 1, 1, 1);
    let gate = Gate::default();
    let (tx, rx) = mpsc::channel();
    let a = submitted(pool.call_async(held(&gate, &tx, "a"))).await;
    assert_eq!(started(&rx), "a");
    let ran = Arc::new(AtomicBool::new(false));
    let out = deadline::within(Duration::from_millis(50), pool.call_async(never_runs(&ran))).await;
    assert_eq!(out, Err(DeadlineExceeded::new()));
    gate.open();
    a.await.unwrap();
    // FIFO on one thread: once this runs, the expired task was reached.
    pool.call_async(|| Ok::<_, ()>(())).await.unwrap();
    assert!(!ran.load(Ordering::SeqCst));
    assert_eq!(pool.metrics().abandoned_calls(), 1);
}

#[tokio::test]
async fn events_report_permitted_rejected_and_finished() {
    use ThreadPoolBulkheadEventKind::*;
    let pool = pool("observed", 1, 1, 0);
    let mut events = pool.subscribe();
    let gate = Gate::default();
    let (tx, rx) = mpsc::channel();
    let a = submitted(pool.call_async(held(&gate, &tx, "a"))).await;
    started(&rx);
    let ran = Arc::new(AtomicBool::new(false));
    let _ = pool.call_async(never_runs(&ran)).await;
    gate.open();
    a.await.unwrap();
    let kinds: Vec<_> = events.drain().iter().map(|e| e.kind()).collect();
    assert_eq!(kinds, [CallPermitted, CallRejected, CallFinished]);
}

#[test]
fn many_callers_never_exceed_max_threads_and_every_task_is_accounted_for() {
    const CALLS: usize = 400;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let pool = pool("stress", 2, 4, 8);
    let running = Arc::new(AtomicUsize::new(0));
    let peak = Arc::new(AtomicUsize::new(0));
    let results = rt.block_on(async {
        let calls = (0..CALLS).map(|i| {
            let (pool, running, peak) = (pool.clone(), running.clone(), peak.clone());
            tokio::spawn(async move {
                pool.call_async(move || {
                    let now = running.fetch_add(1, Ordering::SeqCst) + 1;
                    peak.fetch_max(now, Ordering::SeqCst);
                    std::thread::yield_now();
                    running.fetch_sub(1, Ordering::SeqCst);
                    if i % 3 == 0 {
                        Err(i)
                    } else {
                        Ok(i)
                    }
                })
                .await
            })
        });
        futures::future::join_all(calls).await
    });
    let (mut ok, mut failed, mut full) = (0u64, 0u64, 0u64);
    for result in results {
        match result.unwrap() {
            Ok(_) => ok += 1,
            Err(Error::Call(_)) => failed += 1,
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::BulkheadFull);
                full += 1;
            }
        }
    }
    assert!(peak.load(Ordering::SeqCst) <= 4);
    let m = pool.metrics();
    assert_eq!(ok + failed + full, CALLS as u64);
    assert_eq!(m.permitted_calls(), ok + failed);
    assert_eq!(m.finished_calls(), ok + failed);
    assert_eq!(m.rejected_calls(), full);
    assert_eq!(
        (
            m.active_thread_count(),
            m.queue_depth(),
            m.abandoned_calls()
        ),
        (0, 0, 0)
    );
    assert!(m.thread_pool_size() <= 4);
}

#[test]
fn the_handle_is_cheap_to_clone_send_sync_and_debug() {
    fn assert_traits<T: Send + Sync + Clone + fmt::Debug>() {}
    assert_traits::<ThreadPoolBulkhead>();
    let pool = pool("dbg", 1, 2, 3);
    assert_eq!(
        format!("{pool:?}"),
        "ThreadPoolBulkhead { name: \"dbg\", config: ThreadPoolBulkheadConfig { core_thread_pool_size: 1, \
         max_thread_pool_size: 2, queue_capacity: 3, keep_alive_duration: 3600s }, metrics: \
         ThreadPoolBulkheadMetrics { core_thread_pool_size: 1, max_thread_pool_size: 2, thread_pool_size: 0, \
         active_thread_count: 0, queue_depth: 0, queue_capacity: 3, permitted_calls: 0, rejected_calls: 0, \
         finished_calls: 0, abandoned_calls: 0 } }"
    );
}

#[test]
fn a_nul_byte_in_the_name_does_not_break_thread_names() {
    let pool = pool("a\0b", 1, 1, 0);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let name = rt
        .block_on(pool.call_async(|| Ok::<_, ()>(std::thread::current().name().map(String::from))))
        .unwrap();
    assert_eq!(name.as_deref(), Some("a?b-1"));
}
