//! The rate limiter's Redis-backed twins (feature `redis`): the rate-limiter
//! entries whose config says `backend = "redis"`, by name.
//!
//! They live in the rate limiter's store beside the local ones ([`RedisTwins`])
//! and follow the same rules: get-or-create under the entry's shard lock
//! (one instance and one `Added` event per name), the cap on instances per
//! kind, a rebuild when `configure_rate_limiter` or a reload changes what
//! they resolve to (every handle sees the new instance), and a place in the
//! snapshot, the health summary and the published metrics (through
//! [`Twins`], as any kind's twins would).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use dashmap::mapref::entry::Entry as MapEntry;
use dashmap::DashMap;
use resil_core::distributed_rate_limiter::{
    Algorithm, DistributedRateLimiter, DistributedRateLimiterConfig, FailurePolicy,
    KeyedDistributedRateLimiter, Topology,
};
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig, RateLimiterConfigBuilder};
use resil_core::ConfigError;

use super::{RateChange, AVAILABLE, REFUSED_BY_CLASS, WAITING};
use crate::classes::ErrorClasses;
use crate::config::duration::format_duration as d;
use crate::config::resolved::Resolved;
use crate::config::schema::Val;
use crate::config::FileConfig;
use crate::event::Publisher;
use crate::event::RegistryEventKind;
use crate::handle::{Handle, Slot};
use crate::overrides::Tuning;
use crate::primitive::Twins;
use crate::registry::resolve::resolve_layers;
use crate::registry::Registry;
use crate::store::CodeSettings;
use crate::telemetry::describe::{Family, Metric, Telemetry};
use crate::telemetry::health::Status;
use crate::{Kind, RegistryError};

/// The Redis-backed rate limiters created so far, by name.
#[derive(Default)]
pub struct RedisTwins {
    map: DashMap<Arc<str>, Arc<Slot<DistributedRateLimiter>>>,
    /// How many exist, counted under the entry's shard lock against the cap.
    len: AtomicUsize,
}

/// A distributed limiter to install in place of the running one.
pub struct Rebuild {
    name: String,
    limiter: DistributedRateLimiter,
}

impl Twins<RateLimiterConfigBuilder> for RedisTwins {
    type Pending = Vec<Rebuild>;

    fn len(&self) -> usize {
        self.map.len()
    }

    fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.map.iter().map(|e| e.key().to_string()).collect();
        names.sort();
        names
    }

    fn with(&self, name: &str, f: &mut dyn FnMut(&dyn Telemetry)) {
        if let Some(handle) = self.find(name) {
            f(&*handle);
        }
    }

    fn labels(&self) -> &'static [(&'static str, &'static str)] {
        &[("backend", "redis")]
    }

    /// The rebuild of the running limiter `name`, if the new code settings
    /// change it.
    fn reconfigured(
        &self,
        classes: &ErrorClasses,
        file: &FileConfig,
        code: &CodeSettings<RateLimiterConfigBuilder>,
        name: &str,
    ) -> Result<Vec<Rebuild>, RegistryError> {
        let Some(running) = self.find(name) else {
            return Ok(Vec::new());
        };
        let limiter = build(classes, file, code, name)?;
        if limiter.config() == running.config() {
            return Ok(Vec::new());
        }
        Ok(vec![Rebuild {
            name: name.to_owned(),
            limiter,
        }])
    }

    /// A rebuild for each running limiter whose config changes, an error for
    /// each that no longer builds or would leave the Redis backend. Also
    /// refuses moving a running *local* limiter onto Redis (its call sites
    /// hold the local one).
    fn reloaded(
        &self,
        classes: &ErrorClasses,
        old: &FileConfig,
        new: &FileConfig,
        code: &CodeSettings<RateLimiterConfigBuilder>,
        local: &dyn Fn() -> Vec<String>,
        errors: &mut Vec<RegistryError>,
    ) -> Vec<Rebuild> {
        let mut rebuilds = Vec::new();
        for name in Twins::names(self) {
            if !is_redis_backed(new.rate_limiter().for_name(&name)) {
                errors.push(backend_change(&name, "redis", "local"));
                continue;
            }
            // Changed when the file's answer changed, as for local instances:
            // a limit an operator set by name survives a reload that leaves
            // this limiter's settings alone.
            let before = build(classes, old, code, &name).ok();
            match build(classes, new, code, &name) {
                Ok(limiter) if before.is_some_and(|b| b.config() == limiter.config()) => {}
                Ok(limiter) => rebuilds.push(Rebuild { name, limiter }),
                Err(e) => errors.push(e),
            }
        }
        for name in local() {
            let was = is_redis_backed(old.rate_limiter().for_name(&name));
            if !was && is_redis_backed(new.rate_limiter().for_name(&name)) {
                errors.push(backend_change(&name, "local", "redis"));
            }
        }
        rebuilds
    }

    fn install(&self, rebuilds: Vec<Rebuild>, events: &Publisher, cause: &str) -> Vec<String> {
        let mut replaced = Vec::new();
        for Rebuild { name, limiter } in rebuilds {
            let Some(slot) = self.map.get(name.as_str()) else {
                continue;
            };
            slot.replace(limiter);
            events.publish(
                Kind::RateLimiter,
                Arc::clone(slot.key()),
                RegistryEventKind::Replaced {
                    cause: cause.into(),
                    state_carried_over: true,
                },
                None,
            );
            replaced.push(format!("{} {name} (redis)", Kind::RateLimiter));
        }
        replaced
    }
}

