//! The limit estimator behind the adaptive bulkhead: Netflix
//! concurrency-limits' `VegasLimit`, with its default functions.
//!
//! TCP Vegas' idea applied to a call's round trip: with `rtt_noload` the
//! smallest latency seen (the downstream's service time with no queue), a
//! sample of latency `rtt` at limit `L` means about
//! `queue = ceil(L × (1 − rtt_noload / rtt))` calls were waiting in some queue
//! downstream. With `f(L) = max(1, floor(log10 L))`:
//!
//! * `queue <= f(L)`: no queueing, grow fast: `L + 6·f(L)`;
//! * `queue < 3·f(L)`: little queueing, grow: `L + f(L)`;
//! * `queue > 6·f(L)`: queueing shows, shrink: `L − f(L)`;
//! * otherwise keep `L`.
//!
//! These four rules apply only to a sample taken while **at least half the
//! limit** was in flight. A sample with fewer in flight changes nothing, in
//! either direction (Vegas' *app-limited* rule, as in concurrency-limits'
//! `VegasLimit` and `Gradient2Limit`): the limit was not what bounded the
//! traffic, so shrinking it would not relieve the downstream now, and the
//! latency says nothing about the limit.
//!
//! A *drop* (the call timed out) **always** shrinks by `f(L)`: in the first
//! window too, whatever was in flight, and its latency never becomes
//! `rtt_noload` (it measures the timeout, not the downstream). Here resil
//! departs from `VegasLimit`, which takes any new minimum (the first
//! sample, a probe) as the baseline before looking at the drop, so a first
//! window that timed out at 800 ms would leave the limit unchanged and the
//! baseline at 800 ms. The new value is smoothed, `(1 − s)·L + s·new`, and
//! kept within `min_limit..=max_limit`.
//!
//! A downstream that becomes slower for good would leave `rtt_noload` too low
//! for ever, so every `jitter × probe_multiplier × L` samples (jitter drawn in
//! `[0.5, 1)`) the current sample's latency is taken as the new `rtt_noload`
//! (a *probe*), and smaller ones pull it down again.

/// `max(1, floor(log10(limit)))`: Netflix's `Log10RootIntFunction`.
#[inline]
pub(crate) fn log10_root(limit: u32) -> u32 {
    limit.checked_ilog10().unwrap_or(0).max(1)
}

/// The estimator's state; updated under the adaptive bulkhead's lock.
#[derive(Debug)]
pub(crate) struct Vegas {
    estimated: f64,
    /// The smallest latency seen since the last probe, in nanoseconds; 0
    /// until the first sample.
    rtt_noload: u64,
    probe_count: u64,
    probe_jitter: f64,
    rng: fastrand::Rng,
    min: u32,
    max: u32,
    smoothing: f64,
    probe_multiplier: u32,
}

impl Vegas {
    pub(crate) fn new(
        initial: u32,
        min: u32,
        max: u32,
        smoothing: f64,
        probe_multiplier: u32,
        seed: u64,
    ) -> Self {
        let mut rng = fastrand::Rng::with_seed(seed);
        let probe_jitter = 0.5 + rng.f64() * 0.5;
        Vegas {
            estimated: f64::from(initial),
            rtt_noload: 0,
            probe_count: 0,
            probe_jitter,
            rng,
            min,
            max,
            smoothing,
            probe_multiplier,
        }
    }

    /// The limit in force (the estimate's integer part).
    #[inline]
    pub(crate) fn limit(&self) -> u32 {
        self.estimated as u32
    }

    /// The no-load latency the estimate is measured against (nanoseconds).
    #[inline]
    pub(crate) fn rtt_noload(&self) -> u64 {
        self.rtt_noload
    }

    /// One call's latency (`rtt` nanoseconds), the calls in flight when it
    /// started (itself included), and whether it was dropped (timed out).
    /// Returns the limit in force afterwards.
    pub(crate) fn sample(&mut self, rtt: u64, inflight: u32, dropped: bool) -> u32 {
        let rtt = rtt.max(1);
        self.probe_count += 1;
        if dropped {
            // Before the baseline and the probe: a timeout always shrinks,
            // and its latency is the timeout's, never the no-load latency.
            let current = self.estimated;
            self.settle(current, current - f64::from(log10_root(current as u32)));
            return self.limit();
        }
        let probe_at = self.probe_jitter * f64::from(self.probe_multiplier) * self.estimated;
        if probe_at <= self.probe_count as f64 {
            self.probe_jitter = 0.5 + self.rng.f64() * 0.5;
            self.probe_count = 0;
            self.rtt_noload = rtt;
            return self.limit();
        }
        if self.rtt_noload == 0 || rtt < self.rtt_noload {
            self.rtt_noload = rtt;
            return self.limit();
        }
        self.update(rtt, inflight, dropped);
        self.limit()
    }

    fn update(&mut self, rtt: u64, inflight: u32, dropped: bool) {
        debug_assert!(!dropped, "a drop is handled before the baseline");
        let current = self.estimated;
        let whole = current as u32;
        let queue = (current * (1.0 - self.rtt_noload as f64 / rtt as f64)).ceil();
        let step = f64::from(log10_root(whole));
        let next = if f64::from(inflight) * 2.0 < current {
            // App-limited: neither grows nor shrinks (see the module docs).
            return;
        } else {
            let (alpha, beta, threshold) = (3.0 * step, 6.0 * step, step);
            if queue <= threshold {
                current + beta
            } else if queue < alpha {
                current + step
            } else if queue > beta {
                current - step
            } else {
                return;
            }
        };
        self.settle(current, next);
    }

