//! Keyed families by name: [`Registry::keyed_rate_limiter`],
//! [`Registry::keyed_circuit_breaker`], [`Registry::keyed_bulkhead`],
//! [`Registry::keyed_retry_budget`].
//!
//! A family takes the configuration of the instance of the same name and
//! kind (`resilience4j.ratelimiter.instances.api`, its `base-config`, the
//! defaults and the code settings, resolved as for
//! [`Registry::rate_limiter`]) and creates one instance of it per key, in
//! the bounded memory of [`resil_core::keyed`]. Its name is the instance
//! name; keys are never names, so the registry's cap on names is not spent
//! on them.

use std::sync::Arc;

use dashmap::DashMap;
use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use resil_core::keyed::{
    KeyedBulkhead, KeyedCircuitBreaker, KeyedConfig, KeyedRateLimiter, KeyedRetryBudget,
};
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil_core::retry::{Retry, RetryBudgetConfig};

use resil_core::keyed::{Tiers, DEFAULT_IDLE_TTL, DEFAULT_MAX_KEYS};

use crate::config::schema::Val;
use crate::config::Resolved;
use crate::primitive::Primitive;
use crate::Registry;

/// `keyed.max-keys` and `keyed.idle-ttl` of `resolved` (checked by the
/// loader; the defaults when unset).
pub(crate) fn bounds<C>(resolved: &Resolved<C>) -> KeyedConfig {
    let max_keys = match resolved.value("keyed.max-keys") {
        Some(Val::Usize(n)) => *n,
        _ => DEFAULT_MAX_KEYS,
    };
    let idle_ttl = match resolved.value("keyed.idle-ttl") {
        Some(Val::Duration(d)) => *d,
        _ => DEFAULT_IDLE_TTL,
    };
    KeyedConfig::new(max_keys, idle_ttl).unwrap_or_default()
}

/// The `u32` option `key` by key pattern, over `default`.
pub(crate) fn u32_tiers<C>(resolved: &Resolved<C>, key: &str, default: u32) -> Tiers<u32> {
    resolved
        .key_overrides()
        .iter()
        .fold(Tiers::new(default), |tiers, (pattern, o)| {
            match o.values.get(key).map(|s| &s.val) {
                Some(Val::U32(n)) => tiers.with_override(pattern, *n),
                _ => tiers,
            }
        })
}

/// The breaker configuration by key pattern: `base` (the instance's, code
/// settings included) with each override's values laid on top.
fn breaker_tiers(
    resolved: &Resolved<CircuitBreakerConfig>,
    base: CircuitBreakerConfig,
) -> Tiers<CircuitBreakerConfig> {
    let mut tiers = Tiers::new(base.clone());
    for (pattern, o) in resolved.key_overrides() {
        let mut b = base.to_builder();
        for (key, setting) in &o.values {
            b = match (*key, &setting.val) {
                ("failure-rate-threshold", Val::Percent(p)) => b.failure_rate_threshold(*p),
                ("slow-call-rate-threshold", Val::Percent(p)) => b.slow_call_rate_threshold(*p),
                ("slow-call-duration-threshold", Val::Duration(d)) => {
                    b.slow_call_duration_threshold(*d)
                }
                ("minimum-number-of-calls", Val::U32(n)) => b.minimum_number_of_calls(*n),
                ("sliding-window-size", Val::U32(n)) => b.sliding_window_size(*n),
                ("wait-duration-in-open-state", Val::Duration(d)) => {
                    b.wait_duration_in_open_state(*d)
                }
                ("permitted-number-of-calls-in-half-open-state", Val::U32(n)) => {
                    b.permitted_number_of_calls_in_half_open_state(*n)
                }
                _ => b,
            };
        }
        match b.build() {
            Ok(config) => tiers = tiers.with_override(pattern, config),
            Err(error) => {
                tracing::error!(path = %o.path, %error, "key override ignored");
            }
        }
    }
    tiers
}

/// The aspect of a Redis-backed keyed rate limiter, in metrics and the
/// snapshot.
#[cfg(feature = "redis")]
const DISTRIBUTED: &str = "distributed_rate_limiter";