impl RedisTwins {
    /// The running limiter `name`, if one was created.
    fn find(&self, name: &str) -> Option<Handle<DistributedRateLimiter>> {
        self.map
            .get(name)
            .map(|slot| Handle::from_slot(Arc::clone(&slot)))
    }

    /// Applies an operator's `tuning` again to the running limiter `name`
    /// where a reload changed what it set.
    pub(crate) fn reassert(&self, name: &str, tuning: Tuning, events: &Publisher) {
        let Some(running) = self.find(name) else {
            return;
        };
        let config = running.config();
        if let Some(limit) = tuning
            .limit_for_period
            .filter(|l| *l != config.limit_for_period())
        {
            let _ = self.change(name, RateChange::Limit(limit), events, "reassert");
        }
        if let Some(timeout) = tuning
            .timeout_duration
            .filter(|t| *t != config.timeout_duration())
        {
            let _ = self.change(name, RateChange::Timeout(timeout), events, "reassert");
        }
    }

    /// An operator's change to the running limiter `name` (a new limit or
    /// timeout): a new instance with `change` applied to its config.
    /// `Ok(false)` when none runs.
    pub(crate) fn change(
        &self,
        name: &str,
        change: RateChange,
        events: &Publisher,
        cause: &str,
    ) -> Result<bool, RegistryError> {
        let Some(running) = self.find(name) else {
            return Ok(false);
        };
        let invalid = |source| RegistryError::InvalidConfig {
            kind: Kind::RateLimiter,
            name: name.to_owned(),
            source,
        };
        let builder = running.config().to_builder();
        let builder = match change {
            RateChange::Limit(limit) => builder.limit_for_period(limit),
            RateChange::Timeout(timeout) => builder.timeout_duration(timeout),
        };
        let config = builder.build().map_err(invalid)?;
        let limiter = DistributedRateLimiter::new(name, config).map_err(invalid)?;
        let rebuild = Rebuild {
            name: name.to_owned(),
            limiter,
        };
        self.install(vec![rebuild], events, cause);
        Ok(true)
    }
}

