//! Per-thread stripes for values written on hot paths.
//!
//! A counter incremented by every call, shared by every thread, bounces one
//! cache line between cores. Striping gives each thread its own line (picked
//! round-robin on the thread's first use) and sums the stripes when read.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

/// How many stripes a value is spread over.
pub(crate) const STRIPES: usize = 8;

/// One value per stripe, each on cache lines of its own.
#[derive(Debug, Default)]
pub(crate) struct Striped<T>([Padded<T>; STRIPES]);

/// Two cache lines: x86 prefetches lines in adjacent pairs.
#[derive(Debug, Default)]
#[repr(align(128))]
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
            i = NEXT.fetch_add(1, Ordering::Relaxed) % STRIPES;
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
