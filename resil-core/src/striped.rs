//! Per-thread stripes for values written on hot paths.
//!
//! A counter incremented by every call, shared by every thread, bounces one
//! cache line between cores. Striping gives each thread a line of its own and
//! sums the stripes when read.
//!
//! The first two threads to count anything each lease a stripe of their own
//! for as long as they live: no other thread writes it, so they count with a
//! plain load and store instead of a locked read-modify-write. A locked
//! instruction is a full barrier on x86 (it waits for every earlier store to
//! drain), and in a stack of primitives each one stalls the call; a plain
//! store does not. Every other thread counts with a locked add on one of three
//! shared stripes, handed out round-robin, so on a many-core machine the
//! threads beyond the first two spread over as many lines as before leases
//! existed. A thread's lease is given back when it exits, for the next new
//! thread to take.

use std::cell::Cell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};

/// How many stripes a value is spread over: two leased, three shared. Five
/// cache lines (320 bytes) per striped value: every primitive's instance must
/// stay under a kilobyte, and a registry holds thousands of them.
pub(crate) const STRIPES: usize = 5;

/// The leased stripes, one per lease: 128 bytes apart, so x86's
/// adjacent-line prefetcher (which fetches lines in 128-byte pairs) never
/// makes their two owners share a line.
const LEASED_STRIPES: [usize; 2] = [0, 2];

/// The shared stripes, handed out round-robin to threads without a lease.
const SHARED_STRIPES: [usize; 3] = [1, 3, 4];

/// Which leases are taken, process-wide.
static LEASED: [AtomicBool; 2] = [const { AtomicBool::new(false) }; 2];

/// One value per stripe, each on a cache line of its own.
#[derive(Debug, Default)]
pub(crate) struct Striped<T>([Padded<T>; STRIPES]);

/// One cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Padded<T>(T);

/// This thread's stripe of a [`Striped`] value, and whether the thread is its
/// only writer.
pub(crate) struct Mine<'a, T> {
    value: &'a T,
    alone: bool,
}

impl<T> Mine<'_, T> {
    /// Adds one to the counter `field` picks from this stripe: a plain load
    /// and store when this thread is the stripe's only writer, else a locked
    /// add.
    #[inline]
    pub(crate) fn increment(&self, field: impl FnOnce(&T) -> &AtomicU64) {
        self.add(field, 1);
    }

    /// Adds `n` to the counter `field` picks, as [`increment`](Self::increment)
    /// adds one.
    #[inline]
    pub(crate) fn add(&self, field: impl FnOnce(&T) -> &AtomicU64, n: u64) {
        let counter = field(self.value);
        if self.alone {
            // The only writer: no increment can come between the load and the
            // store, and readers see every value in order.
            counter.store(
                counter.load(Ordering::Relaxed).wrapping_add(n),
                Ordering::Relaxed,
            );
        } else {
            counter.fetch_add(n, Ordering::Relaxed);
        }
    }
}

impl<T> Striped<T> {
    /// This thread's stripe.
    #[inline]
    pub(crate) fn mine(&self) -> Mine<'_, T> {
        let i = index();
        Mine {
            value: &self.0[i].0,
            alone: is_leased(i),
        }
    }

    /// Every stripe, for summing.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.0.iter().map(|p| &p.0)
    }
}

impl Striped<AtomicU64> {
    /// Adds one to this thread's stripe.
    #[inline]
    pub(crate) fn increment(&self) {
        self.mine().increment(|c| c);
    }

    /// The sum of every stripe.
    pub(crate) fn sum(&self) -> u64 {
        self.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }
}

/// A counter bumped on a hot path by many threads: each thread counts on a
/// cache line of its own (a plain load and store for the first two threads
/// to count, a locked add on a shared stripe for the others), and reading
/// sums the stripes. 320 bytes.
///
/// ```
/// let requests = resil_core::Counter::default();
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| (0..1000).for_each(|_| requests.increment()));
///     }
/// });
/// assert_eq!(requests.get(), 4000);
/// ```
#[derive(Debug, Default)]
pub struct Counter(Striped<AtomicU64>);

impl Counter {
    /// Adds one.
    #[inline]
    pub fn increment(&self) {
        self.0.increment();
    }

    /// The count: every increment that happened before this read.
    pub fn get(&self) -> u64 {
        self.0.sum()
    }
}

/// A thread's stripe: unset until its first count, then a leased or a shared
/// stripe. Dropped when the thread exits, giving a lease back.
struct Lease(Cell<usize>);

const UNSET: usize = usize::MAX;

/// Whether stripe `i` is written by its leaseholder alone.
#[inline]
fn is_leased(i: usize) -> bool {
    LEASED_STRIPES.contains(&i)
}

impl Drop for Lease {
    fn drop(&mut self) {
        let i = self.0.get();
        if let Some(lease) = LEASED_STRIPES.iter().position(|&s| s == i) {
            // Release: the next thread to take the lease (with an acquiring
            // exchange) sees every count this one stored.
            LEASED[lease].store(false, Ordering::Release);
        }
    }
}

thread_local! {
    static LEASE: Lease = const { Lease(Cell::new(UNSET)) };
}

/// This thread's stripe (taking a lease, or a shared stripe, on the thread's
/// first count). While the thread's locals are being destroyed it counts on a
/// shared stripe: its lease may already be given back.
#[inline]
fn index() -> usize {
    LEASE
        .try_with(|lease| match lease.0.get() {
            UNSET => claim(lease),
            i => i,
        })
        .unwrap_or(SHARED_STRIPES[0])
}

#[cold]
fn claim(lease: &Lease) -> usize {
    static NEXT_SHARED: AtomicUsize = AtomicUsize::new(0);
    let leased = (0..LEASED.len()).find(|&l| {
        LEASED[l]
            .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    });
    let i = match leased {
        Some(l) => LEASED_STRIPES[l],
        None => SHARED_STRIPES[NEXT_SHARED.fetch_add(1, Ordering::Relaxed) % SHARED_STRIPES.len()],
    };
    lease.0.set(i);
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn increments_from_many_threads_add_up_exactly() {
        // More threads than leases: some count alone, the rest share a stripe.
        let counter = Striped::<AtomicU64>::default();
        std::thread::scope(|s| {
            for _ in 0..16 {
                s.spawn(|| {
                    for _ in 0..10_000 {
                        counter.increment();
                    }
                });
            }
        });
        assert_eq!(counter.sum(), 160_000);
    }

    #[test]
    fn leases_pass_from_exiting_threads_to_new_ones_without_losing_a_count() {
        let counter = Striped::<AtomicU64>::default();
        // Waves of threads, each wave more than the leases, every thread
        // exiting (and giving its lease back) before the next wave starts
        // and while other threads of its wave still count.
        for _ in 0..20 {
            std::thread::scope(|s| {
                for _ in 0..6 {
                    s.spawn(|| {
                        for _ in 0..1_000 {
                            counter.increment();
                        }
                    });
                }
            });
        }
        assert_eq!(counter.sum(), 120_000);
    }
}
