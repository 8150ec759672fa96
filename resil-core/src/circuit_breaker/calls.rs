//! What a breaker counts since it was created: Resilience4j's call timers
//! (`resilience4j.circuitbreaker.calls`, tag `kind` = successful | failed |
//! ignored) and its not-permitted counter.
//!
//! The window ([`Metrics`](super::Metrics)) says what the breaker judges by
//! and is emptied by every transition; these totals only grow, so a
//! monitoring system can take their rate. Counts and summed durations are
//! striped per thread (a plain load and store on a line of the thread's own),
//! the largest duration decays as Micrometer's `TimeWindowMax` does, and the
//! percentile histogram is off until asked for
//! ([`CircuitBreaker::enable_call_histogram`](super::CircuitBreaker::enable_call_histogram)).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, OnceLock};
use std::time::Duration;

use crate::striped::Striped;

/// How long one step of the decaying maximum lasts: the published maximum is
/// the largest call of the current and the previous step, one to two minutes
/// (Micrometer keeps the largest of the last two minutes, in three steps).
const MAX_STEP_NANOS: u64 = 60_000_000_000;

/// The outcomes a breaker times, in the order of [`CallKind`].
const KINDS: usize = 3;

/// What a permitted call turned out to be, as the breaker's timers tag it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CallKind {
    /// Recorded as a success (`kind="successful"`).
    Successful,
    /// Recorded as a failure (`kind="failed"`).
    Failed,
    /// An error the breaker ignores (`kind="ignored"`).
    Ignored,
}

impl CallKind {
    /// All three, in the order they are published.
    pub const ALL: [CallKind; 3] = [CallKind::Successful, CallKind::Failed, CallKind::Ignored];

    /// The `kind` tag: `successful`, `failed`, `ignored`.
    pub const fn as_str(self) -> &'static str {
        match self {
            CallKind::Successful => "successful",
            CallKind::Failed => "failed",
            CallKind::Ignored => "ignored",
        }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

/// One thread's stripe: a count and a summed duration per kind, and the
/// refusals. Seven words: one cache line.
#[derive(Debug, Default)]
struct Cells {
    count: [AtomicU64; KINDS],
    nanos: [AtomicU64; KINDS],
    not_permitted: AtomicU64,
}

/// The totals a breaker keeps, shared by the breakers a reload builds from
/// it (see [`CircuitBreaker::reconfigured`](super::CircuitBreaker::reconfigured)),
/// so that they never go back.
#[derive(Debug, Default)]
pub(crate) struct Totals {
    cells: Striped<Cells>,
    max: WindowMax,
    histogram: OnceLock<Box<Histogram>>,
}

impl Totals {
    /// Records one permitted call of `kind` that took `elapsed` nanoseconds.
    #[inline]
    pub(crate) fn record(&self, kind: CallKind, elapsed: u64) {
        let i = kind.index();
        let mine = self.cells.mine();
        mine.increment(|c| &c.count[i]);
        mine.add(|c| &c.nanos[i], elapsed);
        self.max.record(i, elapsed);
        if let Some(histogram) = self.histogram.get() {
            histogram.record(i, elapsed);
        }
    }

    /// Counts one refusal.
    #[inline]
    pub(crate) fn not_permitted(&self) {
        self.cells.mine().increment(|c| &c.not_permitted);
    }

    pub(crate) fn enable_histogram(&self) {
        self.histogram.get_or_init(Box::default);
    }

    pub(crate) fn histogram_enabled(&self) -> bool {
        self.histogram.get().is_some()
    }

    /// A reading at `now` on the breaker's clock.
    pub(crate) fn read(&self, now: u64) -> CallTotals {
        let timer = |kind: CallKind| {
            let i = kind.index();
            let (mut count, mut nanos) = (0u64, 0u64);
            for c in self.cells.iter() {
                count = count.wrapping_add(c.count[i].load(Ordering::Relaxed));
                nanos = nanos.wrapping_add(c.nanos[i].load(Ordering::Relaxed));
            }
            CallTimer {
                count,
                total: Duration::from_nanos(nanos),
                max: Duration::from_nanos(self.max.read(i, now)),
                buckets: self.histogram.get().map(|h| h.cumulative(i)),
            }
        };
        CallTotals {
            successful: timer(CallKind::Successful),
            failed: timer(CallKind::Failed),
            ignored: timer(CallKind::Ignored),
            not_permitted: self
                .cells
                .iter()
                .map(|c| c.not_permitted.load(Ordering::Relaxed))
                .fold(0u64, u64::wrapping_add),
        }
    }
}

/// The largest duration per kind, decaying: the largest of the current step
/// and the previous one. Steps turn when the maximum is read (a scrape), as
/// Micrometer's `TimeWindowMax` turns them on reads too: a call's record is
/// then a load and a comparison, with no clock arithmetic. A call recorded
/// just before a late turn counts in the step that turned.
#[derive(Debug, Default)]
struct WindowMax {
    /// Where the current step ends (clock nanos, exclusive; 0 before the
    /// first read).
    until: AtomicU64,
    current: [AtomicU64; KINDS],
    previous: [AtomicU64; KINDS],
}

impl WindowMax {
    #[inline]
    fn record(&self, i: usize, elapsed: u64) {
        // Written only when a call is the largest yet: after the first calls
        // of a step, a load and a comparison.
        if elapsed > self.current[i].load(Ordering::Relaxed) {
            self.current[i].fetch_max(elapsed, Ordering::Relaxed);
        }
    }

