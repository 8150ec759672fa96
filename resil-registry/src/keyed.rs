//! Keyed families by name: [`Registry::keyed_rate_limiter`],
//! [`Registry::keyed_circuit_breaker`], [`Registry::keyed_bulkhead`].
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
use resil_core::keyed::{KeyedBulkhead, KeyedCircuitBreaker, KeyedConfig, KeyedRateLimiter};
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};

use crate::primitive::Primitive;
use crate::Registry;

/// The registry's keyed families, by name and kind.
#[derive(Default)]
pub(crate) struct Families {
    limiters: DashMap<Arc<str>, KeyedRateLimiter>,
    breakers: DashMap<Arc<str>, KeyedCircuitBreaker>,
    bulkheads: DashMap<Arc<str>, KeyedBulkhead>,
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
            .or_insert_with(|| match &self.inner.clock {
                Some(clock) => KeyedRateLimiter::with_clock(
                    name,
                    config,
                    KeyedConfig::default(),
                    clock.clone(),
                ),
                None => KeyedRateLimiter::new(name, config, KeyedConfig::default()),
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
            .or_insert_with(|| match &self.inner.clock {
                Some(clock) => KeyedCircuitBreaker::with_clock(
                    name,
                    config,
                    KeyedConfig::default(),
                    clock.clone(),
                ),
                None => KeyedCircuitBreaker::new(name, config, KeyedConfig::default()),
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
            .or_insert_with(|| match &self.inner.clock {
                Some(clock) => {
                    KeyedBulkhead::with_clock(name, config, KeyedConfig::default(), clock.clone())
                }
                None => KeyedBulkhead::new(name, config, KeyedConfig::default()),
            })
            .clone()
    }

    /// The names of the keyed families of each kind (rate limiters,
    /// breakers, bulkheads), sorted.
    pub fn keyed_family_names(&self) -> [Vec<String>; 3] {
        fn names<T>(map: &DashMap<Arc<str>, T>) -> Vec<String> {
            let mut names: Vec<String> = map.iter().map(|e| e.key().to_string()).collect();
            names.sort();
            names
        }
        let k = &self.inner.keyed;
        [names(&k.limiters), names(&k.breakers), names(&k.bulkheads)]
    }
}

/// `tiers` with its default replaced by `default`.
fn with_default<V: Clone>(
    tiers: &resil_core::keyed::Tiers<V>,
    default: V,
) -> resil_core::keyed::Tiers<V> {
    tiers
        .overrides()
        .fold(resil_core::keyed::Tiers::new(default), |t, (pattern, v)| {
            t.with_override(pattern.as_str(), v.clone())
        })
}

impl Registry {
    /// After a reload: every family takes its instance's new configuration
    /// (a limiter's `limit-for-period` and `timeout-duration`, a bulkhead's
    /// `max-concurrent-calls` for existing keys too; a breaker's for keys
    /// created from now on).
    pub(crate) fn refresh_keyed(&self) {
        let families = &self.inner.keyed;
        for family in families.limiters.iter() {
            let config: RateLimiterConfig = self.keyed_config::<RateLimiter>(family.key());
            let tiers = with_default(&family.tiers(), config.limit_for_period());
            if let Err(error) = family.set_tiers(tiers) {
                tracing::error!(name = %family.key(), %error, "keyed rate limiter kept its limits");
            }
            family.reconfigure(config.timeout_duration(), family.keyed_config());
        }
        for family in families.bulkheads.iter() {
            let config: BulkheadConfig = self.keyed_config::<Bulkhead>(family.key());
            let tiers = with_default(&family.tiers(), config.max_concurrent_calls());
            if let Err(error) = family.set_tiers(tiers) {
                tracing::error!(name = %family.key(), %error, "keyed bulkhead kept its limits");
            }
        }
        for family in families.breakers.iter() {
            let config: CircuitBreakerConfig = self.keyed_config::<CircuitBreaker>(family.key());
            family.set_tiers(with_default(&family.tiers(), config));
        }
    }
}
