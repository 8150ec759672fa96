//! The lock-free state of the refilling token bucket: one `u64`, the instant
//! the bucket is full again (GCRA, the generic cell rate algorithm).
//!
//! # The state
//!
//! A token bucket holds up to `capacity` permits and gains one every
//! `interval` nanoseconds. Instead of a permit count and a last-refill time
//! (two numbers, one CAS cannot replace both), the state is the single instant
//! `full_at` (nanoseconds since the limiter's creation) at which the bucket,
//! given every permit taken so far, holds `capacity` permits again:
//!
//! * at time `now`, the bucket holds `capacity − (full_at − now) / interval`
//!   permits, rounded down, or `capacity` when `full_at <= now`;
//! * taking `n` permits moves `full_at` to `max(full_at, now) + n × interval`
//!   (a bucket full since long ago starts from `now`: idle time never banks
//!   more than `capacity`);
//! * the permits are free now when the new `full_at` is at most
//!   `now + capacity × interval` (the bucket did not go below zero); otherwise
//!   the caller reserves them and waits the difference, as with the cycle
//!   limiter, if that fits its timeout. A refusal changes nothing.
//!
//! `full_at` only grows, except when a cancelled reservation that is still the
//! latest gives its permits back (one CAS from the value it wrote), so a CAS on
//! it is not fooled by ABA. All arithmetic saturates: a clock reading its
//! maximum, or a clock jump of centuries, still gives an answer.

use std::sync::atomic::{AtomicU64, Ordering};

use super::cycle::{Grant, Refusal};

/// The refilling token bucket's state, the type parameter of
/// [`RefillRateLimiter`](super::RefillRateLimiter) (`Limiter<Bucket>`):
/// `full_at` on its own cache line, plus the fixed shape. Only a
/// [`Limiter`](super::Limiter) uses it.
#[derive(Debug)]
pub struct Bucket {
    full_at: Padded,
    /// Nanoseconds per permit (`limit_refresh_period / limit_for_period`).
    interval: u64,
    capacity: u32,
    /// `capacity × interval`: how far ahead of `now` a full bucket's debt may go.
    burst: u64,
    origin: u64,
}

/// Keeps the hot word on its own cache lines (see `cycle::Padded`).
#[derive(Debug)]
#[repr(align(128))]
struct Padded(AtomicU64);

impl Bucket {
    /// A bucket of `capacity` permits holding `initial` of them at clock
    /// reading `origin`, gaining one every `interval` nanoseconds (`>= 1`).
    pub(crate) fn new(capacity: u32, initial: u32, interval: u64, origin: u64) -> Self {
        debug_assert!(interval >= 1, "the config guarantees a permit per >= 1ns");
        debug_assert!(initial <= capacity, "the config bounds initial_permits");
        let burst = u64::from(capacity).saturating_mul(interval);
        Bucket {
            full_at: Padded(AtomicU64::new(
                u64::from(capacity - initial.min(capacity)).saturating_mul(interval),
            )),
            interval,
            capacity,
            burst,
            origin,
        }
    }

    /// The clock reading its refills are counted from.
    pub(crate) fn origin(&self) -> u64 {
        self.origin
    }

    /// Nanoseconds since creation.
    #[inline]
    fn elapsed(&self, now: u64) -> u64 {
        now.saturating_sub(self.origin)
    }

    /// Takes `permits` if they are free now; reserves them if they come free
    /// within `max_wait()` nanoseconds (asked only when a wait is needed).
    /// Consumes nothing when it refuses.
    #[inline]
    pub(crate) fn acquire(
        &self,
        permits: u32,
        now: u64,
        mut max_wait: impl FnMut() -> u64,
    ) -> Result<Grant, Refusal> {
        if permits > self.capacity {
            return Err(Refusal::ExceedsLimit {
                limit: self.capacity,
            });
        }
        let now = self.elapsed(now);
        let cost = u64::from(permits).saturating_mul(self.interval);
        let free_until = now.saturating_add(self.burst);
        let mut full_at = self.full_at.0.load(Ordering::Acquire);
        loop {
            let start = full_at.max(now);
            let end = start.saturating_add(cost);
            let wait = end.saturating_sub(free_until);
            if wait > 0 && wait > max_wait() {
                return Err(Refusal::WaitTooLong { wait });
            }
            match self.full_at.0.compare_exchange_weak(
                full_at,
                end,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Ok(Grant { wait, start, end }),
                Err(actual) => full_at = actual,
            }
        }
    }

    /// Gives back a reservation that was never used, if nothing was taken after
    /// it. Returns whether it was given back.
    /// Takes `permits` now if, after taking them, the bucket misses at most
    /// `allowed` permits (a class's share of the capacity); never reserves,
    /// and a refusal changes nothing.
    #[inline]
    pub(crate) fn acquire_within(&self, permits: u32, allowed: u32, now: u64) -> bool {
        let now = self.elapsed(now);
        let cost = u64::from(permits).saturating_mul(self.interval);
        let limit =
            now.saturating_add(u64::from(allowed.min(self.capacity)).saturating_mul(self.interval));
        let mut full_at = self.full_at.0.load(Ordering::Acquire);
        loop {
            let end = full_at.max(now).saturating_add(cost);
            if end > limit {
                return false;
            }
            match self.full_at.0.compare_exchange_weak(
                full_at,
                end,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(actual) => full_at = actual,
            }
        }
    }