    #[cold]
    fn rotate(&self, now: u64) {
        let seen = self.until.load(Ordering::Relaxed);
        // Steps only move forward: a reading taken before another reader's
        // turn must not turn them back.
        if now < seen {
            return;
        }
        let until = (now / MAX_STEP_NANOS)
            .saturating_add(1)
            .saturating_mul(MAX_STEP_NANOS);
        if self
            .until
            .compare_exchange(seen, until, Ordering::AcqRel, Ordering::Relaxed)
            .is_err()
        {
            return;
        }
        // The step just ended is the previous one only if it is adjacent.
        let adjacent = until == seen.saturating_add(MAX_STEP_NANOS);
        for i in 0..KINDS {
            let last = self.current[i].swap(0, Ordering::AcqRel);
            self.previous[i].store(if adjacent { last } else { 0 }, Ordering::Release);
        }
    }

    /// The maximum of kind `i` at `now`, turning the steps that ended.
    fn read(&self, i: usize, now: u64) -> u64 {
        if now >= self.until.load(Ordering::Acquire) {
            self.rotate(now);
        }
        self.current[i]
            .load(Ordering::Relaxed)
            .max(self.previous[i].load(Ordering::Relaxed))
    }
}

/// The bucket bounds of Micrometer's percentile histogram for timers, in
/// nanoseconds: of its precomputed bounds (1, 2, 3, then three steps
/// per power of four), those from 1 ms to 30 s inclusive, Micrometer's
/// default expected range for a timer, and the range's two ends. The last
/// bucket (`+Inf`) is implicit.
pub fn histogram_bounds() -> &'static [u64] {
    static BOUNDS: LazyLock<Vec<u64>> = LazyLock::new(|| {
        const MIN: u64 = 1_000_000;
        const MAX: u64 = 30_000_000_000;
        let mut all = vec![1u64, 2, 3];
        let mut exp = 2;
        while exp < 64 {
            let mut current = 1u64 << exp;
            let delta = current / 3;
            let next = (current << 2).wrapping_sub(delta);
            while current < next {
                all.push(current);
                current += delta;
            }
            exp += 2;
        }
        all.retain(|b| (MIN..=MAX).contains(b));
        // Micrometer adds the range's ends as bounds of their own.
        all.extend([MIN, MAX]);
        all.sort_unstable();
        all.dedup();
        all
    });
    &BOUNDS
}

/// Per-kind bucket counts (not cumulative), with one overflow bucket.
#[derive(Debug)]
struct Histogram {
    buckets: [Box<[AtomicU64]>; KINDS],
}

impl Default for Histogram {
    fn default() -> Histogram {
        let n = histogram_bounds().len() + 1;
        Histogram {
            buckets: std::array::from_fn(|_| (0..n).map(|_| AtomicU64::new(0)).collect()),
        }
    }
}

impl Histogram {
    #[inline]
    fn record(&self, i: usize, elapsed: u64) {
        let bucket = histogram_bounds().partition_point(|&b| b < elapsed);
        self.buckets[i][bucket].fetch_add(1, Ordering::Relaxed);
    }

    /// `(upper bound, calls at or under it)` for every bound, cumulative as
    /// Prometheus' `le` buckets are (the `+Inf` bucket is the timer's count).
    fn cumulative(&self, i: usize) -> Vec<(Duration, u64)> {
        let mut sum = 0;
        histogram_bounds()
            .iter()
            .zip(self.buckets[i].iter())
            .map(|(&bound, count)| {
                sum += count.load(Ordering::Relaxed);
                (Duration::from_nanos(bound), sum)
            })
            .collect()
    }
}

/// One timer's reading: how many calls, their summed and largest duration,
/// and, when the histogram is on, the cumulative bucket counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallTimer {
    count: u64,
    total: Duration,
    max: Duration,
    buckets: Option<Vec<(Duration, u64)>>,
}

