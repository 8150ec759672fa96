//! The distributed rate limiter's configuration: where Redis is, the quota,
//! the algorithm, the waits and the failure policy.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::criticality::{
    check_classes, share_from_percent, share_of, Criticality, Thresholds, INVALID,
};
use crate::error::ConfigError;

/// The shortest `limit_refresh_period`: one millisecond (key TTLs are whole
/// milliseconds).
pub const MIN_LIMIT_REFRESH_PERIOD: Duration = Duration::from_millis(1);
/// The longest `limit_refresh_period`: 30 days.
pub const MAX_LIMIT_REFRESH_PERIOD: Duration = Duration::from_secs(30 * 24 * 3600);
/// The most buckets a sliding window may be cut into.
pub const MAX_BUCKETS: u32 = 1000;
/// GCRA only: the longest burst tolerance, `burst × limit_refresh_period /
/// limit_for_period`, about 71 years (2^51 µs). The script's arithmetic is
/// exact below it (Redis's Lua numbers are doubles, exact to 2^53 µs since
/// the epoch); a longer one could never be honoured, so `build` refuses it.
pub const MAX_GCRA_TOLERANCE: Duration = Duration::from_micros(1 << 51);

/// How the shared quota is counted (see the [module docs](super) for what
/// "N per interval" means with each).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Algorithm {
    /// At most `limit_for_period` grants in *any* window of
    /// `limit_refresh_period`, counted in `buckets` time buckets per period
    /// (one small hash per limiter). Bursts up to the whole quota at once.
    #[default]
    SlidingWindow,
    /// GCRA: one grant every `limit_refresh_period / limit_for_period`, with up
    /// to `burst` at once after an idle spell (one string per limiter). Smooth
    /// pacing and the smallest footprint when there are many keys.
    Gcra,
}

impl Algorithm {
    /// A short, stable label: `sliding_window`, `gcra`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Algorithm::SlidingWindow => "sliding_window",
            Algorithm::Gcra => "gcra",
        }
    }
}

impl fmt::Display for Algorithm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What `redis_url` points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum Topology {
    /// One server (a primary), `redis://host:port/db`.
    #[default]
    Standalone,
    /// A Redis Cluster (feature `redis-cluster`): `redis_url` lists one or
    /// more of its nodes, comma-separated (`redis://a:7000,redis://b:7001`),
    /// from which the client learns the slot map. A limiter has one key, so
    /// its script always runs on the one primary that owns the key's slot;
    /// slot moves (`MOVED`, `ASK`) and failovers are followed by the client.
    Cluster,
    /// A primary watched by Redis Sentinel (feature `redis-sentinel`):
    /// `redis_url` lists the sentinels, comma-separated
    /// (`redis://s1:26379,redis://s2:26379`), and
    /// [`sentinel_master_name`](DistributedRateLimiterConfig::sentinel_master_name)
    /// names the primary they watch. The limiter asks them for the current
    /// primary when it connects, and again after the connection breaks or the
    /// server it reached answers `READONLY` (a demoted primary), so a
    /// failover is followed.
    Sentinel,
}

impl Topology {
    /// A short, stable label: `standalone`, `cluster`, `sentinel`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Topology::Standalone => "standalone",
            Topology::Cluster => "cluster",
            Topology::Sentinel => "sentinel",
        }
    }
}

/// What an acquire does when Redis does not answer within `redis_timeout` or
/// answers with an error. Every such decision is counted in the
/// [metrics](super::DistributedRateLimiterMetrics) and published as an
/// [event](super::DistributedRateLimiterEvent).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum FailurePolicy {
    /// Grant: availability over the quota. While Redis is down the callers are
    /// not limited at all.
    FailOpen,
    /// Refuse with `RequestNotPermitted`: the quota is never exceeded, and
    /// while Redis is down nothing passes. The default, because it is the only
    /// policy that keeps the limiter's promise.
    #[default]
    FailClosed,
    /// Decide on a local quota of `floor(limit_for_period /
    /// expected_instances)` permits in any window of `limit_refresh_period`
    /// (a sliding window in process memory, with reservations, like the
    /// shared one): with at most the expected number of instances running,
    /// they together never grant more than the shared quota in any window.
    LocalFallback {
        /// How many instances share the quota; 1 ..= `limit_for_period`.
        expected_instances: u32,
    },
}

impl FailurePolicy {
    /// A short, stable label: `fail_open`, `fail_closed`, `local_fallback`.
    pub const fn as_str(self) -> &'static str {
        match self {
            FailurePolicy::FailOpen => "fail_open",
            FailurePolicy::FailClosed => "fail_closed",
            FailurePolicy::LocalFallback { .. } => "local_fallback",
        }
    }
}

