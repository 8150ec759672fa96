//! A counting global allocator for the tests that count heap use: per
//! thread, the allocations made and the bytes live (what one call or one
//! constructor on this thread costs, whatever other threads do); and for
//! the whole process, the bytes live and their peak (what a family holds
//! when keys are made on one thread and freed on another).
//!
//! Include with `#[path = "support/counting_alloc.rs"] mod counting_alloc;`
//! and install it: `#[global_allocator] static ALLOC: counting_alloc::Counting
//! = counting_alloc::Counting;`.
#![allow(dead_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicI64, Ordering};

/// The allocator: the system's, counted.
pub struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);
static PEAK: AtomicI64 = AtomicI64::new(0);

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
    static LIVE_BYTES: Cell<i64> = const { Cell::new(0) };
}

fn count(bytes: i64, allocations: u64) {
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
    // `try_with`: the allocator also runs while thread-locals are torn down.
    let _ = ALLOCATIONS.try_with(|a| a.set(a.get() + allocations));
    let _ = LIVE_BYTES.try_with(|b| b.set(b.get() + bytes));
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as i64, 1);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        count(-(layout.size() as i64), 0);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count(layout.size() as i64, 1);
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count(new_size as i64 - layout.size() as i64, 1);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// Allocations this thread has made.
pub fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

/// Bytes this thread allocated and has not freed (negative when it freed
/// what another thread allocated).
pub fn live_bytes() -> i64 {
    LIVE_BYTES.with(Cell::get)
}

/// Bytes the whole process holds.
pub fn process_live_bytes() -> i64 {
    LIVE.load(Ordering::Relaxed)
}

/// The most bytes the process held since [`reset_peak`].
pub fn process_peak_bytes() -> i64 {
    PEAK.load(Ordering::Relaxed)
}

/// Starts a new peak at what the process holds now.
pub fn reset_peak() {
    PEAK.store(process_live_bytes(), Ordering::Relaxed);
}
