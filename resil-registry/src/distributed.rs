//! Redis-backed rate limiters by name (feature `redis`): the rate-limiter
//! entries whose config says `backend = "redis"`.
//!
//! They live beside the local rate limiters, in their own map, and follow
//! the same rules: get-or-create under the entry's shard lock (one instance
//! and one `Added` event per name), the cap on instances per kind, a rebuild
//! when `configure_rate_limiter` or a reload changes what they resolve to
//! (every handle sees the new instance), and a place in the snapshot, the
//! health summary and the published metrics.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use dashmap::mapref::entry::Entry as MapEntry;
use resil_core::distributed_rate_limiter::{
    DistributedRateLimiter, DistributedRateLimiterConfigBuilder,
};
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfigBuilder};

use crate::config::FileConfig;
use crate::event::RegistryEventKind;
use crate::handle::{Handle, Slot};
use crate::store::CodeSettings;
use crate::{Kind, Registry, RegistryError};

/// A distributed limiter to install in place of the running one.
pub(crate) struct Rebuild {
    name: String,
    limiter: DistributedRateLimiter,
}

impl Registry {
    /// Whether the rate limiter `name` is configured with `backend = "redis"`
    /// (its own entry, the named config it inherits from, or the default
    /// config): then [`distributed_rate_limiter`](Self::distributed_rate_limiter)
    /// serves it, and `#[rate_limiter(name = …)]` call sites use that.
    pub fn is_redis_backed(&self, name: &str) -> bool {
        self.file().rate_limiter().for_name(name).is_redis_backed()
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
        let map = &self.inner.distributed;
        if let Some(slot) = map.get(name) {
            return Ok(Handle::from_slot(Arc::clone(&slot)));
        }
        // Settings first, then the shard: the order every creation uses.
        let code = self.store::<RateLimiter>().code.read();
        let file = self.file();
        let limiter = self.build_distributed(&file, &code, name)?;
        match map.entry(Arc::from(name)) {
            MapEntry::Occupied(o) => Ok(Handle::from_slot(Arc::clone(o.get()))),
            MapEntry::Vacant(v) => {
                let len = &self.inner.distributed_len;
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

    /// The names of every Redis-backed rate limiter created so far, sorted.
    pub fn distributed_rate_limiter_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .inner
            .distributed
            .iter()
            .map(|e| e.key().to_string())
            .collect();
        names.sort();
        names
    }

    /// The running distributed limiter `name`, if one was created.
    pub(crate) fn find_distributed(&self, name: &str) -> Option<Handle<DistributedRateLimiter>> {
        self.inner
            .distributed
            .get(name)
            .map(|slot| Handle::from_slot(Arc::clone(&slot)))
    }

    /// A new, unregistered distributed limiter for `name` as `file` and
    /// `code` resolve it.
    fn build_distributed(
        &self,
        file: &FileConfig,
        code: &CodeSettings<RateLimiterConfigBuilder>,
        name: &str,
    ) -> Result<DistributedRateLimiter, RegistryError> {
        let entry = file.rate_limiter().for_name(name);
        if !entry.is_redis_backed() {
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
        let quota = self.resolve::<RateLimiter>(file, code, name)?;
        let config = entry.distributed_config(&quota).map_err(invalid)?;
        DistributedRateLimiter::new(name, config).map_err(invalid)
    }

    /// What `file` and `code` make of the running distributed limiters:
    /// a rebuild for each whose config changes, an error for each that no
    /// longer builds or would leave the Redis backend. Also refuses moving a
    /// running *local* limiter onto Redis (its call sites hold the local
    /// one). `old` is the file in force.
    pub(crate) fn validate_distributed(
        &self,
        old: &FileConfig,
        new: &FileConfig,
        code: &CodeSettings<RateLimiterConfigBuilder>,
        errors: &mut Vec<RegistryError>,
    ) -> Vec<Rebuild> {
        let mut rebuilds = Vec::new();
        for name in self.distributed_rate_limiter_names() {
            if !new.rate_limiter().for_name(&name).is_redis_backed() {
                errors.push(backend_change(&name, "redis", "local"));
                continue;
            }
            // Changed when the file's answer changed, as for local instances:
            // a limit an operator set by name survives a reload that leaves
            // this limiter's settings alone.
            let before = self.build_distributed(old, code, &name).ok();
            match self.build_distributed(new, code, &name) {
                Ok(limiter) if before.is_some_and(|b| b.config() == limiter.config()) => {}
                Ok(limiter) => rebuilds.push(Rebuild { name, limiter }),
                Err(e) => errors.push(e),
            }
        }
        for name in self.names::<RateLimiter>() {
            let was = old.rate_limiter().for_name(&name).is_redis_backed();
            if !was && new.rate_limiter().for_name(&name).is_redis_backed() {
                errors.push(backend_change(&name, "local", "redis"));
            }
        }
        rebuilds
    }

    /// Installs validated rebuilds; returns the labels of the replaced ones.
    pub(crate) fn apply_distributed(&self, rebuilds: Vec<Rebuild>, cause: &str) -> Vec<String> {
        let mut replaced = Vec::new();
        for Rebuild { name, limiter } in rebuilds {
            let Some(slot) = self.inner.distributed.get(name.as_str()) else {
                continue;
            };
            slot.replace(limiter);
            self.inner.events.publish(
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

    /// After `configure_rate_limiter(name, …)` changed the code settings:
    /// the rebuild of the running distributed limiter `name`, if it changes.
    pub(crate) fn reconfigure_distributed(
        &self,
        code: &CodeSettings<RateLimiterConfigBuilder>,
        name: &str,
    ) -> Result<Option<Rebuild>, RegistryError> {
        let Some(running) = self.find_distributed(name) else {
            return Ok(None);
        };
        let limiter = self.build_distributed(&self.file(), code, name)?;
        Ok((limiter.config() != running.config()).then(|| Rebuild {
            name: name.to_owned(),
            limiter,
        }))
    }

    /// An operator's change to the running distributed limiter `name` (a
    /// new limit or timeout): a new instance with `change` applied to its
    /// config. `Ok(false)` when none runs.
    pub(crate) fn change_distributed(
        &self,
        name: &str,
        cause: &str,
        change: impl FnOnce(DistributedRateLimiterConfigBuilder) -> DistributedRateLimiterConfigBuilder,
    ) -> Result<bool, RegistryError> {
        let Some(running) = self.find_distributed(name) else {
            return Ok(false);
        };
        let invalid = |source| RegistryError::InvalidConfig {
            kind: Kind::RateLimiter,
            name: name.to_owned(),
            source,
        };
        let config = change(running.config().to_builder())
            .build()
            .map_err(invalid)?;
        let limiter = DistributedRateLimiter::new(name, config).map_err(invalid)?;
        let rebuild = Rebuild {
            name: name.to_owned(),
            limiter,
        };
        self.apply_distributed(vec![rebuild], cause);
        Ok(true)
    }

    /// How many distributed limiters exist.
    pub(crate) fn distributed_len(&self) -> usize {
        self.inner.distributed.len()
    }
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
