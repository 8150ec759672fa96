//! Thread-pool bulkhead: run blocking work on a bounded pool of named threads (Resilience4j `FixedThreadPoolBulkhead`).
//!
//! Async code must not block its runtime's threads. A [`ThreadPoolBulkhead`]
//! gives blocking work (a JDBC-style driver, a file system walk, a CPU-heavy
//! parse) its own OS threads and a bounded queue, so that one slow dependency
//! can take at most `max_thread_pool_size` threads and `queue_capacity` queued
//! tasks, and everything beyond is refused at once with
//! [`Error::BulkheadFull`] — *without running it*, and never on the caller's
//! thread. The caller awaits the result; no runtime thread blocks.
//!
//! # Admission (Java's `ThreadPoolExecutor`, as Resilience4j uses it)
//!
//! A submitted task goes to the first of:
//!
//! 1. a **new thread**, while fewer than `core_thread_pool_size` threads exist
//!    (threads start lazily, one per submission, even if another is idle);
//! 2. the **queue**, while it holds fewer than `queue_capacity` waiting tasks
//!    (an idle thread takes a queued task at once). With `queue_capacity = 0`
//!    this is a **direct hand-off**: the task is accepted only if a thread is
//!    idle;
//! 3. a **new thread**, while fewer than `max_thread_pool_size` threads exist —
//!    so threads above the core size start only once the queue is full;
//! 4. **rejection**: `BulkheadFull`, a `CALL_REJECTED` event, and the closure
//!    is dropped unrun.
//!
//! Threads above the core size exit after `keep_alive_duration` without work.
//! Threads are named `<name>-<n>`, `n` counting from 1.
//!
//! # A queue is a promise to run late
//!
//! Two threads, a queue of 100 and 5 s per task: the last task in the queue
//! waits about 250 s (seed 000 §13.1). Size the queue from the downstream's
//! capacity, the time per task and the end-to-end deadline, not from the
//! default. To keep late work from running at all, this bulkhead **skips a
//! queued task whose caller has stopped waiting**: when the future returned by
//! [`call_async`](ThreadPoolBulkhead::call_async) is dropped (the caller's own
//! cancellation, a [`TimeLimiter`](crate::time_limiter::TimeLimiter) timeout,
//! a [`deadline::within`] running out) while the task
//! is still queued, the worker that reaches it drops it unrun and counts it in
//! [`abandoned_calls`](ThreadPoolBulkheadMetrics::abandoned_calls). Its queue
//! slot stays taken until then. A task that is already running when its caller
//! goes away runs to the end — nothing can stop a thread safely — and its
//! result is dropped.
//!
//! # Deadlines
//!
//! A task submitted when the task's [deadline] is already
//! spent is refused with [`Error::DeadlineExceeded`] and never queued. A task
//! that waits in the queue past the deadline is not cut off by the bulkhead:
//! the caller's future is bounded by `deadline::within`, whose expiry drops it,
//! and the task is then skipped as above.
//!
//! # Context
//!
//! The caller's `tracing` context is captured at submission — its default
//! subscriber and its current span ([`tracing::Span::current`]) — and restored
//! on the worker while the task runs: the subscriber becomes the worker's
//! default and the span is entered, so events and spans the task records land
//! in the caller's trace (the Rust form of Resilience4j's `ContextPropagator`,
//! seed 000 §13.2). Task-locals of the caller (such as its deadline) do not
//! cross to the worker.
//!
//! # Panics in a task
//!
//! A panicking task does not kill its worker: the panic is caught on the
//! worker and **resumed in the awaiting task**, exactly as if the closure had
//! panicked there (so `.await` on a task that panics panics, and a
//! `tokio::spawn`ed caller surfaces it as a `JoinError`). The pool keeps its
//! thread and its counts. Note that the panic hook (the "thread panicked"
//! message) runs on the worker, whose name says which pool it was.
//!
//! # Shutdown
//!
//! [`shutdown`](ThreadPoolBulkhead::shutdown), or dropping the last handle,
//! stops accepting tasks (they are refused with `BulkheadFull`); workers finish
//! every queued task and exit. [`await_termination`](ThreadPoolBulkhead::await_termination)
//! blocks until they have exited and been joined.
//!
//! There is no sync `call`: the point of this bulkhead is to move blocking work
//! off the caller's thread.
//!
//! ```
//! use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadConfig};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let pool = ThreadPoolBulkhead::new(
//!     "reports",
//!     ThreadPoolBulkheadConfig::builder()
//!         .core_thread_pool_size(1)
//!         .max_thread_pool_size(2)
//!         .queue_capacity(10)
//!         .build()
//!         .unwrap(),
//! );
//! let thread = pool
//!     .call_async(|| Ok::<_, std::io::Error>(std::thread::current().name().map(String::from)))
//!     .await
//!     .unwrap();
//! assert_eq!(thread.as_deref(), Some("reports-1"));
//! assert_eq!(pool.metrics().thread_pool_size(), 1);
//! # }
//! ```

mod config;
mod event;
mod metrics;
mod pool;

pub use self::config::{ThreadPoolBulkheadConfig, ThreadPoolBulkheadConfigBuilder};
pub use self::event::{ThreadPoolBulkheadEvent, ThreadPoolBulkheadEventKind};
pub use self::metrics::ThreadPoolBulkheadMetrics;