impl Registry {
    /// Whether the rate limiter `name` is configured with `backend = "redis"`
    /// (its own entry, the named config it inherits from, or the default
    /// config): then [`distributed_rate_limiter`](Self::distributed_rate_limiter)
    /// serves it, and `#[rate_limiter(name = …)]` call sites use that.
    pub fn is_redis_backed(&self, name: &str) -> bool {
        is_redis_backed(self.file().rate_limiter().for_name(name))
    }
    /// The Redis-backed rate limiter `name`, created on first use: same name →
    /// same instance (one connection, one set of metrics), also when many
    /// threads race on a new name (one instance, one
    /// [`Added`](RegistryEventKind::Added) event).
    ///
    /// Its quota (`limit-for-period`, `limit-refresh-period`,
    /// `timeout-duration`) is the one the registry resolves for the local
    /// rate limiter of the same name — config file, base configs and
    /// [`configure_rate_limiter`](Self::configure_rate_limiter) code settings
    /// alike — and its Redis settings (`redis-url`, `key-prefix`, `algorithm`,
    /// `buckets`, `burst`, `redis-timeout`, `failure-policy`,
    /// `expected-instances`) come from the config file. Creating it does no
    /// I/O: the connection opens on the first acquire.
    ///
    /// When `configure_rate_limiter` or a [`reload`](Self::reload) changes
    /// what the name resolves to, a new instance takes its place and every
    /// handle sees it (the quota itself lives in Redis and is not reset; the
    /// instance's local counters start again). A reload cannot move a running
    /// limiter between the local and the Redis backend: it is refused, naming
    /// the instance.
    ///
    /// # Errors
    /// [`RegistryError::IllegalOperation`] when the settings for `name` do not
    /// say `backend = "redis"`; [`RegistryError::InvalidConfig`] naming the
    /// key path of an invalid value; [`RegistryError::CardinalityExceeded`]
    /// past the cap on instances per kind (distributed limiters are counted
    /// on their own, apart from the local ones).
    pub fn distributed_rate_limiter(
        &self,
        name: &str,
    ) -> Result<Handle<DistributedRateLimiter>, RegistryError> {
        let twins = &self.store::<RateLimiter>().twins;
        let map = &twins.map;
        if let Some(slot) = map.get(name) {
            return Ok(Handle::from_slot(Arc::clone(&slot)));
        }
        // Settings first, then the shard: the order every creation uses.
        let code = self.store::<RateLimiter>().code.read();
        let file = self.file();
        let limiter = build(&self.inner.classes, &file, &code, name)?;
        match map.entry(Arc::from(name)) {
            MapEntry::Occupied(o) => Ok(Handle::from_slot(Arc::clone(o.get()))),
            MapEntry::Vacant(v) => {
                let len = &twins.len;
                if len.fetch_add(1, Ordering::Relaxed) >= self.inner.max_per_kind {
                    len.fetch_sub(1, Ordering::Relaxed);
                    self.store::<RateLimiter>()
                        .refused
                        .fetch_add(1, Ordering::Relaxed);
                    return Err(RegistryError::CardinalityExceeded {
                        kind: Kind::RateLimiter,
                        name: name.to_owned(),
                        limit: self.inner.max_per_kind,
                    });
                }
                let name = Arc::clone(v.key());
                let slot = Slot::shared(Arc::clone(&name), limiter, self.inner.event_buffer_size);
                v.insert(Arc::clone(&slot));
                // Under the shard lock, as for every other kind.
                self.inner.events.publish_added(Kind::RateLimiter, &name);
                Ok(Handle::from_slot(slot))
            }
        }
    }

    /// The Redis-backed **keyed** rate limiter `name`: one quota in Redis
    /// per key (`registry.keyed_distributed_rate_limiter("api")?.get(&tenant)`),
    /// configured as [`distributed_rate_limiter`](Self::distributed_rate_limiter)
    /// configures the limiter of the same name, with the local bounds of the
    /// instance's `keyed:` section (`max-keys`, `idle-ttl`). Same name →
    /// same family (one connection, one local fallback per key).
    ///
    /// The instance's `keyed.overrides` give keys or `*` patterns their own
    /// `limit-for-period` (the most specific wins), as for
    /// [`keyed_rate_limiter`](Self::keyed_rate_limiter). A reload gives the
    /// family its new limit, overrides and bounds, for the keys held too;
    /// its other settings (URL, algorithm, period, failure policy) are the
    /// ones it was built with — unlike the unkeyed limiter it is not rebuilt.
    ///
    /// # Errors
    /// As [`distributed_rate_limiter`](Self::distributed_rate_limiter):
    /// [`RegistryError::IllegalOperation`] when `name` is not
    /// `backend = "redis"`, [`RegistryError::InvalidConfig`] naming the key
    /// path of an invalid value.
    pub fn keyed_distributed_rate_limiter(
        &self,
        name: &str,
    ) -> Result<KeyedDistributedRateLimiter, RegistryError> {
        let families = &self.inner.keyed.distributed;
        if let Some(family) = families.get(name) {
            return Ok(family.clone());
        }
        let code = self.store::<RateLimiter>().code.read();
        let file = self.file();
        let config = build_config(&self.inner.classes, &file, &code, name)?;
        let resolved = file.rate_limiter().for_name(name);
        let bounds = crate::keyed::bounds(resolved);
        let tiers =
            crate::keyed::u32_tiers(resolved, "limit-for-period", config.limit_for_period());
        let family = match &self.inner.clock {
            Some(clock) => {
                KeyedDistributedRateLimiter::with_clock(name, config, bounds, clock.clone())
            }
            None => KeyedDistributedRateLimiter::new(name, config, bounds),
        }
        .map_err(|source| RegistryError::InvalidConfig {
            kind: Kind::RateLimiter,
            name: name.to_owned(),
            source,
        })?;
        family
            .set_tiers(tiers)
            .map_err(|source| RegistryError::InvalidConfig {
                kind: Kind::RateLimiter,
                name: name.to_owned(),
                source: source.in_path(&format!("{}.keyed", resolved.path())),
            })?;
        Ok(families.entry(Arc::from(name)).or_insert(family).clone())
    }