impl fmt::Display for FailurePolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The configuration of a [`DistributedRateLimiter`](super::DistributedRateLimiter).
///
/// The quota fields keep the local [`RateLimiterConfig`](crate::rate_limiter::RateLimiterConfig)'s
/// names (`limit_for_period`, `limit_refresh_period`, `timeout_duration`), so
/// one configuration section can describe either backend.
///
/// ```
/// use std::time::Duration;
/// use resil_core::distributed_rate_limiter::{
///     Algorithm, DistributedRateLimiterConfig, FailurePolicy,
/// };
///
/// let config = DistributedRateLimiterConfig::builder()
///     .redis_url("redis://127.0.0.1:6379/")
///     .key_prefix("checkout:")
///     .limit_for_period(1000)
///     .limit_refresh_period(Duration::from_secs(1))
///     .algorithm(Algorithm::Gcra)
///     .failure_policy(FailurePolicy::LocalFallback { expected_instances: 10 })
///     .build()
///     .unwrap();
/// assert_eq!(config.burst(), 1000); // GCRA's burst defaults to the limit
///
/// let err = DistributedRateLimiterConfig::builder()
///     .failure_policy(FailurePolicy::LocalFallback { expected_instances: 0 })
///     .build()
///     .unwrap_err();
/// assert_eq!(err.field(), "failure_policy.expected_instances");
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct DistributedRateLimiterConfig {
    redis_url: Arc<str>,
    topology: Topology,
    sentinel_master_name: Arc<str>,
    key_prefix: Arc<str>,
    algorithm: Algorithm,
    limit_for_period: u32,
    limit_refresh_period: Duration,
    timeout_duration: Duration,
    buckets: u32,
    burst: Option<u32>,
    redis_timeout: Duration,
    failure_policy: FailurePolicy,
    lease_size: u32,
    lease_ttl: Option<Duration>,
    /// Per class ([`Criticality::index`]), in percent.
    thresholds: Thresholds,
}

