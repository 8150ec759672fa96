//! Time limiter: stop waiting for a future after `timeout_duration` (Resilience4j `TimeLimiter`).
//!
//! [`TimeLimiter::call_async`] polls the caller's future next to a tokio timer
//! and resolves to the future's result, or to [`Error::Timeout`] once
//! `timeout_duration` has passed (default 1 s).
//!
//! # What a timeout means, and what it does not
//!
//! A timeout ends the *caller's wait*. It does not reach into the work:
//!
//! > the caller stopped waiting ≠ the downstream did not execute ≠ the business
//! > transaction failed
//! > (调用方不再等待 ≠ 下游没有执行 ≠ 业务事务已失败)
//!
//! Dropping a future stops *this process* from driving it, but the request it
//! already sent may still be executed by the remote service, the SQL statement
//! may still commit, the payment may still be captured. So:
//!
//! * give every write an **idempotency key** (or a status query, an outbox, a
//!   compensation), so that the caller can find out what happened and a retry
//!   after a timeout cannot apply the effect twice;
//! * keep **real timeouts in the clients** underneath — the HTTP client's
//!   connect/read timeouts, the database's query timeout — they are what frees
//!   sockets and server resources; the time limiter only bounds how long the
//!   caller waits;
//! * keep `timeout_duration` below the end-to-end budget of the request (or run
//!   inside [`deadline::within`], which this limiter
//!   respects).
//!
//! # Cancelling or detaching the work
//!
//! With `cancel_running_future = true` (the default) the future is dropped the
//! moment the wait ends: it is never polled again and everything it owns is
//! released. Rust futures are cancelled at their next `.await`, so this is
//! cancellation in the strongest sense a library can offer — but see above:
//! what already left the process is not recalled.
//!
//! With `cancel_running_future = false` the work keeps going on a task spawned
//! with `tokio::spawn`, and its result is discarded, as Resilience4j's
//! `CompletionStage` path lets the original operation finish. Moving a future
//! to another task needs `F: Send + 'static`, a bound the cancelling path does
//! not need (a cancelled future may borrow from the caller). So the API splits
//! along that line:
//!
//! * [`call_async`](TimeLimiter::call_async) takes any future, polls it in
//!   place and, when the wait ends, drops it. It cannot keep a future alive past
//!   its own end, so a limiter configured with `cancel_running_future = false`
//!   still cancels here, and says so once in a `tracing` warning.
//! * [`call_async_detachable`](TimeLimiter::call_async_detachable) asks for
//!   `Send + 'static` and honours both settings: it is `call_async` when
//!   cancelling, and boxes the future (one allocation) so it can be handed to
//!   `tokio::spawn` when not.
//!
//! # No sync `call`
//!
//! There is no `TimeLimiter::call(|| …)`: a timeout can only stop *waiting for a
//! future*. A sync function owns its thread until it returns, and nothing in
//! Rust can stop it safely from outside; a "sync timeout" would have to run the
//! function on another thread and abandon it, which is the thread-pool
//! bulkhead's job ([`crate::thread_pool_bulkhead`]) combined with this limiter.
//!
//! # Deadlines
//!
//! Inside [`deadline::within`] the limiter waits at
//! most `min(timeout_duration, remaining budget)`. When the deadline, not the
//! limiter's own timeout, ends the wait, the call fails with
//! [`Error::DeadlineExceeded`] naming this limiter. The timer starts when the
//! returned future is first polled (not when `call_async` is called), and the
//! deadline is read then: in `rate_limiter.call_async(time_limiter.call_async(work))`,
//! Resilience4j's nesting, the rate limiter's wait for a permit does not count
//! against the timeout.
//!
//! # Cost
//!
//! No allocation and no boxing on the `call_async` path: [`TimeLimited`] is one
//! struct holding the future and a `tokio::time::Sleep`, like
//! `tokio::time::Timeout`. On top of tokio's timeout it reads the task's
//! deadline (a thread-local), bumps one relaxed counter when the call ends and
//! does one relaxed load to see whether anyone subscribes to events.
//!
//! Like `tokio::time::timeout`, the future `call_async` returns must be polled inside a tokio
//! runtime with time enabled.
//!
//! ```
//! use std::time::Duration;
//! use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};
//! use resil_core::{Error, ErrorKind};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let limiter = TimeLimiter::new(
//!     "inventory",
//!     TimeLimiterConfig::builder()
//!         .timeout_duration(Duration::from_millis(800))
//!         .build()
//!         .unwrap(),
//! );
//!
//! let fast = limiter.call_async(async { Ok::<_, std::io::Error>(7) }).await;
//! assert_eq!(fast.unwrap(), 7);
//!
//! let slow = limiter
//!     .call_async(async {
//!         tokio::time::sleep(Duration::from_secs(5)).await;
//!         Ok::<_, std::io::Error>(7)
//!     })
//!     .await;
//! let err = slow.unwrap_err();
//! assert_eq!(err.kind(), ErrorKind::Timeout);
//! assert_eq!(err.to_string(), "time limiter 'inventory' timed out after 800ms");
//! assert_eq!(limiter.metrics().timeout_calls(), 1);
//! # }
//! ```

