//! The lock-free cycle state: Resilience4j's AtomicRateLimiter as one `u64` cursor.
//!
//! # The state
//!
//! Resilience4j keeps `(activeCycle, activePermissions)` and replaces both by
//! CAS. Those two numbers do not fit one `u64` without wrapping the cycle
//! number (with 500 ns cycles a 32-bit cycle wraps every 36 minutes, and an
//! idle limiter cannot tell a wrapped cycle from a recent one). So the state is
//! kept in an equivalent form that needs one number only:
//!
//! * Permits are numbered `0, 1, 2, …` in the order they are handed out.
//!   Cycle `c` owns the *window* of numbers `[lo(c), hi(c))`, `limit` wide:
//!   with a fixed limit `lo(c) = c × limit`.
//! * The state is the **cursor**: the number of the next permit to hand out.
//!   Resilience4j's `activePermissions` in cycle `c` is `hi(c) − max(cursor, lo(c))`.
//! * Crossing into cycle `c` refills the permits, capped at `limit`: that is
//!   `cursor = max(cursor, lo(c))` — permits left over in earlier cycles are
//!   skipped, never accumulated.
//! * Taking `n` permits is `cursor += n`. If the new cursor is past `hi(c)`,
//!   the permits belong to a later cycle (a reservation: `activePermissions`
//!   goes negative); the caller waits until the cycle whose window holds the
//!   last of them starts. Resilience4j computes the same wait with
//!   `nanosToWaitForPermission`.
//!
//! The cursor only grows, so a CAS on it can never be fooled by ABA, and it
//! lasts `2^64` permits: at the configured maximum of one permit per nanosecond
//! that is 584 years.
//!
//! # Changing the limit
//!
//! The window layout `lo(c)` is a *schedule*: `(from_cycle, from_index,
//! limit, previous_limit)` — cycles from `from_cycle` on start at
//! `from_index + (c − from_cycle) × limit`, and the cycle just before it (the
//! one in which the limit was changed) keeps `previous_limit`. A change never
//! moves windows that are already open, only later ones, so it does not touch
//! the cursor. The schedule is read under a seqlock (plain loads on x86: no
//! read-modify-write on the hot path) and written under the limiter's mutex.

use std::sync::atomic::{fence, AtomicU64, Ordering};

use parking_lot::Mutex;

/// Division by a divisor fixed at construction, as a multiply and shifts
/// (Granlund & Montgomery, "Division by invariant integers using
/// multiplication", 1994, figure 4.1): a 64-bit `div` costs 10–40 cycles, this
/// costs about 5. Acquires divide the time by the period only when it left
/// the cycle of the hint, but with short periods that is often.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Divider {
    divisor: u64,
    multiplier: u64,
    shift1: u32,
    shift2: u32,
}

impl Divider {
    /// A divider by `divisor` (`>= 1`).
    pub(crate) fn new(divisor: u64) -> Self {
        debug_assert!(divisor >= 1, "a rate limiter's period is at least 1ns");
        let divisor = divisor.max(1);
        // l = ceil(log2(divisor))
        let l = 64 - (divisor - 1).leading_zeros();
        let multiplier =
            ((1u128 << 64) * ((1u128 << l) - u128::from(divisor)) / u128::from(divisor) + 1) as u64;
        Divider {
            divisor,
            multiplier,
            shift1: l.min(1),
            shift2: l.saturating_sub(1),
        }
    }

    /// `n / divisor`, exactly, for every `n`.
    #[inline]
    pub(crate) fn div(&self, n: u64) -> u64 {
        let t1 = ((u128::from(self.multiplier) * u128::from(n)) >> 64) as u64;
        (t1 + ((n - t1) >> self.shift1)) >> self.shift2
    }

    /// The divisor.
    #[inline]
    pub(crate) fn divisor(&self) -> u64 {
        self.divisor
    }
}

/// Which permit numbers each cycle owns (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Schedule {
    /// The first cycle laid out with `limit`.
    pub(crate) from_cycle: u64,
    /// `lo(from_cycle)`.
    pub(crate) from_index: u64,
    /// Permits per cycle from `from_cycle` on.
    pub(crate) limit: u32,
    /// Permits of cycle `from_cycle - 1` (the cycle in which the limit changed).
    pub(crate) previous_limit: u32,
}

