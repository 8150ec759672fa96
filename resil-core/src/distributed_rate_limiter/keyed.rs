//! The distributed rate limiter per key: one quota in Redis per tenant,
//! user or IP, shared by every process, in bounded local memory.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use parking_lot::RwLock;
use tokio::runtime::{Handle, RuntimeFlavor};

use super::config::DistributedRateLimiterConfig;
use super::grant::Grant;
use super::limiter::{DistributedRateLimiter, Inner, Slot};
use super::metrics::DistributedRateLimiterMetrics;
use super::script::Quota;
use crate::clock::{Clock, SystemClock};
use crate::error::{ConfigError, Error, RequestNotPermitted, SharedName};
use crate::keyed::map::{Entry, Map};
use crate::keyed::{KeyedConfig, KeyedCounts, StoredKey, Tiers, TopKeys};
use crate::rate_limiter::AcquireError;

/// A family of distributed rate limiters, one quota per key: the key's
/// permits live in Redis under `{key_prefix}{name}:{<key>}:{algorithm}` —
/// the key inside the Redis key as a **hash tag**, so each key's state sits
/// in one Redis Cluster slot — and every process using the family draws on
/// the same `limit_for_period` per key, with the unkeyed limiter's exact
/// semantics (algorithm, reservations, TTLs, failure policy), one script
/// call per acquire.
///
/// One connection serves every key. Locally, the family keeps per key only
/// what the failure policy needs — the key's conservative local quota under
/// [`LocalFallback`](super::FailurePolicy::LocalFallback): each process
/// admits `floor(N / expected_instances)` (at least 1) per key and period
/// while Redis is unreachable, so the expected instances together stay
/// within N for that key — in the bounded memory of a keyed family
/// ([`KeyedConfig`]: `max_keys`, `idle_ttl`). A key whose local quota
/// counts grants of the current window is not evicted (forgetting them
/// would let an outage grant its share twice); when no key may make room,
/// a new key's acquires are refused. Local permit leases are the unkeyed
/// limiter's only: a keyed acquire always asks Redis.
///
/// **Tiers.** [`set_tiers`](Self::set_tiers) gives keys or `*` patterns
/// their own `limit_for_period` (the most specific wins), for new keys and
/// for the keys held: from its next acquire, a key sends Redis its new
/// limit (the quota's state in Redis is kept, as when the unkeyed limiter's
/// limit changes) and its local fallback share follows.
///
/// Keys are text (`&str`): the same key must name the same quota in every
/// process, whatever its language; format other keys (an IP address, a
/// user id) with `to_string()`.
///
/// Every acquire is decided within `timeout_duration + redis_timeout`, as
/// the unkeyed limiter's.
#[derive(Clone)]
pub struct KeyedDistributedRateLimiter {
    inner: Arc<Family>,
}

struct Family {
    limiter: DistributedRateLimiter,
    refusal: SharedName,
    tiers: RwLock<Tiers<u32>>,
    map: Map<Slot>,
}

impl Family {
    /// The configuration of a key whose limit is `limit`: the family's,
    /// with that limit (checked by [`KeyedDistributedRateLimiter::set_tiers`]).
    fn config_for(&self, limit: u32) -> Result<DistributedRateLimiterConfig, ConfigError> {
        let base = self.limiter.config();
        if limit == base.limit_for_period() {
            return Ok(base.clone());
        }
        base.to_builder().limit_for_period(limit).build()
    }
}

impl KeyedDistributedRateLimiter {
    /// A family named `name` (its keys' Redis keys start with
    /// `{key_prefix}{name}:`), timed by the system's monotonic clock.
    /// Nothing is sent to Redis before the first acquire.
    pub fn new(
        name: impl Into<Arc<str>>,
        config: DistributedRateLimiterConfig,
        keyed: KeyedConfig,
    ) -> Result<Self, ConfigError> {
        Self::with_clock(name, config, keyed, SystemClock)
    }