mod config;
mod event;
mod future;
mod metrics;

pub use self::config::{TimeLimiterConfig, TimeLimiterConfigBuilder};
pub use self::event::{TimeLimiterEvent, TimeLimiterEventKind};
pub use self::future::{Nested, TimeLimited, Watch};
pub use self::metrics::TimeLimiterMetrics;

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::time::Instant;

use self::metrics::Counters;
use crate::clock::{self, Clock, SharedClock};
use crate::deadline;
use crate::error::{DeadlineExceeded, Error, SharedName, Timeout};
use crate::event::{EventPublisher, EventStream};

/// Bounds how long a caller waits for a future. A cheap `Clone` handle: clones
/// share configuration, metrics and event subscribers.
///
/// See the [module docs](self) for what a timeout does and does not undo.
#[derive(Clone)]
pub struct TimeLimiter {
    inner: Arc<Inner>,
}

struct Inner {
    name: Arc<str>,
    /// The name a deadline refusal carries (built once; see [`SharedName`]).
    refusal_name: SharedName,
    /// What every timeout returns: the timeout is fixed for the instance's
    /// life, so it is built once and cloned.
    timeout: Timeout,
    config: TimeLimiterConfig,
    clock: SharedClock,
    counters: Counters,
    events: EventPublisher<TimeLimiterEvent>,
    warned_cannot_detach: AtomicBool,
}

impl TimeLimiter {
    /// A time limiter called `name`.
    pub fn new(name: impl Into<Arc<str>>, config: TimeLimiterConfig) -> Self {
        Self::with_clock(name, config, SharedClock::system())
    }

    /// A time limiter whose events time calls with `clock`.
    ///
    /// The wait itself always runs on tokio's timer, so `tokio::time::pause()`
    /// (not the clock) drives timeouts in tests; pass a
    /// [`TokioClock`](crate::clock::TokioClock) to have event durations follow
    /// the same paused time.
    pub fn with_clock(
        name: impl Into<Arc<str>>,
        config: TimeLimiterConfig,
        clock: impl Clock,
    ) -> Self {
        let name = name.into();
        let refusal_name = SharedName::new(Arc::clone(&name));
        TimeLimiter {
            inner: Arc::new(Inner {
                timeout: Timeout::by(&refusal_name, config.timeout_duration()),
                refusal_name,
                name,
                config,
                clock: SharedClock::new(clock),
                counters: Counters::default(),
                events: EventPublisher::default(),
                warned_cannot_detach: AtomicBool::new(false),
            }),
        }
    }