/// The retry budget by key pattern: `base` (the retry's) with each
/// override's `budget-*` values laid on top.
fn budget_tiers(
    resolved: &Resolved<resil_core::retry::RetryConfig>,
    base: RetryBudgetConfig,
) -> Tiers<RetryBudgetConfig> {
    resolved
        .key_overrides()
        .iter()
        .fold(
            Tiers::new(base),
            |tiers, (pattern, o)| match crate::kinds::retry::budget_with(Some(base), &o.values) {
                Some(config) => tiers.with_override(pattern, config),
                None => tiers,
            },
        )
}

/// The registry's keyed families, by name and kind.
#[derive(Default)]
pub(crate) struct Families {
    limiters: DashMap<Arc<str>, KeyedRateLimiter>,
    breakers: DashMap<Arc<str>, KeyedCircuitBreaker>,
    bulkheads: DashMap<Arc<str>, KeyedBulkhead>,
    budgets: DashMap<Arc<str>, KeyedRetryBudget>,
    /// Redis-backed keyed rate limiters (`kinds/rate_limiter/redis.rs`).
    #[cfg(feature = "redis")]
    pub(crate) distributed:
        DashMap<Arc<str>, resil_core::distributed_rate_limiter::KeyedDistributedRateLimiter>,
}

impl Registry {
    /// The configuration of instance `name` of kind `P`, or the defaults
    /// (logged) when its settings cannot be built.
    fn keyed_config<P: Primitive>(&self, name: &str) -> P::Config {
        let store = self.store::<P>();
        let code = store.code.read();
        match self.resolve::<P>(&self.file(), &code, name) {
            Ok(config) => config,
            Err(error) => {
                tracing::error!(kind = %P::KIND, name, %error, "keyed family built from the defaults");
                P::build(P::default_builder())
                    .expect("Resilience4j's defaults are a valid configuration")
            }
        }
    }

    /// The keyed rate-limiter family `name`: one rate limiter per key, each
    /// configured as the rate limiter `name`, created on first use
    /// (`registry.keyed_rate_limiter("api").get(&tenant)`). Look it up once
    /// per call site, the key per call.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resil_registry::Registry;
    ///
    /// let registry = Registry::new();
    /// registry
    ///     .configure_rate_limiter("api", |b| {
    ///         b.limit_for_period(1)
    ///             .limit_refresh_period(Duration::from_secs(60))
    ///             .timeout_duration(Duration::ZERO)
    ///     })
    ///     .unwrap();
    /// let api = registry.keyed_rate_limiter("api");
    /// assert!(api.get("tenant-1").try_acquire(1).is_ok());
    /// assert!(api.get("tenant-1").try_acquire(1).is_err());
    /// assert!(api.get("tenant-2").try_acquire(1).is_ok());
    /// ```
    pub fn keyed_rate_limiter(&self, name: &str) -> KeyedRateLimiter {
        let families = &self.inner.keyed.limiters;
        if let Some(family) = families.get(name) {
            return family.clone();
        }
        let config: RateLimiterConfig = self.keyed_config::<RateLimiter>(name);
        families
            .entry(Arc::from(name))
            .or_insert_with(|| {
                let file = self.file();
                let resolved = file.rate_limiter().for_name(name);
                let keyed = bounds(resolved);
                let tiers = u32_tiers(resolved, "limit-for-period", config.limit_for_period());
                let family = match &self.inner.clock {
                    Some(clock) => KeyedRateLimiter::with_clock(name, config, keyed, clock.clone()),
                    None => KeyedRateLimiter::new(name, config, keyed),
                };
                if let Err(error) = family.set_tiers(tiers) {
                    tracing::error!(name, %error, "keyed rate limiter: overrides ignored");
                }
                family
            })
            .clone()
    }

    /// The keyed circuit-breaker family `name`: one breaker per key (a
    /// downstream host, a route), each configured as the breaker `name`.
    pub fn keyed_circuit_breaker(&self, name: &str) -> KeyedCircuitBreaker {
        let families = &self.inner.keyed.breakers;
        if let Some(family) = families.get(name) {
            return family.clone();
        }
        let config: CircuitBreakerConfig = self.keyed_config::<CircuitBreaker>(name);
        families
            .entry(Arc::from(name))
            .or_insert_with(|| {
                let file = self.file();
                let resolved = file.circuit_breaker().for_name(name);
                let keyed = bounds(resolved);
                let tiers = breaker_tiers(resolved, config.clone());
                let family = match &self.inner.clock {
                    Some(clock) => {
                        KeyedCircuitBreaker::with_clock(name, config, keyed, clock.clone())
                    }
                    None => KeyedCircuitBreaker::new(name, config, keyed),
                };
                family.set_tiers(tiers);
                family
            })
            .clone()
    }

