//! The count and time sliding windows: pre-aggregated totals, subtract-on-evict,
//! O(1) snapshots.
//!
//! * The **count window** keeps the last `N` outcomes in a ring of one byte each
//!   (failed / slow / present bits) plus the running totals. Recording adds the new
//!   outcome and subtracts the one it overwrites.
//! * The **time window** keeps one bucket per second for the last `N` seconds.
//!   Moving to a new second evicts (subtracts) the buckets that fell out; a window
//!   idle for longer than `N` seconds advances at most `N` buckets. Memory depends
//!   on `N`, never on the call rate.

/// Running totals of a window (or of one time bucket, widened).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Aggregate {
    pub(crate) calls: u64,
    pub(crate) failed: u64,
    pub(crate) slow: u64,
    pub(crate) slow_failed: u64,
}

/// One recorded outcome, as stored in a ring slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Measurement(u8);

const PRESENT: u8 = 1;
const FAILED: u8 = 2;
const SLOW: u8 = 4;

impl Measurement {
    #[inline]
    pub(crate) const fn new(failed: bool, slow: bool) -> Self {
        Measurement(PRESENT | if failed { FAILED } else { 0 } | if slow { SLOW } else { 0 })
    }

    #[inline]
    fn failed(self) -> bool {
        self.0 & FAILED != 0
    }

    #[inline]
    fn slow(self) -> bool {
        self.0 & SLOW != 0
    }
}

impl Aggregate {
    #[inline]
    fn add(&mut self, m: Measurement) {
        self.calls += 1;
        self.failed += u64::from(m.failed());
        self.slow += u64::from(m.slow());
        self.slow_failed += u64::from(m.failed() && m.slow());
    }
}

/// The last `size` outcomes (at most 2^24, so the totals fit in `u32`).
#[derive(Debug, Clone)]
pub(crate) struct CountWindow {
    ring: Box<[u8]>,
    head: u32,
    calls: u32,
    failed: u32,
    slow: u32,
    slow_failed: u32,
}

impl CountWindow {
    pub(crate) fn new(size: u32) -> Self {
        CountWindow {
            ring: vec![0; size as usize].into_boxed_slice(),
            head: 0,
            calls: 0,
            failed: 0,
            slow: 0,
            slow_failed: 0,
        }
    }

    #[inline]
    pub(crate) fn record(&mut self, m: Measurement) {
        let slot = &mut self.ring[self.head as usize];
        let old = Measurement(*slot);
        if old.0 & PRESENT != 0 {
            debug_assert!(
                self.calls > 0,
                "an evicted measurement was counted in the totals"
            );
            self.calls -= 1;
            self.failed -= u32::from(old.failed());
            self.slow -= u32::from(old.slow());
            self.slow_failed -= u32::from(old.failed() && old.slow());
        }
        *slot = m.0;
        self.calls += 1;
        self.failed += u32::from(m.failed());
        self.slow += u32::from(m.slow());
        self.slow_failed += u32::from(m.failed() && m.slow());
        self.head += 1;
        if self.head as usize == self.ring.len() {
            self.head = 0;
        }
    }

    #[inline]
    pub(crate) fn total(&self) -> Aggregate {
        Aggregate {
            calls: u64::from(self.calls),
            failed: u64::from(self.failed),
            slow: u64::from(self.slow),
            slow_failed: u64::from(self.slow_failed),
        }
    }

    /// Full, and every entry a fast success: recording another fast success
    /// would change neither the totals nor the ring's content.
    #[inline]
    pub(crate) fn is_saturated_clean(&self) -> bool {
        self.calls as usize == self.ring.len() && self.failed == 0 && self.slow == 0
    }

    pub(crate) fn reset(&mut self) {
        self.ring.fill(0);
        self.head = 0;
        self.calls = 0;
        self.failed = 0;
        self.slow = 0;
        self.slow_failed = 0;
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.ring.len()
    }
}

/// One second's outcomes.
#[derive(Debug, Clone, Copy, Default)]
struct Bucket {
    second: u64,
    calls: u32,
    failed: u32,
    slow: u32,
    slow_failed: u32,
}

/// The outcomes of the last `size` seconds, one bucket per second.
#[derive(Debug, Clone)]
pub(crate) struct TimeWindow {
    buckets: Box<[Bucket]>,
    head: usize,
    total: Aggregate,
}

const NANOS_PER_SECOND: u64 = 1_000_000_000;

impl TimeWindow {
    pub(crate) fn new(seconds: u32, now_nanos: u64) -> Self {
        let mut window = TimeWindow {
            buckets: vec![Bucket::default(); seconds as usize].into_boxed_slice(),
            head: 0,
            total: Aggregate::default(),
        };
        window.reset(now_nanos);
        window
    }

    /// Moves the head to the current second, evicting at most `size` buckets.
    fn advance(&mut self, now_nanos: u64) {
        let now = now_nanos / NANOS_PER_SECOND;
        let head_second = self.buckets[self.head].second;
        if now <= head_second {
            return;
        }
        let len = self.buckets.len() as u64;
        let steps = (now - head_second).min(len);
        for step in 1..=steps {
            self.head += 1;
            if self.head == self.buckets.len() {
                self.head = 0;
            }
            let old = self.buckets[self.head];
            self.total.calls -= u64::from(old.calls);
            self.total.failed -= u64::from(old.failed);
            self.total.slow -= u64::from(old.slow);
            self.total.slow_failed -= u64::from(old.slow_failed);
            self.buckets[self.head] = Bucket {
                second: now - steps + step,
                ..Bucket::default()
            };
        }
    }