impl DistributedRateLimiterConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> DistributedRateLimiterConfigBuilder {
        DistributedRateLimiterConfigBuilder {
            config: DistributedRateLimiterConfig::default(),
            invalid: [None; 4],
        }
    }

    /// A builder starting from this configuration, to change a few values.
    pub fn to_builder(&self) -> DistributedRateLimiterConfigBuilder {
        DistributedRateLimiterConfigBuilder {
            config: self.clone(),
            invalid: [None; 4],
        }
    }

    /// The Redis server, as a `redis://` URL (default `redis://127.0.0.1:6379/`;
    /// `rediss://` needs a TLS feature of the `redis` crate).
    pub fn redis_url(&self) -> &str {
        &self.redis_url
    }

    /// Whether `redis_url` is one server or a cluster's nodes (default
    /// [`Topology::Standalone`]).
    pub fn topology(&self) -> Topology {
        self.topology
    }

    /// [`Topology::Sentinel`] only: the name the sentinels know the primary by
    /// (`sentinel monitor <name> …`; default `mymaster`).
    pub fn sentinel_master_name(&self) -> &str {
        &self.sentinel_master_name
    }

    /// The URLs in `redis_url`: one, or a cluster's nodes, or the sentinels.
    pub(crate) fn redis_urls(&self) -> impl Iterator<Item = &str> {
        self.redis_url.split(',').map(str::trim)
    }

    /// Prepended to the limiter's name to form its Redis key (default
    /// `resil:rate_limiter:`). The key is `{key_prefix}{name}:{algorithm}`.
    pub fn key_prefix(&self) -> &str {
        &self.key_prefix
    }

    /// How the quota is counted (default [`Algorithm::SlidingWindow`]).
    pub fn algorithm(&self) -> Algorithm {
        self.algorithm
    }

    /// N: permits per `limit_refresh_period`, shared by every client of the
    /// same key (default 50).
    pub fn limit_for_period(&self) -> u32 {
        self.limit_for_period
    }

    /// The interval the quota is counted over (default 1 s; 1 ms ..= 30 days).
    pub fn limit_refresh_period(&self) -> Duration {
        self.limit_refresh_period
    }

    /// How long an acquire may wait for permits before it is refused with
    /// `RequestNotPermitted` (default 5 s, Resilience4j's; zero never waits).
    pub fn timeout_duration(&self) -> Duration {
        self.timeout_duration
    }

    /// Sliding window only: the number of time buckets per period (default 10;
    /// 1 ..= 1000). A permit comes back between one period and one period plus
    /// one bucket after it was taken; more buckets return permits sooner and
    /// cost a few bytes each.
    pub fn buckets(&self) -> u32 {
        self.buckets
    }

    /// GCRA only: how many permits may be taken at once after an idle spell
    /// (default `limit_for_period`; 1 paces every grant evenly).
    pub fn burst(&self) -> u32 {
        self.burst.unwrap_or(self.limit_for_period)
    }

    /// How long one round trip to Redis may take before the failure policy
    /// decides instead (default 100 ms).
    pub fn redis_timeout(&self) -> Duration {
        self.redis_timeout
    }

    /// What happens when Redis is slow, down or failing (default
    /// [`FailurePolicy::FailClosed`]).
    pub fn failure_policy(&self) -> FailurePolicy {
        self.failure_policy
    }

    /// Local permit leases: how many permits one round trip may take for this
    /// process to hand out without asking Redis again (default 0: off, every
    /// acquire asks Redis). At most [`max_permits`](Self::max_permits). With
    /// leases on, `P` processes together admit at most `limit_for_period + P ×
    /// lease_size` in any window (see the [module docs](super#local-permit-leases)).
    pub fn lease_size(&self) -> u32 {
        self.lease_size
    }

    /// How long a lease's permits may be handed out after Redis granted them
    /// (default `limit_refresh_period`, the longest allowed); what is left
    /// then goes back to Redis with the next round trip.
    pub fn lease_ttl(&self) -> Duration {
        self.lease_ttl.unwrap_or(self.limit_refresh_period)
    }

    /// The most permits one acquire may ask for: the limit (sliding window) or
    /// the burst (GCRA).
    pub fn max_permits(&self) -> u32 {
        match self.algorithm {
            Algorithm::SlidingWindow => self.limit_for_period,
            Algorithm::Gcra => self.burst(),
        }
    }

    /// The threshold of `class`, in percent of the quota: a request of that
    /// class is admitted only while the quota holds fewer than
    /// `ceil(threshold × capacity / 100)` permits taken, counting its own,
    /// where the capacity is `limit_for_period` (sliding window) or `burst`
    /// (GCRA: permits taken are how far the theoretical arrival time runs
    /// ahead of now). Defaults 50, 75, 100, 100 from `SHEDDABLE` to
    /// `CRITICAL_PLUS`, the local limiter's, from the same file keys
    /// (`sheddable-threshold`, …). A class below 100 asks Redis itself with
    /// its ceiling, in the same one script call: it never waits, never
    /// reserves and never takes from or makes a local lease (a lease's
    /// permits were taken while the quota had room for the whole batch, so
    /// they cannot tell which class's ceiling they were under); the local
    /// fallback applies the same share to its own window.
    #[inline]
    pub fn threshold(&self, class: Criticality) -> f32 {
        self.thresholds.get(class.index())
    }

    /// The permits a request of `class` may bring a quota of `capacity`
    /// (the limit or the burst: [`max_permits`](Self::max_permits), or a
    /// keyed family's key's own) to, when its threshold is below 100 (see
    /// [`threshold`](Self::threshold)).
    pub(crate) fn class_ceiling(&self, class: Criticality, capacity: u32) -> Option<u32> {
        let threshold = self.threshold(class);
        (threshold < 100.0).then(|| share_of(capacity, share_from_percent(threshold)))
    }

    /// `limit_refresh_period` in whole microseconds (the scripts' unit).
    pub(crate) fn interval_micros(&self) -> u64 {
        u64::try_from(self.limit_refresh_period.as_micros()).unwrap_or(u64::MAX)
    }

    fn validate(&self) -> Result<(), ConfigError> {
        if self.redis_url.is_empty() {
            return Err(ConfigError::new(
                "redis_url",
                "\"\"",
                "a redis:// URL such as redis://127.0.0.1:6379/",
            ));
        }
        for url in self.redis_urls() {
            if let Err(e) = redis::Client::open(url) {
                return Err(url_error(url, &e));
            }
        }
        if self.topology == Topology::Standalone && self.redis_urls().count() > 1 {
            return Err(ConfigError::new(
                "redis_url",
                format!("{:?}", redacted(&self.redis_url)),
                "one redis:// URL (several, comma-separated, only with Topology::Cluster or Sentinel)",
            ));
        }
        if self.topology == Topology::Sentinel && !cfg!(feature = "redis-sentinel") {
            return Err(ConfigError::new(
                "topology",
                "sentinel",
                "standalone (Topology::Sentinel needs the `redis-sentinel` feature)",
            ));
        }
        if self.topology == Topology::Sentinel && self.sentinel_master_name.trim().is_empty() {
            return Err(ConfigError::new(
                "sentinel_master_name",
                "\"\"",
                "the name the sentinels monitor the primary by, such as mymaster",
            ));
        }
        if self.topology == Topology::Cluster && !cfg!(feature = "redis-cluster") {
            return Err(ConfigError::new(
                "topology",
                "cluster",
                "standalone (Topology::Cluster needs the `redis-cluster` feature)",
            ));
        }
        let period = self.limit_refresh_period;
        if !(MIN_LIMIT_REFRESH_PERIOD..=MAX_LIMIT_REFRESH_PERIOD).contains(&period) {
            return Err(ConfigError::new(
                "limit_refresh_period",
                format!("{period:?}"),
                "a duration in 1ms..=30 days",
            ));
        }
        let micros = self.interval_micros();
        let max_limit = u32::try_from(micros).unwrap_or(u32::MAX);
        if self.limit_for_period == 0 || self.limit_for_period > max_limit {
            return Err(ConfigError::new(
                "limit_for_period",
                self.limit_for_period,
                format!(
                    "an integer in 1..={max_limit} (at most one permit per microsecond of `limit_refresh_period`)"
                ),
            ));
        }
        let max_buckets = MAX_BUCKETS.min(max_limit);
        if self.buckets == 0 || self.buckets > max_buckets {
            return Err(ConfigError::new(
                "buckets",
                self.buckets,
                format!(
                    "an integer in 1..={max_buckets} (at most one bucket per microsecond of `limit_refresh_period`)"
                ),
            ));
        }
        if let Some(burst) = self.burst {
            if burst == 0 || burst > max_limit {
                return Err(ConfigError::new(
                    "burst",
                    burst,
                    format!("an integer in 1..={max_limit}"),
                ));
            }
        }
        if self.algorithm == Algorithm::Gcra {
            // A tolerance beyond what the script computes exactly would be
            // accepted and then refuse (or poll) forever.
            let emission = micros.div_ceil(u64::from(self.limit_for_period));
            let max_tolerance = u64::try_from(MAX_GCRA_TOLERANCE.as_micros()).unwrap_or(u64::MAX);
            let max_burst = u32::try_from(max_tolerance / emission)
                .unwrap_or(u32::MAX)
                .min(max_limit);
            if self.burst() > max_burst {
                return Err(ConfigError::new(
                    "burst",
                    self.burst(),
                    format!(
                        "an integer in 1..={max_burst} (burst × limit_refresh_period / \
                         limit_for_period at most about 71 years)"
                    ),
                ));
            }
        }
        if self.redis_timeout.is_zero() {
            return Err(ConfigError::new(
                "redis_timeout",
                format!("{:?}", self.redis_timeout),
                "a positive duration, such as 100ms",
            ));
        }
        if self.lease_size > self.max_permits() {
            let (bound, why) = match self.algorithm {
                Algorithm::SlidingWindow => {
                    ("limit_for_period", "a lease is one grant of the quota")
                }
                Algorithm::Gcra => ("burst", "a lease is one grant, at most a burst"),
            };
            return Err(ConfigError::new(
                "lease_size",
                self.lease_size,
                format!(
                    "an integer in 0..={} (0: no leases; at most {bound}: {why})",
                    self.max_permits()
                ),
            ));
        }
        if let Some(ttl) = self.lease_ttl {
            if self.lease_size == 0 {
                return Err(ConfigError::new(
                    "lease_ttl",
                    format!("{ttl:?}"),
                    "no lease_ttl while lease_size is 0 (leases are off), or a lease_size of 1 or more",
                ));
            }
            if ttl.is_zero() || ttl > self.limit_refresh_period {
                return Err(ConfigError::new(
                    "lease_ttl",
                    format!("{ttl:?}"),
                    format!(
                        "a positive duration of at most limit_refresh_period ({:?}): a lease never \
                         outlives the window its permits are counted in",
                        self.limit_refresh_period
                    ),
                ));
            }
        }
        if let FailurePolicy::LocalFallback { expected_instances } = self.failure_policy {
            // Each instance's local share is `limit / instances` (rounded
            // down, so that all of them together stay within the quota): at
            // least one permit each.
            if expected_instances == 0 || expected_instances > self.limit_for_period {
                return Err(ConfigError::new(
                    "failure_policy.expected_instances",
                    expected_instances,
                    format!(
                        "an integer in 1..={} (at most limit_for_period: each instance's \
                         local share is limit_for_period / expected_instances, at least 1)",
                        self.limit_for_period
                    ),
                ));
            }
        }
        Ok(())
    }
}