    /// The instance name.
    #[inline]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The configuration.
    #[inline]
    pub fn config(&self) -> &TimeLimiterConfig {
        &self.inner.config
    }

    /// A snapshot of the call counts.
    pub fn metrics(&self) -> TimeLimiterMetrics {
        self.inner.counters.snapshot()
    }

    /// Receives an event for every call that ends from now on.
    pub fn subscribe(&self) -> EventStream<TimeLimiterEvent> {
        self.inner.events.subscribe()
    }

    /// Waits for `fut` at most `timeout_duration` (and at most the task's
    /// remaining [deadline]); when the wait ends first, drops
    /// `fut` and resolves to [`Error::Timeout`] (or
    /// [`Error::DeadlineExceeded`] when the deadline ended it).
    ///
    /// `fut` may borrow: nothing is spawned or boxed. A limiter configured with
    /// `cancel_running_future = false` cannot keep such a future running after
    /// this call ends, so it is cancelled all the same (and a warning is traced
    /// once per limiter); use [`call_async_detachable`](Self::call_async_detachable)
    /// to let the work finish.
    ///
    /// # Panics
    ///
    /// When the wrapped future first waits (returns `Pending`) outside a
    /// tokio runtime with time enabled, as `tokio::time::timeout`. A future
    /// ready at its first poll needs no timer, so no runtime.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let limiter = TimeLimiter::new("reports", TimeLimiterConfig::default());
    /// let sku = String::from("sku-1");
    /// // The future borrows `sku`: fine, it is cancelled in place on timeout.
    /// let len = limiter.call_async(async { Ok::<_, ()>(sku.len()) }).await;
    /// assert_eq!(len, Ok(5));
    /// # }
    /// ```
    #[inline]
    pub fn call_async<F, T, E>(&self, fut: F) -> TimeLimited<'_, F>
    where
        F: Future<Output = Result<T, E>>,
    {
        TimeLimited::inline(self, fut)
    }

    /// [`call_async`](Self::call_async) around a future that is itself
    /// protected (it returns `Result<T, resil::Error<E>>`): one flat
    /// `resil::Error<E>`, an inner refusal staying a refusal (and counted as a
    /// failed call here, as an exception from the supplier is in
    /// Resilience4j). Polls `fut` in place.
    pub fn call_async_nested<F, T, E>(&self, fut: F) -> Nested<TimeLimited<'_, F>>
    where
        F: Future<Output = Result<T, Error<E>>>,
    {
        Nested {
            inner: TimeLimited::inline(self, fut),
        }
    }

    /// Like [`call_async`](Self::call_async), but honours
    /// `cancel_running_future = false`: when the wait ends, `fut` goes on
    /// running on a task spawned with `tokio::spawn` and its result is
    /// discarded. That move is why `fut` (and its output) must be
    /// `Send + 'static`, and why `fut` is boxed (one allocation per call) when
    /// the limiter does not cancel; a cancelling limiter polls it in place.
    ///
    /// # Panics
    ///
    /// When the wrapped future first waits (returns `Pending`) outside a
    /// tokio runtime with time enabled, as `tokio::time::timeout`. A future
    /// ready at its first poll needs no timer, so no runtime.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use std::sync::{Arc, atomic::{AtomicBool, Ordering}};
    /// # use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let limiter = TimeLimiter::new(
    ///     "audit",
    ///     TimeLimiterConfig::builder()
    ///         .timeout_duration(Duration::from_millis(100))
    ///         .cancel_running_future(false)
    ///         .build()
    ///         .unwrap(),
    /// );
    /// let written = Arc::new(AtomicBool::new(false));
    /// let flag = written.clone();
    /// let out = limiter
    ///     .call_async_detachable(async move {
    ///         tokio::time::sleep(Duration::from_millis(300)).await;
    ///         flag.store(true, Ordering::SeqCst);
    ///         Ok::<_, ()>(())
    ///     })
    ///     .await;
    /// assert!(out.is_err()); // the caller stopped waiting at 100 ms …
    /// tokio::time::sleep(Duration::from_millis(300)).await;
    /// assert!(written.load(Ordering::SeqCst)); // … the work still finished
    /// # }
    /// ```
    pub fn call_async_detachable<F, T, E>(&self, fut: F) -> TimeLimited<'_, F>
    where
        F: Future<Output = Result<T, E>> + Send + 'static,
        T: Send + 'static,
        E: Send + 'static,
    {
        if self.inner.config.cancel_running_future() {
            TimeLimited::inline(self, fut)
        } else {
            TimeLimited::detachable(self, fut, future::detach::<F>)
        }
    }

