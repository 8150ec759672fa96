//! The counting semaphore behind a bulkhead: one atomic word on the fast path, a
//! FIFO waiter queue behind a mutex on the slow path.
//!
//! # The state word
//!
//! ```text
//!  63      62 ........ 32   31        30 ........ 0
//! [UNFAIR][ max (31 bits) ][WAITERS][ in_use (31 bits) ]
//! ```
//!
//! * `in_use` counts the slots held, `max` is the current limit. `in_use` may
//!   exceed `max` after the limit was lowered: held slots are never revoked, new
//!   calls simply find no room until enough of them end. It also exceeds it for
//!   an instant while a refused caller undoes its add.
//! * `WAITERS` is set exactly while the queue is non-empty; it is only changed
//!   with the queue lock held.
//! * `UNFAIR` lets the fast path take a free slot even while callers wait.
//!
//! Acquire is one `fetch_add` (`in_use + 1`), kept if there was room
//! (`in_use < max` and, when fair, nobody waits) and otherwise undone by a
//! release. Release is one `fetch_sub`; only when `WAITERS` was set does it
//! take the lock and hand free slots to the queue's head, in order. So a call
//! through a free bulkhead is one atomic add and one atomic sub, never a
//! retried CAS.
//!
//! # Invariants
//!
//! * With the lock held and the queue non-empty, `in_use >= max`, except for the
//!   instant between a release's `fetch_sub` and its own hand-off (which then
//!   takes the lock and restores it). So a fair caller never finds a free slot
//!   that a waiter should have had.
//! * A waiter is granted a slot only with the lock held, by incrementing
//!   `in_use` on its behalf, removing it from the queue and setting its
//!   `granted` flag. A waiter that gives up takes the lock too; if it finds
//!   itself granted it owns the slot and must keep or release it, so a slot
//!   handed over at the very instant its waiter is dropped is never lost.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Waker;
use std::thread::Thread;

use parking_lot::Mutex;

use crate::criticality::{share_of, Share, FULL_SHARE};

const IN_USE_MASK: u64 = (1 << 31) - 1;
const WAITERS: u64 = 1 << 31;
const MAX_SHIFT: u32 = 32;
const MAX_MASK: u64 = ((1 << 31) - 1) << MAX_SHIFT;
const UNFAIR: u64 = 1 << 63;

/// Limits up to this take slots with an unconditional `fetch_add`: the slots
/// in use may then overshoot the limit by the callers racing at once, which
/// stays below `IN_USE_MASK` by 2^30.
const ADD_LIMIT: u32 = 1 << 30;

/// At most this many waiters are woken per lock acquisition; wakers run with the
/// lock released, so a waker that re-enters the bulkhead cannot deadlock.
const WAKE_BATCH: usize = 16;

#[inline]
fn in_use(s: u64) -> u32 {
    (s & IN_USE_MASK) as u32
}

#[inline]
fn max(s: u64) -> u32 {
    ((s & MAX_MASK) >> MAX_SHIFT) as u32
}

/// How a granted waiter learns that it has a slot.
#[derive(Debug)]
pub(crate) enum Wake {
    /// A thread parked in a blocking wait.
    Thread(Thread),
    /// An async task; `None` until the first poll registers it (or after a grant took it).
    Task(Option<Waker>),
}

/// One queued caller.
#[derive(Debug)]
pub(crate) struct Waiter {
    granted: AtomicBool,
    wake: Mutex<Wake>,
}

impl Waiter {
    /// Whether a slot was handed to this waiter (it now owns it).
    #[inline]
    pub(crate) fn is_granted(&self) -> bool {
        self.granted.load(Ordering::Acquire)
    }

    /// Registers the task to wake on a grant; returns whether the slot was
    /// already granted (checked after registering, so no grant is missed).
    pub(crate) fn register(&self, waker: &Waker) -> bool {
        {
            let mut wake = self.wake.lock();
            match &mut *wake {
                Wake::Task(Some(w)) if w.will_wake(waker) => {}
                other => *other = Wake::Task(Some(waker.clone())),
            }
        }
        self.is_granted()
    }
}