impl Schedule {
    fn initial(limit: u32) -> Self {
        Schedule {
            from_cycle: 0,
            from_index: 0,
            limit,
            previous_limit: limit,
        }
    }

    /// Cycles before `from_cycle - 1` ended before this schedule was written: a
    /// clock reading that old was taken before the change was seen, and the
    /// change happened at or after `from_cycle - 1` began.
    #[inline]
    fn clamp(&self, cycle: u64) -> u64 {
        cycle.max(self.from_cycle.saturating_sub(1))
    }

    /// The window `[lo, hi)` of cycle `cycle` (clamped).
    #[inline]
    fn window(&self, cycle: u64) -> (u64, u64) {
        if cycle >= self.from_cycle {
            let lo = self
                .from_index
                .saturating_add((cycle - self.from_cycle).saturating_mul(u64::from(self.limit)));
            (lo, lo.saturating_add(u64::from(self.limit)))
        } else {
            let hi = self.from_index;
            (hi.saturating_sub(u64::from(self.previous_limit)), hi)
        }
    }

    /// The limit of cycle `cycle` (clamped).
    #[inline]
    fn limit_of(&self, cycle: u64) -> u32 {
        if cycle >= self.from_cycle {
            self.limit
        } else {
            self.previous_limit
        }
    }

    /// The cycle whose window holds permit number `index`.
    #[inline]
    fn cycle_of(&self, index: u64) -> u64 {
        if index >= self.from_index {
            self.from_cycle + (index - self.from_index) / u64::from(self.limit)
        } else {
            self.from_cycle.saturating_sub(1)
        }
    }
}

/// The schedule behind a seqlock: readers never write, the one writer (under the
/// limiter's change mutex) bumps `seq` to odd, writes, and bumps it to even.
#[derive(Debug)]
struct ScheduleCell {
    seq: AtomicU64,
    from_cycle: AtomicU64,
    from_index: AtomicU64,
    /// `limit | previous_limit << 32`.
    limits: AtomicU64,
}

impl ScheduleCell {
    fn new(s: Schedule) -> Self {
        ScheduleCell {
            seq: AtomicU64::new(0),
            from_cycle: AtomicU64::new(s.from_cycle),
            from_index: AtomicU64::new(s.from_index),
            limits: AtomicU64::new(u64::from(s.limit) | u64::from(s.previous_limit) << 32),
        }
    }

    #[inline]
    fn read(&self) -> Schedule {
        loop {
            let before = self.seq.load(Ordering::Acquire);
            let from_cycle = self.from_cycle.load(Ordering::Relaxed);
            let from_index = self.from_index.load(Ordering::Relaxed);
            let limits = self.limits.load(Ordering::Relaxed);
            fence(Ordering::Acquire);
            let after = self.seq.load(Ordering::Relaxed);
            if before == after && before & 1 == 0 {
                return Schedule {
                    from_cycle,
                    from_index,
                    limit: limits as u32,
                    previous_limit: (limits >> 32) as u32,
                };
            }
            std::hint::spin_loop();
        }
    }

    /// Callers serialise writes (the limiter's change mutex).
    fn write(&self, s: Schedule) {
        let seq = self.seq.load(Ordering::Relaxed);
        debug_assert!(
            seq & 1 == 0,
            "schedule writes are serialised by the change mutex"
        );
        self.seq.store(seq.wrapping_add(1), Ordering::Relaxed);
        fence(Ordering::Release);
        self.from_cycle.store(s.from_cycle, Ordering::Relaxed);
        self.from_index.store(s.from_index, Ordering::Relaxed);
        self.limits.store(
            u64::from(s.limit) | u64::from(s.previous_limit) << 32,
            Ordering::Relaxed,
        );
        self.seq.store(seq.wrapping_add(2), Ordering::Release);
    }
}

/// Permits granted by [`Cycles::acquire`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// Nanoseconds until the cycle holding the last permit starts; 0 = now.
    pub(crate) wait: u64,
    /// The permit numbers taken: `[start, end)`.
    pub(crate) start: u64,
    pub(crate) end: u64,
}

impl Grant {
    /// Permits granted at once by the fast path (nothing to give back).
    pub(crate) const NOW: Grant = Grant {
        wait: 0,
        start: 0,
        end: 0,
    };
}

