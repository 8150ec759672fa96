//! A rate limiter per key: Resilience4j's cycle algorithm on 16 bytes of
//! state per key.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;

use super::map::{Entry, Map};
use super::{Key, KeyedConfig, KeyedCounts, StoredKey, Tiers};
use crate::clock::{self, Clock, CoarseClock, SharedClock, SystemClock};
use crate::error::{ConfigError, Error, RequestNotPermitted, SharedName};
use crate::rate_limiter::cycle::Divider;
use crate::rate_limiter::{RateLimiterConfig, COARSE_PERIOD};

/// One key's permits: the cycle limiter's cursor (the number of the next
/// permit to hand out; cycle `c` owns permits `[c × limit, (c + 1) × limit)`;
/// [`RETIRED`] once evicted) and the key's limit per cycle.
pub(crate) struct Permits {
    cursor: AtomicU64,
    limit: AtomicU32,
}

/// A family of rate limiters, one per key, sharing one configuration
/// (`limit_refresh_period`, `timeout_duration`, and `limit_for_period` unless
/// a [tier](Tiers) overrides it for the key).
///
/// Each key has Resilience4j's `AtomicRateLimiter` semantics (cycles of
/// `limit_refresh_period` counted from the family's creation, reservation of
/// later cycles' permits within `timeout_duration`) on 16 bytes of state; a
/// key is created on its first use and lives in the family's bounded memory
/// (see [the module docs](super)). A key is evictable once its permits are
/// all back (no permit of the current cycle taken, no reservation), so
/// evicting it never hands out a permit twice.
///
/// ```
/// use std::time::Duration;
/// use resil_core::clock::ManualClock;
/// use resil_core::keyed::{KeyedConfig, KeyedRateLimiter, Tiers};
/// use resil_core::rate_limiter::RateLimiterConfig;
///
/// let config = RateLimiterConfig::builder()
///     .limit_for_period(2)
///     .limit_refresh_period(Duration::from_secs(1))
///     .timeout_duration(Duration::ZERO)
///     .build()?;
/// let clock = ManualClock::new();
/// let api = KeyedRateLimiter::with_clock("api", config, KeyedConfig::default(), clock.clone());
/// api.set_tiers(Tiers::new(2).with_override("gold-*", 100))?;
///
/// assert!(api.get("tenant-1").try_acquire(2).is_ok());
/// assert!(api.get("tenant-1").try_acquire(1).is_err()); // tenant-1's quota is spent
/// assert!(api.get("tenant-2").try_acquire(1).is_ok()); // tenant-2 has its own
/// assert!(api.get("gold-7").try_acquire(50).is_ok());
/// clock.advance(Duration::from_secs(1));
/// assert!(api.get("tenant-1").try_acquire(1).is_ok());
/// # Ok::<(), resil_core::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct KeyedRateLimiter {
    inner: Arc<Family>,
}

/// The cursor of an evicted key: an acquire that reached it without a
/// reference ([`KeyedRateLimiter::try_acquire`]) finds it gone and asks
/// again, so a key's permits are never handed out twice.
const RETIRED: u64 = u64::MAX;

/// What an acquire on a key's permits did.
enum Taken {
    /// Taken, usable after this many nanoseconds.
    Granted(u64),
    Refused,
    /// The key was evicted meanwhile (its cursor is [`RETIRED`]).
    Gone,
}

struct Family {
    name: Arc<str>,
    refusal: SharedName,
    clock: SharedClock,
    origin: u64,
    period: Divider,
    /// The cycle some recent acquire was in: spares most acquires the
    /// division of the time by the period (checked on every use, as the
    /// unkeyed limiter's hint).
    hint: AtomicU64,
    timeout: AtomicU64,
    config: RwLock<RateLimiterConfig>,
    tiers: RwLock<Tiers<u32>>,
    map: Map<Permits>,
}

impl KeyedRateLimiter {
    /// A family named `name` on the system clock (the coarse one for periods
    /// of at least [`COARSE_PERIOD`], as [`RateLimiter::new`](crate::rate_limiter::RateLimiter::new)).
    pub fn new(name: impl Into<Arc<str>>, config: RateLimiterConfig, keyed: KeyedConfig) -> Self {
        if config.limit_refresh_period() >= COARSE_PERIOD {
            Self::with_clock(name, config, keyed, CoarseClock)
        } else {
            Self::with_clock(name, config, keyed, SystemClock)
        }
    }