    /// After a reload: each Redis-backed keyed family takes its instance's
    /// new `limit-for-period`, overrides and bounds (the keys held too).
    pub(crate) fn refresh_keyed_distributed(&self) {
        let file = self.file();
        let code = self.store::<RateLimiter>().code.read();
        for family in self.inner.keyed.distributed.iter() {
            let name = family.key();
            let config = match build_config(&self.inner.classes, &file, &code, name) {
                Ok(config) => config,
                Err(error) => {
                    tracing::error!(%name, %error, "keyed distributed rate limiter kept its limits");
                    continue;
                }
            };
            let resolved = file.rate_limiter().for_name(name);
            let tiers =
                crate::keyed::u32_tiers(resolved, "limit-for-period", config.limit_for_period());
            if let Err(error) = family.set_tiers(tiers) {
                tracing::error!(%name, %error, "keyed distributed rate limiter kept its limits");
            }
            family.reconfigure(crate::keyed::bounds(resolved));
        }
    }

    /// The names of every Redis-backed rate limiter created so far, sorted.
    pub fn distributed_rate_limiter_names(&self) -> Vec<String> {
        Twins::names(&self.store::<RateLimiter>().twins)
    }
}

/// A new, unregistered distributed limiter for `name` as `file` and `code`
/// resolve it (the quota as the local limiter's, the Redis keys from the
/// file).
fn build(
    classes: &ErrorClasses,
    file: &FileConfig,
    code: &CodeSettings<RateLimiterConfigBuilder>,
    name: &str,
) -> Result<DistributedRateLimiter, RegistryError> {
    let config = build_config(classes, file, code, name)?;
    DistributedRateLimiter::new(name, config).map_err(|source| RegistryError::InvalidConfig {
        kind: Kind::RateLimiter,
        name: name.to_owned(),
        source,
    })
}

/// The distributed limiter's configuration for `name` as `file` and `code`
/// resolve it.
fn build_config(
    classes: &ErrorClasses,
    file: &FileConfig,
    code: &CodeSettings<RateLimiterConfigBuilder>,
    name: &str,
) -> Result<DistributedRateLimiterConfig, RegistryError> {
    let entry = file.rate_limiter().for_name(name);
    if !is_redis_backed(entry) {
        return Err(RegistryError::IllegalOperation {
            kind: Kind::RateLimiter,
            name: name.to_owned(),
            reason: format!(
                "not redis-backed: set `backend = \"redis\"` (and `redis-url`) under `{}`",
                entry.path()
            ),
        });
    }
    let invalid = |source| RegistryError::InvalidConfig {
        kind: Kind::RateLimiter,
        name: name.to_owned(),
        source,
    };
    let (quota, _) = resolve_layers::<RateLimiter>(classes, file, code, name, &mut ())?;
    limiter_config(entry, &quota).map_err(invalid)
}

fn backend_change(name: &str, from: &str, to: &str) -> RegistryError {
    RegistryError::IllegalOperation {
        kind: Kind::RateLimiter,
        name: name.to_owned(),
        reason: format!(
            "runs on the {from} backend and its call sites hold that limiter: a reload cannot \
             move it to the {to} backend (keep `backend` as it is, or restart the process)"
        ),
    }
}

/// Whether the entry says `backend = "redis"`.
pub(crate) fn is_redis_backed(entry: &Resolved<RateLimiterConfig>) -> bool {
    matches!(entry.value("backend"), Some(Val::Choice("redis")))
}