    /// The limiter's side of one timed call, for a caller that keeps the
    /// work in its own state rather than inside a [`TimeLimited`] (see
    /// [`Watch`]).
    #[inline]
    pub fn watch(&self) -> Watch<'_> {
        Watch::new(self)
    }

    /// When the wait ends: `timeout_duration` from now, or the task's deadline
    /// if that comes first (then `true`).
    #[inline]
    fn wait_until(&self) -> (Instant, bool) {
        let now = Instant::now();
        let own = now
            .checked_add(self.inner.config.timeout_duration())
            // Beyond tokio's range: the same "30 years" as `deadline::within`.
            .unwrap_or_else(|| now + Duration::from_secs(86_400 * 365 * 30));
        match deadline::current() {
            Some(at) if at < own => (at, true),
            _ => (own, false),
        }
    }

    /// A clock reading to time the call with, only while someone listens.
    #[inline]
    fn start_reading(&self) -> Option<u64> {
        if self.inner.events.is_active() {
            Some(self.inner.clock.now_nanos())
        } else {
            None
        }
    }

    /// Counts and publishes a call that finished within its time.
    #[inline(always)]
    fn finished(&self, ok: bool, started: Option<u64>) {
        if ok {
            self.inner.counters.success();
            self.publish(TimeLimiterEventKind::Success, started);
        } else {
            self.inner.counters.failure();
            self.publish(TimeLimiterEventKind::Error, started);
        }
    }

    #[cold]
    fn gave_up<E>(&self, by_deadline: bool, started: Option<u64>) -> Error<E> {
        let inner = &*self.inner;
        if by_deadline {
            inner.counters.deadline_exceeded();
            self.publish(TimeLimiterEventKind::DeadlineExceeded, started);
            Error::DeadlineExceeded(DeadlineExceeded::by_shared(&inner.refusal_name))
        } else {
            inner.counters.timeout();
            self.publish(TimeLimiterEventKind::Timeout, started);
            Error::Timeout(inner.timeout.clone())
        }
    }

    /// A future from `call_async` was cancelled on timeout; warn once if the
    /// configuration asked for it to keep running.
    #[cold]
    fn dropped_on_timeout(&self) {
        let inner = &*self.inner;
        if !inner.config.cancel_running_future()
            && !inner.warned_cannot_detach.swap(true, Ordering::Relaxed)
        {
            tracing::warn!(
                time_limiter = %inner.name,
                "time limiter '{}' has `cancel_running_future = false`, but `call_async` cannot keep a \
                 future running after it returns, so the future was cancelled; use \
                 `call_async_detachable` for work that must finish",
                inner.name
            );
        }
    }

    #[inline]
    fn publish(&self, kind: TimeLimiterEventKind, started: Option<u64>) {
        let inner = &*self.inner;
        inner.events.publish_with(|| {
            let elapsed = started.map(|t0| clock::elapsed(t0, inner.clock.now_nanos()));
            TimeLimiterEvent::with_detail(&inner.name, kind, elapsed)
        });
    }
}

impl fmt::Debug for TimeLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimeLimiter")
            .field("name", &self.name())
            .field("config", self.config())
            .field("metrics", &self.metrics())
            .finish()
    }
}

#[cfg(test)]
mod tests;
