//! The count and time sliding windows: pre-aggregated totals, subtract-on-evict,
//! O(1) snapshots, and recording without a lock.
//!
//! * The **count window** keeps the last `N` outcomes in a ring of one atomic
//!   byte each (failed / slow / present bits) plus running totals. Recording
//!   claims a slot with one `fetch_add` on a never-wrapping ring cursor, swaps
//!   the slot's outcome, and adjusts only the totals whose bit changed by the
//!   difference. In steady traffic most outcomes equal the one they overwrite
//!   (a success replacing a success): the slot is only read, no total moves,
//!   and the whole record is the one `fetch_add`.
//! * The **time window** keeps one bucket per second for the last `N` seconds,
//!   bucket `s % N` for second `s`. An outcome in the current second is added
//!   to its bucket and to the totals with atomics only; moving to a new second
//!   (once per second, on the first call that sees it) takes the window's lock
//!   and evicts (swaps to zero and subtracts) the buckets that fell out. A
//!   window idle for longer than `N` seconds advances at most `N` buckets.
//!   Memory depends on `N`, never on the call rate.
//!
//! # Exact accounting
//!
//! Every change to a total is the difference between what a slot (bucket)
//! held and what it holds now, taken from the same atomic swap, and a reset
//! empties slots by swapping too. So once concurrent recorders are done, each
//! total equals the sum over the ring (the buckets), whatever the
//! interleaving; the proptests below compare with a `Vec` model, the `loom`
//! models check every interleaving of small cases. While recorders are
//! mid-flight a total may lag or lead the ring by the outcomes in flight (a
//! total can even dip below zero for an instant when a slot is overwritten
//! before its first writer added it); readers clamp to `0..=N`, and decisions
//! taken from totals (the breaker's thresholds) are re-checked under the
//! breaker's lock before a transition.
//!
//! Two writers a whole ring apart (only possible with at least `N` concurrent
//! calls in flight) may land in the same slot in either order; the slot then
//! keeps the older outcome, and the totals still equal the ring.
//!
//! # Loom
//!
//! The `loom` models at the bottom explore every interleaving of small cases:
//!
//! ```text
//! RUSTFLAGS="--cfg loom" cargo test -p resil-core --lib --release circuit_breaker::window::loom
//! ```
//!
//! (also `scripts/loom`).

#[cfg(loom)]
use ::loom::sync::atomic::{AtomicU64, AtomicU8, Ordering};
#[cfg(not(loom))]
use std::sync::atomic::{AtomicU64, AtomicU8, Ordering};

#[cfg(loom)]
use ::loom::sync::atomic::AtomicU32;
#[cfg(not(loom))]
use std::sync::atomic::AtomicU32;

/// The time window's lock (taken once per second to move to a new bucket).
#[cfg(loom)]
struct Lock(::loom::sync::Mutex<()>);
#[cfg(not(loom))]
struct Lock(parking_lot::Mutex<()>);

impl Lock {
    fn new() -> Self {
        #[cfg(loom)]
        return Lock(::loom::sync::Mutex::new(()));
        #[cfg(not(loom))]
        return Lock(parking_lot::Mutex::new(()));
    }

    #[cfg(loom)]
    fn lock(&self) -> impl Drop + '_ {
        self.0
            .lock()
            .expect("no panic while holding the window lock")
    }

    #[cfg(not(loom))]
    fn lock(&self) -> impl Drop + '_ {
        self.0.lock()
    }
}

impl std::fmt::Debug for Lock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Lock")
    }
}

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

    #[cfg(test)]
    fn failed(self) -> bool {
        self.0 & FAILED != 0
    }

    #[cfg(test)]
    fn slow(self) -> bool {
        self.0 & SLOW != 0
    }

    /// A fast success: the only outcome that can never raise a rate.
    #[inline]
    pub(crate) fn is_clean(self) -> bool {
        self.0 & (FAILED | SLOW) == 0
    }
}

impl Aggregate {
    #[cfg(test)]
    fn add(&mut self, m: Measurement) {
        self.calls += 1;
        self.failed += u64::from(m.failed());
        self.slow += u64::from(m.slow());
        self.slow_failed += u64::from(m.failed() && m.slow());
    }
}