/// The distributed limiter's config of a file `entry`: the quota (`limit-for-period`,
/// `limit-refresh-period`, `timeout-duration`) from `quota`, the local
/// config the registry resolved for the same name (file and code
/// settings), and the Redis keys from the entry. An invalid value is
/// reported under the key path that set it.
fn limiter_config(
    entry: &Resolved<RateLimiterConfig>,
    quota: &RateLimiterConfig,
) -> Result<DistributedRateLimiterConfig, ConfigError> {
    let mut b = DistributedRateLimiterConfig::builder()
        .limit_for_period(quota.limit_for_period())
        .limit_refresh_period(quota.limit_refresh_period())
        .timeout_duration(quota.timeout_duration());
    // The classes' thresholds, from the same keys as the local limiter's
    // (`sheddable-threshold`, …), already checked there.
    for class in resil_core::Criticality::ALL {
        b = b.threshold(class, quota.threshold(class));
    }
    if let Some(Val::Text(url)) = entry.value("redis-url") {
        b = b.redis_url(url.as_str());
    }
    // `redis-url` lists a cluster's nodes or the sentinels, comma-separated;
    // `topology` says which, `sentinel-master-name` names the primary.
    if let Some(Val::Choice(word)) = entry.value("topology") {
        b = b.topology(match *word {
            "CLUSTER" => Topology::Cluster,
            "SENTINEL" => Topology::Sentinel,
            _ => Topology::Standalone,
        });
    }
    if let Some(Val::Text(name)) = entry.value("sentinel-master-name") {
        b = b.sentinel_master_name(name.as_str());
    }
    if let Some(Val::U32(n)) = entry.value("lease-size") {
        b = b.lease_size(*n);
    }
    if let Some(Val::Duration(d)) = entry.value("lease-ttl") {
        b = b.lease_ttl(*d);
    }
    if let Some(Val::Text(prefix)) = entry.value("key-prefix") {
        b = b.key_prefix(prefix.as_str());
    }
    if let Some(Val::Choice(word)) = entry.value("algorithm") {
        b = b.algorithm(match *word {
            "GCRA" => Algorithm::Gcra,
            _ => Algorithm::SlidingWindow,
        });
    }
    if let Some(Val::U32(n)) = entry.value("buckets") {
        b = b.buckets(*n);
    }
    if let Some(Val::U32(n)) = entry.value("burst") {
        b = b.burst(*n);
    }
    if let Some(Val::Duration(d)) = entry.value("redis-timeout") {
        b = b.redis_timeout(*d);
    }
    if let Some(Val::Choice(word)) = entry.value("failure-policy") {
        b = b.failure_policy(match *word {
            "FAIL_OPEN" => FailurePolicy::FailOpen,
            "LOCAL_FALLBACK" => {
                let expected_instances = match entry.value("expected-instances") {
                    Some(Val::U32(n)) => *n,
                    _ => {
                        return Err(ConfigError::new(
                            key_path(entry, "expected-instances"),
                            "nothing",
                            "how many instances share the quota (a whole number >= 1) \
                             when failure-policy is LOCAL_FALLBACK",
                        ))
                    }
                };
                FailurePolicy::LocalFallback { expected_instances }
            }
            _ => FailurePolicy::FailClosed,
        });
    }
    b.build().map_err(|e| {
        let key = match e.field() {
            "failure_policy.expected_instances" => "expected-instances".to_owned(),
            field => field.replace('_', "-"),
        };
        ConfigError::new(
            key_path(entry, &key),
            e.got().to_owned(),
            e.expected().to_owned(),
        )
    })
}

/// Where `key` was set, or where it would be written in this entry.
fn key_path(entry: &Resolved<RateLimiterConfig>, key: &str) -> String {
    entry
        .path_of(key)
        .map_or_else(|| format!("{}.{key}", entry.path()), str::to_owned)
}

/// `redis://user:secret@host/` → `redis://user:***@host/`: a snapshot must not
/// publish the password.
fn redacted(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((userinfo, host)) => {
            let user = userinfo.split_once(':').map_or("", |(user, _)| user);
            format!("{scheme}://{user}:***@{host}{path}")
        }
        None => url.to_owned(),
    }
}

fn distributed_config(c: &DistributedRateLimiterConfig) -> Vec<(&'static str, String)> {
    let mut values = vec![
        ("limit-for-period", c.limit_for_period().to_string()),
        ("limit-refresh-period", d(c.limit_refresh_period())),
        ("timeout-duration", d(c.timeout_duration())),
        ("backend", "redis".to_owned()),
        ("redis-url", redacted(c.redis_url())),
        ("key-prefix", c.key_prefix().to_owned()),
        ("algorithm", c.algorithm().as_str().to_ascii_uppercase()),
        ("buckets", c.buckets().to_string()),
        ("burst", c.burst().to_string()),
        ("redis-timeout", d(c.redis_timeout())),
        (
            "failure-policy",
            c.failure_policy().as_str().to_ascii_uppercase(),
        ),
    ];
    if let FailurePolicy::LocalFallback { expected_instances } = c.failure_policy() {
        values.push(("expected-instances", expected_instances.to_string()));
    }
    values.push(("topology", c.topology().as_str().to_ascii_uppercase()));
    if c.topology() == Topology::Sentinel {
        values.push(("sentinel-master-name", c.sentinel_master_name().to_owned()));
    }
    values.push(("lease-size", c.lease_size().to_string()));
    if c.lease_size() > 0 {
        values.push(("lease-ttl", d(c.lease_ttl())));
    }
    values
}