    /// A family timed by `clock`.
    pub fn with_clock(
        name: impl Into<Arc<str>>,
        config: RateLimiterConfig,
        keyed: KeyedConfig,
        clock: impl Clock,
    ) -> Self {
        let clock = SharedClock::new(clock);
        let name = name.into();
        KeyedRateLimiter {
            inner: Arc::new(Family {
                refusal: SharedName::new(Arc::clone(&name)),
                name,
                origin: clock.now_nanos(),
                clock,
                period: Divider::new(clock::nanos(config.limit_refresh_period()).max(1)),
                hint: AtomicU64::new(0),
                timeout: AtomicU64::new(clock::nanos(config.timeout_duration())),
                tiers: RwLock::new(Tiers::new(config.limit_for_period())),
                config: RwLock::new(config),
                map: Map::new(keyed),
            }),
        }
    }

    /// The family's name (its instances' name: a key is never part of it).
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The handle of `key`'s limiter, created on first use. When the family
    /// is full of keys that may not be evicted, the handle refuses every
    /// acquire ([`is_refused`](LimiterHandle::is_refused)).
    ///
    /// An existing key costs one hash, two plain stores announcing the
    /// look-up and one reference
    /// count: no lock, no allocation.
    #[inline]
    pub fn get<Q: Key + ?Sized>(&self, key: &Q) -> LimiterHandle<'_> {
        let family = &*self.inner;
        let now = family.clock.now_nanos();
        let entry = family.map.get_or_insert(
            key,
            now,
            |stored| family.make(stored),
            |permits: &Permits, now| family.retire(permits, now),
        );
        LimiterHandle { family, entry }
    }

    /// Takes `permits` of `key`'s permits of the current cycle, never
    /// waiting: `get(key).try_acquire(permits)` without a handle. The
    /// hot-path form: an existing key's permits are taken under its shard's
    /// read lock, with no reference count and one clock reading; a new key
    /// is created as [`get`](Self::get) creates it.
    ///
    /// An existing key costs one hash, two plain stores announcing the
    /// look-up and the acquire's
    /// compare-and-swap: no lock, no reference count, no allocation.
    #[inline]
    pub fn try_acquire<Q: Key + ?Sized>(
        &self,
        key: &Q,
        permits: u32,
    ) -> Result<(), RequestNotPermitted> {
        self.decide(key, permits, false).map(|_| ())
    }

    /// Takes `permits` of `key`'s permits now or reserves them within
    /// `timeout_duration`: `get(key).reserve(permits)` without a handle (see
    /// [`try_acquire`](Self::try_acquire)); the wait before they may be used.
    #[inline]
    pub fn reserve<Q: Key + ?Sized>(
        &self,
        key: &Q,
        permits: u32,
    ) -> Result<Duration, RequestNotPermitted> {
        self.decide(key, permits, true).map(Duration::from_nanos)
    }

    #[inline]
    fn decide<Q: Key + ?Sized>(
        &self,
        key: &Q,
        permits: u32,
        may_wait: bool,
    ) -> Result<u64, RequestNotPermitted> {
        let family = &*self.inner;
        let now = family.clock.now_nanos();
        let held = family.map.with(key, now, |entry| {
            match family.acquire(&entry.state, permits, now, may_wait) {
                Taken::Granted(wait) => Some(Ok(wait)),
                Taken::Refused => {
                    entry.refused();
                    Some(Err(RequestNotPermitted::by(&family.refusal)))
                }
                Taken::Gone => None,
            }
        });
        match held {
            Some(decided) => decided,
            None => self.decide_new(key, permits, may_wait),
        }
    }

    /// A key the family does not hold yet (or evicted while this looked it
    /// up): created (or refused) by `get`.
    #[cold]
    #[inline(never)]
    fn decide_new<Q: Key + ?Sized>(
        &self,
        key: &Q,
        permits: u32,
        may_wait: bool,
    ) -> Result<u64, RequestNotPermitted> {
        let handle = self.get(key);
        if may_wait {
            handle.reserve(permits).map(clock::nanos)
        } else {
            handle.try_acquire(permits).map(|()| 0)
        }
    }

    /// Sets the limit per cycle by key (`default` for keys no override
    /// matches), for new keys and existing ones alike (an existing key
    /// keeps the permits it took in the current cycle). Each limit is
    /// checked like `limit_for_period`.
    pub fn set_tiers(&self, tiers: Tiers<u32>) -> Result<(), ConfigError> {
        let period = self.inner.config.read().limit_refresh_period();
        RateLimiterConfig::check_limit(*tiers.default_value(), period)?;
        for (pattern, limit) in tiers.overrides() {
            RateLimiterConfig::check_limit(*limit, period)
                .map_err(|e| e.in_path(&format!("overrides.{}", pattern.as_str())))?;
        }
        let family = &*self.inner;
        let now = family.clock.now_nanos();
        *family.tiers.write() = tiers.clone();
        // Not under the tiers' lock: a key being created takes it inside a
        // shard's lock, which `for_each` may wait for.
        family.map.for_each(|entry| {
            family.change_limit(&entry.state, *tiers.for_key(&entry.key), now);
        });
        Ok(())
    }

    /// The limits by key.
    pub fn tiers(&self) -> Tiers<u32> {
        self.inner.tiers.read().clone()
    }

    /// Changes the run-time timeout and the bounds (`max_keys`, `idle_ttl`)
    /// as a reload does; a family with fewer `max_keys` than keys evicts
    /// down to it as new keys come.
    pub fn reconfigure(&self, timeout: Duration, keyed: KeyedConfig) {
        let family = &*self.inner;
        family
            .timeout
            .store(clock::nanos(timeout), Ordering::Relaxed);
        family.map.set_bounds(keyed);
    }

    /// The configuration keys are built from (`limit_for_period` is the
    /// tiers' default).
    pub fn config(&self) -> RateLimiterConfig {
        self.inner.config.read().clone()
    }

    /// The family's bounds.
    pub fn keyed_config(&self) -> KeyedConfig {
        self.inner.map.bounds()
    }

    /// Keys held, created, evicted and refused.
    pub fn counts(&self) -> KeyedCounts {
        KeyedCounts::of(&self.inner.map)
    }

    /// Evicts the keys idle for `idle_ttl` whose permits are all back; how
    /// many. (Also done on its own, at most every `idle_ttl / 4`, when a new
    /// key arrives.)
    pub fn evict_idle(&self) -> usize {
        let family = &*self.inner;
        let now = family.clock.now_nanos();
        family
            .map
            .evict_idle(now, |p: &Permits, now| family.retire(p, now))
    }

    /// The `n` keys held with the most calls and the most refusals.
    pub fn top_keys(&self, n: usize) -> super::TopKeys {
        self.inner.map.top(n)
    }

    /// Calls `f` with every key held and its permits free now (negative
    /// while reservations wait).
    pub fn for_each_key(&self, mut f: impl FnMut(&StoredKey, i64)) {
        let family = &*self.inner;
        let now = family.clock.now_nanos();
        family
            .map
            .for_each(|entry| f(&entry.key, family.available(&entry.state, now)));
    }
}