/// What [`Cycles::acquire_fast`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fast {
    /// The permits were free and are taken.
    Granted,
    /// Nothing taken: acquire at `now` on the full path.
    Slow { now: u64 },
}

/// Why [`Cycles::acquire`] granted nothing. Nothing was consumed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// More permits than a cycle holds: no wait can ever grant them.
    ExceedsLimit { limit: u32 },
    /// The permits come free only after `wait` nanoseconds, longer than allowed.
    WaitTooLong { wait: u64 },
}

/// Keeps a value on its own cache line(s), so that writes to it do not slow
/// down reads of its neighbours (128 bytes: adjacent-line prefetchers pull
/// pairs of 64-byte lines).
#[derive(Debug)]
#[repr(align(128))]
struct Padded<T>(T);

/// The cursor and the cycle hint, written on every acquire.
#[derive(Debug)]
struct Hot {
    /// The number of the next permit to hand out (see the module docs). Only
    /// grows, except when a cancelled reservation that is still the latest
    /// gives its permits back.
    cursor: AtomicU64,
    /// The cycle some recent acquire was in: a hint that spares most acquires
    /// the division of the time by the period, checked on every use.
    hint: AtomicU64,
    /// The ramp after idleness, when a `warm_up_period` is configured. Never
    /// written after construction, and read only on the slow path, which
    /// reads this line anyway; kept here because the padding has room for
    /// it (the limiter stays within its size).
    warm: Option<Box<WarmUp>>,
}

/// The cycle algorithm's state, the type parameter of
/// [`RateLimiter`](super::RateLimiter) (`Limiter<Cycles>`): Resilience4j's
/// `AtomicRateLimiter`, at most `limit_for_period` permits per
/// `limit_refresh_period` cycle. Only a [`Limiter`](super::Limiter) uses it.
///
/// Time is passed in as readings of the limiter's clock; cycles count from
/// `origin`, the reading at creation.
#[derive(Debug)]
pub struct Cycles {
    hot: Padded<Hot>,
    schedule: ScheduleCell,
    period: Divider,
    origin: u64,
    /// Serialises `change_limit_for_period` (the schedule's single writer).
    pub(crate) changes: Mutex<()>,
}

/// No cycle yet (a new limiter is cold).
const NEVER: u64 = u64::MAX;

/// The warm-up ramp (Guava's `SmoothWarmingUp`, Sentinel's warm-up
/// controller, in cycles): a limiter idle for more than `cycles` cycles (and
/// a new one) grants `cold` permits in the cycle it wakes up in, and
/// `cold + (full − cold) × k / cycles` in the `k`-th cycle after, `full`
/// from the `cycles`-th on. Applied by the first acquire of each cycle (every
/// cycle's first acquire takes [`Cycles::acquire_at`]), under the changes
/// mutex: the fast path never sees it.
#[derive(Debug)]
struct WarmUp {
    /// The ramp's length in cycles (at least 1).
    cycles: u64,
    cold_factor: u32,
    /// `limit_for_period` (what the ramp ends at; `change_limit_for_period`
    /// moves it).
    full: AtomicU64,
    /// The cycle the current ramp started in, or [`NEVER`] once warm.
    from: AtomicU64,
    /// The last cycle an acquire took the slow path in ([`NEVER`]: none).
    last: AtomicU64,
}

impl WarmUp {
    fn cold(&self, full: u32) -> u32 {
        full.div_ceil(self.cold_factor).max(1)
    }

    /// The limit of the `k`-th cycle of the ramp.
    fn target(&self, full: u32, k: u64) -> u32 {
        if k >= self.cycles {
            return full;
        }
        let cold = self.cold(full);
        let extra = u64::from(full - cold) * k / self.cycles;
        cold + extra as u32
    }
}

impl Cycles {
    pub(crate) fn new(limit: u32, period_nanos: u64, origin: u64) -> Self {
        Cycles {
            hot: Padded(Hot {
                cursor: AtomicU64::new(0),
                hint: AtomicU64::new(0),
                warm: None,
            }),
            schedule: ScheduleCell::new(Schedule::initial(limit)),
            period: Divider::new(period_nanos),
            origin,
            changes: Mutex::new(()),
        }
    }

