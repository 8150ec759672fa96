//! Waiting for a slot: the async future and the blocking (parking) wait.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use super::semaphore::{Enqueued, Waiter, Wake};
use super::{AcquireError, BulkheadPermit, Inner};
use crate::clock::{self, Clock};
use crate::deadline;

/// The future returned by [`Bulkhead::acquire_permission`](super::Bulkhead::acquire_permission).
///
/// It does nothing until polled: the first poll takes a free slot (one CAS) or
/// joins the wait queue, bounded by `max_wait_duration` cut to the task's
/// deadline. Cancellation-safe: dropping it while it waits leaves the queue, and
/// if a slot was handed to it at that very instant the slot is passed on, never
/// lost. Like most futures it must not be polled again after it completed.
#[must_use = "futures do nothing unless polled"]
pub struct AcquirePermission<'a> {
    inner: &'a Inner,
    state: State,
}

enum State {
    Start,
    Waiting {
        waiter: Arc<Waiter>,
        timer: Pin<Box<dyn Future<Output = ()> + Send>>,
        /// The wait was cut short by the deadline: expiry means DeadlineExceeded.
        cut: bool,
    },
    Done,
}

impl<'a> AcquirePermission<'a> {
    pub(crate) fn new(inner: &'a Inner) -> Self {
        AcquirePermission {
            inner,
            state: State::Start,
        }
    }

    fn granted(&mut self) -> Poll<Result<BulkheadPermit<'a>, AcquireError>> {
        self.state = State::Done;
        Poll::Ready(Ok(self.inner.permitted()))
    }

    fn refused(&mut self, cut: bool) -> Poll<Result<BulkheadPermit<'a>, AcquireError>> {
        self.state = State::Done;
        Poll::Ready(Err(self.inner.rejected(cut)))
    }
}

impl<'a> Future for AcquirePermission<'a> {
    type Output = Result<BulkheadPermit<'a>, AcquireError>;

    // The first poll's free slot (or spent deadline) is inlined into the
    // caller, so its result stays in registers: returned through memory,
    // written as two words and read back as one 16-byte load, it stalls on
    // store forwarding (most of this poll's cost in the tower layer's
    // bench). The queue and the timer are out of line.
    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        if let State::Start = this.state {
            if let Some(now) = this.inner.try_acquire_now() {
                // `Start` owns nothing: forgetting it spares the call to the
                // state's drop glue that assigning over it would make.
                std::mem::forget(std::mem::replace(&mut this.state, State::Done));
                return Poll::Ready(now);
            }
        }
        this.poll_slow(cx)
    }
}

impl<'a> AcquirePermission<'a> {
    /// Every poll but a first one that found a slot: joins the queue (on the
    /// first poll), or waits in it for a slot or the timeout.
    #[cold]
    #[inline(never)]
    fn poll_slow(
        &mut self,
        cx: &mut Context<'_>,
    ) -> Poll<Result<BulkheadPermit<'a>, AcquireError>> {
        let this = self;
        if let State::Start = this.state {
            let (wait, cut) = deadline::cap(this.inner.max_wait());
            if wait.is_zero() {
                return this.refused(cut);
            }
            match this.inner.sem.enqueue(Wake::Task(Some(cx.waker().clone()))) {
                Enqueued::Acquired => return this.granted(),
                Enqueued::Queued(waiter) => {
                    this.state = State::Waiting {
                        waiter,
                        timer: this.inner.clock.sleep_async(wait),
                        cut,
                    };
                }
            }
        }
        match &mut this.state {
            State::Start => unreachable!("the start state was just left"),
            State::Done => panic!("`AcquirePermission` polled after completion"),
            State::Waiting { waiter, timer, cut } => {
                if waiter.register(cx.waker()) {
                    return this.granted();
                }
                if timer.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                let cut = *cut;
                // Timed out, unless the slot arrived at the same instant.
                if this.inner.sem.cancel(waiter) {
                    this.granted()
                } else {
                    this.refused(cut)
                }
            }
        }
    }
}

impl Drop for AcquirePermission<'_> {
    #[inline]
    fn drop(&mut self) {
        if let State::Waiting { waiter, .. } = &self.state {
            if self.inner.sem.cancel(waiter) {
                // Granted while nobody was looking: pass the slot on.
                self.inner.sem.release();
            }
        }
    }
}

impl fmt::Debug for AcquirePermission<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match self.state {
            State::Start => "start",
            State::Waiting { .. } => "waiting",
            State::Done => "done",
        };
        f.debug_struct("AcquirePermission")
            .field("bulkhead", &&*self.inner.name)
            .field("state", &state)
            .finish()
    }
}

impl Inner {
    /// Takes a slot for a blocking caller, parking the thread for at most
    /// `max_wait_duration` (cut to the task's deadline, if any).
    pub(crate) fn acquire_blocking(&self) -> Result<BulkheadPermit<'_>, AcquireError> {
        match self.try_acquire_now() {
            Some(now) => now,
            None => self.acquire_blocking_slow(),
        }
    }

    #[cold]
    fn acquire_blocking_slow(&self) -> Result<BulkheadPermit<'_>, AcquireError> {
        let (wait, cut) = deadline::cap(self.max_wait());
        if wait.is_zero() {
            return Err(self.rejected(cut));
        }
        // The wait is timed from before the caller becomes visible in the queue.
        let start = self.clock.now_nanos();
        let waiter = match self.sem.enqueue(Wake::Thread(std::thread::current())) {
            Enqueued::Acquired => return Ok(self.permitted()),
            Enqueued::Queued(waiter) => waiter,
        };
        let limit = clock::nanos(wait);
        loop {
            if waiter.is_granted() {
                return Ok(self.permitted());
            }
            let waited = self.clock.now_nanos().saturating_sub(start);
            if waited >= limit {
                return if self.sem.cancel(&waiter) {
                    Ok(self.permitted())
                } else {
                    Err(self.rejected(cut))
                };
            }
            // Parked on the same clock the wait is measured on: a test clock
            // ends it when its own time passes. Spurious wake-ups and early
            // returns just go round the loop.
            self.clock.park_until(start.saturating_add(limit));
        }
    }
}
