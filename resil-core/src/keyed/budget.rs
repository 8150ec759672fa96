//! A retry budget per key.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use parking_lot::RwLock;

use super::map::{Entry, Map};
use super::{Key, KeyedConfig, KeyedCounts, StoredKey, Tiers};
use crate::clock::{Clock, CoarseClock, SharedClock};
use crate::retry::{RetryBudget, RetryBudgetConfig};

/// A family of retry budgets, one per key (a tenant, a downstream host),
/// each a full [`RetryBudget`] built from the family's configuration (or the
/// key's [tier](Tiers)).
///
/// With one budget shared by every caller, a tenant whose calls all fail
/// spends the retries of every other tenant; with a budget per key, its
/// retries stop when *its* budget is spent and the others keep theirs.
/// A retry draws on a key's budget through
/// [`Retry::with_budget`](crate::retry::Retry::with_budget).
///
/// **What eviction keeps.** A key's budget is evicted (idle, or to make
/// room) only when it is *at rest*: no deposit or withdrawal still inside
/// its window, so a fresh budget would be the same one. A key that spent
/// its retries therefore cannot win its floor back by being pushed out by
/// a flood of new keys. When every slot the replacement looks at holds a
/// budget still in its window, the *new* key is refused: its handle is a
/// budget that pays for no retry (first attempts still run), and the
/// family counts the refusal.
///
/// A key that exists keeps its configuration until it is evicted:
/// [`set_tiers`](Self::set_tiers) applies to keys created from then on.
///
/// ```
/// use resil_core::keyed::{KeyedConfig, KeyedRetryBudget};
/// use resil_core::retry::RetryBudgetConfig;
///
/// let config = RetryBudgetConfig::builder()
///     .min_retries_per_second(0)
///     .retry_ratio(0.5)
///     .build()?;
/// let budgets = KeyedRetryBudget::new("api", config, KeyedConfig::default());
/// budgets.get("tenant-1").deposit();
/// budgets.get("tenant-1").deposit();
/// assert!(budgets.get("tenant-1").withdraw());
/// assert!(!budgets.get("tenant-1").withdraw()); // tenant-1's budget is spent
/// budgets.get("tenant-2").deposit();
/// budgets.get("tenant-2").deposit();
/// assert!(budgets.get("tenant-2").withdraw()); // tenant-2 has its own
/// # Ok::<(), resil_core::ConfigError>(())
/// ```
#[derive(Clone)]
pub struct KeyedRetryBudget {
    inner: Arc<Family>,
}

struct Family {
    name: Arc<str>,
    clock: SharedClock,
    tiers: RwLock<Tiers<RetryBudgetConfig>>,
    /// The budget of a key the family had no room for: it pays for no retry.
    refusing: RetryBudget,
    map: Map<RetryBudget>,
}

/// Whether evicting `budget` loses nothing: nothing of it is in its window.
fn may_go(budget: &RetryBudget, _now: u64) -> bool {
    budget.is_at_rest()
}

impl KeyedRetryBudget {
    /// A family named `name`, on the coarse clock.
    pub fn new(name: impl Into<Arc<str>>, config: RetryBudgetConfig, keyed: KeyedConfig) -> Self {
        Self::with_clock(name, config, keyed, CoarseClock)
    }

    /// A family whose budgets and idle times read `clock`.
    pub fn with_clock(
        name: impl Into<Arc<str>>,
        config: RetryBudgetConfig,
        keyed: KeyedConfig,
        clock: impl Clock,
    ) -> Self {
        let clock = SharedClock::new(clock);
        let nothing = RetryBudgetConfig::builder()
            .min_retries_per_second(0)
            .retry_ratio(0.0)
            .build()
            .expect("no floor and no ratio is a valid budget");
        KeyedRetryBudget {
            inner: Arc::new(Family {
                name: name.into(),
                refusing: RetryBudget::with_clock(nothing, clock.clone()),
                clock,
                tiers: RwLock::new(Tiers::new(config)),
                map: Map::new(keyed),
            }),
        }
    }

    /// The family's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The budget of `key`, created on first use (its floor full).
    #[inline]
    pub fn get<Q: Key + ?Sized>(&self, key: &Q) -> BudgetHandle<'_> {
        let family = &*self.inner;
        let entry = family.map.get_or_insert(
            key,
            family.clock.now_nanos(),
            |stored| {
                let config = *family.tiers.read().for_key(stored);
                RetryBudget::with_clock(config, family.clock.clone())
            },
            may_go,
        );
        BudgetHandle { family, entry }
    }

    /// Sets the budget settings by key, for keys created from now on (a
    /// key that exists keeps its budget, and its balance, until evicted).
    pub fn set_tiers(&self, tiers: Tiers<RetryBudgetConfig>) {
        *self.inner.tiers.write() = tiers;
    }

    /// The budget settings by key.
    pub fn tiers(&self) -> Tiers<RetryBudgetConfig> {
        self.inner.tiers.read().clone()
    }

    /// The settings keys get unless an override matches.
    pub fn config(&self) -> RetryBudgetConfig {
        *self.inner.tiers.read().default_value()
    }

    /// Changes the bounds, as a reload does.
    pub fn reconfigure(&self, keyed: KeyedConfig) {
        self.inner.map.set_bounds(keyed);
    }

    /// The family's bounds.
    pub fn keyed_config(&self) -> KeyedConfig {
        self.inner.map.bounds()
    }

    /// Keys held, created, evicted and refused.
    pub fn counts(&self) -> KeyedCounts {
        KeyedCounts::of(&self.inner.map)
    }

    /// Evicts the keys idle for `idle_ttl` whose budgets are at rest; how
    /// many.
    pub fn evict_idle(&self) -> usize {
        let family = &*self.inner;
        family.map.evict_idle(family.clock.now_nanos(), may_go)
    }

    /// The `n` keys held with the most look-ups and the most refused
    /// retries (the budget's own [`RetryBudget::refused_retries`]).
    pub fn top_keys(&self, n: usize) -> super::TopKeys {
        self.inner.map.for_each(|e| {
            e.refusals.store(
                e.state.refused_retries(),
                std::sync::atomic::Ordering::Relaxed,
            )
        });
        self.inner.map.top(n)
    }

    /// Calls `f` with every key held and the retries its budget would pay
    /// for now.
    pub fn for_each_key(&self, mut f: impl FnMut(&StoredKey, u64)) {
        self.inner
            .map
            .for_each(|e| f(&e.key, e.state.available_retries()));
    }
}

/// One key's retry budget, from [`KeyedRetryBudget::get`]: derefs to the
/// [`RetryBudget`]. While a handle lives, its key is not evicted.
pub struct BudgetHandle<'a> {
    family: &'a Family,
    entry: Option<Arc<Entry<RetryBudget>>>,
}

impl BudgetHandle<'_> {
    /// Whether the family had no room for this key (the budget then pays
    /// for no retry).
    pub fn is_refused(&self) -> bool {
        self.entry.is_none()
    }
}

impl Deref for BudgetHandle<'_> {
    type Target = RetryBudget;

    #[inline]
    fn deref(&self) -> &RetryBudget {
        match &self.entry {
            Some(entry) => &entry.state,
            None => &self.family.refusing,
        }
    }
}

impl fmt::Debug for KeyedRetryBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedRetryBudget")
            .field("name", &self.inner.name)
            .field("keys", &self.inner.map.len())
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for BudgetHandle<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BudgetHandle")
            .field("family", &self.family.name)
            .field("key", &self.entry.as_ref().map(|e| &e.key))
            .field("available_retries", &self.available_retries())
            .finish()
    }
}