impl Default for DistributedRateLimiterConfig {
    /// 50 permits per second over a 10-bucket sliding window on
    /// `redis://127.0.0.1:6379/`, waits up to 5 s, 100 ms per Redis round trip,
    /// fail-closed.
    fn default() -> Self {
        DistributedRateLimiterConfig {
            redis_url: Arc::from("redis://127.0.0.1:6379/"),
            topology: Topology::Standalone,
            sentinel_master_name: Arc::from("mymaster"),
            key_prefix: Arc::from("resil:rate_limiter:"),
            algorithm: Algorithm::SlidingWindow,
            limit_for_period: 50,
            limit_refresh_period: Duration::from_secs(1),
            timeout_duration: Duration::from_secs(5),
            buckets: 10,
            burst: None,
            redis_timeout: Duration::from_millis(100),
            failure_policy: FailurePolicy::FailClosed,
            lease_size: 0,
            lease_ttl: None,
            thresholds: Thresholds::defaults(),
        }
    }
}

impl fmt::Debug for DistributedRateLimiterConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The URL may carry a password: show only the host part's presence.
        f.debug_struct("DistributedRateLimiterConfig")
            .field("redis_url", &redacted(&self.redis_url))
            .field("topology", &self.topology)
            .field("sentinel_master_name", &&*self.sentinel_master_name)
            .field("key_prefix", &&*self.key_prefix)
            .field("algorithm", &self.algorithm)
            .field("limit_for_period", &self.limit_for_period)
            .field("limit_refresh_period", &self.limit_refresh_period)
            .field("timeout_duration", &self.timeout_duration)
            .field("buckets", &self.buckets)
            .field("burst", &self.burst())
            .field("redis_timeout", &self.redis_timeout)
            .field("failure_policy", &self.failure_policy)
            .field("lease_size", &self.lease_size)
            .field("lease_ttl", &self.lease_ttl())
            .field("thresholds", &self.thresholds)
            .finish()
    }
}