    /// The keyed bulkhead family `name`: one semaphore bulkhead per key,
    /// each with the `max-concurrent-calls` of the bulkhead `name` (keyed
    /// bulkheads do not queue).
    pub fn keyed_bulkhead(&self, name: &str) -> KeyedBulkhead {
        let families = &self.inner.keyed.bulkheads;
        if let Some(family) = families.get(name) {
            return family.clone();
        }
        let config: BulkheadConfig = self.keyed_config::<Bulkhead>(name);
        families
            .entry(Arc::from(name))
            .or_insert_with(|| {
                let file = self.file();
                let resolved = file.bulkhead().for_name(name);
                let keyed = bounds(resolved);
                let tiers = u32_tiers(
                    resolved,
                    "max-concurrent-calls",
                    config.max_concurrent_calls(),
                );
                let family = match &self.inner.clock {
                    Some(clock) => KeyedBulkhead::with_clock(name, config, keyed, clock.clone()),
                    None => KeyedBulkhead::new(name, config, keyed),
                };
                if let Err(error) = family.set_tiers(tiers) {
                    tracing::error!(name, %error, "keyed bulkhead: overrides ignored");
                }
                family
            })
            .clone()
    }

    /// The keyed retry-budget family `name`: one [`RetryBudget`] per key,
    /// each with the settings of the retry `name`'s budget (the file's
    /// `budget-retry-ratio`, `budget-min-retries-per-second`,
    /// `budget-window`, or code's `configure_retry(name, |b| b.budget(…))`),
    /// or [`RetryBudgetConfig::default`]'s (tower's `TpsBudget`'s); bounds
    /// and per-key overrides of those three from
    /// `resilience4j.retry.instances.<name>.keyed`. A retry draws on a key's
    /// budget with [`Retry::with_budget`], which is what
    /// `#[resil::retry(name = "api", key = tenant)]` does.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resil_registry::Registry;
    /// use resil_core::retry::{RetryBudget, RetryBudgetConfig};
    /// use resil_core::{Error, ErrorKind};
    ///
    /// let registry = Registry::new();
    /// let floor_of_one = RetryBudgetConfig::builder()
    ///     .min_retries_per_second(1)
    ///     .window(Duration::from_secs(1))
    ///     .retry_ratio(0.0)
    ///     .build()
    ///     .unwrap();
    /// registry
    ///     .configure_retry("api", move |b| {
    ///         b.wait_duration(Duration::ZERO).budget(RetryBudget::new(floor_of_one))
    ///     })
    ///     .unwrap();
    /// let retry = registry.retry("api");
    /// let budgets = registry.keyed_retry_budget("api");
    /// let call = |tenant: &str| -> Result<(), Error<&str>> {
    ///     retry.with_budget(&budgets.get(tenant)).call(|| Err("down"))
    /// };
    /// // tenant-1's one retry is spent on its first call; tenant-2 keeps its own.
    /// assert_eq!(call("tenant-1").unwrap_err().kind(), ErrorKind::RetryBudgetExhausted);
    /// assert_eq!(budgets.get("tenant-1").available_retries(), 0);
    /// assert_eq!(budgets.get("tenant-2").available_retries(), 1);
    /// ```
    ///
    /// [`RetryBudget`]: resil_core::retry::RetryBudget
    pub fn keyed_retry_budget(&self, name: &str) -> KeyedRetryBudget {
        let families = &self.inner.keyed.budgets;
        if let Some(family) = families.get(name) {
            return family.clone();
        }
        let config = self.keyed_budget_config(name);
        families
            .entry(Arc::from(name))
            .or_insert_with(|| {
                let file = self.file();
                let resolved = file.retry().for_name(name);
                let keyed = bounds(resolved);
                let family = match &self.inner.clock {
                    Some(clock) => KeyedRetryBudget::with_clock(name, config, keyed, clock.clone()),
                    None => KeyedRetryBudget::new(name, config, keyed),
                };
                family.set_tiers(budget_tiers(resolved, config));
                family
            })
            .clone()
    }

    /// The budget settings of the retry `name` (its code budget's, or the
    /// defaults).
    fn keyed_budget_config(&self, name: &str) -> RetryBudgetConfig {
        let retry = self.keyed_config::<Retry>(name);
        retry.budget().map(|b| *b.config()).unwrap_or_default()
    }