use std::fmt;
use std::panic::{self, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

use self::pool::{Job, Pool};
use crate::deadline;
use crate::error::{BulkheadFull, DeadlineExceeded, Error};
use crate::event::{EventPublisher, EventStream};

/// A bounded pool of named threads for blocking work, awaited from async code.
///
/// A cheap `Clone` handle: clones share the pool. Dropping the last handle
/// shuts the pool down (queued work still runs, then the threads exit).
#[derive(Clone)]
pub struct ThreadPoolBulkhead {
    handle: Arc<Handle>,
}

/// The users' side of the pool: workers hold the [`Pool`] but not this, so
/// the last user handle going away can shut the pool down.
struct Handle {
    pool: Arc<Pool>,
}

impl Drop for Handle {
    fn drop(&mut self) {
        self.pool.shutdown();
    }
}

impl ThreadPoolBulkhead {
    /// A thread-pool bulkhead called `name`. No thread starts until the first
    /// task arrives.
    ///
    /// Unlike the other primitives it has no `with_clock`: it reads no clock.
    /// Keep-alive is a real wait of an OS thread on a condition variable, which
    /// no injected clock could advance; tests hold workers with channels or
    /// barriers instead of timing them.
    pub fn new(name: impl Into<Arc<str>>, config: ThreadPoolBulkheadConfig) -> Self {
        let pool = Pool::new(name.into(), config, EventPublisher::default());
        ThreadPoolBulkhead {
            handle: Arc::new(Handle {
                pool: Arc::new(pool),
            }),
        }
    }

    /// The instance name.
    #[inline]
    pub fn name(&self) -> &str {
        &self.handle.pool.name
    }

    /// The configuration.
    #[inline]
    pub fn config(&self) -> &ThreadPoolBulkheadConfig {
        &self.handle.pool.config
    }

    /// A consistent snapshot of threads, queue and counts.
    pub fn metrics(&self) -> ThreadPoolBulkheadMetrics {
        self.handle.pool.metrics()
    }

    /// Receives an event for every task submitted or finished from now on.
    pub fn subscribe(&self) -> EventStream<ThreadPoolBulkheadEvent> {
        self.handle.pool.events.subscribe()
    }

    /// Runs `work` on one of the pool's threads and resolves to its result.
    ///
    /// Submission happens when the returned future is first polled. With no
    /// free thread and no free queue slot it resolves at once to
    /// [`Error::BulkheadFull`], and `work` is dropped without running; inside a
    /// spent [deadline], to [`Error::DeadlineExceeded`].
    ///
    /// Dropping the future before it resolves: a task still in the queue is
    /// skipped when a worker reaches it; a running task runs to the end and its
    /// result is dropped (see the [module docs](self)).
    ///
    /// # Panics
    ///
    /// If `work` panics, the panic is resumed here, in the awaiting task, as if
    /// `work` had run inline; the pool's thread survives.
    pub async fn call_async<F, T, E>(&self, work: F) -> Result<T, Error<E>>
    where
        F: FnOnce() -> Result<T, E> + Send + 'static,
        T: Send + 'static,
        E: Send + 'static,
    {
        let pool = &self.handle.pool;
        if !deadline::fits(Duration::ZERO) {
            return Err(Error::DeadlineExceeded(DeadlineExceeded::by_shared(
                &pool.refusal_name,
            )));
        }
        let (tx, rx) = oneshot::channel();
        let context = Context::capture();
        let job: Job = Box::new(move |mut slot| {
            if tx.is_closed() {
                // Nobody waits for this any more: skip it (dropping the slot
                // counts it as abandoned).
                return;
            }
            let outcome = panic::catch_unwind(AssertUnwindSafe(|| context.run(work)));
            slot.ran();
            // Release the slot first: once the caller has its result, the
            // metrics no longer count this thread as busy.
            drop(slot);
            let _ = tx.send(outcome);
        });
        if pool.submit(job).is_err() {
            return Err(Error::BulkheadFull(BulkheadFull::by(&pool.refusal_name)));
        }
        match rx.await {
            Ok(Ok(result)) => result.map_err(Error::Call),
            Ok(Err(panic)) => panic::resume_unwind(panic),
            Err(_) => {
                debug_assert!(
                    false,
                    "an accepted task runs or is skipped only when its caller is gone, so its result always arrives"
                );
                Err(Error::BulkheadFull(BulkheadFull::by(&pool.refusal_name)))
            }
        }
    }

    /// Stops accepting tasks (they are refused with `BulkheadFull`) and lets
    /// the workers finish every queued task and exit. Returns at once; see
    /// [`await_termination`](Self::await_termination).
    pub fn shutdown(&self) {
        self.handle.pool.shutdown();
    }

    /// Blocks the calling thread until every worker has exited and been
    /// joined, or `timeout` has passed; `true` if they all exited. Call it
    /// after [`shutdown`](Self::shutdown), from outside the pool (a worker
    /// waiting for itself just times out), and from async code through
    /// `tokio::task::spawn_blocking`.
    pub fn await_termination(&self, timeout: Duration) -> bool {
        let until = std::time::Instant::now()
            .checked_add(timeout)
            .unwrap_or_else(|| std::time::Instant::now() + Duration::from_secs(86_400 * 365));
        self.handle.pool.await_termination(until)
    }
}

/// The caller's tracing context: its default subscriber and its current span.
struct Context {
    dispatch: tracing::Dispatch,
    span: tracing::Span,
}

impl Context {
    fn capture() -> Self {
        Context {
            dispatch: tracing::dispatcher::get_default(tracing::Dispatch::clone),
            span: tracing::Span::current(),
        }
    }

    /// Runs `work` with the caller's subscriber as this thread's default and
    /// inside the caller's span, so that what `work` records joins its trace.
    fn run<R>(&self, work: impl FnOnce() -> R) -> R {
        tracing::dispatcher::with_default(&self.dispatch, || self.span.in_scope(work))
    }
}

impl fmt::Debug for ThreadPoolBulkhead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ThreadPoolBulkhead")
            .field("name", &self.name())
            .field("config", self.config())
            .field("metrics", &self.metrics())
            .finish()
    }
}

#[cfg(test)]
mod tests;
