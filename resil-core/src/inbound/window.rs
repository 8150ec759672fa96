//! The sliding window of requests admitted and completed (Sentinel's
//! `LeapArray` with a `MetricBucket` of pass, success, RT and min RT).
//!
//! # Cost
//!
//! A request finds its bucket through a hint (the bucket the newest reading
//! used) and one range check of that bucket's start: no division on the
//! path a request takes, only when a new stretch of time begins. A
//! completion is one `fetch_add` (its count and its response time packed
//! in one word, see [`DONE_RT_BITS`]) and a load (the minimum is written
//! only when it falls).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use parking_lot::Mutex;

/// A bucket's start before any stretch took it.
const EMPTY: u64 = u64::MAX;

/// A bucket's completions and their response times share one word, so a
/// completion is one `fetch_add`: the count in the high 24 bits (16.7
/// million completions per bucket), the sum of response times in whole
/// microseconds in the low 40 (12.7 days of response time per bucket; a
/// single response time is capped at a tenth of that, so no sum a bucket
/// can hold carries into the count).
const DONE_RT_BITS: u32 = 40;
const DONE_RT_MASK: u64 = (1 << DONE_RT_BITS) - 1;
const MAX_RT_MICROS: u64 = DONE_RT_MASK / 10;

/// One bucket: what happened in one `bucket`-long stretch of time.
#[derive(Debug)]
struct Bucket {
    /// Where the stretch the counts belong to starts (a multiple of the
    /// bucket's length, in the clock's nanoseconds), `EMPTY` before any.
    start: AtomicU64,
    passed: AtomicU64,
    /// Completions and their response times (see [`DONE_RT_BITS`]).
    done: AtomicU64,
    min_rt: AtomicU64,
}

impl Bucket {
    fn new() -> Self {
        Bucket {
            start: AtomicU64::new(EMPTY),
            passed: AtomicU64::new(0),
            done: AtomicU64::new(0),
            min_rt: AtomicU64::new(u64::MAX),
        }
    }

    /// Whether reading `now` falls in this bucket's stretch.
    #[inline]
    fn holds(&self, now: u64, bucket: u64) -> bool {
        let start = self.start.load(Ordering::Acquire);
        start != EMPTY && now >= start && now - start < bucket
    }
}

/// What the window holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Totals {
    pub(crate) passed: u64,
    pub(crate) completed: u64,
    /// The sum of response times, in nanoseconds, each counted in whole
    /// microseconds.
    pub(crate) rt_sum: u64,
    /// The smallest response time, `u64::MAX` when nothing completed.
    pub(crate) min_rt: u64,
    /// The most completions in one bucket.
    pub(crate) max_completed: u64,
}

/// `buckets` buckets of `bucket` nanoseconds each.
#[derive(Debug)]
pub(crate) struct Window {
    buckets: Box<[Bucket]>,
    bucket: u64,
    /// The index of the bucket the newest stretch took: where a request
    /// looks first.
    hint: AtomicUsize,
    /// Held to reset a bucket that a new stretch of time takes over, and to
    /// read [`passed_total`](Self::passed_total).
    reset: Mutex<Retired>,
}

/// What the window's buckets counted before a new stretch reset them.
#[derive(Debug, Default)]
struct Retired {
    passed: u64,
}

impl Window {
    pub(crate) fn new(buckets: u32, bucket: u64) -> Self {
        Window {
            buckets: (0..buckets.max(1)).map(|_| Bucket::new()).collect(),
            bucket: bucket.max(1),
            hint: AtomicUsize::new(0),
            reset: Mutex::new(Retired::default()),
        }
    }

    /// The bucket of reading `now`, reset first if it held an older stretch.
    #[inline]
    fn current(&self, now: u64) -> &Bucket {
        let hint = self.hint.load(Ordering::Relaxed);
        match self.buckets.get(hint) {
            Some(b) if b.holds(now, self.bucket) => b,
            _ => self.find(now),
        }
    }

    /// The bucket of `now` found by division, taken over by its stretch if
    /// it held an older one; the hint moves to it.
    #[cold]
    fn find(&self, now: u64) -> &Bucket {
        let epoch = now / self.bucket;
        let index = (epoch % self.buckets.len() as u64) as usize;
        let b = &self.buckets[index];
        let start = epoch * self.bucket;
        if b.start.load(Ordering::Acquire) != start {
            self.rotate(b, start);
        }
        // A thread with an older reading may point the hint back at an
        // older bucket: the next request then finds by division again.
        self.hint.store(index, Ordering::Relaxed);
        b
    }