    /// The names of the keyed families of each kind (rate limiters,
    /// breakers, bulkheads), sorted; retry budgets are
    /// [`keyed_retry_budget_names`](Self::keyed_retry_budget_names).
    pub fn keyed_family_names(&self) -> [Vec<String>; 3] {
        fn names<T>(map: &DashMap<Arc<str>, T>) -> Vec<String> {
            let mut names: Vec<String> = map.iter().map(|e| e.key().to_string()).collect();
            names.sort();
            names
        }
        let k = &self.inner.keyed;
        [names(&k.limiters), names(&k.breakers), names(&k.bulkheads)]
    }

    /// The names of the keyed retry-budget families, sorted.
    pub fn keyed_retry_budget_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .inner
            .keyed
            .budgets
            .iter()
            .map(|e| e.key().to_string())
            .collect();
        names.sort();
        names
    }
}

impl Registry {
    /// After a reload: every family takes its instance's new configuration,
    /// bounds and overrides (a limiter's limits and timeout and a bulkhead's
    /// limits for existing keys too; a breaker's configuration for keys
    /// created from now on).
    pub(crate) fn refresh_keyed(&self) {
        let families = &self.inner.keyed;
        let file = self.file();
        for family in families.limiters.iter() {
            let name = family.key();
            let config: RateLimiterConfig = self.keyed_config::<RateLimiter>(name);
            let resolved = file.rate_limiter().for_name(name);
            let tiers = u32_tiers(resolved, "limit-for-period", config.limit_for_period());
            if let Err(error) = family.set_tiers(tiers) {
                tracing::error!(%name, %error, "keyed rate limiter kept its limits");
            }
            family.reconfigure(config.timeout_duration(), bounds(resolved));
        }
        for family in families.bulkheads.iter() {
            let name = family.key();
            let config: BulkheadConfig = self.keyed_config::<Bulkhead>(name);
            let resolved = file.bulkhead().for_name(name);
            let tiers = u32_tiers(
                resolved,
                "max-concurrent-calls",
                config.max_concurrent_calls(),
            );
            if let Err(error) = family.set_tiers(tiers) {
                tracing::error!(%name, %error, "keyed bulkhead kept its limits");
            }
            family.reconfigure(bounds(resolved));
        }
        for family in families.breakers.iter() {
            let name = family.key();
            let config: CircuitBreakerConfig = self.keyed_config::<CircuitBreaker>(name);
            let resolved = file.circuit_breaker().for_name(name);
            family.set_tiers(breaker_tiers(resolved, config));
            family.reconfigure(bounds(resolved));
        }
        for family in families.budgets.iter() {
            let name = family.key();
            let config = self.keyed_budget_config(name);
            let resolved = file.retry().for_name(name);
            family.set_tiers(budget_tiers(resolved, config));
            family.reconfigure(bounds(resolved));
        }
        #[cfg(feature = "redis")]
        self.refresh_keyed_distributed();
    }
}

impl Families {
    /// Every family's key counts, as metric samples (no key label).
    pub(crate) fn samples(&self, out: &mut Vec<crate::telemetry::exposition::Sample>) {
        use crate::telemetry::keyed::samples;
        for f in self.limiters.iter() {
            samples(f.key(), "rate_limiter", f.counts(), out);
        }
        for f in self.breakers.iter() {
            samples(f.key(), "circuit_breaker", f.counts(), out);
        }
        for f in self.bulkheads.iter() {
            samples(f.key(), "bulkhead", f.counts(), out);
        }
        for f in self.budgets.iter() {
            samples(f.key(), "retry", f.counts(), out);
        }
        #[cfg(feature = "redis")]
        for f in self.distributed.iter() {
            samples(f.key(), DISTRIBUTED, f.counts(), out);
        }
    }
}