impl CallTimer {
    /// Calls recorded since the breaker was created (Prometheus `_count`).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// Their summed duration (Prometheus `_sum`).
    pub fn total(&self) -> Duration {
        self.total
    }

    /// The longest of them in the last one to two minutes (Prometheus
    /// `_max`; zero when none was recorded in that time).
    pub fn max(&self) -> Duration {
        self.max
    }

    /// With the histogram on, `(upper bound, calls at or under it)` for each
    /// of [`histogram_bounds`], cumulative (Prometheus `_bucket{le}`; the
    /// `+Inf` bucket is [`count`](Self::count)).
    pub fn buckets(&self) -> Option<&[(Duration, u64)]> {
        self.buckets.as_deref()
    }
}

/// Everything a breaker counted since it was created (and across the
/// reloads that rebuilt it): the call timers by kind and the refusals.
///
/// Unlike [`Metrics`](super::Metrics), nothing here is reset by a
/// transition. Permitted calls in DISABLED are not recorded (the breaker
/// records nothing in DISABLED, as Resilience4j's disabled state publishes
/// no event), nor are calls whose permit was dropped unrecorded (a
/// cancelled future, a panic): they had no outcome.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CallTotals {
    successful: CallTimer,
    failed: CallTimer,
    ignored: CallTimer,
    not_permitted: u64,
}

impl CallTotals {
    /// The timer of one kind.
    pub fn timer(&self, kind: CallKind) -> &CallTimer {
        match kind {
            CallKind::Successful => &self.successful,
            CallKind::Failed => &self.failed,
            CallKind::Ignored => &self.ignored,
        }
    }

    /// Calls refused since the breaker was created
    /// (`resilience4j_circuitbreaker_not_permitted_calls_total`).
    pub fn not_permitted(&self) -> u64 {
        self.not_permitted
    }

    /// Every call the breaker was asked to make: permitted (of every kind)
    /// and refused.
    pub fn calls(&self) -> u64 {
        self.successful.count + self.failed.count + self.ignored.count + self.not_permitted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_histogram_bounds_are_micrometers_between_one_millisecond_and_thirty_seconds() {
        let b = histogram_bounds();
        assert_eq!(b.first(), Some(&1_000_000));
        assert_eq!(
            b[1], 1_048_576,
            "4^10, the first precomputed bound above 1 ms"
        );
        assert_eq!(b.last(), Some(&30_000_000_000));
        assert!(b.windows(2).all(|w| w[0] < w[1]));
        // Micrometer's timers publish 68 bounded buckets in that range (plus +Inf).
        assert_eq!(b.len(), 68, "{b:?}");
    }

    #[test]
    fn the_max_decays_after_two_steps_read_by_read() {
        let t = Totals::default();
        assert_eq!(t.read(0).failed.max, Duration::ZERO);
        t.record(CallKind::Failed, 500);
        assert_eq!(t.read(2_000).failed.max, Duration::from_nanos(500));
        // One step later the previous step's maximum is still shown.
        let next = MAX_STEP_NANOS + 10;
        assert_eq!(t.read(next).failed.max, Duration::from_nanos(500));
        t.record(CallKind::Failed, 100);
        assert_eq!(t.read(next).failed.max, Duration::from_nanos(500));
        // Two steps later only calls of the last two steps count.
        let later = 2 * MAX_STEP_NANOS + 10;
        assert_eq!(t.read(later).failed.max, Duration::from_nanos(100));
        // A read after a gap of more than a step forgets everything.
        assert_eq!(t.read(5 * MAX_STEP_NANOS).failed.max, Duration::ZERO);
        assert_eq!(t.read(later).failed.count, 2);
        assert_eq!(t.read(later).failed.total, Duration::from_nanos(600));
        // A reading from before the last turn does not turn back.
        assert_eq!(t.read(10).failed.max, Duration::ZERO);
    }

    #[test]
    fn histogram_buckets_are_cumulative_and_end_at_the_count() {
        let t = Totals::default();
        t.enable_histogram();
        for ms in [1, 2, 5, 40_000] {
            t.record(CallKind::Successful, ms * 1_000_000);
        }
        let r = t.read(0);
        let buckets = r.successful.buckets().unwrap();
        assert_eq!(buckets[0], (Duration::from_millis(1), 1));
        assert_eq!(buckets[1].1, 1);
        assert_eq!(buckets.last().unwrap().1, 3, "40 s is above every bound");
        assert_eq!(r.successful.count(), 4);
        assert!(buckets.windows(2).all(|w| w[0].1 <= w[1].1));
    }
}