    pub(crate) fn record(&mut self, now_nanos: u64, m: Measurement) {
        self.advance(now_nanos);
        let b = &mut self.buckets[self.head];
        if b.calls == u32::MAX {
            // Four billion calls in one second: the bucket is full, and the
            // totals stay equal to the sum of the buckets.
            return;
        }
        b.calls += 1;
        b.failed += u32::from(m.failed());
        b.slow += u32::from(m.slow());
        b.slow_failed += u32::from(m.failed() && m.slow());
        self.total.add(m);
    }

    pub(crate) fn total(&mut self, now_nanos: u64) -> Aggregate {
        self.advance(now_nanos);
        self.total
    }

    pub(crate) fn reset(&mut self, now_nanos: u64) {
        self.buckets.fill(Bucket::default());
        self.head = 0;
        self.buckets[0].second = now_nanos / NANOS_PER_SECOND;
        self.total = Aggregate::default();
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.buckets)
    }
}

/// The sliding window a configuration asks for.
#[derive(Debug, Clone)]
pub(crate) enum Window {
    Count(CountWindow),
    Time(TimeWindow),
}

impl Window {
    pub(crate) fn record(&mut self, now_nanos: u64, m: Measurement) {
        match self {
            Window::Count(w) => w.record(m),
            Window::Time(w) => w.record(now_nanos, m),
        }
    }

    pub(crate) fn total(&mut self, now_nanos: u64) -> Aggregate {
        match self {
            Window::Count(w) => w.total(),
            Window::Time(w) => w.total(now_nanos),
        }
    }

    /// See [`CountWindow::is_saturated_clean`]; a time window never is (its
    /// buckets change with every call).
    pub(crate) fn is_saturated_clean(&self) -> bool {
        match self {
            Window::Count(w) => w.is_saturated_clean(),
            Window::Time(_) => false,
        }
    }

    pub(crate) fn reset(&mut self, now_nanos: u64) {
        match self {
            Window::Count(w) => w.reset(),
            Window::Time(w) => w.reset(now_nanos),
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        match self {
            Window::Count(w) => w.heap_bytes(),
            Window::Time(w) => w.heap_bytes(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const S: u64 = NANOS_PER_SECOND;

    fn model_total(outcomes: &[(bool, bool)]) -> Aggregate {
        let mut a = Aggregate::default();
        for &(failed, slow) in outcomes {
            a.add(Measurement::new(failed, slow));
        }
        a
    }

    proptest! {
        #[test]
        fn the_count_window_always_equals_the_last_n_outcomes_of_a_vec_model(
            size in 1u32..12,
            outcomes in proptest::collection::vec((any::<bool>(), any::<bool>()), 0..60),
        ) {
            let mut window = CountWindow::new(size);
            let mut model: Vec<(bool, bool)> = Vec::new();
            for &(failed, slow) in &outcomes {
                window.record(Measurement::new(failed, slow));
                model.push((failed, slow));
                let last = &model[model.len().saturating_sub(size as usize)..];
                prop_assert_eq!(window.total(), model_total(last));
                prop_assert_eq!(
                    window.is_saturated_clean(),
                    last.len() == size as usize && last.iter().all(|&(f, s)| !f && !s)
                );
            }
        }

        #[test]
        fn the_time_window_always_equals_the_outcomes_of_the_last_n_seconds(
            size in 1u32..6,
            steps in proptest::collection::vec((0u64..4, any::<bool>(), any::<bool>()), 0..60),
        ) {
            let mut now = 5 * S;
            let mut window = TimeWindow::new(size, now);
            let mut model: Vec<(u64, bool, bool)> = Vec::new();
            for &(advance_secs, failed, slow) in &steps {
                now += advance_secs * S + 1;
                window.record(now, Measurement::new(failed, slow));
                model.push((now / S, failed, slow));
                let current = now / S;
                let recent: Vec<_> = model
                    .iter()
                    .filter(|(sec, _, _)| sec + u64::from(size) > current)
                    .map(|&(_, f, s)| (f, s))
                    .collect();
                prop_assert_eq!(window.total(now), model_total(&recent));
            }
        }
    }

    #[test]
    fn a_count_window_evicts_the_oldest_outcome_first() {
        let mut w = CountWindow::new(3);
        w.record(Measurement::new(true, false));
        w.record(Measurement::new(false, true));
        w.record(Measurement::new(false, false));
        assert_eq!(
            w.total(),
            Aggregate {
                calls: 3,
                failed: 1,
                slow: 1,
                slow_failed: 0
            }
        );
        w.record(Measurement::new(false, false));
        assert_eq!(
            w.total().failed,
            0,
            "the failure was the oldest and left first"
        );
        assert_eq!(w.total().calls, 3);
    }

    #[test]
    fn a_time_window_forgets_everything_after_a_long_idle_period_in_at_most_n_steps() {
        let mut w = TimeWindow::new(10, 0);
        for s in 0..10 {
            w.record(s * S, Measurement::new(true, false));
        }
        assert_eq!(w.total(9 * S).calls, 10);
        assert_eq!(w.total(14 * S).calls, 5, "seconds 0..=4 evicted");
        assert_eq!(w.total(u64::MAX).calls, 0);
        w.record(u64::MAX, Measurement::new(false, false));
        assert_eq!(w.total(u64::MAX).calls, 1);
    }

    #[test]
    fn time_window_memory_depends_on_its_seconds_not_on_the_call_rate() {
        let mut w = TimeWindow::new(60, 0);
        let before = w.heap_bytes();
        for i in 0..100_000 {
            w.record(i * 1000, Measurement::new(i % 2 == 0, false));
        }
        assert_eq!(w.heap_bytes(), before);
        assert_eq!(w.total(100_000_000).calls, 100_000);
    }
}
