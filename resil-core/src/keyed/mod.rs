//! Keyed families: one rate limiter, circuit breaker, bulkhead or retry
//! budget per key (tenant, user, IP, downstream host, route), one
//! configuration, in bounded memory.
//!
//! A family ([`KeyedRateLimiter`], [`KeyedCircuitBreaker`],
//! [`KeyedBulkhead`], [`KeyedRetryBudget`]) creates a key's instance on its
//! first use (`family.get(&key)`) and keeps at most `max_keys` of them
//! ([`KeyedConfig`], 10 000 by default), so keys an attacker controls (a
//! header, a user id) cannot fill memory:
//!
//! * **Idle keys go.** A key unused for `idle_ttl` (10 minutes by default)
//!   is evicted by a pass that runs at most every `idle_ttl / 4`.
//! * **When full, the least recently used key makes room**, approximated as
//!   the CLOCK (second-chance) algorithm: a key used since the clock hand
//!   last passed is skipped once. At most 64 keys are looked at.
//! * **State that matters is never dropped.** A key is evicted only when
//!   nobody holds its handle or a permit of it and its state allows: a rate
//!   limiter with all its permits back, a bulkhead with no call in flight, a
//!   breaker that is CLOSED or whose OPEN wait has passed (never HALF_OPEN or
//!   FORCED_OPEN), a retry budget with nothing left in its window. When none of the keys looked at may go, the **new** key
//!   is refused — its calls are refused as the kind refuses them — and
//!   counted ([`KeyedCounts::refused`]).
//! * **Keys are never names or labels.** Every instance of a family carries
//!   the family's name; metrics count keys per family.
//!
//! A key is any `Hash + Eq + Clone + Send + Sync + 'static` value or a `str`
//! ([`Key`]); look-ups are hashed with a per-family random seed (foldhash's
//! quality hasher), so keys cannot be chosen offline to collide. A look-up
//! of an existing key costs a hash, two plain stores announcing the
//! look-up (no lock) and a reference count (none with [`KeyedRateLimiter::try_acquire`]), and allocates
//! nothing.
//!
//! Per-key settings come in [`Tiers`]: a default and overrides by exact key
//! or `*` pattern, the most specific winning.

mod breaker;
mod budget;
mod bulkhead;
mod config;
mod key;
mod limiter;
pub(crate) mod map;
mod reclaim;
mod sketch;
mod tiers;

#[cfg(test)]
mod tests;

use std::sync::atomic::Ordering;

pub use self::breaker::{BreakerHandle, KeyedCircuitBreaker};
pub use self::budget::{BudgetHandle, KeyedRetryBudget};
pub use self::bulkhead::{BulkheadHandle, KeyPermit, KeyedBulkhead};
pub use self::config::{KeyedConfig, DEFAULT_IDLE_TTL, DEFAULT_MAX_KEYS, MAX_MAX_KEYS};
pub use self::key::{Key, StoredKey};
pub use self::limiter::{KeyedRateLimiter, LimiterHandle};
pub use self::tiers::{KeyPattern, Tiers};

/// A key and a count (look-ups or refusals).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyCount {
    /// The key as text (`<not a string>` for keys of other types).
    pub key: String,
    /// The count.
    pub count: u64,
}

/// The noisiest keys of a family: by look-ups (calls) and by refusals,
/// largest first. A key's counts live with it while the family holds it;
/// when it is evicted they are folded into a bounded Space-Saving summary
/// (64 keys per count), so a key that was evicted and came back, or that
/// hides among a flood of one-shot keys, still ranks. A held key's count is
/// exact; what the summary adds may overestimate it by at most the evicted
/// total divided by 64. Keys of a type other than a string are ranked while
/// held only.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TopKeys {
    /// The keys with the most look-ups.
    pub by_calls: Vec<KeyCount>,
    /// The keys with the most refused acquires.
    pub by_refusals: Vec<KeyCount>,
}

/// A family's keys: how many it holds and what happened to the others.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct KeyedCounts {
    /// Keys held now.
    pub in_use: usize,
    /// Keys created since the family was.
    pub created: u64,
    /// Keys evicted because they were idle for `idle_ttl`.
    pub evicted_idle: u64,
    /// Keys evicted to make room for a new key (the family was full).
    pub evicted_full: u64,
    /// New keys refused because no key could make room.
    pub refused: u64,
}

impl KeyedCounts {
    pub(crate) fn of<S: Send + Sync + 'static>(map: &map::Map<S>) -> Self {
        let c = &map.counts;
        KeyedCounts {
            in_use: map.len(),
            created: c.created.load(Ordering::Relaxed),
            evicted_idle: c.evicted_idle.load(Ordering::Relaxed),
            evicted_full: c.evicted_full.load(Ordering::Relaxed),
            refused: c.refused.load(Ordering::Relaxed),
        }
    }

    /// Keys evicted for either reason.
    pub fn evicted(&self) -> u64 {
        self.evicted_idle + self.evicted_full
    }
}