/// What [`Semaphore::enqueue`] did.
pub(crate) enum Enqueued {
    /// A slot was free (and, if fair, nobody waited): it is the caller's now.
    Acquired,
    /// The caller waits in the queue behind this node.
    Queued(Arc<Waiter>),
}

/// Slots granted under the lock, woken after it is released.
struct WakeList {
    wakes: [Option<Wake>; WAKE_BATCH],
    len: usize,
}

impl WakeList {
    fn new() -> Self {
        WakeList {
            wakes: Default::default(),
            len: 0,
        }
    }

    fn is_full(&self) -> bool {
        self.len == WAKE_BATCH
    }

    fn push(&mut self, wake: Wake) {
        debug_assert!(!self.is_full(), "a full wake list must be drained first");
        self.wakes[self.len] = Some(wake);
        self.len += 1;
    }

    fn wake_all(&mut self) {
        for wake in self.wakes[..self.len].iter_mut() {
            match wake.take() {
                Some(Wake::Thread(t)) => t.unpark(),
                Some(Wake::Task(Some(w))) => w.wake(),
                Some(Wake::Task(None)) | None => {}
            }
        }
        self.len = 0;
    }
}

/// The state word alone on a cache line: two threads bouncing it between
/// their cores do not also evict the read-mostly fields next to it (the name,
/// the wait, the event publisher) that every call reads.
#[derive(Debug)]
#[repr(align(64))]
struct Padded(AtomicU64);

impl std::ops::Deref for Padded {
    type Target = AtomicU64;

    #[inline]
    fn deref(&self) -> &AtomicU64 {
        &self.0
    }
}

/// A resizable counting semaphore with FIFO waiters for threads and tasks.
#[derive(Debug)]
pub(crate) struct Semaphore {
    /// Written by every acquire and release: on cache lines of its own (see
    /// [`Padded`]).
    state: Padded,
    queue: Mutex<VecDeque<Arc<Waiter>>>,
    waiting: AtomicUsize,
    /// The limit is, or once was, above [`ADD_LIMIT`]: take slots by CAS.
    wide: AtomicBool,
}

impl Semaphore {
    /// `max` slots (`1..=MAX_CONCURRENT_CALLS`, checked by the config).
    pub(crate) fn new(max: u32, fair: bool) -> Self {
        debug_assert!(
            u64::from(max) <= IN_USE_MASK,
            "the config must bound max_concurrent_calls to 31 bits"
        );
        let unfair = if fair { 0 } else { UNFAIR };
        Semaphore {
            state: Padded(AtomicU64::new((u64::from(max) << MAX_SHIFT) | unfair)),
            queue: Mutex::new(VecDeque::new()),
            waiting: AtomicUsize::new(0),
            wide: AtomicBool::new(max > ADD_LIMIT),
        }
    }

    /// Takes a free slot without waiting: the fast path, one `fetch_add`.
    ///
    /// The add is unconditional, so two racing callers never retry a failed
    /// CAS (on two cores each retry is another cache-line transfer); a caller
    /// that finds no room undoes its add with a [`release`](Self::release),
    /// which also hands the phantom slot to waiters if any queued meanwhile.
    /// The overshoot is bounded by the callers racing at once; limits above
    /// [`ADD_LIMIT`] (2^30, far beyond any real bulkhead), where it could carry
    /// out of the 31-bit `in_use` field, take a slot by compare-and-swap
    /// instead.
    #[inline]
    pub(crate) fn try_acquire(&self) -> bool {
        if self.wide.load(Ordering::Relaxed) {
            return self.try_acquire_cas();
        }
        let s = self.state.fetch_add(1, Ordering::Acquire);
        // Fair: a free slot belongs to the queue's head, if there is one.
        let queued = s & WAITERS != 0 && s & UNFAIR == 0;
        if in_use(s) < max(s) && !queued {
            return true;
        }
        self.release();
        false
    }

