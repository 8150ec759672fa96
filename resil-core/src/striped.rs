//! Per-thread stripes for values written on hot paths.
//!
//! A counter incremented by every call, shared by every thread, bounces one
//! cache line between cores. Striping gives each thread its own line (picked
//! round-robin on the thread's first use) and sums the stripes when read.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// How many stripes a value is spread over. Four cache lines (256 bytes) per
/// striped value: every primitive's instance must stay under a kilobyte, and
/// a registry holds thousands of them.
pub(crate) const STRIPES: usize = 4;

/// The order in which threads are handed stripes: the first two threads get
/// lines 128 bytes apart, so x86's adjacent-line prefetcher (which fetches
/// lines in 128-byte pairs) never makes them share; only a third and fourth
/// thread take the lines in between.
const ORDER: [usize; STRIPES] = [0, 2, 1, 3];

/// One value per stripe, each on a cache line of its own.
#[derive(Debug, Default)]
pub(crate) struct Striped<T>([Padded<T>; STRIPES]);

/// One cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Padded<T>(T);

impl<T> Striped<T> {
    /// This thread's stripe.
    #[inline]
    pub(crate) fn mine(&self) -> &T {
        &self.0[index()].0
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
        self.mine().fetch_add(1, Ordering::Relaxed);
    }

    /// The sum of every stripe.
    pub(crate) fn sum(&self) -> u64 {
        self.iter().map(|c| c.load(Ordering::Relaxed)).sum()
    }
}

/// This thread's stripe index, handed out round-robin on first use.
#[inline]
fn index() -> usize {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static INDEX: Cell<usize> = const { Cell::new(usize::MAX) };
    }
    INDEX.with(|index| {
        let mut i = index.get();
        if i == usize::MAX {
            i = ORDER[NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES];
            index.set(i);
        }
        i
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn increments_from_many_threads_add_up_exactly() {
        let counter = Striped::<AtomicU64>::default();
        std::thread::scope(|s| {
            for _ in 0..16 {
                s.spawn(|| {
                    for _ in 0..1000 {
                        counter.increment();
                    }
                });
            }
        });
        assert_eq!(counter.sum(), 16_000);
    }
}
