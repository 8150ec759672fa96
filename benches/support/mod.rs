//! Shared bench support: a counting global allocator, so each bench can report
//! heap allocations per call next to its timings, and a compact criterion setup.
//!
//! Let an `iter` closure *return* what it measures: criterion already passes
//! the value through its own black box, reading it word by word. Wrapping it in
//! `std::hint::black_box` as well stores a two-word result and reads it back as
//! one 16-byte load, which stalls on store forwarding (about 6 ns on this
//! project's machines) and distorts the smallest timings most: it once made a
//! bare call look slower than the same call behind a time limiter.
//!
//! Include with `mod support;` and install the allocator in the bench's root:
//! `#[global_allocator] static ALLOC: support::CountingAllocator = support::CountingAllocator;`
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);

/// Counts every allocation (and reallocation) made through it, then defers to
/// the system allocator. The counter is a relaxed atomic: it distorts timings a
/// little, equally for every contender in the same run.
pub struct CountingAllocator;

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Heap allocations per call of `f`, averaged over `calls` calls after one
/// warm-up call (which may initialise lazily allocated state).
pub fn allocations_per_call(calls: u64, mut f: impl FnMut()) -> f64 {
    f();
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    for _ in 0..calls {
        f();
    }
    let after = ALLOCATIONS.load(Ordering::Relaxed);
    (after - before) as f64 / calls as f64
}

/// Prints one allocation figure in a fixed, greppable format.
pub fn report_allocations(what: &str, per_call: f64) {
    println!("allocations per call: {what}: {per_call:.3}");
}

/// Whether this run measures (`cargo bench` passes `--bench`) rather than
/// checks that the bench works (`cargo test --benches`, as `scripts/test`
/// runs every target): the extra reports that repeat a contender for
/// minutes (interleaved rounds, bytes per instance) run only when measuring.
pub fn measuring() -> bool {
    std::env::args().any(|a| a == "--bench")
}

/// Criterion settings that keep a whole bench file to a minute or two on a
/// 2-core machine while still giving stable medians.
pub fn criterion() -> criterion::Criterion {
    criterion::Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(40)
        .configure_from_args()
}

/// Runs `per_thread(iters)` on `threads` threads at once and returns the wall
/// time of the slowest, for `Bencher::iter_custom`: criterion then reports the
/// time per iteration of *each* thread, so throughput = threads / time.
pub fn on_threads(threads: usize, iters: u64, per_thread: impl Fn(u64) + Sync) -> Duration {
    let barrier = std::sync::Barrier::new(threads);
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|_| {
                s.spawn(|| {
                    barrier.wait();
                    let start = std::time::Instant::now();
                    per_thread(iters);
                    start.elapsed()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("bench thread panicked"))
            .max()
            .unwrap_or_default()
    })
}

/// Times `b` against `a` in alternating rounds of a few thousand calls each
/// (which one goes first alternates too), so both see the same load on a
/// shared machine, and prints the medians of their times per call and of
/// the per-round ratio `b / a` with its quartiles, as
/// `<group>: <b> / <a>, interleaved: …`. Only when measuring ([`measuring`]).
pub fn interleaved_ratio<RA, RB>(
    group: &str,
    (a_name, mut a): (&str, impl FnMut() -> RA),
    (b_name, mut b): (&str, impl FnMut() -> RB),
) {
    if !measuring() {
        return;
    }
    const ROUNDS: usize = 301;
    const CALLS: u32 = 4_000;
    fn time<R>(f: &mut impl FnMut() -> R) -> f64 {
        let start = std::time::Instant::now();
        for _ in 0..CALLS {
            std::hint::black_box(f());
        }
        start.elapsed().as_secs_f64() * 1e9 / f64::from(CALLS)
    }
    let mut rounds: Vec<(f64, f64)> = (0..ROUNDS)
        .map(|round| {
            if round % 2 == 0 {
                let ta = time(&mut a);
                (ta, time(&mut b))
            } else {
                let tb = time(&mut b);
                (time(&mut a), tb)
            }
        })
        .collect();
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        (v[ROUNDS / 4], v[ROUNDS / 2], v[3 * ROUNDS / 4])
    };
    let (_, ta, _) = median(&mut rounds.iter().map(|r| r.0).collect());
    let (_, tb, _) = median(&mut rounds.iter().map(|r| r.1).collect());
    let (q1, ratio, q3) = median(&mut rounds.iter_mut().map(|r| r.1 / r.0).collect());
    println!(
        "{group}: {b_name} / {a_name}, interleaved: median {ratio:.3}x (quartiles {q1:.3}x-{q3:.3}x); \
         {tb:.1} ns vs {ta:.1} ns a call"
    );
}