/// The error for a URL the `redis` crate cannot use: the URL with its
/// password masked, and the crate's reason with any copy of it masked too.
pub(crate) fn url_error(url: &str, e: &redis::RedisError) -> ConfigError {
    let reason = mask_secret(url, &e.to_string());
    ConfigError::new(
        "redis_url",
        format!("{:?} ({reason})", redacted(url)),
        "a redis:// URL such as redis://127.0.0.1:6379/",
    )
}

/// The password of `url`, if it has one (`scheme://user:password@…` or a
/// `pass=`/`password=` query value).
pub(crate) fn secret_of(url: &str) -> Option<&str> {
    let in_query = url.split_once('?').and_then(|(_, q)| {
        q.split('&').find_map(|kv| match kv.split_once('=') {
            Some(("pass" | "password", v)) => Some(v),
            _ => None,
        })
    });
    let in_userinfo = || {
        let scheme = url.find("://")?;
        let at = url.rfind('@').filter(|&at| at > scheme)?;
        let (_, password) = url[scheme + 3..at].split_once(':')?;
        Some(password)
    };
    in_query.or_else(in_userinfo).filter(|p| !p.is_empty())
}

/// `text` with every copy of `url`'s password (raw or percent-decoded)
/// replaced by `***`.
pub(crate) fn mask_secret(url: &str, text: &str) -> String {
    if url.contains(',') {
        return url
            .split(',')
            .fold(text.to_owned(), |text, one| mask_secret(one.trim(), &text));
    }
    match secret_of(url) {
        Some(secret) => {
            let mut out = text.replace(secret, "***");
            let decoded = percent_decoded(secret);
            if !decoded.is_empty() && decoded != secret {
                out = out.replace(&decoded, "***");
            }
            out
        }
        None => text.to_owned(),
    }
}

fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && bytes[i + 1].is_ascii_hexdigit()
            && bytes[i + 2].is_ascii_hexdigit()
        {
            if let Ok(b) = u8::from_str_radix(&s[i + 1..i + 3], 16) {
                out.push(b);
                i += 3;
                continue;
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `redis://user:secret@host/` → `redis://user:***@host/`, and a
/// `pass=`/`password=` query value (`redis+unix:///s.sock?pass=secret`) → `***`.
pub(crate) fn redacted(url: &str) -> String {
    if url.contains(',') {
        return url.split(',').map(redacted).collect::<Vec<_>>().join(",");
    }
    let url = match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}{user}:***{}", &url[..scheme + 3], &url[at..])
        }
        _ => url.to_owned(),
    };
    match url.split_once('?') {
        Some((base, query)) => {
            let query: Vec<String> = query
                .split('&')
                .map(|kv| match kv.split_once('=') {
                    Some((k, _)) if k == "pass" || k == "password" => format!("{k}=***"),
                    _ => kv.to_owned(),
                })
                .collect();
            format!("{base}?{}", query.join("&"))
        }
        None => url,
    }
}