    /// With a warm-up ramp of `warm_up_nanos` (0: none) starting at
    /// `limit / cold_factor`.
    pub(crate) fn warming_up(mut self, warm_up_nanos: u64, cold_factor: u32) -> Self {
        if warm_up_nanos > 0 {
            let cycles = (warm_up_nanos / self.period.divisor()).max(1);
            // No cycle is hinted yet: the first acquire takes the slow path.
            self.hot.0.hint.store(NEVER, Ordering::Relaxed);
            self.hot.0.warm = Some(Box::new(WarmUp {
                cycles,
                cold_factor: cold_factor.max(1),
                full: AtomicU64::new(u64::from(self.schedule.read().limit)),
                from: AtomicU64::new(NEVER),
                last: AtomicU64::new(NEVER),
            }));
        }
        self
    }

    /// A new `limit_for_period` is also the ramp's new end.
    pub(crate) fn warm_up_to(&self, limit: u32) {
        if let Some(w) = &self.hot.0.warm {
            w.full.store(u64::from(limit), Ordering::Relaxed);
        }
    }

    /// The configured limit: the ramp's end while warming up.
    #[inline]
    pub(crate) fn configured_limit(&self) -> u32 {
        match &self.hot.0.warm {
            Some(w) => w.full.load(Ordering::Relaxed) as u32,
            None => self.limit(),
        }
    }

    /// Moves the warm-up ramp to the cycle `now` is in (see [`WarmUp`]):
    /// lowers the current cycle to the cold limit when the limiter wakes up
    /// from idleness, and raises the current cycle's limit along the ramp
    /// while nothing of it is taken yet beyond its start.
    #[cold]
    #[inline(never)]
    fn warm_up(&self, w: &WarmUp, now: u64) {
        let cycle = self.period.div(self.elapsed(now));
        if w.last.load(Ordering::Acquire) == cycle {
            return;
        }
        let _serial = self.changes.lock();
        let last = w.last.swap(cycle, Ordering::AcqRel);
        if last == cycle {
            return;
        }
        let full = w.full.load(Ordering::Relaxed) as u32;
        let idle = last == NEVER || (last < cycle && cycle - last > w.cycles);
        if idle {
            w.from.store(cycle, Ordering::Release);
        }
        let from = w.from.load(Ordering::Acquire);
        if from == NEVER {
            return;
        }
        let k = cycle.saturating_sub(from);
        let target = w.target(full, k);
        if k >= w.cycles {
            w.from.store(NEVER, Ordering::Release);
        }
        let old = self.schedule.read();
        let cycle = old.clamp(cycle);
        let current = old.limit_of(cycle);
        if target < current {
            // Lower: every later cycle at the target, and this one's permits
            // beyond it taken away (as `drain` does).
            self.change_limit(target, now);
            let (_, hi) = old.window(cycle);
            self.hot
                .0
                .cursor
                .fetch_max(hi - u64::from(target), Ordering::AcqRel);
        } else if target > current && cycle >= old.from_cycle {
            // Raise: lay this cycle out again with the target, from the same
            // first permit (permits already taken in it stay taken).
            let (lo, _) = old.window(cycle);
            self.schedule.write(Schedule {
                from_cycle: cycle,
                from_index: lo,
                limit: target,
                previous_limit: if cycle > old.from_cycle {
                    old.limit
                } else {
                    old.previous_limit
                },
            });
        }
    }

    /// The limit of cycles from the next one on.
    #[inline]
    pub(crate) fn limit(&self) -> u32 {
        self.schedule.read().limit
    }

    /// The clock reading its cycles are counted from.
    pub(crate) fn origin(&self) -> u64 {
        self.origin
    }

    /// Nanoseconds since creation.
    #[inline]
    fn elapsed(&self, now: u64) -> u64 {
        now.saturating_sub(self.origin)
    }

    /// The cycle `now` falls in: the hint's, if `now` is in it, else computed
    /// (and the hint moved, by an acquire or when there is no warm-up: with
    /// one, only an acquire may move it, so that the first acquire of every
    /// cycle takes the slow path, where the ramp is applied).
    #[inline]
    fn cycle_at(&self, now: u64, acquiring: bool) -> u64 {
        let hint = self.hot.0.hint.load(Ordering::Acquire);
        if self.is_in(hint, now) {
            hint
        } else {
            let cycle = self.period.div(self.elapsed(now));
            if acquiring || self.hot.0.warm.is_none() {
                self.hot.0.hint.store(cycle, Ordering::Release);
            }
            cycle
        }
    }