/// What an operator sees of one keyed family: its configuration (bounds,
/// the per-key default and overrides), its key counts and its noisiest keys
/// — never a list of every key.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct KeyedFamilySnapshot {
    /// The family's name (its instance's).
    pub name: String,
    /// `rate_limiter`, `circuit_breaker`, `bulkhead`, `retry` (a retry
    /// budget per key) or `distributed_rate_limiter` (a quota in Redis per
    /// key).
    pub aspect: &'static str,
    /// `keyed.max-keys`.
    pub max_keys: usize,
    /// `keyed.idle-ttl`, as the file writes it.
    pub idle_ttl: String,
    /// What a key gets unless an override matches (`limit-for-period=10`).
    pub default: String,
    /// `(pattern, what a matching key gets)`, as declared.
    pub overrides: Vec<(String, String)>,
    /// Keys held now.
    pub keys_in_use: usize,
    /// Keys created.
    pub keys_created: u64,
    /// Keys evicted for idleness.
    pub keys_evicted_idle: u64,
    /// Keys evicted to make room.
    pub keys_evicted_full: u64,
    /// New keys refused.
    pub keys_refused: u64,
    /// `(key, look-ups)`, the most first.
    pub top_by_calls: Vec<(String, u64)>,
    /// `(key, refusals)`, the most first.
    pub top_by_refusals: Vec<(String, u64)>,
}

fn family_snapshot<V>(
    name: &str,
    aspect: &'static str,
    keyed: KeyedConfig,
    tiers: &Tiers<V>,
    show: impl Fn(&V) -> String,
    counts: resil_core::keyed::KeyedCounts,
    top: resil_core::keyed::TopKeys,
) -> KeyedFamilySnapshot {
    let pairs =
        |v: Vec<resil_core::keyed::KeyCount>| v.into_iter().map(|k| (k.key, k.count)).collect();
    KeyedFamilySnapshot {
        name: name.to_owned(),
        aspect,
        max_keys: keyed.max_keys(),
        idle_ttl: crate::config::format_duration(keyed.idle_ttl()),
        default: show(tiers.default_value()),
        overrides: tiers
            .overrides()
            .map(|(p, v)| (p.as_str().to_owned(), show(v)))
            .collect(),
        keys_in_use: counts.in_use,
        keys_created: counts.created,
        keys_evicted_idle: counts.evicted_idle,
        keys_evicted_full: counts.evicted_full,
        keys_refused: counts.refused,
        top_by_calls: pairs(top.by_calls),
        top_by_refusals: pairs(top.by_refusals),
    }
}

impl Registry {
    /// Every keyed family, sorted by aspect and name, with its `top` noisiest
    /// keys by calls and by refusals (what `/actuator/keyed` shows).
    pub fn keyed_snapshot(&self, top: usize) -> Vec<KeyedFamilySnapshot> {
        let k = &self.inner.keyed;
        let mut out = Vec::new();
        for f in k.limiters.iter() {
            out.push(family_snapshot(
                f.key(),
                "rate_limiter",
                f.keyed_config(),
                &f.tiers(),
                |v| format!("limit-for-period={v}"),
                f.counts(),
                f.top_keys(top),
            ));
        }
        for f in k.breakers.iter() {
            out.push(family_snapshot(
                f.key(),
                "circuit_breaker",
                f.keyed_config(),
                &f.tiers(),
                |c| {
                    format!(
                        "failure-rate-threshold={}, minimum-number-of-calls={}, wait-duration-in-open-state={}",
                        c.failure_rate_threshold(),
                        c.minimum_number_of_calls(),
                        crate::config::format_duration(c.wait_duration_in_open_state())
                    )
                },
                f.counts(),
                f.top_keys(top),
            ));
        }
        for f in k.bulkheads.iter() {
            out.push(family_snapshot(
                f.key(),
                "bulkhead",
                f.keyed_config(),
                &f.tiers(),
                |v| format!("max-concurrent-calls={v}"),
                f.counts(),
                f.top_keys(top),
            ));
        }
        for f in k.budgets.iter() {
            out.push(family_snapshot(
                f.key(),
                "retry",
                f.keyed_config(),
                &f.tiers(),
                |c| {
                    format!(
                        "retry-ratio={}, min-retries-per-second={}, window={}",
                        c.retry_ratio(),
                        c.min_retries_per_second(),
                        crate::config::format_duration(c.window())
                    )
                },
                f.counts(),
                f.top_keys(top),
            ));
        }
        #[cfg(feature = "redis")]
        for f in k.distributed.iter() {
            out.push(family_snapshot(
                f.key(),
                DISTRIBUTED,
                f.keyed_config(),
                &f.tiers(),
                |v| format!("limit-for-period={v}"),
                f.counts(),
                f.top_keys(top),
            ));
        }
        out.sort_by(|a, b| (a.aspect, &a.name).cmp(&(b.aspect, &b.name)));
        out
    }
}