    pub(crate) fn give_back(&self, grant: &Grant) -> bool {
        self.full_at
            .0
            .compare_exchange(grant.end, grant.start, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
    }

    /// Empties the bucket at `now` (Resilience4j `drainPermissions`); returns
    /// how many permits were free and are now gone.
    pub(crate) fn drain(&self, now: u64) -> u32 {
        let now = self.elapsed(now);
        let empty = now.saturating_add(self.burst);
        let before = self.full_at.0.fetch_max(empty, Ordering::AcqRel);
        self.permits_at(before, now).max(0) as u32
    }

    /// Permits free at `now`; negative while reservations wait for permits
    /// still to come (Resilience4j `availablePermissions`).
    pub(crate) fn available(&self, now: u64) -> i64 {
        self.permits_at(self.full_at.0.load(Ordering::Acquire), self.elapsed(now))
    }

    /// `capacity − ceil((full_at − now) / interval)`, in `i64` (the debt is
    /// bounded by the timeout, the capacity by `u32`).
    fn permits_at(&self, full_at: u64, now: u64) -> i64 {
        let debt = full_at.saturating_sub(now);
        let missing = debt.div_ceil(self.interval);
        i64::from(self.capacity) - i64::try_from(missing).unwrap_or(i64::MAX)
    }

    /// The bucket's capacity.
    #[inline]
    pub(crate) fn capacity(&self) -> u32 {
        self.capacity
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEVER: fn() -> u64 = || 0;

    #[test]
    fn a_full_bucket_grants_its_capacity_then_one_permit_per_interval() {
        let b = Bucket::new(3, 3, 100, 0);
        assert_eq!(b.available(0), 3);
        for _ in 0..3 {
            assert_eq!(b.acquire(1, 0, NEVER).unwrap().wait, 0);
        }
        assert_eq!(
            b.acquire(1, 0, NEVER),
            Err(Refusal::WaitTooLong { wait: 100 })
        );
        assert_eq!(b.available(99), 0);
        assert_eq!(b.available(100), 1);
        assert!(b.acquire(1, 100, NEVER).is_ok());
        // Idle for ages: the bucket refills to its capacity, no further.
        assert_eq!(b.available(1_000_000), 3);
    }

    #[test]
    fn initial_permits_start_the_bucket_part_full() {
        let b = Bucket::new(10, 2, 50, 1_000);
        assert_eq!(b.available(1_000), 2);
        assert_eq!(b.available(1_050), 3);
        assert_eq!(Bucket::new(10, 0, 50, 0).available(0), 0);
    }

    #[test]
    fn a_reservation_waits_for_its_permits_and_can_be_given_back_while_latest() {
        let b = Bucket::new(2, 0, 100, 0);
        let first = b.acquire(1, 0, || 1_000).unwrap();
        assert_eq!(first.wait, 100);
        let second = b.acquire(1, 0, || 1_000).unwrap();
        assert_eq!(second.wait, 200);
        assert_eq!(b.available(0), -2);
        assert!(!b.give_back(&first), "a later reservation sits behind it");
        assert!(b.give_back(&second));
        assert_eq!(b.available(0), -1);
    }

    #[test]
    fn a_share_takes_only_from_the_top_of_the_bucket() {
        // Capacity 10: a class allowed 5 missing permits takes 5 of a full
        // bucket, then nothing until the bucket refills above half.
        let b = Bucket::new(10, 10, 100, 0);
        for _ in 0..5 {
            assert!(b.acquire_within(1, 5, 0));
        }
        assert!(!b.acquire_within(1, 5, 0));
        assert_eq!(b.available(0), 5, "a refusal takes nothing");
        // The full share can still take the rest, then waits as usual.
        for _ in 0..5 {
            assert_eq!(b.acquire(1, 0, NEVER).unwrap().wait, 0);
        }
        assert!(!b.acquire_within(1, 5, 0));
        // 6 permits later the bucket misses 4: one more for the share.
        assert!(b.acquire_within(1, 5, 600));
        assert!(!b.acquire_within(1, 5, 600));
        assert!(!b.acquire_within(2, 6, 600), "two would miss 7");
    }

    #[test]
    fn more_permits_than_the_capacity_are_refused_outright() {
        let b = Bucket::new(4, 4, 1, 0);
        assert_eq!(
            b.acquire(5, 0, || u64::MAX),
            Err(Refusal::ExceedsLimit { limit: 4 })
        );
        assert_eq!(b.available(0), 4);
    }

    #[test]
    fn drain_empties_the_bucket_and_reports_what_it_took() {
        let b = Bucket::new(5, 5, 10, 0);
        b.acquire(2, 0, NEVER).unwrap();
        assert_eq!(b.drain(0), 3);
        assert_eq!(b.available(0), 0);
        assert_eq!(b.drain(0), 0);
        assert_eq!(b.available(10), 1);
    }

    #[test]
    fn any_clock_reading_gives_an_answer() {
        // Every product saturates: no overflow, no panic, no spin.
        let b = Bucket::new(u32::MAX, u32::MAX, u64::MAX, 0);
        assert_eq!(b.acquire(1, u64::MAX, NEVER).map(|g| g.wait), Ok(0));
        assert_eq!(b.available(u64::MAX), i64::from(u32::MAX));
        // A clock reading before the origin counts as the origin.
        let b = Bucket::new(1, 1, 1, u64::MAX);
        assert_eq!(b.acquire(1, 0, NEVER).map(|g| g.wait), Ok(0));
        assert_eq!(
            b.acquire(1, 5, NEVER),
            Err(Refusal::WaitTooLong { wait: 1 })
        );
    }
}