    /// Whether clock reading `now` falls in cycle `cycle`.
    #[inline]
    fn is_in(&self, cycle: u64, now: u64) -> bool {
        let period = self.period.divisor();
        let start = self.origin.wrapping_add(cycle.wrapping_mul(period));
        now.wrapping_sub(start) < period
    }

    /// Takes `permits` if they are free now, or reserves them if they come free
    /// within `max_wait()` nanoseconds (asked only when a wait is needed).
    /// Consumes nothing when it refuses. `clock` is read once.
    #[cfg(test)]
    pub(crate) fn acquire(
        &self,
        permits: u32,
        clock: impl FnOnce() -> u64,
        max_wait: impl FnMut() -> u64,
    ) -> Result<Grant, Refusal> {
        match self.acquire_fast(permits, clock) {
            Fast::Granted => Ok(Grant::NOW),
            Fast::Slow { now } => self.acquire_at(permits, now, max_wait),
        }
    }

    /// The fast path of [`acquire`](Self::acquire): permits free in the cycle
    /// of the hint. Small enough to return in registers and to inline.
    #[inline]
    pub(crate) fn acquire_fast(&self, permits: u32, clock: impl FnOnce() -> u64) -> Fast {
        let hint = self.hot.0.hint.load(Ordering::Acquire);
        let schedule = self.schedule.read();
        let cycle = schedule.clamp(hint);
        let (lo, hi) = schedule.window(cycle);
        let now = clock();
        if permits > schedule.limit || !self.is_in(cycle, now) {
            return Fast::Slow { now };
        }
        let mut cursor = self.hot.0.cursor.load(Ordering::Acquire);
        loop {
            let end = cursor.max(lo).saturating_add(u64::from(permits));
            if end > hi {
                return Fast::Slow { now };
            }
            match self.hot.0.cursor.compare_exchange_weak(
                cursor,
                end,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Fast::Granted,
                Err(actual) => cursor = actual,
            }
        }
    }

    /// [`acquire`](Self::acquire) at clock reading `now`, without the hint's
    /// fast path.
    #[inline(never)]
    pub(crate) fn acquire_at(
        &self,
        permits: u32,
        now: u64,
        mut max_wait: impl FnMut() -> u64,
    ) -> Result<Grant, Refusal> {
        if let Some(w) = &self.hot.0.warm {
            self.warm_up(w, now);
        }
        let schedule = self.schedule.read();
        if permits > schedule.limit {
            return Err(Refusal::ExceedsLimit {
                limit: schedule.limit,
            });
        }
        let cycle = schedule.clamp(self.cycle_at(now, true));
        let (lo, hi) = schedule.window(cycle);
        let n = u64::from(permits);
        let mut cursor = self.hot.0.cursor.load(Ordering::Acquire);
        loop {
            let start = cursor.max(lo);
            let end = start.saturating_add(n);
            let wait = if end <= hi {
                0
            } else {
                // `permits <= limit`, so the last permit's cycle is the first
                // cycle by whose start all of them are free.
                let ready = schedule.cycle_of(end - 1);
                debug_assert!(
                    ready > cycle,
                    "a permit past hi(c) belongs to a later cycle"
                );
                let wait = ready
                    .saturating_mul(self.period.divisor())
                    .saturating_sub(self.elapsed(now));
                if wait > max_wait() {
                    return Err(Refusal::WaitTooLong { wait });
                }
                wait
            };
            match self.hot.0.cursor.compare_exchange_weak(
                cursor,
                end,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(Grant { wait, start, end }),
                Err(actual) => cursor = actual,
            }
        }
    }

