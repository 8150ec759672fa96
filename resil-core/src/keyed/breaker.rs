//! A circuit breaker per key.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use parking_lot::RwLock;

use super::map::{Entry, Map};
use super::{Key, KeyedConfig, KeyedCounts, StoredKey, Tiers};
use crate::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
use crate::clock::{Clock, CoarseClock, SharedClock};

/// A family of circuit breakers, one per key (a downstream host, a route, a
/// tenant), each a full [`CircuitBreaker`] built from the family's
/// configuration (or the key's [tier](Tiers)) and named after the family —
/// never after the key.
///
/// **What eviction keeps.** A breaker that is OPEN is not evicted until its
/// open wait has passed, so a failing key is not handed a fresh CLOSED
/// breaker; HALF_OPEN and FORCED_OPEN breakers are not evicted at all, nor
/// is a breaker with a call in flight (its handle is held). When every slot
/// the replacement looks at holds such a breaker, a *new* key is refused:
/// its handle is a FORCED_OPEN breaker that refuses every call, and the
/// family counts the refusal. A CLOSED breaker that is evicted loses its
/// window: the key starts again from an empty one.
///
/// ```
/// use resil_core::circuit_breaker::{CircuitBreakerConfig, State};
/// use resil_core::keyed::{KeyedCircuitBreaker, KeyedConfig};
///
/// let hosts = KeyedCircuitBreaker::new("per-host", CircuitBreakerConfig::default(), KeyedConfig::default());
/// hosts.get("host-a").transition_to_open().unwrap();
/// assert_eq!(hosts.get("host-a").state(), State::Open);
/// assert_eq!(hosts.get("host-b").state(), State::Closed);
/// ```
#[derive(Clone)]
pub struct KeyedCircuitBreaker {
    inner: Arc<Family>,
}

struct Family {
    name: Arc<str>,
    clock: SharedClock,
    tiers: RwLock<Tiers<CircuitBreakerConfig>>,
    /// The breaker of a key the family had no room for: FORCED_OPEN.
    refusing: CircuitBreaker,
    map: Map<CircuitBreaker>,
}

/// Whether evicting `breaker` loses no state that matters.
fn may_go(breaker: &CircuitBreaker, _now: u64) -> bool {
    match breaker.state() {
        State::Closed | State::Disabled | State::MetricsOnly => true,
        State::Open => breaker.remaining_open_wait().is_some_and(|w| w.is_zero()),
        State::HalfOpen | State::ForcedOpen => false,
    }
}

impl KeyedCircuitBreaker {
    /// A family named `name`, timing calls on the coarse clock.
    pub fn new(
        name: impl Into<Arc<str>>,
        config: CircuitBreakerConfig,
        keyed: KeyedConfig,
    ) -> Self {
        Self::with_clock(name, config, keyed, CoarseClock)
    }

    /// A family whose breakers read `clock`.
    pub fn with_clock(
        name: impl Into<Arc<str>>,
        config: CircuitBreakerConfig,
        keyed: KeyedConfig,
        clock: impl Clock,
    ) -> Self {
        let name = name.into();
        let clock = SharedClock::new(clock);
        let refusing = CircuitBreaker::with_clock(Arc::clone(&name), config.clone(), clock.clone());
        let _ = refusing.transition_to_forced_open();
        KeyedCircuitBreaker {
            inner: Arc::new(Family {
                name,
                clock,
                tiers: RwLock::new(Tiers::new(config)),
                refusing,
                map: Map::new(keyed),
            }),
        }
    }

    /// The family's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The breaker of `key`, created CLOSED on first use.
    #[inline]
    pub fn get<Q: Key + ?Sized>(&self, key: &Q) -> BreakerHandle<'_> {
        let family = &*self.inner;
        let entry = family.map.get_or_insert(
            key,
            family.clock.now_nanos(),
            |stored| {
                let config = family.tiers.read().for_key(stored).clone();
                CircuitBreaker::with_clock(Arc::clone(&family.name), config, family.clock.clone())
            },
            may_go,
        );
        BreakerHandle { family, entry }
    }

    /// Sets the configuration by key. Keys created from now on take it;
    /// a key that exists keeps its breaker (and its configuration) until it
    /// is evicted, so a reload never resets a window or an OPEN wait.
    pub fn set_tiers(&self, tiers: Tiers<CircuitBreakerConfig>) {
        *self.inner.tiers.write() = tiers;
    }

    /// The configurations by key.
    pub fn tiers(&self) -> Tiers<CircuitBreakerConfig> {
        self.inner.tiers.read().clone()
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

    /// Evicts the keys idle for `idle_ttl` whose breakers may go; how many.
    pub fn evict_idle(&self) -> usize {
        let family = &*self.inner;
        family.map.evict_idle(family.clock.now_nanos(), may_go)
    }

    /// The `n` keys held with the most look-ups, and the most refused calls
    /// (the breaker's own not-permitted count).
    pub fn top_keys(&self, n: usize) -> super::TopKeys {
        self.inner.map.for_each(|e| {
            e.refusals.store(
                e.state.metrics().not_permitted_calls(),
                std::sync::atomic::Ordering::Relaxed,
            )
        });
        self.inner.map.top(n)
    }

    /// Calls `f` with every key held and its breaker's state.
    pub fn for_each_key(&self, mut f: impl FnMut(&StoredKey, State)) {
        self.inner.map.for_each(|e| f(&e.key, e.state.state()));
    }
}

/// One key's circuit breaker, from [`KeyedCircuitBreaker::get`]: derefs to
/// the [`CircuitBreaker`]. While a handle lives, its key is not evicted.
pub struct BreakerHandle<'a> {
    family: &'a Family,
    entry: Option<Arc<Entry<CircuitBreaker>>>,
}

impl BreakerHandle<'_> {
    /// Whether the family had no room for this key (the breaker is then
    /// FORCED_OPEN).
    pub fn is_refused(&self) -> bool {
        self.entry.is_none()
    }

    /// The clock reading at which this key's breaker was created.
    pub fn created_at(&self) -> Option<u64> {
        self.entry.as_ref().map(|e| e.since)
    }
}

impl Deref for BreakerHandle<'_> {
    type Target = CircuitBreaker;

    #[inline]
    fn deref(&self) -> &CircuitBreaker {
        match &self.entry {
            Some(entry) => &entry.state,
            None => &self.family.refusing,
        }
    }
}

impl fmt::Debug for KeyedCircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedCircuitBreaker")
            .field("name", &self.inner.name)
            .field("keys", &self.inner.map.len())
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for BreakerHandle<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BreakerHandle")
            .field("family", &self.family.name)
            .field("key", &self.entry.as_ref().map(|e| &e.key))
            .field("state", &self.state())
            .finish()
    }
}
