//! A semaphore bulkhead per key.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use parking_lot::RwLock;

use super::map::{Entry, Map};
use super::{Key, KeyedConfig, KeyedCounts, StoredKey, Tiers};
use crate::bulkhead::BulkheadConfig;
use crate::clock::{self, Clock, SharedClock};
use crate::error::{BulkheadFull, ConfigError, Error, SharedName};

/// One key's calls in flight and its limit.
pub(crate) struct Slots {
    in_flight: AtomicU32,
    max: AtomicU32,
}

/// A family of semaphore bulkheads, one per key: at most
/// `max_concurrent_calls` calls in flight per key (a [tier](Tiers) may set
/// it per key).
///
/// A keyed bulkhead does not queue: a call that finds its key full is
/// refused at once with [`Error::BulkheadFull`] (`max_wait_duration` is not
/// used — a queue per key would be the memory an attacker fills). A key with
/// calls in flight is never evicted, so its count is never reset under
/// them; a permit is given back when the call ends, panics or is cancelled.
///
/// ```
/// use resil_core::bulkhead::BulkheadConfig;
/// use resil_core::keyed::{KeyedBulkhead, KeyedConfig};
///
/// let config = BulkheadConfig::builder().max_concurrent_calls(1).build()?;
/// let downstream = KeyedBulkhead::new("per-host", config, KeyedConfig::default());
/// let held = downstream.get("host-a").try_acquire().unwrap();
/// assert!(downstream.get("host-a").try_acquire().is_err());
/// assert!(downstream.get("host-b").try_acquire().is_ok());
/// drop(held);
/// assert!(downstream.get("host-a").try_acquire().is_ok());
/// # Ok::<(), resil_core::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct KeyedBulkhead {
    inner: Arc<Family>,
}

struct Family {
    name: Arc<str>,
    refusal: SharedName,
    clock: SharedClock,
    config: BulkheadConfig,
    tiers: RwLock<Tiers<u32>>,
    map: Map<Slots>,
}

fn idle(slots: &Slots, _now: u64) -> bool {
    slots.in_flight.load(Ordering::Acquire) == 0
}

impl KeyedBulkhead {
    /// A family named `name`.
    pub fn new(name: impl Into<Arc<str>>, config: BulkheadConfig, keyed: KeyedConfig) -> Self {
        Self::with_clock(name, config, keyed, clock::CoarseClock)
    }

    /// A family whose idle times are read on `clock`.
    pub fn with_clock(
        name: impl Into<Arc<str>>,
        config: BulkheadConfig,
        keyed: KeyedConfig,
        clock: impl Clock,
    ) -> Self {
        let name = name.into();
        KeyedBulkhead {
            inner: Arc::new(Family {
                refusal: SharedName::new(Arc::clone(&name)),
                name,
                clock: SharedClock::new(clock),
                tiers: RwLock::new(Tiers::new(config.max_concurrent_calls())),
                config,
                map: Map::new(keyed),
            }),
        }
    }

    /// The family's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The handle of `key`'s bulkhead, created on first use (refusing every
    /// call when the family is full of keys with calls in flight).
    #[inline]
    pub fn get<Q: Key + ?Sized>(&self, key: &Q) -> BulkheadHandle<'_> {
        let family = &*self.inner;
        let entry = family.map.get_or_insert(
            key,
            family.clock.now_nanos(),
            |stored| Slots {
                in_flight: AtomicU32::new(0),
                max: AtomicU32::new(*family.tiers.read().for_key(stored)),
            },
            idle,
        );
        BulkheadHandle { family, entry }
    }

    /// Sets `max_concurrent_calls` by key, for new and existing keys (a key
    /// above its new limit admits no call until it is below).
    pub fn set_tiers(&self, tiers: Tiers<u32>) -> Result<(), ConfigError> {
        let check = |v: u32, path: &str| {
            if v == 0 {
                Err(ConfigError::new("max_concurrent_calls", 0, ">= 1").in_path(path))
            } else {
                Ok(())
            }
        };
        check(*tiers.default_value(), "")?;
        for (pattern, v) in tiers.overrides() {
            check(*v, &format!("overrides.{}", pattern.as_str()))?;
        }
        let family = &*self.inner;
        *family.tiers.write() = tiers.clone();
        family.map.for_each(|entry| {
            entry
                .state
                .max
                .store(*tiers.for_key(&entry.key), Ordering::Release);
        });
        Ok(())
    }

    /// The limits by key.
    pub fn tiers(&self) -> Tiers<u32> {
        self.inner.tiers.read().clone()
    }

    /// The configuration keys are built from.
    pub fn config(&self) -> BulkheadConfig {
        self.inner.config
    }

    /// Changes the bounds, as a reload does.
    pub fn reconfigure(&self, keyed: KeyedConfig) {
        let family = &*self.inner;
        family.map.set_bounds(keyed);
    }

    /// The family's bounds.
    pub fn keyed_config(&self) -> KeyedConfig {
        self.inner.map.bounds()
    }

    /// Keys held, created, evicted and refused.
    pub fn counts(&self) -> KeyedCounts {
        KeyedCounts::of(&self.inner.map)
    }

    /// Evicts the keys idle for `idle_ttl` with no call in flight; how many.
    pub fn evict_idle(&self) -> usize {
        let family = &*self.inner;
        family.map.evict_idle(family.clock.now_nanos(), idle)
    }

    /// The `n` keys held with the most calls and the most refusals.
    pub fn top_keys(&self, n: usize) -> super::TopKeys {
        self.inner.map.top(n)
    }

    /// Calls `f` with every key held and its calls in flight.
    pub fn for_each_key(&self, mut f: impl FnMut(&StoredKey, u32)) {
        self.inner
            .map
            .for_each(|e| f(&e.key, e.state.in_flight.load(Ordering::Relaxed)));
    }
}