/// What one record did to the totals.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Change {
    /// No total moved: the outcome equals the one it replaced.
    Same,
    /// Totals moved, none of them up: only failures or slow calls left the
    /// window (it may have become clean).
    Down,
    /// The call count grew, or a failure or slow call entered: a threshold
    /// may have been reached.
    Up,
}

/// Adds `new - old` to four totals, touching only those whose bit changed.
#[inline]
fn apply<A: Total>(old: u8, new: u8, calls: &A, failed: &A, slow: &A, slow_failed: &A) -> Change {
    #[inline]
    fn bit(v: u8, mask: u8) -> i8 {
        i8::from(v & mask == mask)
    }
    let up = |total: &A, mask: u8| match bit(new, mask) - bit(old, mask) {
        1 => {
            total.inc();
            true
        }
        -1 => {
            total.dec();
            false
        }
        _ => false,
    };
    let more_calls = up(calls, PRESENT);
    let more_failed = up(failed, FAILED | PRESENT);
    let more_slow = up(slow, SLOW | PRESENT);
    up(slow_failed, FAILED | SLOW | PRESENT);
    if more_calls || more_failed || more_slow {
        Change::Up
    } else if old == new {
        Change::Same
    } else {
        Change::Down
    }
}

/// A total kept in an atomic, changed by one at a time (wrapping: a total may
/// dip below zero for an instant, see the module docs).
trait Total {
    fn inc(&self);
    fn dec(&self);
}