    /// [`try_acquire`](Self::try_acquire) under a ceiling that is a share
    /// of the limit: a slot only while fewer than [`share_of`]`(max, share)`
    /// are held. `share >= FULL_SHARE` is the plain limit.
    #[inline]
    pub(crate) fn try_acquire_share(&self, share: Share) -> bool {
        if share >= FULL_SHARE {
            return self.try_acquire();
        }
        if self.wide.load(Ordering::Relaxed) {
            return self.try_acquire_cas_share(share);
        }
        let s = self.state.fetch_add(1, Ordering::Acquire);
        let queued = s & WAITERS != 0 && s & UNFAIR == 0;
        if in_use(s) < share_of(max(s), share) && !queued {
            return true;
        }
        self.release();
        false
    }

    /// Takes a slot whatever the limit (a guaranteed share, checked by the
    /// caller): the slots held may then exceed `max`, as after a lowered
    /// limit. Refuses only when `in_use` would leave its 31 bits' lower half,
    /// which no real bulkhead reaches.
    #[cold]
    pub(crate) fn acquire_over_limit(&self) -> bool {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            if in_use(s) >= ADD_LIMIT {
                return false;
            }
            match self
                .state
                .compare_exchange_weak(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(actual) => s = actual,
            }
        }
    }

    /// The fast path for limits above [`ADD_LIMIT`]: a CAS that never
    /// overshoots.
    #[cold]
    fn try_acquire_cas(&self) -> bool {
        self.try_acquire_cas_share(FULL_SHARE)
    }

    #[cold]
    fn try_acquire_cas_share(&self, share: Share) -> bool {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            let queued = s & WAITERS != 0 && s & UNFAIR == 0;
            if in_use(s) >= share_of(max(s), share) || queued {
                return false;
            }
            match self
                .state
                .compare_exchange_weak(s, s + 1, Ordering::Acquire, Ordering::Relaxed)
            {
                Ok(_) => return true,
                Err(actual) => s = actual,
            }
        }
    }

    /// Gives one slot back; hands it (or any room) to waiters if there are some.
    #[inline]
    pub(crate) fn release(&self) {
        let prev = self.state.fetch_sub(1, Ordering::Release);
        debug_assert!(
            in_use(prev) > 0,
            "a slot was released that was never acquired"
        );
        if prev & WAITERS != 0 {
            self.hand_off();
        }
    }

    /// Takes a free slot if the caller may have one now, otherwise queues it.
    #[cold]
    pub(crate) fn enqueue(&self, wake: Wake) -> Enqueued {
        let mut queue = self.queue.lock();
        let mut s = self.state.load(Ordering::Acquire);
        loop {
            let may_take = in_use(s) < max(s) && (s & WAITERS == 0 || s & UNFAIR != 0);
            let next = if may_take { s + 1 } else { s | WAITERS };
            match self
                .state
                .compare_exchange(s, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) if may_take => return Enqueued::Acquired,
                Ok(_) => break,
                Err(actual) => s = actual,
            }
        }
        let waiter = Arc::new(Waiter {
            granted: AtomicBool::new(false),
            wake: Mutex::new(wake),
        });
        queue.push_back(Arc::clone(&waiter));
        self.waiting.store(queue.len(), Ordering::Relaxed);
        Enqueued::Queued(waiter)
    }

    /// The waiter gives up (timed out or dropped). Returns `true` if it had
    /// already been granted a slot, which it then owns; otherwise it leaves the
    /// queue holding nothing.
    #[cold]
    pub(crate) fn cancel(&self, waiter: &Arc<Waiter>) -> bool {
        let mut queue = self.queue.lock();
        // Grants happen under this lock, so the flag is stable here.
        if waiter.is_granted() {
            return true;
        }
        let at = queue.iter().position(|w| Arc::ptr_eq(w, waiter));
        debug_assert!(at.is_some(), "an ungranted waiter is still queued");
        if let Some(at) = at {
            queue.remove(at);
        }
        if queue.is_empty() {
            self.state.fetch_and(!WAITERS, Ordering::AcqRel);
        }
        self.waiting.store(queue.len(), Ordering::Relaxed);
        false
    }

    /// Changes the limit. Held slots are never revoked: lowering it only makes
    /// new callers wait or be refused until enough held slots end; raising it
    /// hands the new room to waiters at once.
    pub(crate) fn resize(&self, new_max: u32) {
        debug_assert!(
            u64::from(new_max) <= IN_USE_MASK,
            "the config must bound max_concurrent_calls to 31 bits"
        );
        {
            let _queue = self.queue.lock();
            // Set before a wide limit is in force, and never cleared: slots
            // held under a wide limit could still be near the field's top.
            if new_max > ADD_LIMIT {
                self.wide.store(true, Ordering::Relaxed);
            }
            let mut s = self.state.load(Ordering::Acquire);
            loop {
                let next = (s & !MAX_MASK) | (u64::from(new_max) << MAX_SHIFT);
                match self
                    .state
                    .compare_exchange(s, next, Ordering::AcqRel, Ordering::Acquire)
                {
                    Ok(_) => break,
                    Err(actual) => s = actual,
                }
            }
        }
        self.hand_off();
    }

    /// Switches between fair (FIFO) and barging hand-off.
    pub(crate) fn set_fair(&self, fair: bool) {
        if fair {
            self.state.fetch_and(!UNFAIR, Ordering::AcqRel);
        } else {
            self.state.fetch_or(UNFAIR, Ordering::AcqRel);
        }
    }

    /// Grants free room to waiters in arrival order, waking them with the lock
    /// released.
    #[cold]
    fn hand_off(&self) {
        let mut wakes = WakeList::new();
        loop {
            let more = {
                let mut queue = self.queue.lock();
                self.grant_locked(&mut queue, &mut wakes)
            };
            wakes.wake_all();
            if !more {
                return;
            }
        }
    }

    /// Returns whether it stopped only because the wake list filled up.
    fn grant_locked(&self, queue: &mut VecDeque<Arc<Waiter>>, wakes: &mut WakeList) -> bool {
        let mut s = self.state.load(Ordering::Acquire);
        while !queue.is_empty() {
            if wakes.is_full() {
                return true;
            }
            if in_use(s) >= max(s) {
                break;
            }
            debug_assert!(
                s & WAITERS != 0,
                "the waiters flag is set whenever the queue is non-empty"
            );
            // The slot is taken on the waiter's behalf; the last waiter out
            // clears the flag in the same step.
            let mut next = s + 1;
            if queue.len() == 1 {
                next &= !WAITERS;
            }
            match self
                .state
                .compare_exchange(s, next, Ordering::AcqRel, Ordering::Acquire)
            {
                Ok(_) => s = next,
                Err(actual) => {
                    s = actual;
                    continue;
                }
            }
            let waiter = queue.pop_front().expect("the queue is non-empty");
            waiter.granted.store(true, Ordering::Release);
            let wake = std::mem::replace(&mut *waiter.wake.lock(), Wake::Task(None));
            wakes.push(wake);
        }
        self.waiting.store(queue.len(), Ordering::Relaxed);
        false
    }

    /// `(in_use, max)` from one reading.
    #[inline]
    pub(crate) fn snapshot(&self) -> (u32, u32) {
        let s = self.state.load(Ordering::Acquire);
        (in_use(s), max(s))
    }

    /// Callers waiting for a slot right now.
    #[inline]
    pub(crate) fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }

    /// The first half of [`release`](Self::release) alone: the instant between
    /// a release's `fetch_sub` and its hand-off, when a newcomer may barge.
    #[cfg(test)]
    pub(crate) fn release_before_hand_off(&self) {
        self.state.fetch_sub(1, Ordering::Release);
    }

    /// The second half of a release that found waiters.
    #[cfg(test)]
    pub(crate) fn finish_hand_off(&self) {
        self.hand_off();
    }

    /// Whether the `WAITERS` flag is set (for invariant checks in tests).
    #[cfg(test)]
    pub(crate) fn has_waiters_flag(&self) -> bool {
        self.state.load(Ordering::Acquire) & WAITERS != 0
    }
}
