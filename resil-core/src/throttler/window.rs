//! The throttler's sliding window: `requests` and `accepts` per second for
//! the last `N` seconds, with running totals (subtract-on-evict), so a
//! decision reads two numbers, whatever the window's length.
//!
//! Both counts of one bucket (and of the totals) live in one `u64`: requests
//! in the low 32 bits, accepts in the high 32, so one call's outcome (one
//! request, accepted or not) is one `fetch_add` on its bucket and one on the
//! totals. A bucket holds at most `u32::MAX` requests a second.
//!
//! Moving to a new second takes the window's lock once per second (the first
//! call that sees it): the buckets that fell out are swapped to zero and
//! subtracted from the totals, so the totals always equal the sum of the
//! buckets once concurrent recorders are done. A window idle for longer than
//! `N` seconds advances at most `N` buckets.

use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

const NANOS_PER_SECOND: u64 = 1_000_000_000;
/// One accepted call, in a packed word.
pub(crate) const ACCEPT: u64 = 1 << 32;
/// One request, in a packed word.
pub(crate) const REQUEST: u64 = 1;

/// The requests and accepts a window (or a bucket) holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Counts {
    pub(crate) requests: u64,
    pub(crate) accepts: u64,
}

impl Counts {
    #[inline]
    fn unpack(word: u64) -> Counts {
        Counts {
            requests: word & u64::from(u32::MAX),
            accepts: word >> 32,
        }
    }
}

pub(crate) struct Window {
    /// Bucket `s % N` counts second `s` (packed counts).
    buckets: Box<[AtomicU64]>,
    totals: AtomicU64,
    /// The latest second the window has moved to.
    latest: AtomicU64,
    lock: Mutex<()>,
}

impl Window {
    pub(crate) fn new(seconds: u32, now_nanos: u64) -> Window {
        let now = now_nanos / NANOS_PER_SECOND;
        let n = u64::from(seconds.max(1));
        Window {
            buckets: (0..n).map(|_| AtomicU64::new(0)).collect(),
            totals: AtomicU64::new(0),
            latest: AtomicU64::new(now),
            lock: Mutex::new(()),
        }
    }

    #[inline]
    fn bucket(&self, second: u64) -> &AtomicU64 {
        &self.buckets[(second % self.buckets.len() as u64) as usize]
    }

    /// Adds `delta` (a packed [`REQUEST`] / [`ACCEPT`] sum) at `now_nanos`.
    #[inline]
    pub(crate) fn record(&self, now_nanos: u64, delta: u64) {
        let now = now_nanos / NANOS_PER_SECOND;
        if self.latest.load(Ordering::Acquire) < now {
            self.advance(now);
        }
        // A clock reading behind the window's latest second (another
        // thread's later reading moved it on) counts in the latest bucket.
        let second = now.max(self.latest.load(Ordering::Acquire));
        self.bucket(second).fetch_add(delta, Ordering::Relaxed);
        self.totals.fetch_add(delta, Ordering::Relaxed);
    }

    /// The window's totals at `now_nanos` (moving it on first if a second
    /// has passed).
    #[inline]
    pub(crate) fn totals(&self, now_nanos: u64) -> Counts {
        let now = now_nanos / NANOS_PER_SECOND;
        if self.latest.load(Ordering::Acquire) < now {
            self.advance(now);
        }
        Counts::unpack(self.totals.load(Ordering::Relaxed))
    }

    /// Moves the window to second `now`, evicting what fell out.
    #[cold]
    #[inline(never)]
    fn advance(&self, now: u64) {
        let _guard = self.lock.lock();
        let latest = self.latest.load(Ordering::Acquire);
        if latest >= now {
            return;
        }
        let n = self.buckets.len() as u64;
        let from = latest.saturating_add(1).max(now.saturating_sub(n - 1));
        for second in from..=now {
            let old = self.bucket(second).swap(0, Ordering::Relaxed);
            self.totals.fetch_sub(old, Ordering::Relaxed);
        }
        self.latest.store(now, Ordering::Release);
    }

    /// Empties every bucket (a reset), keeping the window's position.
    pub(crate) fn reset(&self) {
        let _guard = self.lock.lock();
        for b in self.buckets.iter() {
            let old = b.swap(0, Ordering::Relaxed);
            self.totals.fetch_sub(old, Ordering::Relaxed);
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.buckets)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = NANOS_PER_SECOND;

    #[test]
    fn the_totals_keep_the_last_n_seconds_and_evict_what_falls_out() {
        let w = Window::new(3, 0);
        w.record(0, REQUEST + ACCEPT);
        w.record(S, REQUEST);
        w.record(2 * S, REQUEST + ACCEPT);
        assert_eq!(
            w.totals(2 * S),
            Counts {
                requests: 3,
                accepts: 2
            }
        );
        // Second 0 falls out at second 3.
        assert_eq!(
            w.totals(3 * S),
            Counts {
                requests: 2,
                accepts: 1
            }
        );
        // Idle far beyond the window: empty, in at most three steps.
        assert_eq!(w.totals(1_000 * S), Counts::default());
        w.record(1_000 * S, REQUEST);
        assert_eq!(w.totals(1_000 * S).requests, 1);
    }

    #[test]
    fn a_late_reading_counts_in_the_latest_second_and_is_evicted_with_it() {
        let w = Window::new(2, 10 * S);
        w.record(11 * S, REQUEST);
        w.record(10 * S, REQUEST); // a reading taken before the move to 11
        assert_eq!(w.totals(11 * S).requests, 2);
        assert_eq!(w.totals(13 * S).requests, 0);
    }

    #[test]
    fn reset_empties_the_window() {
        let w = Window::new(5, 0);
        w.record(0, 7 * REQUEST + 3 * ACCEPT);
        w.reset();
        assert_eq!(w.totals(0), Counts::default());
    }
}
