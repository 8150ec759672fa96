//! The bounded map behind every keyed family: sharded look-ups, a global
//! budget of keys, CLOCK (second-chance) replacement and idle eviction.
//!
//! * A look-up of an existing key hashes it (foldhash's quality hasher with a
//!   per-family random seed, so keys cannot be chosen offline to land in one
//!   bucket), announces itself in its thread's slot (two plain stores, see
//!   [`reclaim`], where a shard's read lock took two read-modify-writes on
//!   a line every thread shares), probes its shard's open-addressed table
//!   of entry pointers with plain loads, clones the entry's `Arc` (or runs
//!   the caller's closure on it, [`Map::with`]) and marks it used: no
//!   allocation, no lock.
//! * Writers (a new key, an eviction, a table growing) take their shard's
//!   mutex. A removed entry and an outgrown table are retired, freed once
//!   no look-up that may have seen them is running. Deletion shifts the
//!   entries behind the hole back (no tombstones), so a look-up racing
//!   with it may miss its key: a miss is confirmed under the mutex before
//!   a key is created.
//! * Eviction never races a look-up into a wrong answer. A look-up that
//!   clones the `Arc` and the eviction's check of the reference count are a
//!   Dekker pair (the entry's `linked` flag, each side fenced): either the
//!   eviction sees the new reference and keeps the entry, or the look-up
//!   sees the flag down and takes the mutex. A closure run without a
//!   reference ([`Map::with`]) races the family's `can_go`, which is the last
//!   check and may retire the state for good (the limiter swaps its cursor
//!   for a mark its acquire recognises and answers "gone", never a permit).
//! * A new key reserves one unit of the family's budget (`max_keys`); when
//!   the budget is spent, the replacement clock turns: the oldest entry of
//!   the queue is looked at, a used one gets a second chance (its mark is
//!   cleared and it goes to the back), an unused one is evicted if it holds
//!   no state that matters. At most [`SCAN`] entries are looked at; when none
//!   of them may go, the new key is refused (counted), never an entry with
//!   state dropped. So is a new key of a full family while more than
//!   `max_keys / 128` evicted entries wait to be freed (a look-up's thread
//!   descheduled mid-look-up holds them all back), which keeps a key flood
//!   within the family's memory bound.
//! * An entry is evictable only when nobody holds it (its `Arc` is held by
//!   the map and the queue alone: no handle, no permit, no waiting call) and
//!   its state says so (the family's `can_go`).
//! * Idle entries (unused for `idle_ttl`) are evicted by a pass over the
//!   queue that runs at most every `idle_ttl / 4`, on a new key's insertion
//!   or when asked ([`Map::evict_idle`]).