/// Builds a [`DistributedRateLimiterConfig`]; [`build`](Self::build) checks
/// every value.
#[derive(Debug, Clone)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct DistributedRateLimiterConfigBuilder {
    config: DistributedRateLimiterConfig,
    /// A threshold given outside `0..=100`, as given, for the error.
    invalid: [Option<f32>; 4],
}

impl DistributedRateLimiterConfigBuilder {
    /// The Redis server's URL.
    pub fn redis_url(mut self, url: impl Into<Arc<str>>) -> Self {
        self.config.redis_url = url.into();
        self
    }

    /// One server, or a cluster's nodes in `redis_url`.
    pub fn topology(mut self, topology: Topology) -> Self {
        self.config.topology = topology;
        self
    }

    /// [`Topology::Sentinel`]: the name the sentinels monitor the primary by.
    pub fn sentinel_master_name(mut self, name: impl Into<Arc<str>>) -> Self {
        self.config.sentinel_master_name = name.into();
        self
    }

    /// The prefix of the limiter's Redis key.
    pub fn key_prefix(mut self, prefix: impl Into<Arc<str>>) -> Self {
        self.config.key_prefix = prefix.into();
        self
    }

    /// The counting algorithm.
    pub fn algorithm(mut self, algorithm: Algorithm) -> Self {
        self.config.algorithm = algorithm;
        self
    }

    /// Permits per period: at least 1, at most one per microsecond of the period.
    pub fn limit_for_period(mut self, limit: u32) -> Self {
        self.config.limit_for_period = limit;
        self
    }

    /// The period: 1 ms ..= 30 days.
    pub fn limit_refresh_period(mut self, period: Duration) -> Self {
        self.config.limit_refresh_period = period;
        self
    }

    /// How long an acquire may wait for permits; zero refuses at once.
    pub fn timeout_duration(mut self, timeout: Duration) -> Self {
        self.config.timeout_duration = timeout;
        self
    }

    /// Sliding window: buckets per period (1 ..= 1000).
    pub fn buckets(mut self, buckets: u32) -> Self {
        self.config.buckets = buckets;
        self
    }

    /// GCRA: permits at once after an idle spell (at least 1).
    pub fn burst(mut self, burst: u32) -> Self {
        self.config.burst = Some(burst);
        self
    }

    /// The most one Redis round trip may take.
    pub fn redis_timeout(mut self, timeout: Duration) -> Self {
        self.config.redis_timeout = timeout;
        self
    }

    /// What to do when Redis is slow or down.
    pub fn failure_policy(mut self, policy: FailurePolicy) -> Self {
        self.config.failure_policy = policy;
        self
    }

    /// Local permit leases: take up to `size` permits per round trip and hand
    /// them out in this process (0, the default, turns leases off). Costs
    /// precision: `P` processes admit up to `limit_for_period + P × size` in a
    /// window (see the [module docs](super#local-permit-leases)).
    pub fn lease_size(mut self, size: u32) -> Self {
        self.config.lease_size = size;
        self
    }

    /// How long a lease's permits may be handed out (positive, at most
    /// `limit_refresh_period`, its default); needs a `lease_size`.
    pub fn lease_ttl(mut self, ttl: Duration) -> Self {
        self.config.lease_ttl = Some(ttl);
        self
    }

    /// The threshold of `class`, in percent of the quota: `(0, 100]`, and no
    /// class's above a more critical one's (see
    /// [`DistributedRateLimiterConfig::threshold`]).
    pub fn threshold(mut self, class: Criticality, percent: f32) -> Self {
        self.config.thresholds.0[class.index()] = Thresholds::encode(percent);
        self.invalid[class.index()] = (Thresholds::encode(percent) == INVALID).then_some(percent);
        self
    }

    /// [`threshold`](Self::threshold) of `SHEDDABLE`.
    pub fn sheddable_threshold(self, percent: f32) -> Self {
        self.threshold(Criticality::Sheddable, percent)
    }