impl Family {
    fn make(&self, key: &StoredKey) -> Permits {
        Permits {
            cursor: AtomicU64::new(0),
            limit: AtomicU32::new(*self.tiers.read().for_key(key)),
        }
    }

    #[inline]
    fn cycle(&self, now: u64) -> u64 {
        let hint = self.hint.load(Ordering::Relaxed);
        let period = self.period.divisor();
        let start = self.origin.wrapping_add(hint.wrapping_mul(period));
        if now.wrapping_sub(start) < period {
            return hint;
        }
        self.cycle_of(now)
    }

    #[cold]
    #[inline(never)]
    fn cycle_of(&self, now: u64) -> u64 {
        let cycle = self.period.div(now.saturating_sub(self.origin));
        self.hint.store(cycle, Ordering::Relaxed);
        cycle
    }

    /// Retires the key's permits if none of the current cycle is taken and
    /// none reserved (the family's `can_go`: the key is evicted when this
    /// answers `true`). One compare-and-swap decides between it and a
    /// racing acquire: the acquire either took a permit first (the key
    /// stays) or finds the cursor [`RETIRED`] (and asks again).
    fn retire(&self, permits: &Permits, now: u64) -> bool {
        let limit = u64::from(permits.limit.load(Ordering::Relaxed));
        let cursor = permits.cursor.load(Ordering::Acquire);
        cursor <= self.cycle(now).saturating_mul(limit)
            && permits
                .cursor
                .compare_exchange(cursor, RETIRED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
    }

    fn available(&self, permits: &Permits, now: u64) -> i64 {
        let limit = u64::from(permits.limit.load(Ordering::Relaxed));
        let lo = self.cycle(now).saturating_mul(limit);
        let cursor = permits.cursor.load(Ordering::Acquire).max(lo);
        let hi = lo.saturating_add(limit);
        if cursor <= hi {
            (hi - cursor) as i64
        } else {
            -((cursor - hi).min(i64::MAX as u64) as i64)
        }
    }

    /// Re-lays the cursor under `limit`, keeping the permits taken in the
    /// current cycle (and reservations) as a count.
    fn change_limit(&self, permits: &Permits, limit: u32, now: u64) {
        let old = u64::from(permits.limit.swap(limit, Ordering::AcqRel));
        let new = u64::from(limit);
        if old == new {
            return;
        }
        let cycle = self.cycle(now);
        let _ = permits
            .cursor
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |cursor| {
                let taken = cursor.saturating_sub(cycle.saturating_mul(old));
                Some(cycle.saturating_mul(new).saturating_add(taken))
            });
    }