/// One key's bulkhead, from [`KeyedBulkhead::get`].
pub struct BulkheadHandle<'a> {
    family: &'a Family,
    entry: Option<Arc<Entry<Slots>>>,
}

/// A call slot of one key, given back when dropped.
#[must_use = "the slot is given back when the permit is dropped"]
pub struct KeyPermit {
    entry: Arc<Entry<Slots>>,
}

impl Drop for KeyPermit {
    fn drop(&mut self) {
        self.entry.state.in_flight.fetch_sub(1, Ordering::Release);
    }
}

impl fmt::Debug for KeyPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyPermit")
            .field("key", &self.entry.key)
            .finish()
    }
}

impl BulkheadHandle<'_> {
    /// Whether the family had no room for this key.
    pub fn is_refused(&self) -> bool {
        self.entry.is_none()
    }

    /// Calls in flight for this key.
    pub fn in_flight(&self) -> u32 {
        self.entry
            .as_ref()
            .map_or(0, |e| e.state.in_flight.load(Ordering::Relaxed))
    }

    /// Slots free for this key.
    pub fn available_concurrent_calls(&self) -> u32 {
        self.entry.as_ref().map_or(0, |e| {
            let max = e.state.max.load(Ordering::Relaxed);
            max.saturating_sub(e.state.in_flight.load(Ordering::Relaxed))
        })
    }

    /// A slot for one call, if the key has one free.
    #[inline]
    pub fn try_acquire(&self) -> Result<KeyPermit, BulkheadFull> {
        let refused = || {
            if let Some(entry) = &self.entry {
                entry.refused();
            }
            BulkheadFull::by(&self.family.refusal)
        };
        let entry = self.entry.as_ref().ok_or_else(refused)?;
        let slots = &entry.state;
        let max = slots.max.load(Ordering::Acquire);
        slots
            .in_flight
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .map_err(|_| refused())?;
        Ok(KeyPermit {
            entry: Arc::clone(entry),
        })
    }

    /// Runs `f` in one of the key's slots.
    #[inline]
    pub fn call<T, E>(&self, f: impl FnOnce() -> Result<T, E>) -> Result<T, Error<E>> {
        let _permit = self.try_acquire().map_err(Error::BulkheadFull)?;
        f().map_err(Error::Call)
    }

    /// Awaits `fut` in one of the key's slots, taken on the first poll and
    /// held until `fut` ends or is dropped.
    #[inline]
    pub async fn call_async<T, E>(
        &self,
        fut: impl Future<Output = Result<T, E>>,
    ) -> Result<T, Error<E>> {
        let _permit = self.try_acquire().map_err(Error::BulkheadFull)?;
        fut.await.map_err(Error::Call)
    }
}

impl fmt::Debug for KeyedBulkhead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedBulkhead")
            .field("name", &self.inner.name)
            .field("keys", &self.inner.map.len())
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for BulkheadHandle<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadHandle")
            .field("family", &self.family.name)
            .field("key", &self.entry.as_ref().map(|e| &e.key))
            .finish()
    }
}