    #[cold]
    fn rotate(&self, b: &Bucket, start: u64) {
        let mut retired = self.reset.lock();
        let held = b.start.load(Ordering::Acquire);
        // A later stretch already took it (a reading older than another
        // thread's): count into it rather than erase newer counts.
        if held != EMPTY && held >= start {
            return;
        }
        // `swap`, so that a pass racing with the reset is counted once:
        // in the retired total or in the new stretch.
        retired.passed += b.passed.swap(0, Ordering::Relaxed);
        b.done.store(0, Ordering::Relaxed);
        b.min_rt.store(u64::MAX, Ordering::Relaxed);
        b.start.store(start, Ordering::Release);
    }

    /// A request was admitted at `now`.
    #[inline]
    pub(crate) fn pass(&self, now: u64) {
        self.current(now).passed.fetch_add(1, Ordering::Relaxed);
    }

    /// A request completed at `now` after `rt` nanoseconds.
    #[inline]
    pub(crate) fn complete(&self, now: u64, rt: u64) {
        let b = self.current(now);
        let micros = (rt / 1_000).min(MAX_RT_MICROS);
        b.done
            .fetch_add(1 << DONE_RT_BITS | micros, Ordering::Relaxed);
        if rt < b.min_rt.load(Ordering::Relaxed) {
            b.min_rt.fetch_min(rt, Ordering::Relaxed);
        }
    }

    /// Every pass counted since the window was made (the retired buckets'
    /// and those still held).
    pub(crate) fn passed_total(&self) -> u64 {
        let retired = self.reset.lock();
        retired.passed
            + self
                .buckets
                .iter()
                .map(|b| b.passed.load(Ordering::Relaxed))
                .sum::<u64>()
    }

    /// The buckets of the window ending at `now`.
    pub(crate) fn totals(&self, now: u64) -> Totals {
        let current = now / self.bucket * self.bucket;
        let span = self.bucket.saturating_mul(self.buckets.len() as u64);
        let mut t = Totals {
            min_rt: u64::MAX,
            ..Totals::default()
        };
        for b in self.buckets.iter() {
            let s = b.start.load(Ordering::Acquire);
            if s == EMPTY || s > current || current - s >= span {
                continue;
            }
            let done = b.done.load(Ordering::Relaxed);
            let completed = done >> DONE_RT_BITS;
            t.passed += b.passed.load(Ordering::Relaxed);
            t.completed += completed;
            t.rt_sum += (done & DONE_RT_MASK) * 1_000;
            t.min_rt = t.min_rt.min(b.min_rt.load(Ordering::Relaxed));
            t.max_completed = t.max_completed.max(completed);
        }
        t
    }

    /// The window's length in seconds.
    pub(crate) fn seconds(&self) -> f64 {
        (self.bucket as f64 * self.buckets.len() as f64) / 1e9
    }

    /// One bucket's length in seconds.
    pub(crate) fn bucket_seconds(&self) -> f64 {
        self.bucket as f64 / 1e9
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    #[test]
    fn counts_slide_out_bucket_by_bucket() {
        let w = Window::new(10, 100 * MS);
        w.pass(0);
        w.complete(50 * MS, 40 * MS);
        w.pass(150 * MS);
        w.complete(160 * MS, 10 * MS);
        w.complete(170 * MS, 30 * MS);
        let t = w.totals(900 * MS);
        assert_eq!((t.passed, t.completed, t.rt_sum), (2, 3, 80 * MS));
        assert_eq!((t.min_rt, t.max_completed), (10 * MS, 2));
        // At 1.0 s the first bucket (0..100 ms) has left the window.
        let t = w.totals(1_000 * MS);
        assert_eq!((t.passed, t.completed, t.min_rt), (1, 2, 10 * MS));
        // A bucket reused by a later stretch starts from zero.
        w.pass(1_020 * MS);
        let t = w.totals(1_050 * MS);
        assert_eq!(t.passed, 2);
        assert_eq!(
            w.totals(5_000 * MS),
            Totals {
                min_rt: u64::MAX,
                ..Totals::default()
            }
        );
    }

    #[test]
    fn a_completion_counts_once_and_its_response_time_in_whole_microseconds() {
        let w = Window::new(10, 100 * MS);
        w.complete(MS, 1_500);
        w.complete(MS, 2_999);
        let t = w.totals(MS);
        assert_eq!((t.completed, t.rt_sum, t.min_rt), (2, 3_000, 1_500));
        // A response time past what a bucket's sum can hold is capped: it
        // never carries into the count.
        w.complete(MS, u64::MAX);
        w.complete(MS, u64::MAX);
        let t = w.totals(MS);
        assert_eq!(t.completed, 4);
        assert_eq!(t.rt_sum, (3 + 2 * MAX_RT_MICROS) * 1_000);
    }
}
