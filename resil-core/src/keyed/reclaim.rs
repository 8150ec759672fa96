//! Memory reclamation for the keyed maps' lock-free look-ups, with no
//! read-modify-write on a look-up's path.
//!
//! A look-up announces itself in its thread's slot: a sequence number, odd
//! while it reads, moved by plain stores ([`read`]). A writer that unlinked
//! something (an evicted entry, an outgrown table) keeps it in a
//! [`Retired`] list; a batch is sealed with the slots that were odd then,
//! and freed once each of them has moved on: those look-ups are the only
//! ones that may have seen it.
//!
//! For the writer to see a reader's odd number, the reader's store must be
//! ordered before its loads, which on its own takes a full fence (as costly
//! as the lock this replaces). The fence is asymmetric instead (Linux's
//! liburcu, folly's hazard pointers): the rare writer calls `membarrier`
//! (private expedited), which runs a full barrier on every running thread
//! of the process, and the reader needs only a compiler fence. Where
//! `membarrier` is not available (another OS, a seccomp filter), each
//! look-up fences itself.

use std::cell::Cell;
use std::collections::VecDeque;
use std::sync::atomic::{self, AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Once};

use parking_lot::Mutex;

/// Retired things sealed together.
const BATCH: usize = 16;

/// One thread's announcement: odd while it reads.
struct Slot {
    seq: AtomicU64,
}

/// Every thread's slot, for writers to look at when they seal a batch.
static SLOTS: Mutex<Vec<Arc<Slot>>> = Mutex::new(Vec::new());

/// Look-ups under way on threads whose slot is gone (read during the
/// destruction of thread-locals): a writer waits for none to be left.
static UNSLOTTED: AtomicUsize = AtomicUsize::new(0);

/// Whether writers fence every thread with `membarrier` (set once, by
/// [`init`], before a map exists).
static ASYMMETRIC: AtomicBool = AtomicBool::new(false);
static INIT: Once = Once::new();

struct Registered(Arc<Slot>);

impl Registered {
    fn new() -> Self {
        let slot = Arc::new(Slot {
            seq: AtomicU64::new(0),
        });
        SLOTS.lock().push(Arc::clone(&slot));
        Registered(slot)
    }
}

impl Drop for Registered {
    fn drop(&mut self) {
        // `try_with`: a const thread-local without a destructor is there
        // until the thread ends.
        let _ = CACHED.try_with(|c| c.set(std::ptr::null()));
        SLOTS.lock().retain(|s| !Arc::ptr_eq(s, &self.0));
    }
}

thread_local! {
    static SLOT: Registered = Registered::new();
    /// This thread's slot, once registered (null before, and after its
    /// `Registered` is dropped): one load where `SLOT` checks its lazy
    /// state.
    static CACHED: Cell<*const Slot> = const { Cell::new(std::ptr::null()) };
}

/// Registers the process for `membarrier` once; called by every map's
/// constructor, so before any look-up reads [`ASYMMETRIC`].
pub(crate) fn init() {
    INIT.call_once(|| ASYMMETRIC.store(membarrier::register(), Ordering::SeqCst));
}

/// Runs `f`, a look-up: nothing retired while it runs is freed before it
/// returns (or panics).
#[inline]
pub(crate) fn read<R>(f: impl FnOnce() -> R) -> R {
    let cached = CACHED.with(Cell::get);
    if !cached.is_null() {
        // SAFETY: set from this thread's `Registered`, which holds the slot
        // and clears it before letting go.
        return read_in(unsafe { &*cached }, f);
    }
    read_registering(f)
}

/// [`read`] on a thread whose slot is not cached: registered now, or gone
/// (the thread's locals being destroyed).
#[cold]
#[inline(never)]
fn read_registering<R>(f: impl FnOnce() -> R) -> R {
    match SLOT.try_with(|r| Arc::as_ptr(&r.0)) {
        Ok(slot) => {
            let _ = CACHED.try_with(|c| c.set(slot));
            // SAFETY: this thread's slot lives until its thread-locals are
            // destroyed, which cannot happen while this runs.
            read_in(unsafe { &*slot }, f)
        }
        Err(_) => {
            UNSLOTTED.fetch_add(1, Ordering::SeqCst);
            let _done = Done(|| {
                UNSLOTTED.fetch_sub(1, Ordering::Release);
            });
            f()
        }
    }
}

#[inline]
fn read_in<R>(slot: &Slot, f: impl FnOnce() -> R) -> R {
    let seq = slot.seq.load(Ordering::Relaxed);
    if seq & 1 == 1 {
        // Nested in a look-up of this thread: already announced.
        return f();
    }
    slot.seq.store(seq + 1, Ordering::Relaxed);
    if ASYMMETRIC.load(Ordering::Relaxed) {
        atomic::compiler_fence(Ordering::SeqCst);
    } else {
        atomic::fence(Ordering::SeqCst);
    }
    let _done = Done(|| slot.seq.store(seq + 2, Ordering::Release));
    f()
}

/// Runs its closure when dropped (a look-up's end, also when it panics).
struct Done<F: FnMut()>(F);

impl<F: FnMut()> Drop for Done<F> {
    #[inline]
    fn drop(&mut self) {
        (self.0)();
    }
}

