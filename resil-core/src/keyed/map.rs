//! The bounded map behind every keyed family: sharded look-ups, a global
//! budget of keys, CLOCK (second-chance) replacement and idle eviction.
//!
//! * A look-up of an existing key hashes it (foldhash's quality hasher with a
//!   per-family random seed, so keys cannot be chosen offline to land in one
//!   bucket), takes its shard's read lock, clones the entry's `Arc` (or runs
//!   the caller's closure under the lock, [`Map::with`]) and marks it used:
//!   no allocation.
//! * A new key reserves one unit of the family's budget (`max_keys`); when
//!   the budget is spent, the replacement clock turns: the oldest entry of
//!   the queue is looked at, a used one gets a second chance (its mark is
//!   cleared and it goes to the back), an unused one is evicted if it holds
//!   no state that matters. At most [`SCAN`] entries are looked at; when none
//!   of them may go, the new key is refused (counted), never an entry with
//!   state dropped.
//! * An entry is evictable only when nobody holds it (its `Arc` is held by
//!   the map and the queue alone: no handle, no permit, no waiting call) and
//!   its state says so (the family's `can_go`).
//! * Idle entries (unused for `idle_ttl`) are evicted by a pass over the
//!   queue that runs at most every `idle_ttl / 4`, on a new key's insertion
//!   or when asked ([`Map::evict_idle`]).

use std::collections::VecDeque;
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use foldhash::quality::RandomState;
use hashbrown::HashTable;
use parking_lot::{Mutex, RwLock};

use super::sketch::Sketch;
use super::{Key, KeyedConfig, StoredKey};

/// How many queue entries one replacement looks at before it refuses the new
/// key.
pub(crate) const SCAN: usize = 64;

/// Shards of the look-up table (a power of two).
const SHARDS: usize = 16;

/// Whether dropping a key's state at a clock reading loses nothing that
/// matters (no permits out, no reservation, no OPEN wait still running).
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

#[repr(align(128))]
struct Shard<S>(RwLock<Table<S>>);

/// One shard's look-up table, kept at most half full (see `insert`).
struct Table<S> {
    map: HashTable<Arc<Entry<S>>>,
    /// The table's full capacity when last sized (`HashTable::capacity`
    /// shrinks as deletions leave tombstones, so it cannot tell).
    sized_for: usize,
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

impl<S> Map<S> {
    pub(crate) fn new(bounds: KeyedConfig) -> Self {
        let (max_keys, idle_ttl_nanos) =
            (bounds.max_keys(), crate::clock::nanos(bounds.idle_ttl()));
        Map {
            shards: (0..SHARDS)
                .map(|_| {
                    Shard(RwLock::new(Table {
                        map: HashTable::new(),
                        sized_for: 0,
                    }))
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
    #[inline]
    pub(crate) fn find<Q: Key + ?Sized>(&self, key: &Q, now: u64) -> Option<Arc<Entry<S>>> {
        let hash = self.hasher.hash_one(key);
        let table = self.shard(hash).0.read();
        let entry = table
            .map
            .find(hash, |e| e.hash == hash && key.matches(&e.key))?;
        entry.touch(now);
        Some(Arc::clone(entry))
    }

    /// Runs `f` on the entry of `key` under its shard's read lock, if the
    /// family holds it (marked used at `now`): no reference count, so the
    /// entry cannot be evicted while `f` runs and nothing is held after.
    #[inline]
    pub(crate) fn with<Q: Key + ?Sized, R>(
        &self,
        key: &Q,
        now: u64,
        f: impl FnOnce(&Entry<S>) -> R,
    ) -> Option<R> {
        let hash = self.hasher.hash_one(key);
        let table = self.shard(hash).0.read();
        let entry = table
            .map
            .find(hash, |e| e.hash == hash && key.matches(&e.key))?;
        entry.touch(now);
        Some(f(entry))
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

    #[cold]
    #[inline(never)]
    fn insert<Q: Key + ?Sized>(
        &self,
        key: &Q,
        now: u64,
        make: impl FnOnce(&StoredKey) -> S,
        can_go: impl CanGo<S>,
    ) -> Option<Arc<Entry<S>>> {
        if now >= self.next_idle_pass.load(Ordering::Relaxed) {
            self.evict_idle(now, can_go);
        }
        if !self.reserve(now, can_go) {
            self.counts.refused.fetch_add(1, Ordering::Relaxed);
            return None;
        }
        let hash = self.hasher.hash_one(key);
        let stored = key.store();
        let mut table = self.shard(hash).0.write();
        if let Some(entry) = table
            .map
            .find(hash, |e| e.hash == hash && key.matches(&e.key))
        {
            // Another thread created it meanwhile.
            self.len.fetch_sub(1, Ordering::Relaxed);
            entry.touch(now);
            return Some(Arc::clone(entry));
        }
        let entry = Arc::new(Entry {
            hash,
            state: make(&stored),
            key: stored,
            last_used: AtomicU64::new(now),
            since: now,
            referenced: AtomicBool::new(false),
            calls: AtomicU64::new(1),
            refusals: AtomicU64::new(0),
        });
        let len = table.map.len();
        if (len + 1) * 2 > table.sized_for {
            // At most half full: deletions leave tombstones, and a table
            // more than half full that runs out of room to them grows (and
            // keeps the bigger size) where a half-full one rehashes in place.
            // Churn (a key flood) then never grows a table past twice its
            // keys.
            table.map.reserve((len + 2).max(8), |e| e.hash);
            table.sized_for = table.map.capacity();
        }
        table
            .map
            .insert_unique(hash, Arc::clone(&entry), |e| e.hash);
        drop(table);
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
            } else if self.replace_one(now, can_go) {
                // The evicted entry's unit is ours.
                return true;
            } else {
                return false;
            }
        }
    }

    /// Turns the replacement clock until one entry is evicted (its budget
    /// unit passes to the caller), at most [`SCAN`] steps.
    fn replace_one(&self, now: u64, can_go: impl CanGo<S>) -> bool {
        let mut queue = self.queue.lock();
        for _ in 0..SCAN.min(queue.len()) {
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
        let mut table = self.shard(entry.hash).0.write();
        // Under the write lock no look-up can clone it: the table and the
        // caller's (popped) reference are the only ones, or someone holds it.
        if Arc::strong_count(entry) != 2 || !can_go(&entry.state, now) {
            return false;
        }
        match table.map.find_entry(entry.hash, |e| Arc::ptr_eq(e, entry)) {
            Ok(found) => {
                found.remove();
                if let Some(key) = entry.key.as_str() {
                    let mut evicted = self.evicted.lock();
                    evicted.calls.add(key, entry.calls.load(Ordering::Relaxed));
                    let refusals = entry.refusals.load(Ordering::Relaxed);
                    evicted.refusals.add(key, refusals);
                }
                true
            }
            Err(_) => false,
        }
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
