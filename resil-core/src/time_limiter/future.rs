//! The future a time limiter returns: the caller's future, polled in place,
//! and a tokio timer made (boxed) only once the future waits: a call whose
//! future is ready at once reads no clock, makes no timer and allocates
//! nothing.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use pin_project_lite::pin_project;
use tokio::task::Unconstrained;
use tokio::time::Sleep;

use super::TimeLimiter;
use crate::cold_box::ColdBox;
use crate::error::Error;

pin_project! {
    /// The future returned by [`TimeLimiter::call_async`] and
    /// [`TimeLimiter::call_async_detachable`]: resolves to the wrapped future's
    /// result, or to [`Error::Timeout`] / [`Error::DeadlineExceeded`] when the
    /// wait ends first.
    ///
    /// The timer starts at the **first poll**, not when this future is
    /// created: wrapped in another primitive that waits first (a rate limiter's
    /// `call_async(limiter.call_async(work))`), the outer wait is not counted
    /// against the timeout. The wrapped future is polled first, so a future
    /// that is ready when first polled is never timed out (as with
    /// `tokio::time::timeout`) and costs no clock reading and no timer; the
    /// timer is set when that first poll returns `Pending`, so synchronous work
    /// inside the first poll (which no timer could interrupt) is not counted,
    /// as Resilience4j starts its wait once the supplier has returned the
    /// future.
    #[must_use = "futures do nothing unless polled; the timer starts at the first poll"]
    pub struct TimeLimited<'a, F> {
        #[pin]
        work: Work<F>,
        watch: Watch<'a>,
    }
}

/// The time limiter's side of one timed call, kept apart from the work it
/// times: [`TimeLimited`] holds one beside the future it wraps, and a
/// caller that keeps the work in its own state machine (a tower layer
/// whose work is first a bulkhead's wait, then the inner call) holds one
/// beside that state instead of nesting the state inside a
/// [`TimeLimited`].
///
/// The protocol, for each poll of the work: [`before_poll`](Self::before_poll);
/// poll the work; when it is ready, [`finished`](Self::finished) with whether
/// it succeeded; when it is pending, [`poll_expired`](Self::poll_expired),
/// and when that is ready the wait is over: drop the work in place and
/// return [`expired`](Self::expired)'s error. A work ready at its first poll
/// reads no clock and makes no timer.
///
/// ```
/// # use std::future::Future;
/// # use std::pin::pin;
/// # use std::task::{Context, Poll};
/// # use std::time::Duration;
/// # use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let limiter = TimeLimiter::new(
///     "pricing",
///     TimeLimiterConfig::builder()
///         .timeout_duration(Duration::from_millis(50))
///         .build()
///         .unwrap(),
/// );
/// let mut watch = limiter.watch();
/// let mut work = pin!(tokio::time::sleep(Duration::from_secs(1)));
/// let out: Result<(), resil_core::Error<()>> = std::future::poll_fn(|cx| {
///     watch.before_poll();
///     if work.as_mut().poll(cx).is_ready() {
///         watch.finished(true);
///         return Poll::Ready(Ok(()));
///     }
///     std::task::ready!(watch.poll_expired(cx));
///     Poll::Ready(Err(watch.expired(true)))
/// })
/// .await;
/// assert!(matches!(out, Err(resil_core::Error::Timeout(_))));
/// assert_eq!(limiter.metrics().timeout_calls(), 1);
/// # }
/// ```
pub struct Watch<'a> {
    // Set when the first poll of the work returns `Pending`, boxed: a
    // `Sleep` is 112 bytes, which every layer around this one would
    // otherwise carry and move although most calls never wait (and a
    // waiting call registers a timer anyway). The box also holds what only
    // a waiting call needs, so that a `Watch` is three words.
    timer: Option<ColdBox<Timer>>,
    limiter: &'a TimeLimiter,
    // The clock reading at the start plus one, read only while someone
    // subscribes to events; 0 while not read. (A reading of `u64::MAX`, 584
    // years after the clock's origin, would read as not taken.)
    started: u64,
}

pin_project! {
    /// The wait of a call that did not finish at its first poll.
    struct Timer {
        // Polled without tokio's cooperative budget, as
        // `tokio::time::Timeout` does when the wrapped future spent it:
        // otherwise a future that always exhausts the budget would never
        // see its timeout fire.
        #[pin]
        sleep: Unconstrained<Sleep>,
        // The wait ends at the task's deadline, earlier than `timeout_duration`.
        by_deadline: bool,
    }
}

impl<'a> Watch<'a> {
    #[inline]
    pub(super) fn new(limiter: &'a TimeLimiter) -> Self {
        Watch {
            timer: None,
            limiter,
            started: 0,
        }
    }

    #[inline]
    fn started(&self) -> Option<u64> {
        self.started.checked_sub(1)
    }

    /// Before each poll of the work: the first one reads the clock, and
    /// only while someone subscribes to the limiter's events.
    #[inline]
    pub fn before_poll(&mut self) {
        if self.timer.is_none() && self.started == 0 {
            if let Some(now) = self.limiter.start_reading() {
                self.started = now.wrapping_add(1);
            }
        }
    }

    /// The work is ready within its time: counts and publishes a success
    /// (`ok`) or an error.
    #[inline]
    pub fn finished(&self, ok: bool) {
        self.limiter.finished(ok, self.started());
    }