    /// A family whose local timing (waits, the local fallback, idle keys)
    /// reads `clock`; the quotas are timed by the Redis server's clock.
    pub fn with_clock(
        name: impl Into<Arc<str>>,
        config: DistributedRateLimiterConfig,
        keyed: KeyedConfig,
        clock: impl Clock,
    ) -> Result<Self, ConfigError> {
        let name = name.into();
        let tiers = RwLock::new(Tiers::new(config.limit_for_period()));
        let limiter = DistributedRateLimiter::with_clock(Arc::clone(&name), config, clock)?;
        Ok(KeyedDistributedRateLimiter {
            inner: Arc::new(Family {
                limiter,
                refusal: SharedName::new(name),
                tiers,
                map: Map::new(keyed),
            }),
        })
    }

    /// The family's name (never a key).
    pub fn name(&self) -> &str {
        self.inner.limiter.name()
    }

    /// The configuration every key's quota follows.
    pub fn config(&self) -> &DistributedRateLimiterConfig {
        self.inner.limiter.config()
    }

    /// The family's local bounds.
    pub fn keyed_config(&self) -> KeyedConfig {
        self.inner.map.bounds()
    }

    /// Keys held locally, created, evicted and refused.
    pub fn counts(&self) -> KeyedCounts {
        KeyedCounts::of(&self.inner.map)
    }

    /// Sets `limit_for_period` by key, for new keys and for the keys held
    /// (see the type's docs). Every value is checked first, with the
    /// family's other settings (a lease or a local share that no longer
    /// fits); on an error nothing changes, and the error names the
    /// override's pattern.
    pub fn set_tiers(&self, tiers: Tiers<u32>) -> Result<(), ConfigError> {
        let family = &*self.inner;
        family.config_for(*tiers.default_value())?;
        for (pattern, limit) in tiers.overrides() {
            family
                .config_for(*limit)
                .map_err(|e| e.in_path(&format!("overrides.{}", pattern.as_str())))?;
        }
        *family.tiers.write() = tiers.clone();
        family.map.for_each(|entry| {
            // Every tier was checked above: an error cannot come back here.
            if let Ok(config) = family.config_for(*tiers.for_key(&entry.key)) {
                entry.state.retune(&config);
            }
        });
        Ok(())
    }

    /// The limits by key.
    pub fn tiers(&self) -> Tiers<u32> {
        self.inner.tiers.read().clone()
    }

    /// New local bounds, as a reload gives them.
    pub fn reconfigure(&self, keyed: KeyedConfig) {
        self.inner.map.set_bounds(keyed);
    }

    /// The `n` keys held locally with the most acquires and the most
    /// refusals (with what the summaries of evicted keys hold for them).
    pub fn top_keys(&self, n: usize) -> TopKeys {
        self.inner.map.top(n)
    }

    /// Calls `f` with every key held locally and its limit per period.
    pub fn for_each_key(&self, mut f: impl FnMut(&StoredKey, u32)) {
        // A copy: no lock of the tiers is held while the map's are taken
        // (a new key's creation reads the tiers under its shard's lock).
        let tiers = self.tiers();
        self.inner
            .map
            .for_each(|e| f(&e.key, *tiers.for_key(&e.key)));
    }

    /// The family's counters (every key's acquires together).
    pub fn metrics(&self) -> DistributedRateLimiterMetrics {
        self.inner.limiter.metrics()
    }

    /// The Redis key holding `key`'s quota.
    pub fn redis_key(&self, key: &str) -> String {
        let limiter = &self.inner.limiter;
        Quota::keyed(limiter.name(), key, limiter.config())
            .key()
            .to_owned()
    }

    /// Each key's local fallback permits per period, when the failure policy
    /// is [`LocalFallback`](super::FailurePolicy::LocalFallback).
    pub fn local_fallback_limit(&self) -> Option<u32> {
        self.inner.limiter.local_fallback_limit()
    }

    /// The handle of `key`'s quota (its local state created on first use).
    pub fn get(&self, key: &str) -> DistributedKeyHandle<'_> {
        let family = &*self.inner;
        let inner = &family.limiter.inner;
        let now = inner.clock.now_nanos();
        let entry = family.map.get_or_insert(
            key,
            now,
            |stored| {
                let text = stored.as_str().unwrap_or_default();
                let limit = *family.tiers.read().for_key(stored);
                let config = family
                    .config_for(limit)
                    .unwrap_or_else(|_| inner.config.clone());
                Slot::new(
                    Quota::keyed(&inner.name, text, &config),
                    &inner.name,
                    &config,
                    inner.clock.clone(),
                )
            },
            |slot: &Slot, now| slot.policy.idle(now),
        );
        DistributedKeyHandle { family, entry }
    }

    /// Evicts the keys idle for `idle_ttl` (whose local quota counts
    /// nothing); how many.
    pub fn evict_idle(&self) -> usize {
        let family = &*self.inner;
        let now = family.limiter.inner.clock.now_nanos();
        family
            .map
            .evict_idle(now, |slot: &Slot, now| slot.policy.idle(now))
    }
}