    /// Takes `n` permits at `now`, or reserves them if their cycle starts
    /// within the timeout (and the wait in nanoseconds).
    #[inline]
    fn acquire(&self, permits: &Permits, n: u32, now: u64, may_wait: bool) -> Taken {
        let limit = u64::from(permits.limit.load(Ordering::Relaxed));
        let n = u64::from(n);
        let cycle = self.cycle(now);
        let lo = cycle.saturating_mul(limit);
        let mut cursor = permits.cursor.load(Ordering::Acquire);
        loop {
            if cursor == RETIRED {
                return Taken::Gone;
            }
            if n > limit {
                return Taken::Refused;
            }
            let next = cursor.max(lo).saturating_add(n);
            let wait = if next <= lo.saturating_add(limit) {
                0
            } else if !may_wait {
                return Taken::Refused;
            } else {
                let last_cycle = (next - 1) / limit;
                let starts = self
                    .origin
                    .saturating_add(last_cycle.saturating_mul(self.period.divisor()));
                let wait = starts.saturating_sub(now);
                if wait > self.timeout.load(Ordering::Relaxed) {
                    return Taken::Refused;
                }
                wait
            };
            match permits.cursor.compare_exchange_weak(
                cursor,
                next,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return Taken::Granted(wait),
                Err(actual) => cursor = actual,
            }
        }
    }
}

/// One key's rate limiter, from [`KeyedRateLimiter::get`]. While a handle
/// lives, its key is not evicted.
pub struct LimiterHandle<'a> {
    family: &'a Family,
    entry: Option<Arc<Entry<Permits>>>,
}

