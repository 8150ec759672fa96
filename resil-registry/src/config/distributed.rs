//! A rate-limiter entry with `backend = "redis"` → the distributed limiter's
//! config (feature `redis`): the quota keys the local limiter also reads, plus
//! the Redis-only keys, every invalid value reported with its key path.

use resil_core::distributed_rate_limiter::{
    Algorithm, DistributedRateLimiterConfig, FailurePolicy, Topology,
};
use resil_core::rate_limiter::RateLimiterConfig;
use resil_core::ConfigError;

use super::resolved::Resolved;
use super::schema::Val;

impl Resolved<RateLimiterConfig> {
    /// Whether the entry says `backend = "redis"`.
    pub(crate) fn is_redis_backed(&self) -> bool {
        matches!(self.value("backend"), Some(Val::Choice("redis")))
    }

    /// The distributed limiter's config: the quota (`limit-for-period`,
    /// `limit-refresh-period`, `timeout-duration`) from `quota`, the local
    /// config the registry resolved for the same name (file and code
    /// settings), and the Redis keys from this entry. An invalid value is
    /// reported under the key path that set it.
    pub(crate) fn distributed_config(
        &self,
        quota: &RateLimiterConfig,
    ) -> Result<DistributedRateLimiterConfig, ConfigError> {
        let mut b = DistributedRateLimiterConfig::builder()
            .limit_for_period(quota.limit_for_period())
            .limit_refresh_period(quota.limit_refresh_period())
            .timeout_duration(quota.timeout_duration());
        if let Some(Val::Text(url)) = self.value("redis-url") {
            b = b.redis_url(url.as_str());
        }
        // `redis-url` lists a cluster's nodes or the sentinels, comma-separated;
        // `topology` says which, `sentinel-master-name` names the primary.
        if let Some(Val::Choice(word)) = self.value("topology") {
            b = b.topology(match *word {
                "CLUSTER" => Topology::Cluster,
                "SENTINEL" => Topology::Sentinel,
                _ => Topology::Standalone,
            });
        }
        if let Some(Val::Text(name)) = self.value("sentinel-master-name") {
            b = b.sentinel_master_name(name.as_str());
        }
        if let Some(Val::U32(n)) = self.value("lease-size") {
            b = b.lease_size(*n);
        }
        if let Some(Val::Duration(d)) = self.value("lease-ttl") {
            b = b.lease_ttl(*d);
        }
        if let Some(Val::Text(prefix)) = self.value("key-prefix") {
            b = b.key_prefix(prefix.as_str());
        }
        if let Some(Val::Choice(word)) = self.value("algorithm") {
            b = b.algorithm(match *word {
                "GCRA" => Algorithm::Gcra,
                _ => Algorithm::SlidingWindow,
            });
        }
        if let Some(Val::U32(n)) = self.value("buckets") {
            b = b.buckets(*n);
        }
        if let Some(Val::U32(n)) = self.value("burst") {
            b = b.burst(*n);
        }
        if let Some(Val::Duration(d)) = self.value("redis-timeout") {
            b = b.redis_timeout(*d);
        }
        if let Some(Val::Choice(word)) = self.value("failure-policy") {
            b = b.failure_policy(match *word {
                "FAIL_OPEN" => FailurePolicy::FailOpen,
                "LOCAL_FALLBACK" => {
                    let expected_instances = match self.value("expected-instances") {
                        Some(Val::U32(n)) => *n,
                        _ => {
                            return Err(ConfigError::new(
                                self.key_path("expected-instances"),
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
                self.key_path(&key),
                e.got().to_owned(),
                e.expected().to_owned(),
            )
        })
    }

    /// Where `key` was set, or where it would be written in this entry.
    fn key_path(&self, key: &str) -> String {
        self.path_of(key)
            .map_or_else(|| format!("{}.{key}", self.path()), str::to_owned)
    }
}
