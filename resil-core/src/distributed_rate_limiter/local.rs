//! The local fallback's own quota: the sliding buckets of `sliding.lua`,
//! kept in process memory, with the same reservations, so each instance
//! grants at most its share in any window of the period, in the order asked.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;

use crate::clock;

/// At most `share` permits in any window of `interval`, counted in buckets
/// of `width` (all in the clock's nanoseconds).
pub(crate) struct LocalWindow {
    /// Changed in place by a keyed family's tiers ([`set_share`](Self::set_share)).
    share: AtomicU64,
    interval: u64,
    width: u64,
    state: Mutex<State>,
}

struct State {
    /// `(bucket end, permits)`, oldest first; bucket ends never decrease.
    buckets: VecDeque<(u64, u64)>,
    /// The time of the latest grant or reservation: nobody is granted before it.
    latest: u64,
}

impl LocalWindow {
    pub(crate) fn new(share: u32, interval: Duration, buckets: u32) -> Self {
        let interval = clock::nanos(interval).max(1);
        LocalWindow {
            share: AtomicU64::new(u64::from(share.max(1))),
            interval,
            width: interval.div_ceil(u64::from(buckets.max(1))),
            state: Mutex::new(State {
                buckets: VecDeque::new(),
                latest: 0,
            }),
        }
    }

    /// The permits per window.
    pub(crate) fn share(&self) -> u32 {
        u32::try_from(self.share.load(Ordering::Relaxed)).unwrap_or(u32::MAX)
    }

    /// A new share for the windows from now on; what the window counts
    /// stays counted.
    pub(crate) fn set_share(&self, share: u32) {
        self.share.store(u64::from(share.max(1)), Ordering::Relaxed);
    }

    /// Whether no grant (or reservation) counts in a window at `now` or
    /// later.
    pub(crate) fn is_empty(&self, now: u64) -> bool {
        let state = self.state.lock();
        let horizon = now.saturating_sub(self.interval);
        state.latest <= now && state.buckets.iter().all(|&(end, _)| end <= horizon)
    }

    /// Takes `permits` at `now`, or reserves them at most `max_wait` ahead:
    /// the wait until they are the caller's (0: now), or `None` when they
    /// cannot be had within `max_wait` (or exceed the share). Zero permits
    /// ask for room for one and take none. With a `ceiling` (a request
    /// class below its threshold), they are taken only now, only while the
    /// window holds at most `ceiling` with them and nobody reserved ahead.
    pub(crate) fn take(
        &self,
        now: u64,
        permits: u32,
        max_wait: u64,
        ceiling: Option<u64>,
    ) -> Option<u64> {
        let need = u64::from(permits.max(1));
        let share = self.share.load(Ordering::Relaxed);
        if need > share {
            return None;
        }
        let (cap, max_wait) = match ceiling {
            Some(c) => (c.min(share), 0),
            None => (share, max_wait),
        };
        let mut state = self.state.lock();
        // A bucket counts while its end is after `t - interval` for a grant
        // at t; grants are never before `now`.
        let horizon = now.saturating_sub(self.interval);
        while state
            .buckets
            .front()
            .is_some_and(|&(end, _)| end <= horizon)
        {
            state.buckets.pop_front();
        }
        let used: u64 = state.buckets.iter().map(|&(_, n)| n).sum();
        if ceiling.is_some() && (state.latest > now || used + need > cap) {
            return None;
        }
        let from = now.max(state.latest);
        let mut at = from;
        if used + need > share {
            let mut excess = used + need - share;
            for &(end, n) in &state.buckets {
                if n >= excess {
                    at = from.max(end.saturating_add(self.interval));
                    break;
                }
                excess -= n;
            }
        }
        let wait = at - now;
        if wait > max_wait {
            return None;
        }
        if permits > 0 {
            let end = (at / self.width + 1) * self.width;
            match state.buckets.back_mut() {
                Some((last, n)) if *last == end => *n += u64::from(permits),
                _ => state.buckets.push_back((end, u64::from(permits))),
            }
        }
        state.latest = state.latest.max(at);
        Some(wait)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The most grants in any half-open window `[t, t + window)`.
    fn most_in_a_window(sorted: &[u64], window: u64) -> usize {
        let mut most = 0;
        let mut end = 0;
        for (start, &t) in sorted.iter().enumerate() {
            while end < sorted.len() && sorted[end] < t + window {
                end += 1;
            }
            most = most.max(end - start);
        }
        most
    }

    #[test]
    fn never_more_than_the_share_in_any_window_and_grants_in_order() {
        let ms = 1_000_000;
        for (share, buckets, step) in [(5, 4, 37 * ms), (12, 10, 3 * ms), (1, 1, 250 * ms)] {
            let w = LocalWindow::new(share, Duration::from_secs(1), buckets);
            let mut grants = Vec::new();
            let mut last = 0;
            let mut now = 0;
            while now < 5_000 * ms {
                // A mix of instant and waiting acquires of 1 or 2 permits.
                let permits = 1 + u32::from(now % (7 * ms) == 0 && share > 1);
                let max_wait = if now % (3 * ms) == 0 { 400 * ms } else { 0 };
                if let Some(wait) = w.take(now, permits, max_wait, None) {
                    assert!(wait <= max_wait);
                    let at = now + wait;
                    assert!(at >= last, "in order");
                    last = at;
                    for _ in 0..permits {
                        grants.push(at);
                    }
                }
                now += step / 4 + (now % 5) * ms;
            }
            grants.sort_unstable();
            let most = most_in_a_window(&grants, 1_000 * ms);
            assert!(most <= share as usize, "{most} > {share}");
            assert!(most == share as usize, "the share is reached: {most}");
        }
    }

    #[test]
    fn zero_permits_need_room_for_one_and_take_none() {
        let w = LocalWindow::new(2, Duration::from_secs(1), 10);
        assert_eq!(w.take(0, 0, 0, None), Some(0));
        assert_eq!(w.take(0, 2, 0, None), Some(0));
        assert_eq!(w.take(1, 0, 0, None), None);
        assert_eq!(w.take(1, 3, u64::MAX, None), None, "beyond the share");
    }

    #[test]
    fn a_class_ceiling_admits_only_now_and_only_up_to_it() {
        let ms = 1_000_000;
        let w = LocalWindow::new(4, Duration::from_secs(1), 10);
        // A ceiling of 2: two grants, then refused, even with time to wait.
        assert_eq!(w.take(0, 1, 0, Some(2)), Some(0));
        assert_eq!(w.take(0, 1, u64::MAX, Some(2)), Some(0));
        assert_eq!(w.take(0, 1, u64::MAX, Some(2)), None);
        // The whole share for a class without one.
        assert_eq!(w.take(0, 2, 0, None), Some(0));
        assert_eq!(w.take(0, 1, 0, None), None);
        // A reservation ahead refuses the class, even once room is back.
        assert_eq!(w.take(10 * ms, 1, 2_000 * ms, None), Some(1_090 * ms));
        assert_eq!(w.take(1_050 * ms, 1, u64::MAX, Some(4)), None);
        assert_eq!(w.take(1_050 * ms, 1, 100 * ms, None), Some(50 * ms));
        // Past the reservations, with room again: admitted.
        assert_eq!(w.take(1_500 * ms, 1, 0, Some(3)), Some(0));
    }
}
