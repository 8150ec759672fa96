//! Redis-backed rate limiters by name (feature `redis`): the rate-limiter
//! entries whose config says `backend = "redis"`.

use std::sync::Arc;

use dashmap::mapref::entry::Entry as MapEntry;
use resil_core::distributed_rate_limiter::DistributedRateLimiter;
use resil_core::rate_limiter::RateLimiter;

use crate::handle::{Handle, Slot};
use crate::{Kind, Registry, RegistryError};

impl Registry {
    /// Whether the rate limiter `name` is configured with `backend = "redis"`
    /// (its own entry, the named config it inherits from, or the default
    /// config): then [`distributed_rate_limiter`](Self::distributed_rate_limiter)
    /// serves it, and `#[rate_limiter(name = …)]` call sites use that.
    pub fn is_redis_backed(&self, name: &str) -> bool {
        self.file().rate_limiter().for_name(name).is_redis_backed()
    }

    /// The Redis-backed rate limiter `name`, created on first use: same name →
    /// same instance (one connection, one set of metrics).
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
    /// A reload does not rebuild a distributed limiter that already exists.
    ///
    /// # Errors
    /// [`RegistryError::IllegalOperation`] when the settings for `name` do not
    /// say `backend = "redis"`; [`RegistryError::InvalidConfig`] naming the
    /// key path of an invalid value; [`RegistryError::CardinalityExceeded`]
    /// past the cap on instances per kind.
    pub fn distributed_rate_limiter(
        &self,
        name: &str,
    ) -> Result<Handle<DistributedRateLimiter>, RegistryError> {
        let map = &self.inner.distributed;
        if let Some(slot) = map.get(name) {
            return Ok(Handle::from_slot(Arc::clone(&slot)));
        }
        let file = self.file();
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
        let quota = {
            let code = self.store::<RateLimiter>().code.read();
            self.resolve::<RateLimiter>(&file, &code, name)?
        };
        let config =
            entry
                .distributed_config(&quota)
                .map_err(|source| RegistryError::InvalidConfig {
                    kind: Kind::RateLimiter,
                    name: name.to_owned(),
                    source,
                })?;
        // Counted before the entry's shard is locked (`len` reads every shard).
        let full = map.len() >= self.inner.max_per_kind;
        match map.entry(Arc::from(name)) {
            MapEntry::Occupied(o) => Ok(Handle::from_slot(Arc::clone(o.get()))),
            MapEntry::Vacant(v) => {
                if full {
                    return Err(RegistryError::CardinalityExceeded {
                        kind: Kind::RateLimiter,
                        name: name.to_owned(),
                        limit: self.inner.max_per_kind,
                    });
                }
                let name = Arc::clone(v.key());
                let limiter =
                    DistributedRateLimiter::new(Arc::clone(&name), config).map_err(|source| {
                        RegistryError::InvalidConfig {
                            kind: Kind::RateLimiter,
                            name: name.to_string(),
                            source,
                        }
                    })?;
                let slot = Arc::new(Slot::new(name, limiter));
                v.insert(Arc::clone(&slot));
                Ok(Handle::from_slot(slot))
            }
        }
    }
}