use std::collections::VecDeque;
use std::marker::PhantomData;
use std::sync::atomic::{self, AtomicBool, AtomicPtr, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use foldhash::quality::RandomState;
use parking_lot::Mutex;

use super::reclaim::{self, Retired};
use super::sketch::Sketch;
use super::{Key, KeyedConfig, StoredKey};

/// How many queue entries one replacement looks at before it refuses the new
/// key.
pub(crate) const SCAN: usize = 64;

/// Shards of the look-up table (a power of two).
const SHARDS: usize = 16;

/// Whether dropping a key's state at a clock reading loses nothing that
/// matters (no permits out, no reservation, no OPEN wait still running).
/// Asked last, under the shard's mutex, with no reference to the entry
/// left but the map's: when it answers `true` the entry goes, so it may
/// retire the state for good against look-ups that hold no reference
/// ([`Map::with`]).
pub(crate) trait CanGo<S>: Fn(&S, u64) -> bool + Copy {}
impl<S, F: Fn(&S, u64) -> bool + Copy> CanGo<S> for F {}

/// One key's entry.
pub(crate) struct Entry<S> {
    hash: u64,
    pub(crate) key: StoredKey,
    pub(crate) state: S,
    /// Clock reading of the last use (moved at most once a millisecond).
    last_used: AtomicU64,
    /// Clock reading at creation.
    pub(crate) since: u64,
    /// Used since the replacement clock last passed (second chance).
    referenced: AtomicBool,
    /// In its shard's table; lowered by an eviction while it checks the
    /// reference count (see the module docs).
    linked: AtomicBool,
    /// Look-ups of this key, counted without a read-modify-write (a load
    /// and a store): exact on one thread, an undercount when threads race
    /// on one key — enough to rank keys.
    calls: AtomicU64,
    /// Acquires this key's instance refused.
    pub(crate) refusals: AtomicU64,
}

impl<S> Entry<S> {
    /// Counts one refusal of this key's instance.
    #[cold]
    pub(crate) fn refused(&self) {
        self.refusals.fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    fn touch(&self, now: u64) {
        let calls = self.calls.load(Ordering::Relaxed);
        self.calls.store(calls.wrapping_add(1), Ordering::Relaxed);
        if !self.referenced.load(Ordering::Relaxed) {
            self.referenced.store(true, Ordering::Relaxed);
        }
        if now.saturating_sub(self.last_used.load(Ordering::Relaxed)) >= 1_000_000 {
            self.last_used.store(now, Ordering::Relaxed);
        }
    }
}

/// One shard: an open-addressed table (linear probing, at most half full)
/// of entry pointers, each holding one count of its entry's `Arc`; look-ups
/// read it announced ([`reclaim::read`]), writers hold `write`.
#[repr(align(128))]
struct Shard<S> {
    /// A leaked `Box` (null before the first key); an outgrown one is
    /// retired.
    table: AtomicPtr<Table<S>>,
    /// Serialises the shard's writers; the entries in the table.
    write: Mutex<usize>,
    _entries: PhantomData<Arc<Entry<S>>>,
}

/// A shard's cells (a power of two of them, at least one always empty, so
/// a probe ends).
struct Table<S> {
    mask: usize,
    cells: Box<[AtomicPtr<Entry<S>>]>,
}

impl<S> Table<S> {
    fn new(cells: usize) -> Self {
        Table {
            mask: cells - 1,
            cells: (0..cells)
                .map(|_| AtomicPtr::new(std::ptr::null_mut()))
                .collect(),
        }
    }

    /// The entry of `key`. Racing a writer it may miss (a cell shifted
    /// behind it), never return another key's entry.
    #[inline(always)]
    fn probe<Q: Key + ?Sized>(&self, hash: u64, key: &Q) -> Option<&Entry<S>> {
        let mut i = hash as usize & self.mask;
        for _ in 0..=self.mask {
            let p = self.cells[i].load(Ordering::Acquire);
            if p.is_null() {
                return None;
            }
            // SAFETY: an entry leaves the table before its count is retired,
            // given back after every look-up that may have read the pointer
            // (the caller is inside `reclaim::read` or holds `write`).
            let entry = unsafe { &*p };
            if entry.hash == hash && key.matches(&entry.key) {
                return Some(entry);
            }
            i = (i + 1) & self.mask;
        }
        None
    }

    /// Where `entry` is (under `write`).
    fn position(&self, entry: *const Entry<S>) -> Option<usize> {
        // SAFETY: under `write`, every cell's entry is alive.
        let hash = unsafe { (*entry).hash };
        let mut i = hash as usize & self.mask;
        for _ in 0..=self.mask {
            let p = self.cells[i].load(Ordering::Relaxed);
            if p.is_null() {
                return None;
            }
            if std::ptr::eq(p, entry) {
                return Some(i);
            }
            i = (i + 1) & self.mask;
        }
        None
    }

    /// Puts `entry` in the first empty cell from its home (under `write`,
    /// with room).
    fn place(&self, entry: *mut Entry<S>) {
        // SAFETY: the caller holds a count of it.
        let hash = unsafe { (*entry).hash };
        let mut i = hash as usize & self.mask;
        while !self.cells[i].load(Ordering::Relaxed).is_null() {
            i = (i + 1) & self.mask;
        }
        self.cells[i].store(entry, Ordering::Release);
    }

    /// Empties cell `i`, shifting back the entries of the probe run behind
    /// it that may fill the hole (under `write`). Each moved entry is
    /// written to its new cell before its old one is overwritten.
    fn remove_at(&self, mut i: usize) {
        let mut j = i;
        loop {
            j = (j + 1) & self.mask;
            let p = self.cells[j].load(Ordering::Relaxed);
            if p.is_null() {
                self.cells[i].store(std::ptr::null_mut(), Ordering::Release);
                return;
            }
            // SAFETY: under `write`, every cell's entry is alive.
            let home = unsafe { (*p).hash } as usize & self.mask;
            let stays = if i <= j {
                i < home && home <= j
            } else {
                i < home || home <= j
            };
            if !stays {
                self.cells[i].store(p, Ordering::Release);
                i = j;
            }
        }
    }
}

impl<S> Shard<S> {
    /// The shard's table, for a look-up (inside [`reclaim::read`]) or a
    /// writer (holding `write`).
    #[inline]
    fn table(&self) -> Option<&Table<S>> {
        // SAFETY: an outgrown table is retired, freed after every look-up
        // that may have loaded it; writers replace it under `write`.
        unsafe { self.table.load(Ordering::Acquire).as_ref() }
    }

    /// Makes room for one more entry, keeping the table at most half full
    /// (under `write`, which holds `len`); the outgrown table, which
    /// look-ups under way may still read, for the caller to retire.
    fn reserve_cell(&self, len: usize) -> (&Table<S>, Option<Box<Table<S>>>) {
        let cells = self.table().map_or(0, |t| t.mask + 1);
        if (len + 1) * 2 <= cells {
            if let Some(table) = self.table() {
                return (table, None);
            }
        }
        let mut size = cells.max(8);
        while (len + 1) * 2 > size {
            size *= 2;
        }
        let table = Table::new(size);
        if let Some(old) = self.table() {
            for cell in old.cells.iter() {
                let p = cell.load(Ordering::Relaxed);
                if !p.is_null() {
                    table.place(p);
                }
            }
        }
        let old = self
            .table
            .swap(Box::into_raw(Box::new(table)), Ordering::AcqRel);
        // SAFETY: the old table was a leaked `Box`, now unreachable from the
        // shard (its cells' counts moved to the new table).
        let old = (!old.is_null()).then(|| unsafe { Box::from_raw(old) });
        // SAFETY: just stored, and only writers under `write` replace it.
        (unsafe { &*self.table.load(Ordering::Relaxed) }, old)
    }
}

impl<S> Drop for Shard<S> {
    fn drop(&mut self) {
        let table = *self.table.get_mut();
        if table.is_null() {
            return;
        }
        // SAFETY: dropping, the shard has no look-up left; the table is a
        // leaked `Box` whose cells each hold a count of their entry.
        let table = unsafe { Box::from_raw(table) };
        for cell in table.cells.iter() {
            let p = cell.load(Ordering::Relaxed);
            if !p.is_null() {
                // SAFETY: as above.
                drop(unsafe { Arc::from_raw(p) });
            }
        }
    }
}

/// What a map retires: an evicted entry's table count, an outgrown table.
enum Garbage<S> {
    Entry(#[allow(dead_code)] Arc<Entry<S>>),
    Table(#[allow(dead_code)] Box<Table<S>>),
}

/// A full fence after an `Arc`'s count was raised: its read-modify-write is
/// a `lock`ed instruction on x86-64, a full barrier already, so only the
/// compiler must be kept from moving the next load above it (the hack
/// crossbeam-epoch's pin uses); elsewhere, a fence.
#[inline(always)]
fn fence_after_count() {
    if cfg!(target_arch = "x86_64") {
        atomic::compiler_fence(Ordering::SeqCst);
    } else {
        atomic::fence(Ordering::SeqCst);
    }
}

/// Counters of a family's keys.
#[derive(Debug, Default)]
pub(crate) struct Counts {
    pub(crate) created: AtomicU64,
    pub(crate) evicted_idle: AtomicU64,
    pub(crate) evicted_full: AtomicU64,
    pub(crate) refused: AtomicU64,
}

/// The bounded map (see the module docs).
pub(crate) struct Map<S> {
    shards: Box<[Shard<S>]>,
    /// Every entry, in replacement-clock order.
    queue: Mutex<VecDeque<Arc<Entry<S>>>>,
    hasher: RandomState,
    /// Entries plus reservations of insertions under way.
    len: AtomicUsize,
    max_keys: AtomicUsize,
    idle_ttl: AtomicU64,
    /// The bounds as configured (`max_keys` and `idle_ttl` above are their
    /// hot-path copies), for a family's `keyed_config`.
    bounds: Mutex<KeyedConfig>,
    next_idle_pass: AtomicU64,
    pub(crate) counts: Counts,
    /// The counts of evicted keys (see [`Evicted`]).
    evicted: Mutex<Evicted>,
    /// Evicted entries and outgrown tables not freed yet: a look-up under
    /// way may still read them (see [`Map::may_evict`]). A leaf lock.
    retired: Mutex<Retired<Garbage<S>>>,
}

/// How many evicted keys each summary of a family keeps.
const SKETCHED_KEYS: usize = 64;

/// The calls and refusals of the keys a family evicted, summarised in
/// bounded memory; touched by an eviction and by the report, never by a
/// call. Locked inside a shard's write lock (a leaf: it takes no other).
struct Evicted {
    calls: Sketch,
    refusals: Sketch,
}

impl<S: Send + Sync + 'static> Map<S> {
    pub(crate) fn new(bounds: KeyedConfig) -> Self {
        let (max_keys, idle_ttl_nanos) =
            (bounds.max_keys(), crate::clock::nanos(bounds.idle_ttl()));
        reclaim::init();
        Map {
            shards: (0..SHARDS)
                .map(|_| Shard {
                    table: AtomicPtr::new(std::ptr::null_mut()),
                    write: Mutex::new(0),
                    _entries: PhantomData,
                })
                .collect(),
            queue: Mutex::new(VecDeque::new()),
            hasher: RandomState::default(),
            len: AtomicUsize::new(0),
            max_keys: AtomicUsize::new(max_keys.max(1)),
            idle_ttl: AtomicU64::new(idle_ttl_nanos),
            bounds: Mutex::new(bounds),
            next_idle_pass: AtomicU64::new(0),
            counts: Counts::default(),
            evicted: Mutex::new(Evicted {
                calls: Sketch::new(SKETCHED_KEYS),
                refusals: Sketch::new(SKETCHED_KEYS),
            }),
            retired: Mutex::new(Retired::new()),
        }
    }

    /// New bounds, as a reload gives them; a map holding more than
    /// `max_keys` keys evicts down to it as new keys come.
    pub(crate) fn set_bounds(&self, bounds: KeyedConfig) {
        let mut held = self.bounds.lock();
        self.max_keys
            .store(bounds.max_keys().max(1), Ordering::Relaxed);
        self.idle_ttl
            .store(crate::clock::nanos(bounds.idle_ttl()), Ordering::Relaxed);
        self.next_idle_pass.store(0, Ordering::Relaxed);
        *held = bounds;
    }

    /// The bounds as configured.
    pub(crate) fn bounds(&self) -> KeyedConfig {
        *self.bounds.lock()
    }

    pub(crate) fn max_keys(&self) -> usize {
        self.max_keys.load(Ordering::Relaxed)
    }

    pub(crate) fn idle_ttl(&self) -> u64 {
        self.idle_ttl.load(Ordering::Relaxed)
    }

    /// Keys held now.
    pub(crate) fn len(&self) -> usize {
        self.queue.lock().len()
    }

    #[inline]
    fn shard(&self, hash: u64) -> &Shard<S> {
        // The table uses the low bits and the top 7; the shard takes others.
        &self.shards[(hash >> 40) as usize & (SHARDS - 1)]
    }

    /// The entry of `key`, if the family holds it (marked used at `now`).
    /// `None` may also be a miss racing a writer: [`get_or_insert`]
    /// confirms it under the shard's mutex.
    ///
    /// [`get_or_insert`]: Self::get_or_insert
    #[inline]
    pub(crate) fn find<Q: Key + ?Sized>(&self, key: &Q, now: u64) -> Option<Arc<Entry<S>>> {
        let hash = key.hash_by(&self.hasher);
        reclaim::read(|| {
            let entry = self.shard(hash).table()?.probe(hash, key)?;
            // SAFETY: inside `read`, the entry is alive (its table count is
            // retired, not given back, while this reads), so its count may
            // be raised.
            let held = unsafe {
                Arc::increment_strong_count(entry);
                Arc::from_raw(entry)
            };
            // Dekker with `unlink`: it lowers `linked`, fences, then reads
            // the count; this raised the count, fences, then reads `linked`.
            fence_after_count();
            if !entry.linked.load(Ordering::Relaxed) {
                // Being evicted: the caller asks again under the mutex.
                return None;
            }
            entry.touch(now);
            Some(held)
        })
    }

    /// Runs `f` on the entry of `key` inside [`reclaim::read`], if the
    /// family holds it (marked used at `now`): no reference count, nothing held
    /// after. The entry may be being evicted meanwhile: `f` answers `None`
    /// when it finds its state retired (see [`CanGo`]), and so does this,
    /// as for a key the family does not hold.
    #[inline]
    pub(crate) fn with<Q: Key + ?Sized, R>(
        &self,
        key: &Q,
        now: u64,
        f: impl FnOnce(&Entry<S>) -> Option<R>,
    ) -> Option<R> {
        let hash = key.hash_by(&self.hasher);
        reclaim::read(|| {
            let entry = self.shard(hash).table()?.probe(hash, key)?;
            entry.touch(now);
            f(entry)
        })
    }

    /// The entry of `key`, created with `make` if the family does not hold
    /// it; `None` when the family is full of entries that may not go.
    #[inline]
    pub(crate) fn get_or_insert<Q: Key + ?Sized>(
        &self,
        key: &Q,
        now: u64,
        make: impl FnOnce(&StoredKey) -> S,
        can_go: impl CanGo<S>,
    ) -> Option<Arc<Entry<S>>> {
        match self.find(key, now) {
            Some(entry) => Some(entry),
            None => self.insert(key, now, make, can_go),
        }
    }

    /// The entry of `key` under its shard's mutex (a look-up's miss
    /// confirmed: no eviction runs meanwhile).
    fn find_locked<Q: Key + ?Sized>(
        &self,
        shard: &Shard<S>,
        hash: u64,
        key: &Q,
        now: u64,
    ) -> Option<Arc<Entry<S>>> {
        let entry = shard.table()?.probe(hash, key)?;
        entry.touch(now);
        // SAFETY: under `write`, the table's count keeps it alive.
        Some(unsafe {
            Arc::increment_strong_count(entry);
            Arc::from_raw(entry)
        })
    }

    #[cold]
    #[inline(never)]
    fn insert<Q: Key + ?Sized>(
        &self,
        key: &Q,
        now: u64,
        make: impl FnOnce(&StoredKey) -> S,
        can_go: impl CanGo<S>,
    ) -> Option<Arc<Entry<S>>> {
        let hash = key.hash_by(&self.hasher);
        let shard = self.shard(hash);
        {
            let _write = shard.write.lock();
            if let Some(entry) = self.find_locked(shard, hash, key, now) {
                // The look-up missed it racing a writer.
                return Some(entry);
            }
        }
        if now >= self.next_idle_pass.load(Ordering::Relaxed) {
            self.evict_idle(now, can_go);
        }
        if !self.reserve(now, can_go) {
            self.counts.refused.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let stored = key.store();
        let mut len = shard.write.lock();
        if let Some(entry) = self.find_locked(shard, hash, key, now) {
            // Another thread created it meanwhile.
            self.len.fetch_sub(1, Ordering::Relaxed);
            return Some(entry);
        }
        let entry = Arc::new(Entry {
            hash,
            state: make(&stored),
            key: stored,
            last_used: AtomicU64::new(now),
            since: now,
            referenced: AtomicBool::new(false),
            linked: AtomicBool::new(true),
            calls: AtomicU64::new(1),
            refusals: AtomicU64::new(0),
        });
        // At most half full, grown by doubling and never shrunk: a key
        // flood's churn (no tombstones) never grows a table past twice the
        // most keys it held.
        let (table, outgrown) = shard.reserve_cell(*len);
        table.place(Arc::into_raw(Arc::clone(&entry)).cast_mut());
        *len += 1;
        drop(len);
        if let Some(old) = outgrown {
            // Sealed at once: a family growing to its size would otherwise
            // hold the tables it outgrew until a batch fills.
            let mut retired = self.retired.lock();
            retired.push(Garbage::Table(old));
            retired.flush();
        }
        // Locks are taken queue → shard (replacement), never the other way:
        // the entry is queued once the shard is unlocked. Until then no
        // replacement sees it, which only spares it.
        self.queue.lock().push_back(Arc::clone(&entry));
        self.counts.created.fetch_add(1, Ordering::Relaxed);
        Some(entry)
    }

    /// One unit of the budget, evicting an entry if it is spent.
    fn reserve(&self, now: u64, can_go: impl CanGo<S>) -> bool {
        let mut len = self.len.load(Ordering::Relaxed);
        loop {
            if len < self.max_keys() {
                match self.len.compare_exchange_weak(
                    len,
                    len + 1,
                    Ordering::Relaxed,
                    Ordering::Relaxed,
                ) {
                    Ok(_) => return true,
                    Err(now_len) => len = now_len,
                }
            } else if self.may_evict() && self.replace_one(now, can_go) {
                // The evicted entry's unit is ours.
                return true;
            } else {
                return false;
            }
        }
    }

    /// Whether evicted entries waiting to be freed leave room for one more:
    /// at most `max_keys / 128` (at least 64) of them, so a look-up that
    /// stays announced (its thread descheduled mid-look-up on a loaded machine)
    /// cannot let a key flood's evictions pile up past the family's memory
    /// bound; new keys are refused meanwhile. Past the limit, what is
    /// pending is sealed and what may go is freed before the answer.
    fn may_evict(&self) -> bool {
        let limit = (self.max_keys() / 128).max(64);
        let mut retired = self.retired.lock();
        if retired.len() < limit {
            return true;
        }
        retired.flush();
        retired.len() < limit
    }

    /// Turns the replacement clock until one entry is evicted (its budget
    /// unit passes to the caller), at most twice [`SCAN`] steps: two laps of
    /// a family of up to [`SCAN`] keys, so that one whose keys were all used
    /// since the clock last passed them (each spared once, its mark cleared)
    /// still takes a new key in place of one that may go, rather than
    /// refusing it.
    fn replace_one(&self, now: u64, can_go: impl CanGo<S>) -> bool {
        let mut queue = self.queue.lock();
        for _ in 0..2 * SCAN.min(queue.len()) {
            let Some(entry) = queue.pop_front() else {
                break;
            };
            if entry.referenced.swap(false, Ordering::Relaxed) {
                queue.push_back(entry);
                continue;
            }
            if self.unlink(&entry, now, can_go) {
                self.counts.evicted_full.fetch_add(1, Ordering::Relaxed);
                return true;
            }
            queue.push_back(entry);
        }
        false
    }

    /// Removes `entry` (popped from the queue, which the caller locks) from
    /// its shard if it may go.
    fn unlink(&self, entry: &Arc<Entry<S>>, now: u64, can_go: impl CanGo<S>) -> bool {
        let shard = self.shard(entry.hash);
        let mut len = shard.write.lock();
        let Some(table) = shard.table() else {
            return false;
        };
        let Some(cell) = table.position(Arc::as_ptr(entry)) else {
            return false;
        };
        // Dekker with `find` (see there): after the fence, a look-up that
        // raised the count before it is seen here, and one after it sees
        // `linked` down and asks under the mutex, which this holds.
        entry.linked.store(false, Ordering::Relaxed);
        atomic::fence(Ordering::SeqCst);
        // The table's count and the caller's (popped) one are the only ones,
        // or someone holds it. `can_go` comes last: it may retire the state.
        if Arc::strong_count(entry) != 2 || !can_go(&entry.state, now) {
            entry.linked.store(true, Ordering::Relaxed);
            return false;
        }
        table.remove_at(cell);
        *len -= 1;
        // SAFETY: the table's count, now unreachable from the table.
        let counted = unsafe { Arc::from_raw(Arc::as_ptr(entry)) };
        self.retired.lock().push(Garbage::Entry(counted));
        if let Some(key) = entry.key.as_str() {
            let mut evicted = self.evicted.lock();
            evicted.calls.add(key, entry.calls.load(Ordering::Relaxed));
            let refusals = entry.refusals.load(Ordering::Relaxed);
            evicted.refusals.add(key, refusals);
        }
        true
    }

    /// Evicts every entry unused for `idle_ttl` that may go; how many.
    pub(crate) fn evict_idle(&self, now: u64, can_go: impl CanGo<S>) -> usize {
        let ttl = self.idle_ttl();
        self.next_idle_pass
            .store(now.saturating_add((ttl / 4).max(1)), Ordering::Relaxed);
        let mut queue = self.queue.lock();
        let mut evicted = 0;
        let mut kept = VecDeque::new();
        std::mem::swap(&mut kept, &mut *queue);
        // `retain` keeps the clock order; the queue is rebuilt in place.
        kept.retain(|entry| {
            let idle = now.saturating_sub(entry.last_used.load(Ordering::Relaxed)) >= ttl;
            if idle && self.unlink(entry, now, can_go) {
                evicted += 1;
                false
            } else {
                true
            }
        });
        *queue = kept;
        drop(queue);
        self.len.fetch_sub(evicted, Ordering::Relaxed);
        self.counts
            .evicted_idle
            .fetch_add(evicted as u64, Ordering::Relaxed);
        evicted
    }

    /// The `n` keys with the most look-ups and the `n` with the most
    /// refusals (zero counts left out), largest first: the counts of the
    /// keys held, plus what the summaries of evicted keys hold for them.
    pub(crate) fn top(&self, n: usize) -> super::TopKeys {
        let mut calls = Vec::new();
        let mut refusals = Vec::new();
        // Read in the lock order (queue, then the summaries): a key being
        // evicted meanwhile is counted once, held or summarised.
        let queue = self.queue.lock();
        let evicted = self.evicted.lock();
        let mut held = std::collections::HashSet::new();
        for e in queue.iter() {
            let text = e
                .key
                .as_str()
                .map_or_else(|| "<not a string>".to_owned(), str::to_owned);
            let (c, r) = match e.key.as_str() {
                Some(key) => {
                    held.insert(key.to_owned());
                    (evicted.calls.estimate(key), evicted.refusals.estimate(key))
                }
                None => (0, 0),
            };
            calls.push((e.calls.load(Ordering::Relaxed) + c, text.clone()));
            let r = e.refusals.load(Ordering::Relaxed) + r;
            if r > 0 {
                refusals.push((r, text));
            }
        }
        let gone = |sketch: &Sketch, into: &mut Vec<(u64, String)>| {
            for (key, count) in sketch.entries() {
                if !held.contains(key) {
                    into.push((count, key.to_owned()));
                }
            }
        };
        gone(&evicted.calls, &mut calls);
        gone(&evicted.refusals, &mut refusals);
        drop((evicted, queue));
        let top = |mut v: Vec<(u64, String)>| {
            v.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
            v.truncate(n);
            v.into_iter()
                .map(|(count, key)| super::KeyCount { key, count })
                .collect()
        };
        super::TopKeys {
            by_calls: top(calls),
            by_refusals: top(refusals),
        }
    }

    /// Calls `f` on every entry (under the queue lock: keep it short).
    pub(crate) fn for_each(&self, mut f: impl FnMut(&Entry<S>)) {
        for entry in self.queue.lock().iter() {
            f(entry);
        }
    }
}