impl LimiterHandle<'_> {
    /// Whether the family had no room for this key (every acquire is then
    /// refused).
    pub fn is_refused(&self) -> bool {
        self.entry.is_none()
    }

    /// The clock reading (nanoseconds) at which this key's limiter was
    /// created: it changes only if the key was evicted and came back.
    pub fn created_at(&self) -> Option<u64> {
        self.entry.as_ref().map(|e| e.since)
    }

    /// The key's limit per cycle.
    pub fn limit_for_period(&self) -> Option<u32> {
        self.entry
            .as_ref()
            .map(|e| e.state.limit.load(Ordering::Relaxed))
    }

    /// The key's permits free now; negative while reservations wait (0 for
    /// a refused key).
    pub fn available_permissions(&self) -> i64 {
        match &self.entry {
            Some(e) => self
                .family
                .available(&e.state, self.family.clock.now_nanos()),
            None => 0,
        }
    }

    /// The time until the key's next cycle starts: when a refused caller
    /// may find a permit again (a `Retry-After`; later when reservations
    /// already hold the next cycle's permits).
    pub fn time_to_next_cycle(&self) -> Duration {
        let family = self.family;
        let now = family.clock.now_nanos();
        let next = family.cycle(now).saturating_add(1);
        let starts = family
            .origin
            .saturating_add(next.saturating_mul(family.period.divisor()));
        Duration::from_nanos(starts.saturating_sub(now))
    }

    #[cold]
    fn refused(&self) -> RequestNotPermitted {
        if let Some(entry) = &self.entry {
            entry.refused();
        }
        RequestNotPermitted::by(&self.family.refusal)
    }

    /// Takes `permits` permits of the current cycle, never waiting.
    #[inline]
    pub fn try_acquire(&self, permits: u32) -> Result<(), RequestNotPermitted> {
        let Some(entry) = &self.entry else {
            return Err(self.refused());
        };
        // A handle's reference keeps its key from being evicted: never
        // `Gone`, which would refuse as a full family does.
        match self
            .family
            .acquire(&entry.state, permits, self.family.clock.now_nanos(), false)
        {
            Taken::Granted(_) => Ok(()),
            Taken::Refused | Taken::Gone => Err(self.refused()),
        }
    }

    /// Takes `permits` permits now or reserves them in a later cycle that
    /// starts within `timeout_duration`: the wait before they may be used
    /// (weighted permits, Resilience4j's `acquirePermission(n)`). A
    /// reservation is not given back.
    #[inline]
    pub fn reserve(&self, permits: u32) -> Result<Duration, RequestNotPermitted> {
        let Some(entry) = &self.entry else {
            return Err(self.refused());
        };
        match self
            .family
            .acquire(&entry.state, permits, self.family.clock.now_nanos(), true)
        {
            Taken::Granted(wait) => Ok(Duration::from_nanos(wait)),
            Taken::Refused | Taken::Gone => Err(self.refused()),
        }
    }

    /// Takes `permits`, sleeping the thread (through the clock) for a
    /// reserved one.
    pub fn acquire_n(&self, permits: u32) -> Result<(), RequestNotPermitted> {
        let wait = self.reserve(permits)?;
        if !wait.is_zero() {
            self.family.clock.sleep(wait);
        }
        Ok(())
    }

    /// Runs `f` once the key has a permit (sync waits sleep the thread).
    #[inline]
    pub fn call<T, E>(&self, f: impl FnOnce() -> Result<T, E>) -> Result<T, Error<E>> {
        self.call_n(1, f)
    }

    /// Runs `f` once the key has `permits` permits.
    #[inline]
    pub fn call_n<T, E>(
        &self,
        permits: u32,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, Error<E>> {
        self.acquire_n(permits)
            .map_err(Error::RequestNotPermitted)?;
        f().map_err(Error::Call)
    }

    /// Awaits `fut` once the key has a permit (awaiting the clock's timer
    /// for a reserved one); `fut` is not polled before.
    #[inline]
    pub async fn call_async<T, E>(
        &self,
        fut: impl Future<Output = Result<T, E>>,
    ) -> Result<T, Error<E>> {
        self.call_async_n(1, fut).await
    }

    /// Awaits `fut` once the key has `permits` permits. Cancelled while it
    /// waits, the reservation stays taken (as in Resilience4j).
    #[inline]
    pub async fn call_async_n<T, E>(
        &self,
        permits: u32,
        fut: impl Future<Output = Result<T, E>>,
    ) -> Result<T, Error<E>> {
        let wait = self.reserve(permits).map_err(Error::RequestNotPermitted)?;
        if !wait.is_zero() {
            self.family.clock.sleep_async(wait).await;
        }
        fut.await.map_err(Error::Call)
    }
}

impl fmt::Debug for KeyedRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedRateLimiter")
            .field("name", &self.inner.name)
            .field("keys", &self.inner.map.len())
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for LimiterHandle<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LimiterHandle")
            .field("family", &self.family.name)
            .field("key", &self.entry.as_ref().map(|e| &e.key))
            .finish()
    }
}