    /// [`threshold`](Self::threshold) of `SHEDDABLE_PLUS`.
    pub fn sheddable_plus_threshold(self, percent: f32) -> Self {
        self.threshold(Criticality::SheddablePlus, percent)
    }

    /// [`threshold`](Self::threshold) of `CRITICAL`.
    pub fn critical_threshold(self, percent: f32) -> Self {
        self.threshold(Criticality::Critical, percent)
    }

    /// [`threshold`](Self::threshold) of `CRITICAL_PLUS`.
    pub fn critical_plus_threshold(self, percent: f32) -> Self {
        self.threshold(Criticality::CriticalPlus, percent)
    }

    /// The configuration, or the first invalid value with its field name.
    pub fn build(self) -> Result<DistributedRateLimiterConfig, ConfigError> {
        let given: [f32; 4] = std::array::from_fn(|i| {
            self.invalid[i].unwrap_or_else(|| self.config.thresholds.get(i))
        });
        check_classes(&given, &[0.0; 4])?;
        self.config.validate()?;
        Ok(self.config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field_of(b: DistributedRateLimiterConfigBuilder) -> String {
        b.build().unwrap_err().field().to_owned()
    }

    #[test]
    fn the_defaults_build_and_describe_a_per_second_quota() {
        let c = DistributedRateLimiterConfig::builder().build().unwrap();
        assert_eq!(c, DistributedRateLimiterConfig::default());
        assert_eq!(c.limit_for_period(), 50);
        assert_eq!(c.limit_refresh_period(), Duration::from_secs(1));
        assert_eq!(c.timeout_duration(), Duration::from_secs(5));
        assert_eq!(c.buckets(), 10);
        assert_eq!(c.burst(), 50);
        assert_eq!(c.max_permits(), 50);
        assert_eq!(c.failure_policy(), FailurePolicy::FailClosed);
        assert_eq!(c.algorithm(), Algorithm::SlidingWindow);
    }

    #[test]
    fn a_class_ceiling_is_its_threshold_s_share_of_the_limit_or_the_burst_rounded_up() {
        let c = DistributedRateLimiterConfig::builder()
            .limit_for_period(7)
            .build()
            .unwrap();
        // 50 % and 75 % of 7, rounded up; CRITICAL and CRITICAL_PLUS: none.
        assert_eq!(
            Criticality::ALL.map(|class| c.class_ceiling(class, c.max_permits())),
            [Some(4), Some(6), None, None]
        );
        let gcra = c
            .to_builder()
            .algorithm(Algorithm::Gcra)
            .burst(2)
            .sheddable_threshold(10.0)
            .build()
            .unwrap();
        assert_eq!(
            gcra.class_ceiling(Criticality::Sheddable, gcra.max_permits()),
            Some(1)
        );
        assert_eq!(
            gcra.class_ceiling(Criticality::SheddablePlus, gcra.max_permits()),
            Some(2)
        );
    }

    #[test]
    fn class_thresholds_out_of_range_or_out_of_order_are_rejected_naming_the_field() {
        let b = DistributedRateLimiterConfig::builder;
        let err = b().sheddable_threshold(0.0).build().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid `sheddable_threshold`: got 0, expected a percentage in (0, 100]"
        );
        let err = b().critical_threshold(140.0).build().unwrap_err();
        assert_eq!((err.field(), err.got()), ("critical_threshold", "140"));
        let err = b().sheddable_threshold(80.0).build().unwrap_err();
        assert_eq!(err.field(), "sheddable_plus_threshold");
        assert!(err
            .expected()
            .contains("never refused before a less critical one"));
    }

    #[test]
    fn every_invalid_value_is_rejected_naming_its_field() {
        let b = DistributedRateLimiterConfig::builder;
        assert_eq!(field_of(b().redis_url("")), "redis_url");
        assert_eq!(field_of(b().redis_url("http://x")), "redis_url");
        assert_eq!(field_of(b().limit_for_period(0)), "limit_for_period");
        assert_eq!(
            field_of(
                b().limit_refresh_period(Duration::from_millis(1))
                    .limit_for_period(1001)
            ),
            "limit_for_period"
        );
        assert_eq!(
            field_of(b().limit_refresh_period(Duration::from_micros(999))),
            "limit_refresh_period"
        );
        assert_eq!(
            field_of(b().limit_refresh_period(MAX_LIMIT_REFRESH_PERIOD + Duration::from_secs(1))),
            "limit_refresh_period"
        );
        assert_eq!(field_of(b().buckets(0)), "buckets");
        assert_eq!(field_of(b().buckets(MAX_BUCKETS + 1)), "buckets");
        assert_eq!(field_of(b().burst(0)), "burst");
        assert_eq!(field_of(b().redis_timeout(Duration::ZERO)), "redis_timeout");
        let err = b()
            .failure_policy(FailurePolicy::LocalFallback {
                expected_instances: 0,
            })
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid `failure_policy.expected_instances`: got 0, expected an integer in 1..=50 \
             (at most limit_for_period: each instance's local share is limit_for_period / \
             expected_instances, at least 1)"
        );
        assert_eq!(
            field_of(
                b().limit_for_period(3)
                    .failure_policy(FailurePolicy::LocalFallback {
                        expected_instances: 4
                    })
            ),
            "failure_policy.expected_instances"
        );
        // GCRA: a burst whose tolerance the script could not compute exactly.
        let monthly = || {
            b().algorithm(Algorithm::Gcra)
                .limit_for_period(1)
                .limit_refresh_period(MAX_LIMIT_REFRESH_PERIOD)
        };
        assert_eq!(field_of(monthly().burst(869)), "burst");
        assert!(monthly().burst(868).build().is_ok());
        let err = b().limit_for_period(0).build().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid `limit_for_period`: got 0, expected an integer in 1..=1000000 \
             (at most one permit per microsecond of `limit_refresh_period`)"
        );
    }