/// One key's distributed quota, from [`KeyedDistributedRateLimiter::get`].
/// While a handle lives, its key's local state is not evicted.
pub struct DistributedKeyHandle<'a> {
    family: &'a Family,
    entry: Option<Arc<Entry<Slot>>>,
}

impl DistributedKeyHandle<'_> {
    /// Whether the family had no local room for this key (its acquires are
    /// then refused).
    pub fn is_refused(&self) -> bool {
        self.entry.is_none()
    }

    /// The Redis key holding this key's quota.
    pub fn redis_key(&self) -> Option<&str> {
        self.entry.as_ref().map(|e| e.state.quota.key())
    }

    #[cold]
    fn refused(&self) -> AcquireError {
        AcquireError::NotPermitted(RequestNotPermitted::by(&self.family.refusal))
    }

    /// Awaits one permit of this key's quota.
    pub async fn acquire_async(&self) -> Result<Grant, AcquireError> {
        self.acquire_n_async(1).await
    }

    /// Awaits `permits` permits of this key's quota, with the semantics of
    /// [`DistributedRateLimiter::acquire_n_async`] (one script call,
    /// reservation within `timeout_duration`, the failure policy per key),
    /// decided within `timeout_duration + redis_timeout`.
    pub async fn acquire_n_async(&self, permits: u32) -> Result<Grant, AcquireError> {
        let Some(entry) = &self.entry else {
            return Err(self.refused());
        };
        let out = self
            .family
            .limiter
            .inner
            .acquire_bounded(&entry.state, permits)
            .await;
        if out.is_err() {
            entry.refused();
        }
        out
    }

    /// [`acquire_n_async`](Self::acquire_n_async), blocking the thread (as
    /// [`DistributedRateLimiter::acquire_n`]: on a current-thread runtime's
    /// thread the failure policy decides at once).
    pub fn acquire_n(&self, permits: u32) -> Result<Grant, AcquireError> {
        let Some(entry) = &self.entry else {
            return Err(self.refused());
        };
        let inner: &Arc<Inner> = &self.family.limiter.inner;
        let slot = &entry.state;
        let out = match Handle::try_current() {
            Ok(handle) => match handle.runtime_flavor() {
                RuntimeFlavor::CurrentThread => inner.cannot_block(slot, permits),
                _ => tokio::task::block_in_place(|| {
                    handle.block_on(inner.acquire_bounded(slot, permits))
                }),
            },
            Err(_) => match inner.blocking_runtime() {
                Some(rt) => rt.block_on(inner.acquire_bounded(slot, permits)),
                None => inner.cannot_block(slot, permits),
            },
        };
        if out.is_err() {
            entry.refused();
        }
        out
    }

    /// Awaits `fut` once the key has a permit; `fut` is not polled before.
    pub async fn call_async<T, E, F>(&self, fut: F) -> Result<T, Error<E>>
    where
        F: Future<Output = Result<T, E>>,
    {
        self.call_async_n(1, fut).await
    }

    /// Awaits `fut` once the key has `permits` permits.
    pub async fn call_async_n<T, E, F>(&self, permits: u32, fut: F) -> Result<T, Error<E>>
    where
        F: Future<Output = Result<T, E>>,
    {
        let _ = self.acquire_n_async(permits).await?;
        fut.await.map_err(Error::Call)
    }
}

impl fmt::Debug for KeyedDistributedRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedDistributedRateLimiter")
            .field("name", &self.name())
            .field("config", self.config())
            .field("keyed", &self.keyed_config())
            .finish()
    }
}

impl fmt::Debug for DistributedKeyHandle<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DistributedKeyHandle")
            .field("family", &self.family.limiter.name())
            .field("redis_key", &self.redis_key())
            .finish()
    }
}