    /// Takes `permits` now only if they fit in the first `share` (in
    /// 1/2^32ths) of the current cycle's permits: a lower class's
    /// admission. Never reserves a later cycle's permits; consumes nothing
    /// when it refuses.
    pub(crate) fn acquire_within(
        &self,
        permits: u32,
        share: crate::criticality::Share,
        now: u64,
    ) -> bool {
        if let Some(w) = &self.hot.0.warm {
            self.warm_up(w, now);
        }
        let schedule = self.schedule.read();
        let cycle = schedule.clamp(self.cycle_at(now, true));
        let (lo, _) = schedule.window(cycle);
        let ceiling = lo.saturating_add(u64::from(crate::criticality::share_of(
            schedule.limit_of(cycle),
            share,
        )));
        let mut cursor = self.hot.0.cursor.load(Ordering::Acquire);
        loop {
            let end = cursor.max(lo).saturating_add(u64::from(permits));
            if end > ceiling {
                return false;
            }
            match self.hot.0.cursor.compare_exchange_weak(
                cursor,
                end,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(actual) => cursor = actual,
            }
        }
    }

    /// Gives back a reservation that was never used, if no permit was taken
    /// after it (otherwise later callers' waits were computed behind it, and it
    /// stays consumed, as in Resilience4j). Returns whether it was given back.
    pub(crate) fn give_back(&self, grant: &Grant) -> bool {
        self.hot
            .0
            .cursor
            .compare_exchange(grant.end, grant.start, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Empties the current cycle (Resilience4j `drainPermissions`): the cursor
    /// moves to the end of the cycle's window, so its free permits are gone and
    /// the next cycle refills as usual. Returns how many permits were free.
    pub(crate) fn drain(&self, now: u64) -> u32 {
        let schedule = self.schedule.read();
        let cycle = schedule.clamp(self.cycle_at(now, false));
        let (lo, hi) = schedule.window(cycle);
        let before = self.hot.0.cursor.fetch_max(hi, Ordering::AcqRel);
        u32::try_from(hi.saturating_sub(before.max(lo))).unwrap_or(u32::MAX)
    }

    /// Permits free in the current cycle; negative while later cycles' permits
    /// are reserved (Resilience4j `availablePermissions`).
    pub(crate) fn available(&self, now: u64) -> i64 {
        let schedule = self.schedule.read();
        let cycle = schedule.clamp(self.cycle_at(now, false));
        let (lo, hi) = schedule.window(cycle);
        let cursor = self.hot.0.cursor.load(Ordering::Acquire).max(lo);
        // Both fit i64: the cursor is at most the timeout's worth of permits
        // ahead of `hi`, and at most one permit per nanosecond.
        (hi as i64).wrapping_sub(cursor as i64)
    }

    /// Nanoseconds from `now` until the cycle holding the next free permit
    /// starts: zero while the current cycle has one.
    pub(crate) fn wait_for_next(&self, now: u64) -> u64 {
        let schedule = self.schedule.read();
        let cycle = schedule.clamp(self.cycle_at(now, false));
        let (lo, hi) = schedule.window(cycle);
        let cursor = self.hot.0.cursor.load(Ordering::Acquire).max(lo);
        if cursor < hi {
            return 0;
        }
        let next = schedule.cycle_of(cursor).max(cycle + 1);
        let start = self
            .origin
            .saturating_add(next.saturating_mul(self.period.divisor()));
        start.saturating_sub(now)
    }

    /// Lays out cycles after the current one with `limit` permits each; the
    /// current cycle keeps its own. Callers serialise changes.
    pub(crate) fn change_limit(&self, limit: u32, now: u64) {
        let old = self.schedule.read();
        let cycle = old.clamp(self.period.div(self.elapsed(now)));
        let next = cycle + 1;
        let (from_index, _) = old.window(next);
        self.schedule.write(Schedule {
            from_cycle: next,
            from_index,
            limit,
            previous_limit: old.limit_of(cycle),
        });
    }

    #[cfg(test)]
    pub(crate) fn schedule(&self) -> Schedule {
        self.schedule.read()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    const SEC: u64 = 1_000_000_000;

    fn no_wait() -> u64 {
        0
    }

    #[test]
    fn the_divider_matches_hardware_division_at_the_edges() {
        let divisors = [
            1,
            2,
            3,
            7,
            500,
            1000,
            SEC,
            u64::MAX / 2,
            u64::MAX / 2 + 1,
            u64::MAX - 1,
            u64::MAX,
        ];
        let numerators = [
            0,
            1,
            2,
            499,
            500,
            501,
            SEC - 1,
            SEC,
            u64::MAX / 3,
            u64::MAX - 1,
            u64::MAX,
        ];
        for d in divisors {
            let div = Divider::new(d);
            for n in numerators {
                assert_eq!(div.div(n), n / d, "{n} / {d}");
            }
        }
    }

    proptest! {
        #[test]
        fn the_divider_matches_hardware_division(d in 1u64.., n: u64) {
            prop_assert_eq!(Divider::new(d).div(n), n / d);
        }

        #[test]
        fn the_divider_matches_hardware_division_for_small_divisors(d in 1u64..100_000, n: u64) {
            prop_assert_eq!(Divider::new(d).div(n), n / d);
        }
    }

    #[test]
    fn crossing_many_cycles_refills_only_up_to_the_limit() {
        let c = Cycles::new(3, SEC, 0);
        assert_eq!(c.available(0), 3);
        c.acquire(2, || 0, no_wait).unwrap();
        assert_eq!(c.available(0), 1);
        assert_eq!(c.available(100 * SEC), 3);
        for _ in 0..3 {
            assert_eq!(c.acquire(1, || 100 * SEC, no_wait).unwrap().wait, 0);
        }
        assert_eq!(
            c.acquire(1, || 100 * SEC, no_wait),
            Err(Refusal::WaitTooLong { wait: SEC })
        );
    }

    #[test]
    fn a_reservation_waits_for_the_cycle_holding_its_last_permit() {
        let c = Cycles::new(2, SEC, 0);
        c.acquire(2, || 0, no_wait).unwrap();
        let err = c.acquire(2, || SEC / 4, no_wait).unwrap_err();
        assert_eq!(
            err,
            Refusal::WaitTooLong {
                wait: SEC - SEC / 4
            }
        );
        assert_eq!(c.available(SEC / 4), 0, "a refusal consumes nothing");
        let g = c.acquire(2, || SEC / 4, || u64::MAX).unwrap();
        assert_eq!(g.wait, SEC - SEC / 4);
        assert_eq!(c.available(SEC / 4), -2);
        let g = c.acquire(1, || SEC / 4, || u64::MAX).unwrap();
        assert_eq!(g.wait, 2 * SEC - SEC / 4);
        assert_eq!(c.available(SEC / 4), -3);
        assert_eq!(c.available(SEC), -1);
        assert_eq!(c.available(2 * SEC), 1);
    }

    #[test]
    fn more_permits_than_the_limit_are_refused_without_consuming_any() {
        let c = Cycles::new(2, SEC, 0);
        assert_eq!(
            c.acquire(3, || 0, || u64::MAX),
            Err(Refusal::ExceedsLimit { limit: 2 })
        );
        assert_eq!(c.available(0), 2);
    }

    #[test]
    fn a_cancelled_reservation_is_given_back_only_while_it_is_the_latest() {
        let c = Cycles::new(1, SEC, 0);
        c.acquire(1, || 0, no_wait).unwrap();
        let first = c.acquire(1, || 0, || u64::MAX).unwrap();
        let second = c.acquire(1, || 0, || u64::MAX).unwrap();
        assert_eq!(c.available(0), -2);
        assert!(!c.give_back(&first), "a later reservation depends on it");
        assert!(c.give_back(&second));
        assert_eq!(c.available(0), -1);
        assert!(c.give_back(&first), "now it is the latest");
        assert_eq!(c.available(0), 0);
    }

    #[test]
    fn a_limit_change_keeps_the_current_cycle_and_applies_from_the_next() {
        let c = Cycles::new(5, SEC, 0);
        c.acquire(1, || 0, no_wait).unwrap();
        c.change_limit(2, SEC / 2);
        assert_eq!(
            c.available(SEC / 2),
            4,
            "the current cycle keeps its permits"
        );
        assert_eq!(
            c.schedule(),
            Schedule {
                from_cycle: 1,
                from_index: 5,
                limit: 2,
                previous_limit: 5
            }
        );
        assert_eq!(c.available(SEC), 2);
        assert_eq!(c.available(7 * SEC), 2);
        c.change_limit(4, 7 * SEC);
        c.change_limit(3, 7 * SEC);
        assert_eq!(c.schedule().previous_limit, 2, "two changes in one cycle");
        assert_eq!(c.available(8 * SEC), 3);
    }
}