    /// Moves the estimate from `current` towards `next`, smoothed and kept
    /// within the bounds.
    fn settle(&mut self, current: f64, next: f64) {
        let next = next.clamp(f64::from(self.min), f64::from(self.max));
        self.estimated = (1.0 - self.smoothing) * current + self.smoothing * next;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    fn vegas(initial: u32, max: u32) -> Vegas {
        Vegas::new(initial, 1, max, 1.0, 30, 7)
    }

    #[test]
    fn log10_root_is_at_least_one() {
        assert_eq!(
            [0, 1, 9, 10, 99, 100, 999, 1000, 10_000].map(log10_root),
            [1, 1, 1, 1, 1, 2, 2, 3, 4]
        );
    }

    // The four cases below carry over the facts of concurrency-limits'
    // `VegasLimitTest` (same inputs, same expected limits).

    #[test]
    fn no_queueing_grows_the_limit_by_beta() {
        let mut v = vegas(10, 20);
        assert_eq!(
            v.sample(10 * MS, 10, false),
            10,
            "the first sample sets rtt_noload"
        );
        assert_eq!(v.sample(10 * MS, 11, false), 16);
    }

    #[test]
    fn a_large_limit_grows_by_six_log10_of_itself() {
        let mut v = vegas(10_000, 20_000);
        assert_eq!(v.sample(10_000 * MS, 5000, false), 10_000);
        assert_eq!(v.sample(10_000 * MS, 6000, false), 10_024);
    }

    #[test]
    fn queueing_shrinks_the_limit() {
        let mut v = vegas(10, 20);
        v.sample(10 * MS, 10, false);
        assert_eq!(v.sample(50 * MS, 11, false), 9);
    }

    #[test]
    fn a_queue_between_alpha_and_beta_keeps_the_limit() {
        let mut v = vegas(10, 20);
        v.sample(10 * MS, 10, false);
        assert_eq!(v.sample(14 * MS, 14, false), 10);
    }

    #[test]
    fn a_drop_shrinks_even_without_queueing_and_little_traffic_never_grows() {
        let mut v = vegas(10, 20);
        v.sample(10 * MS, 10, false);
        assert_eq!(v.sample(10 * MS, 2, true), 9);
        assert_eq!(
            v.sample(10 * MS, 2, false),
            9,
            "2 in flight of 9: app-limited"
        );
    }

    // Issue 30, item 6: the two promises checked from outside.

    #[test]
    fn a_queue_above_six_f_with_fewer_than_half_in_flight_changes_nothing() {
        // A limit of 46, 20 calls in flight (fewer than 23), latency 10×
        // the minimum: app-limited, the limit stays (Vegas' rule).
        let mut v = vegas(46, 100);
        v.sample(10 * MS, 46, false);
        for _ in 0..12 {
            assert_eq!(v.sample(100 * MS, 20, false), 46);
        }
        // With half the limit in flight the same latency shrinks it by f.
        assert_eq!(v.sample(100 * MS, 23, false), 45);
    }

    #[test]
    fn a_timeout_in_the_first_window_shrinks_and_is_not_the_baseline() {
        let mut v = vegas(46, 100);
        assert_eq!(v.sample(800 * MS, 1, true), 45);
        assert_eq!(v.rtt_noload(), 0, "a timeout measures the timeout");
        // The first completed call sets the baseline, as before.
        assert_eq!(v.sample(10 * MS, 46, false), 45);
        assert_eq!(v.rtt_noload(), 10 * MS);
        // And a later drop shrinks whatever is in flight.
        assert_eq!(v.sample(10 * MS, 1, true), 44);
    }

    #[test]
    fn the_limit_stays_within_min_and_max_and_smoothing_slows_it() {
        let mut v = Vegas::new(10, 8, 12, 1.0, 30, 7);
        v.sample(10 * MS, 10, false);
        assert_eq!(v.sample(10 * MS, 10, false), 12, "10 + 6, capped at 12");
        for _ in 0..10 {
            v.sample(100 * MS, 12, false);
        }
        assert_eq!(v.limit(), 8, "shrinks one at a time down to min");

        let mut s = Vegas::new(100, 1, 200, 0.5, 30, 7);
        s.sample(10 * MS, 100, false);
        // 100 − log10(100) = 98, halfway: 99.
        assert_eq!(s.sample(20 * MS, 100, false), 99);
    }

    #[test]
    fn a_probe_resets_rtt_noload_so_a_slower_downstream_is_learnt() {
        let mut v = vegas(10, 20);
        v.sample(10 * MS, 10, false);
        // The downstream is now 40 ms at best: after at most 30 × 10 samples
        // a probe takes 40 ms as the new no-load latency.
        for _ in 0..300 {
            v.sample(40 * MS, 10, false);
        }
        assert_eq!(v.rtt_noload(), 40 * MS);
    }
}