    /// The work returned `Pending`: the first time, the wait starts now,
    /// bounded by the deadline in force now (that of the task polling);
    /// ready when the wait is over.
    ///
    /// # Panics
    ///
    /// The first time, outside a tokio runtime with time enabled, as
    /// `tokio::time::timeout`.
    #[inline]
    pub fn poll_expired(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        let timer = match &mut self.timer {
            Some(timer) => timer,
            None => {
                let (at, by_deadline) = self.limiter.wait_until();
                self.timer.insert(ColdBox::pin(Timer {
                    sleep: tokio::task::unconstrained(tokio::time::sleep_until(at)),
                    by_deadline,
                }))
            }
        };
        timer.as_mut().project().sleep.poll(cx)
    }

    /// The wait is over: counts and publishes a timeout (or a spent
    /// deadline) and returns its error. `dropped`: the work was dropped in
    /// place (warned about once if the limiter is configured not to cancel
    /// running futures); `false` when it was handed on to keep running.
    #[cold]
    pub fn expired<E>(&self, dropped: bool) -> Error<E> {
        if dropped {
            self.limiter.dropped_on_timeout();
        }
        let by_deadline = self.by_deadline();
        self.limiter.gave_up(by_deadline, self.started())
    }

    fn by_deadline(&self) -> bool {
        self.timer.as_ref().is_some_and(|t| t.get_ref().by_deadline)
    }
}

impl fmt::Debug for Watch<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Watch")
            .field("limiter", &self.limiter.name())
            .field("waiting", &self.timer.is_some())
            .field("by_deadline", &self.by_deadline())
            .finish()
    }
}

pin_project! {
    #[project = WorkProj]
    #[project_replace = WorkReplace]
    enum Work<F> {
        // Polled in place; dropped where it stands when the wait ends.
        Inline { #[pin] fut: F },
        // Boxed so it can move to a spawned task when the wait ends.
        Detachable { fut: ColdBox<F>, detach: fn(Pin<Box<F>>) },
        // The wait ended; the future was dropped or detached.
        Done,
    }
}

impl<'a, F> TimeLimited<'a, F> {
    pub(super) fn inline(limiter: &'a TimeLimiter, fut: F) -> Self {
        Self::new(limiter, Work::Inline { fut })
    }

    pub(super) fn detachable(limiter: &'a TimeLimiter, fut: F, detach: fn(Pin<Box<F>>)) -> Self {
        Self::new(
            limiter,
            Work::Detachable {
                fut: ColdBox::pin(fut),
                detach,
            },
        )
    }

    #[inline]
    fn new(limiter: &'a TimeLimiter, work: Work<F>) -> Self {
        TimeLimited {
            work,
            watch: Watch::new(limiter),
        }
    }
}

impl<F, T, E> Future for TimeLimited<'_, F>
where
    F: Future<Output = Result<T, E>>,
{
    type Output = Result<T, Error<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.poll_with(cx, Error::Call)
    }
}

impl<F, T, E> TimeLimited<'_, F>
where
    F: Future<Output = Result<T, E>>,
{
    /// The poll of both futures: `wrap` makes the wrapped future's error a
    /// `resil::Error` (`Error::Call` for [`TimeLimited`], nothing for
    /// [`Nested`], whose inner error already is one). Building the final
    /// error type directly, rather than an `Error<Error<E>>` flattened
    /// afterwards, leaves the result as the inner future wrote it.
    #[inline]
    fn poll_with<R>(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        wrap: impl FnOnce(E) -> Error<R>,
    ) -> Poll<Result<T, Error<R>>> {
        let mut this = self.project();
        this.watch.before_poll();
        let polled = match this.work.as_mut().project() {
            WorkProj::Inline { fut } => fut.poll(cx),
            WorkProj::Detachable { fut, .. } => fut.as_mut().poll(cx),
            WorkProj::Done => panic!("`TimeLimited` polled after it completed"),
        };
        if let Poll::Ready(result) = polled {
            this.watch.finished(result.is_ok());
            return Poll::Ready(result.map_err(wrap));
        }
        ready!(this.watch.poll_expired(cx));
        // The wait is over. Cancel (drop in place) or detach the work now, not
        // when the caller gets round to dropping this future.
        let dropped = match this.work.project_replace(Work::Done) {
            WorkReplace::Inline { .. } => true,
            WorkReplace::Detachable { fut, detach } => {
                detach(fut.into_pin());
                false
            }
            WorkReplace::Done => false,
        };
        Poll::Ready(Err(this.watch.expired(dropped)))
    }
}

pin_project! {
    /// The future returned by [`TimeLimiter::call_async_nested`]: the
    /// [`TimeLimited`] future around a future whose error already is a
    /// `resil::Error<E>`, resolving to one flat `resil::Error<E>`; polled in
    /// place.
    #[must_use = "futures do nothing unless polled; the timer starts at the first poll"]
    pub struct Nested<F> {
        #[pin]
        pub(super) inner: F,
    }
}

impl<F, T, E> Future for Nested<TimeLimited<'_, F>>
where
    F: Future<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.project().inner.poll_with(cx, |e| e)
    }
}

impl<F> fmt::Debug for Nested<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Nested").finish_non_exhaustive()
    }
}

/// Hands a timed-out future to tokio, which runs it to completion and drops its
/// output: the `cancel_running_future = false` path.
pub(super) fn detach<F>(fut: Pin<Box<F>>)
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    drop(tokio::spawn(fut));
}

impl<F> fmt::Debug for TimeLimited<'_, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TimeLimited")
            .field("limiter", &self.watch.limiter.name())
            .field("by_deadline", &self.watch.by_deadline())
            .finish_non_exhaustive()
    }
}