    #[test]
    fn leases_are_off_by_default_and_bounded_by_one_grant_and_the_window() {
        let b = DistributedRateLimiterConfig::builder;
        let c = b().build().unwrap();
        assert_eq!((c.lease_size(), c.lease_ttl()), (0, Duration::from_secs(1)));
        let c = b()
            .lease_size(10)
            .lease_ttl(Duration::from_millis(200))
            .build()
            .unwrap();
        assert_eq!(
            (c.lease_size(), c.lease_ttl()),
            (10, Duration::from_millis(200))
        );
        let err = b().lease_size(51).build().unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid `lease_size`: got 51, expected an integer in 0..=50 (0: no leases; at most \
             limit_for_period: a lease is one grant of the quota)"
        );
        let gcra = || b().algorithm(Algorithm::Gcra).burst(5);
        assert!(gcra().lease_size(5).build().is_ok());
        assert_eq!(field_of(gcra().lease_size(6)), "lease_size");
        let err = b()
            .lease_size(5)
            .lease_ttl(Duration::from_secs(2))
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid `lease_ttl`: got 2s, expected a positive duration of at most \
             limit_refresh_period (1s): a lease never outlives the window its permits are \
             counted in"
        );
        assert_eq!(
            field_of(b().lease_size(5).lease_ttl(Duration::ZERO)),
            "lease_ttl"
        );
        assert_eq!(
            field_of(b().lease_ttl(Duration::from_millis(10))),
            "lease_ttl",
            "a ttl without leases does nothing: refused"
        );
    }

    #[test]
    fn gcra_bounds_one_acquire_by_the_burst_and_the_window_by_the_limit() {
        let c = DistributedRateLimiterConfig::builder()
            .algorithm(Algorithm::Gcra)
            .limit_for_period(10)
            .burst(3)
            .build()
            .unwrap();
        assert_eq!(c.max_permits(), 3);
        let c = c
            .to_builder()
            .algorithm(Algorithm::SlidingWindow)
            .build()
            .unwrap();
        assert_eq!(c.max_permits(), 10);
    }

    #[test]
    fn debug_hides_the_password_in_the_url() {
        let c = DistributedRateLimiterConfig::builder()
            .redis_url("redis://app:hunter2@cache:6379/0")
            .build()
            .unwrap();
        let shown = format!("{c:?}");
        assert!(shown.contains("redis://app:***@cache:6379/0"), "{shown}");
        assert!(!shown.contains("hunter2"), "{shown}");
    }

    #[test]
    fn every_form_of_password_is_masked_in_errors() {
        for url in [
            "redis://app:hunter2@cache:x/",
            "redis://:hunter2@cache:x/",
            "redis+unix:///run/redis.sock?db=x&pass=hunter2",
            "redis://app:hunter%32@cache:x/",
        ] {
            let err = DistributedRateLimiterConfig::builder()
                .redis_url(url)
                .build()
                .unwrap_err();
            let shown = format!("{err} {err:?}");
            assert!(!shown.contains("hunter"), "{url}: {shown}");
            assert!(shown.contains("***"), "{url}: {shown}");
        }
        assert_eq!(
            mask_secret("redis://u:p%40ss@h/", "failed for p@ss and p%40ss"),
            "failed for *** and ***"
        );
    }
}