impl Total for AtomicU32 {
    #[inline]
    fn inc(&self) {
        self.fetch_add(1, Ordering::Relaxed);
    }
    #[inline]
    fn dec(&self) {
        self.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Total for AtomicU64 {
    #[inline]
    fn inc(&self) {
        self.fetch_add(1, Ordering::Relaxed);
    }
    #[inline]
    fn dec(&self) {
        self.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A total read while recorders may be mid-flight, clamped to `0..=max`.
#[inline]
fn clamp32(total: &AtomicU32, max: u64) -> u64 {
    let v = total.load(Ordering::Relaxed) as i32;
    (v.max(0) as u64).min(max)
}

#[inline]
fn clamp64(total: &AtomicU64) -> u64 {
    let v = total.load(Ordering::Relaxed) as i64;
    v.max(0) as u64
}

/// The last `size` outcomes (at most 2^24, so the totals fit in `u32`).
#[derive(Debug)]
pub(crate) struct CountWindow {
    /// Read by every record, written by none: shared by every core.
    ring: Box<[AtomicU8]>,
    modulo: FastMod,
    /// Written by every record.
    hot: Hot,
}

/// The words every record writes, on a cache line of their own, so writing
/// them never evicts the read-mostly fields around them (the ring pointer, the
/// breaker's state word) from another core's cache. One line, not x86's
/// prefetch pair of two: a registry holds thousands of breakers.
#[derive(Debug)]
#[repr(align(64))]
struct Hot {
    /// The next slot to claim, modulo the ring's length; never wraps (2^64
    /// calls).
    cursor: AtomicU64,
    calls: AtomicU32,
    failed: AtomicU32,
    slow: AtomicU32,
    slow_failed: AtomicU32,
}

/// `a % d` by two multiplications instead of a division (Lemire, Kaser and
/// Kurz, "Faster remainder by direct computation", 2019): a 64-bit division
/// costs 25–90 cycles, as much as the rest of a record.
#[derive(Debug, Clone, Copy)]
struct FastMod {
    /// `u128::MAX / d + 1`, as two words (8-byte alignment keeps the window
    /// compact).
    m: [u64; 2],
    d: u64,
}

impl FastMod {
    fn new(d: u64) -> Self {
        debug_assert!(d > 1, "a modulus of one needs no arithmetic");
        let m = (u128::MAX / u128::from(d)).wrapping_add(1);
        FastMod {
            m: [m as u64, (m >> 64) as u64],
            d,
        }
    }

    #[inline]
    fn rem(self, a: u64) -> u64 {
        if self.d <= 1 {
            return 0;
        }
        let m = u128::from(self.m[0]) | (u128::from(self.m[1]) << 64);
        let low = m.wrapping_mul(u128::from(a));
        let d = u128::from(self.d);
        let bottom = ((low & u128::from(u64::MAX)) * d) >> 64;
        let top = (low >> 64) * d;
        ((bottom + top) >> 64) as u64
    }
}

impl CountWindow {
    pub(crate) fn new(size: u32) -> Self {
        debug_assert!(size > 0, "the config rejects an empty window");
        let size = size.max(1);
        CountWindow {
            ring: (0..size).map(|_| AtomicU8::new(0)).collect(),
            modulo: if size > 1 {
                FastMod::new(u64::from(size))
            } else {
                FastMod { m: [0, 0], d: 1 }
            },
            hot: Hot {
                cursor: AtomicU64::new(0),
                calls: AtomicU32::new(0),
                failed: AtomicU32::new(0),
                slow: AtomicU32::new(0),
                slow_failed: AtomicU32::new(0),
            },
        }
    }

    /// Records `m` over the oldest outcome, with atomics only.
    #[inline]
    pub(crate) fn record(&self, m: Measurement) -> Change {
        let at = self
            .modulo
            .rem(self.hot.cursor.fetch_add(1, Ordering::Relaxed));
        debug_assert!(at < self.ring.len() as u64);
        let slot = &self.ring[at as usize];
        // Mostly the outcome equals the one it replaces: then reading is enough,
        // and the slot's cache line stays shared between threads. (Equivalent to
        // swapping the same value at the instant of the load.)
        if slot.load(Ordering::Relaxed) == m.0 {
            return Change::Same;
        }
        let old = slot.swap(m.0, Ordering::Relaxed);
        self.adjust(old, m.0)
    }

    #[inline]
    fn adjust(&self, old: u8, new: u8) -> Change {
        let h = &self.hot;
        apply(old, new, &h.calls, &h.failed, &h.slow, &h.slow_failed)
    }

    #[inline]
    pub(crate) fn total(&self) -> Aggregate {
        let (max, h) = (self.ring.len() as u64, &self.hot);
        Aggregate {
            calls: clamp32(&h.calls, max),
            failed: clamp32(&h.failed, max),
            slow: clamp32(&h.slow, max),
            slow_failed: clamp32(&h.slow_failed, max),
        }
    }

    /// The calls in the window (one load).
    #[inline]
    pub(crate) fn calls(&self) -> u64 {
        clamp32(&self.hot.calls, self.ring.len() as u64)
    }

    /// Full, and every entry a fast success: recording another fast success
    /// would change neither the totals nor the ring's content.
    #[inline]
    pub(crate) fn is_saturated_clean(&self) -> bool {
        let t = self.total();
        t.calls == self.ring.len() as u64 && t.failed == 0 && t.slow == 0
    }

    /// Empties the window. Safe against concurrent recorders: each slot is
    /// swapped empty and its outcome subtracted, so the totals still equal the
    /// ring afterwards (an outcome recorded concurrently may survive the reset).
    pub(crate) fn reset(&self) {
        for slot in self.ring.iter() {
            if slot.load(Ordering::Relaxed) != 0 {
                let old = slot.swap(0, Ordering::Relaxed);
                self.adjust(old, 0);
            }
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        self.ring.len()
    }

    /// The totals recomputed from the ring (tests: must equal `total()` once
    /// recorders are done).
    #[cfg(test)]
    fn ring_total(&self) -> Aggregate {
        let mut a = Aggregate::default();
        for slot in self.ring.iter() {
            let v = slot.load(Ordering::Relaxed);
            if v & PRESENT != 0 {
                a.add(Measurement(v));
            }
        }
        a
    }
}

/// One second's outcomes; `second` says which second the counts belong to.
#[derive(Debug)]
struct Bucket {
    second: AtomicU64,
    calls: AtomicU64,
    failed: AtomicU64,
    slow: AtomicU64,
    slow_failed: AtomicU64,
}

impl Bucket {
    fn new(second: u64) -> Self {
        Bucket {
            second: AtomicU64::new(second),
            calls: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            slow: AtomicU64::new(0),
            slow_failed: AtomicU64::new(0),
        }
    }
}

/// A bucket stamp no reading can match (before the window's first second).
const NEVER: u64 = u64::MAX;

/// The outcomes of the last `size` seconds, one bucket per second.
#[derive(Debug)]
pub(crate) struct TimeWindow {
    buckets: Box<[Bucket]>,
    /// The latest second the window has moved to.
    latest: AtomicU64,
    calls: AtomicU64,
    failed: AtomicU64,
    slow: AtomicU64,
    slow_failed: AtomicU64,
    /// Serialises moving to a new second (and resets).
    lock: Lock,
}

const NANOS_PER_SECOND: u64 = 1_000_000_000;

impl TimeWindow {
    pub(crate) fn new(seconds: u32, now_nanos: u64) -> Self {
        debug_assert!(seconds > 0, "the config rejects an empty window");
        let now = now_nanos / NANOS_PER_SECOND;
        let window = TimeWindow {
            buckets: (0..seconds.max(1)).map(|_| Bucket::new(NEVER)).collect(),
            latest: AtomicU64::new(now),
            calls: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            slow: AtomicU64::new(0),
            slow_failed: AtomicU64::new(0),
            lock: Lock::new(),
        };
        window.bucket(now).second.store(now, Ordering::Release);
        window
    }

    #[inline]
    fn bucket(&self, second: u64) -> &Bucket {
        &self.buckets[(second % self.buckets.len() as u64) as usize]
    }

    /// Adds `m` to `b` and to the totals.
    #[inline]
    fn add(&self, b: &Bucket, m: Measurement) -> Change {
        let calls = (&b.calls, &self.calls);
        let failed = (&b.failed, &self.failed);
        let slow = (&b.slow, &self.slow);
        let slow_failed = (&b.slow_failed, &self.slow_failed);
        apply(0, m.0, &calls, &failed, &slow, &slow_failed)
    }

    /// Moves to second `now` (if later than the latest), evicting at most
    /// `size` buckets. Takes the lock only when there is something to do.
    fn advance(&self, now: u64) {
        if now <= self.latest.load(Ordering::Acquire) {
            return;
        }
        let _guard = self.lock.lock();
        let latest = self.latest.load(Ordering::Acquire);
        if now <= latest {
            return;
        }
        let len = self.buckets.len() as u64;
        let steps = (now - latest).min(len);
        for second in now - steps + 1..=now {
            let b = self.bucket(second);
            // Evict, then stamp: until the stamp says `second`, its recorders
            // take the slow path and wait for this lock, so none of them adds
            // to counts about to be evicted. A recorder still adding to the
            // bucket's old second is either evicted with it or, if it comes
            // after the swap, counted in the new second: never lost from the
            // totals alone.
            self.evict(b);
            b.second.store(second, Ordering::Release);
        }
        self.latest.store(now, Ordering::Release);
    }

    /// Empties one bucket, subtracting exactly what it held from the totals.
    fn evict(&self, b: &Bucket) {
        for (count, total) in [
            (&b.calls, &self.calls),
            (&b.failed, &self.failed),
            (&b.slow, &self.slow),
            (&b.slow_failed, &self.slow_failed),
        ] {
            let held = count.swap(0, Ordering::Relaxed);
            if held != 0 {
                total.fetch_sub(held, Ordering::Relaxed);
            }
        }
    }

    /// Records `m` at `now_nanos`: atomics only while the second is current.
    #[inline]
    pub(crate) fn record(&self, now_nanos: u64, m: Measurement) -> Change {
        let now = now_nanos / NANOS_PER_SECOND;
        let b = self.bucket(now);
        if b.second.load(Ordering::Acquire) == now {
            return self.add(b, m);
        }
        self.record_slow(now, m)
    }

    #[cold]
    fn record_slow(&self, now: u64, m: Measurement) -> Change {
        self.advance(now);
        let b = self.bucket(now);
        if b.second.load(Ordering::Acquire) == now {
            self.add(b, m)
        } else {
            // A reading older than the window (a racing thread moved on): the
            // outcome counts in the latest second.
            let latest = self.latest.load(Ordering::Acquire);
            self.add(self.bucket(latest), m)
        }
    }

    pub(crate) fn total(&self, now_nanos: u64) -> Aggregate {
        self.advance(now_nanos / NANOS_PER_SECOND);
        Aggregate {
            calls: clamp64(&self.calls),
            failed: clamp64(&self.failed),
            slow: clamp64(&self.slow),
            slow_failed: clamp64(&self.slow_failed),
        }
    }

    /// Empties every bucket and starts again at `now_nanos`; safe against
    /// concurrent recorders (see [`CountWindow::reset`]).
    pub(crate) fn reset(&self, now_nanos: u64) {
        let now = now_nanos / NANOS_PER_SECOND;
        let _guard = self.lock.lock();
        let latest = self.latest.load(Ordering::Acquire).max(now);
        for b in self.buckets.iter() {
            b.second.store(NEVER, Ordering::Release);
            self.evict(b);
        }
        self.bucket(latest).second.store(latest, Ordering::Release);
        self.latest.store(latest, Ordering::Release);
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        std::mem::size_of_val(&*self.buckets)
    }

    /// The totals recomputed from the buckets (tests).
    #[cfg(test)]
    fn bucket_total(&self) -> Aggregate {
        let mut a = Aggregate::default();
        for b in self.buckets.iter() {
            a.calls += b.calls.load(Ordering::Relaxed);
            a.failed += b.failed.load(Ordering::Relaxed);
            a.slow += b.slow.load(Ordering::Relaxed);
            a.slow_failed += b.slow_failed.load(Ordering::Relaxed);
        }
        a
    }
}

/// A bucket's count and the window's total, changed together.
impl Total for (&AtomicU64, &AtomicU64) {
    #[inline]
    fn inc(&self) {
        self.0.inc();
        self.1.inc();
    }
    #[inline]
    fn dec(&self) {
        self.0.dec();
        self.1.dec();
    }
}

/// The sliding window a configuration asks for.
#[derive(Debug)]
pub(crate) enum Window {
    Count(CountWindow),
    Time(TimeWindow),
}

impl Window {
    #[inline]
    pub(crate) fn record(&self, now_nanos: u64, m: Measurement) -> Change {
        match self {
            Window::Count(w) => w.record(m),
            Window::Time(w) => w.record(now_nanos, m),
        }
    }

    pub(crate) fn total(&self, now_nanos: u64) -> Aggregate {
        match self {
            Window::Count(w) => w.total(),
            Window::Time(w) => w.total(now_nanos),
        }
    }

    /// The calls in the window as last recorded (no eviction by time).
    #[inline]
    pub(crate) fn calls(&self) -> u64 {
        match self {
            Window::Count(w) => w.calls(),
            Window::Time(w) => clamp64(&w.calls),
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

    pub(crate) fn reset(&self, now_nanos: u64) {
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

    /// Makes this window (fresh, not yet shared) a copy of `other`, a window
    /// of the same type and size (a registry reload carries the outcomes
    /// over). Outcomes recorded into `other` while it is copied may or may not
    /// be carried; each copied total still equals its copied slots only if
    /// `other` is quiet, as the reload documents.
    pub(crate) fn copy_from(&self, other: &Window) {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        match (self, other) {
            (Window::Count(to), Window::Count(from)) if to.ring.len() == from.ring.len() => {
                for (t, f) in to.ring.iter().zip(from.ring.iter()) {
                    t.store(f.load(Ordering::Relaxed), Ordering::Relaxed);
                }
                let (t, f) = (&to.hot, &from.hot);
                t.cursor.store(load(&f.cursor), Ordering::Relaxed);
                for (t, f) in [
                    (&t.calls, &f.calls),
                    (&t.failed, &f.failed),
                    (&t.slow, &f.slow),
                    (&t.slow_failed, &f.slow_failed),
                ] {
                    t.store(f.load(Ordering::Relaxed), Ordering::Relaxed);
                }
            }
            (Window::Time(to), Window::Time(from)) if to.buckets.len() == from.buckets.len() => {
                let _guard = from.lock.lock();
                for (t, f) in to.buckets.iter().zip(from.buckets.iter()) {
                    for (t, f) in [
                        (&t.second, &f.second),
                        (&t.calls, &f.calls),
                        (&t.failed, &f.failed),
                        (&t.slow, &f.slow),
                        (&t.slow_failed, &f.slow_failed),
                    ] {
                        t.store(load(f), Ordering::Relaxed);
                    }
                }
                for (t, f) in [
                    (&to.latest, &from.latest),
                    (&to.calls, &from.calls),
                    (&to.failed, &from.failed),
                    (&to.slow, &from.slow),
                    (&to.slow_failed, &from.slow_failed),
                ] {
                    t.store(load(f), Ordering::Relaxed);
                }
            }
            _ => debug_assert!(false, "only a window of the same shape is copied"),
        }
    }
}

#[cfg(all(test, not(loom)))]
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
            outcomes in proptest::collection::vec((any::<bool>(), any::<bool>(), 0u8..20), 0..60),
        ) {
            let window = CountWindow::new(size);
            let mut model: Vec<(bool, bool)> = Vec::new();
            for &(failed, slow, reset) in &outcomes {
                if reset == 0 {
                    window.reset();
                    model.clear();
                }
                let before = window.total();
                let change = window.record(Measurement::new(failed, slow));
                model.push((failed, slow));
                let last = &model[model.len().saturating_sub(size as usize)..];
                let after = window.total();
                prop_assert_eq!(after, model_total(last));
                prop_assert_eq!(window.ring_total(), after);
                prop_assert_eq!(
                    change == Change::Up,
                    after.calls > before.calls || after.failed > before.failed || after.slow > before.slow
                );
                prop_assert_eq!(change == Change::Same, after == before);
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
            let window = TimeWindow::new(size, now);
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
                prop_assert_eq!(window.bucket_total(), model_total(&recent));
            }
        }
    }

    proptest! {
        #[test]
        fn fast_remainders_equal_the_division(a in any::<u64>(), d in 2u64..=(1 << 24)) {
            prop_assert_eq!(FastMod::new(d).rem(a), a % d);
        }
    }

    #[test]
    fn fast_remainders_hold_at_the_edges() {
        for d in [2, 3, 7, 100, 101, 1 << 24] {
            for a in [
                0,
                1,
                d - 1,
                d,
                d + 1,
                u64::MAX - 1,
                u64::MAX,
                u64::from(u32::MAX) + 1,
            ] {
                assert_eq!(FastMod::new(d).rem(a), a % d, "{a} % {d}");
            }
        }
        assert_eq!(FastMod { m: [0, 0], d: 1 }.rem(12345), 0);
    }

    #[test]
    fn a_count_window_evicts_the_oldest_outcome_first() {
        let w = CountWindow::new(3);
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
        assert_eq!(w.record(Measurement::new(false, false)), Change::Down);
        assert_eq!(w.record(Measurement::new(false, false)), Change::Down);
        assert_eq!(
            w.total().failed,
            0,
            "the failure was the oldest and left first"
        );
        assert_eq!(w.total().calls, 3);
        assert_eq!(w.record(Measurement::new(true, false)), Change::Up);
    }

    #[test]
    fn a_copied_window_holds_the_same_outcomes_and_evicts_in_the_same_order() {
        let from = Window::Count(CountWindow::new(3));
        let to = Window::Count(CountWindow::new(3));
        for m in [(true, false), (false, true), (false, false), (true, true)] {
            from.record(0, Measurement::new(m.0, m.1));
        }
        to.copy_from(&from);
        assert_eq!(to.total(0), from.total(0));
        for w in [&from, &to] {
            w.record(0, Measurement::new(false, false));
        }
        assert_eq!(to.total(0), from.total(0), "the same slot was evicted");

        let from = Window::Time(TimeWindow::new(2, 0));
        let to = Window::Time(TimeWindow::new(2, 0));
        from.record(0, Measurement::new(true, false));
        from.record(S, Measurement::new(false, true));
        to.copy_from(&from);
        assert_eq!(to.total(S), from.total(S));
        assert_eq!(to.total(2 * S), from.total(2 * S), "second 0 left both");
        assert_eq!(to.total(2 * S).calls, 1);
    }

    #[test]
    fn a_fast_success_over_a_fast_success_writes_only_the_cursor() {
        let w = CountWindow::new(2);
        w.record(Measurement::new(false, false));
        w.record(Measurement::new(false, false));
        let before = w.total();
        assert_eq!(w.record(Measurement::new(false, false)), Change::Same);
        assert_eq!(w.total(), before);
        assert!(w.is_saturated_clean());
    }

    /// Exact sums under real threads (the loom models cover the small cases
    /// exhaustively; this covers volume).
    #[test]
    fn the_count_window_totals_equal_its_ring_after_racing_recorders_and_resets() {
        let w = CountWindow::new(7);
        std::thread::scope(|s| {
            for t in 0..4u32 {
                let w = &w;
                s.spawn(move || {
                    for i in 0..20_000u32 {
                        let x = i.wrapping_mul(2_654_435_761).wrapping_add(t);
                        w.record(Measurement::new(x % 5 == 0, x % 7 == 0));
                        if t == 3 && i % 1_000 == 0 {
                            w.reset();
                        }
                    }
                });
            }
        });
        assert_eq!(w.total(), w.ring_total());
        assert_eq!(
            w.total().calls,
            7,
            "every slot was written since the last reset"
        );
    }

    #[test]
    fn the_time_window_totals_equal_its_buckets_after_racing_recorders_and_moving_seconds() {
        let w = TimeWindow::new(3, 0);
        let now = AtomicU64::new(0);
        std::thread::scope(|s| {
            for t in 0..4u64 {
                let (w, now) = (&w, &now);
                s.spawn(move || {
                    for i in 0..20_000u64 {
                        if t == 0 && i % 500 == 0 {
                            now.fetch_add(S / 2, Ordering::Relaxed);
                        }
                        let at = now.load(Ordering::Relaxed);
                        w.record(at, Measurement::new(i % 3 == 0, i % 4 == 0));
                    }
                });
            }
        });
        let at = now.load(Ordering::Relaxed);
        assert_eq!(w.total(at), w.bucket_total());
        let recorded = w.total(at).calls;
        assert!(recorded > 0);
        assert_eq!(w.total(at + 3 * S).calls, 0, "everything ages out");
        assert_eq!(w.bucket_total(), Aggregate::default());
    }

    #[test]
    fn a_time_window_forgets_everything_after_a_long_idle_period_in_at_most_n_steps() {
        let w = TimeWindow::new(10, 0);
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
    fn a_reading_older_than_the_window_counts_in_the_latest_second() {
        let w = TimeWindow::new(2, 10 * S);
        w.record(20 * S, Measurement::new(false, false));
        w.record(3 * S, Measurement::new(true, false));
        assert_eq!(w.total(20 * S).failed, 1);
        assert_eq!(w.total(22 * S).calls, 0);
    }

    #[test]
    fn time_window_memory_depends_on_its_seconds_not_on_the_call_rate() {
        let w = TimeWindow::new(60, 0);
        let before = w.heap_bytes();
        for i in 0..100_000 {
            w.record(i * 1000, Measurement::new(i % 2 == 0, false));
        }
        assert_eq!(w.heap_bytes(), before);
        assert_eq!(w.total(100_000_000).calls, 100_000);
    }
}

/// Every interleaving of small cases. Run with
/// `RUSTFLAGS="--cfg loom" cargo test -p resil-core --lib --release circuit_breaker::window::loom`.
#[cfg(all(test, loom))]
mod loom_models {
    use super::*;
    use ::loom::sync::Arc;
    use ::loom::thread;

    const F: Measurement = Measurement::new(true, false);
    const OK: Measurement = Measurement::new(false, false);
    const SLOW: Measurement = Measurement::new(false, true);

    #[test]
    fn two_recorders_lapping_a_one_slot_ring_leave_totals_equal_to_the_ring() {
        ::loom::model(|| {
            let w = Arc::new(CountWindow::new(1));
            w.record(OK);
            let a = {
                let w = Arc::clone(&w);
                thread::spawn(move || {
                    w.record(F);
                })
            };
            let b = {
                let w = Arc::clone(&w);
                thread::spawn(move || {
                    w.record(SLOW);
                })
            };
            a.join().unwrap();
            b.join().unwrap();
            let t = w.total();
            assert_eq!(t, w.ring_total());
            assert_eq!(t.calls, 1);
            assert_eq!(
                t.failed + t.slow,
                1,
                "one of the two outcomes holds the slot"
            );
        });
    }

    #[test]
    fn a_reset_racing_a_recorder_leaves_totals_equal_to_the_ring() {
        ::loom::model(|| {
            let w = Arc::new(CountWindow::new(2));
            w.record(F);
            w.record(F);
            let a = {
                let w = Arc::clone(&w);
                thread::spawn(move || {
                    w.record(SLOW);
                })
            };
            w.reset();
            a.join().unwrap();
            let t = w.total();
            assert_eq!(t, w.ring_total());
            assert!(t.calls <= 1 && t.failed == 0, "{t:?}");
        });
    }

    #[test]
    fn a_record_racing_a_move_to_the_next_second_is_never_lost_from_one_side_only() {
        ::loom::model(|| {
            let w = Arc::new(TimeWindow::new(1, 0));
            let a = {
                let w = Arc::clone(&w);
                thread::spawn(move || {
                    w.record(0, F);
                })
            };
            let moved = w.total(NANOS_PER_SECOND);
            a.join().unwrap();
            assert!(moved.calls <= 1);
            let t = w.total(NANOS_PER_SECOND);
            assert_eq!(t, w.bucket_total());
            assert!(t.calls <= 1);
        });
    }
}