const ACQUIRES: Family = Family::new(
    "ratelimiter_distributed_acquire_calls",
    "Acquisitions of a Redis-backed rate limiter, granted or refused (kind), whoever decided",
);
const FALLBACKS: Family = Family::new(
    "ratelimiter_distributed_fallback_calls",
    "Decisions the failure policy made while Redis could not answer (kind: granted, refused)",
);
const FAILURES: Family = Family::new(
    "ratelimiter_distributed_backend_failure_calls",
    "Redis calls that failed, by why (kind)",
);
const SCRIPTS: Family = Family::new(
    "ratelimiter_distributed_script_calls",
    "Acquire scripts run on Redis",
);
const LEASES: Family = Family::new(
    "ratelimiter_distributed_lease_permits",
    "Permits taken from the shared quota into local leases, handed out from them, and returned unused (kind)",
);

/// A Redis-backed rate limiter reports under the rate limiter's kind, with
/// Resilience4j's `ratelimiter_waiting_threads` and
/// `ratelimiter_available_permissions` (the permits left after the last
/// verdict this process saw) and resil's own counts of what Redis and the
/// failure policy decided.
impl Telemetry for DistributedRateLimiter {
    fn metric_values(&self) -> Vec<Metric> {
        let m = self.metrics();
        let mut values = vec![
            Metric::gauge(WAITING, None, f64::from(m.number_of_waiting_tasks())),
            Metric::counter(ACQUIRES, Some("successful"), m.successful_acquires()),
            Metric::counter(ACQUIRES, Some("failed"), m.failed_acquires()),
            Metric::counter(FALLBACKS, Some("granted"), m.fallback_grants()),
            Metric::counter(FALLBACKS, Some("refused"), m.fallback_refusals()),
            Metric::counter(FAILURES, Some("timeout"), m.redis_timeouts()),
            Metric::counter(FAILURES, Some("unavailable"), m.redis_unavailable()),
            Metric::counter(FAILURES, Some("error"), m.redis_errors()),
            Metric::counter(FAILURES, Some("auth"), m.redis_auth_failures()),
            Metric::counter(FAILURES, Some("cannot_block"), m.cannot_block()),
            Metric::counter(SCRIPTS, None, m.script_calls()),
            Metric::counter(LEASES, Some("leased"), m.leased_permits()),
            Metric::counter(LEASES, Some("handed_out"), m.lease_grants()),
            Metric::counter(LEASES, Some("returned"), m.returned_permits()),
        ];
        if let Some(left) = m.last_remaining() {
            values.push(Metric::gauge(AVAILABLE, None, left as f64));
        }
        values.extend(resil_core::Criticality::ALL.map(|c| {
            Metric::counter(REFUSED_BY_CLASS, Some(c.as_str()), m.failed_acquires_of(c))
                .keyed("criticality")
        }));
        values
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        distributed_config(self.config())
    }

    fn health(&self) -> (Status, Option<String>) {
        let m = self.metrics();
        if m.backend_failing() {
            (
                Status::Degraded,
                Some(format!(
                    "Redis gave no verdict on the last acquire: the {} policy decides",
                    self.config().failure_policy().as_str().to_ascii_uppercase()
                )),
            )
        } else if m.number_of_waiting_tasks() > 0 {
            (
                Status::Degraded,
                Some(format!(
                    "{} callers waiting for the shared quota",
                    m.number_of_waiting_tasks()
                )),
            )
        } else {
            (Status::Up, None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::redacted;

    #[test]
    fn a_password_in_the_redis_url_is_redacted() {
        assert_eq!(
            redacted("redis://app:s3cret@cache:6379/0"),
            "redis://app:***@cache:6379/0"
        );
        assert_eq!(redacted("redis://:s3cret@cache/"), "redis://:***@cache/");
        assert_eq!(
            redacted("redis://127.0.0.1:6379/"),
            "redis://127.0.0.1:6379/"
        );
        assert_eq!(redacted("unix:///tmp/redis.sock"), "unix:///tmp/redis.sock");
    }
}