/// A batch of retired things and the look-ups that may have seen them.
struct Sealed<T> {
    items: Vec<T>,
    readers: Vec<(Arc<Slot>, u64)>,
    unslotted: bool,
    /// `membarrier` failed: kept until the map is dropped.
    forever: bool,
}

impl<T> Sealed<T> {
    fn done(&self) -> bool {
        !self.forever
            && self
                .readers
                .iter()
                .all(|(slot, seq)| slot.seq.load(Ordering::Acquire) != *seq)
            && (!self.unslotted || UNSLOTTED.load(Ordering::Acquire) == 0)
    }
}

/// Things unlinked from a map, freed once no look-up that may have seen
/// them still reads (see the module docs).
pub(crate) struct Retired<T> {
    pending: Vec<T>,
    sealed: VecDeque<Sealed<T>>,
    len: usize,
}

impl<T> Retired<T> {
    pub(crate) const fn new() -> Self {
        Retired {
            pending: Vec::new(),
            sealed: VecDeque::new(),
            len: 0,
        }
    }

    /// Retired things not freed yet.
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Retires `item` (already unreachable for look-ups that start now).
    pub(crate) fn push(&mut self, item: T) {
        self.pending.push(item);
        self.len += 1;
        if self.pending.len() >= BATCH {
            self.seal();
        }
        self.collect();
    }

    /// Seals what is pending and frees what may go.
    pub(crate) fn flush(&mut self) {
        if !self.pending.is_empty() {
            self.seal();
        }
        self.collect();
    }

    fn seal(&mut self) {
        // A full barrier on every thread that may be reading: each reader's
        // announcement is seen below, or its loads see what was unlinked.
        let fenced = if ASYMMETRIC.load(Ordering::Relaxed) {
            membarrier::fence()
        } else {
            atomic::fence(Ordering::SeqCst);
            true
        };
        let readers = SLOTS
            .lock()
            .iter()
            .filter_map(|slot| {
                let seq = slot.seq.load(Ordering::Acquire);
                (seq & 1 == 1).then(|| (Arc::clone(slot), seq))
            })
            .collect();
        self.sealed.push_back(Sealed {
            items: std::mem::take(&mut self.pending),
            readers,
            unslotted: UNSLOTTED.load(Ordering::Acquire) > 0,
            // `register` succeeded, so this does not fail; were it to,
            // readers that fenced only the compiler would be unprotected.
            forever: !fenced,
        });
    }

    fn collect(&mut self) {
        while self.sealed.front().is_some_and(Sealed::done) {
            if let Some(batch) = self.sealed.pop_front() {
                self.len -= batch.items.len();
            }
        }
    }
}

#[cfg(target_os = "linux")]
mod membarrier {
    const PRIVATE_EXPEDITED: libc::c_long = 1 << 3;
    const REGISTER_PRIVATE_EXPEDITED: libc::c_long = 1 << 4;

    /// Registers the process for private expedited barriers.
    pub(super) fn register() -> bool {
        // SAFETY: `membarrier` takes two integers and touches no memory.
        unsafe { libc::syscall(libc::SYS_membarrier, REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0 }
    }

    /// A full barrier on every running thread of the process.
    pub(super) fn fence() -> bool {
        // SAFETY: as above.
        unsafe { libc::syscall(libc::SYS_membarrier, PRIVATE_EXPEDITED, 0, 0) == 0 }
    }
}

#[cfg(not(target_os = "linux"))]
mod membarrier {
    pub(super) fn register() -> bool {
        false
    }

    pub(super) fn fence() -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// Counts its drops.
    struct Counted(Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Flushes until everything retired is freed: look-ups of other tests
    /// in this process may be under way too, and each ends soon.
    fn drain<T>(retired: &mut Retired<T>) {
        for _ in 0..10_000_000 {
            retired.flush();
            if retired.len() == 0 {
                return;
            }
            std::thread::yield_now();
        }
        panic!("retired things were never freed");
    }

    #[test]
    fn a_retired_batch_waits_for_the_look_ups_that_were_under_way() {
        init();
        let freed = Arc::new(AtomicUsize::new(0));
        let mut retired = Retired::new();
        let (inside, is_inside) = mpsc::channel();
        let (leave, may_leave) = mpsc::channel::<()>();
        let reader = std::thread::spawn(move || {
            read(|| {
                inside.send(()).unwrap();
                may_leave.recv().unwrap();
            })
        });
        is_inside.recv().unwrap();
        for _ in 0..BATCH + 1 {
            retired.push(Counted(Arc::clone(&freed)));
        }
        for _ in 0..100 {
            retired.flush();
        }
        assert_eq!(freed.load(Ordering::Relaxed), 0, "a look-up is under way");
        assert_eq!(retired.len(), BATCH + 1);
        leave.send(()).unwrap();
        reader.join().unwrap();
        drain(&mut retired);
        assert_eq!(freed.load(Ordering::Relaxed), BATCH + 1);
    }

    #[test]
    fn a_look_up_that_panics_or_nests_still_ends() {
        init();
        let ended = || SLOT.with(|r| r.0.seq.load(Ordering::Relaxed) % 2 == 0);
        let caught = std::panic::catch_unwind(|| read(|| read(|| panic!("user code"))));
        assert!(caught.is_err());
        assert!(ended(), "the panicking look-up ended");
        read(|| read(|| assert!(!ended())));
        assert!(ended(), "the nested look-ups ended");
    }
}
