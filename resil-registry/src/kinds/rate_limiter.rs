//! The rate limiter and its Redis-backed twin: file options, the in-place
//! update of a limit or timeout, health and metrics of both.

use std::sync::Arc;

use resil_core::clock::SharedClock;
use resil_core::event::EventStream;
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig, RateLimiterConfigBuilder};

use super::bind;
use super::created;
use crate::config::apply::{Apply, Values};
use crate::config::bind::Bind;
use crate::config::render::Render;
use crate::config::schema::Val;
use crate::kind::Kind;
use crate::primitive::{Hooks, Primitive};
use crate::store::{CodeSettings, KindVisitor};
use crate::telemetry::describe::{describe_config, Describe, Metric};
use crate::telemetry::health::Status;

impl Primitive for RateLimiter {
    type Config = RateLimiterConfig;
    type Builder = RateLimiterConfigBuilder;
    const KIND: Kind = Kind::RateLimiter;

    fn default_builder() -> RateLimiterConfigBuilder {
        RateLimiterConfig::builder()
    }

    fn to_builder(config: &RateLimiterConfig) -> RateLimiterConfigBuilder {
        config.to_builder()
    }

    fn create(name: Arc<str>, config: RateLimiterConfig, clock: Option<&SharedClock>) -> Self {
        created!(RateLimiter, name, config, clock)
    }

    fn config_of(&self) -> RateLimiterConfig {
        self.config()
    }
}

impl Hooks for RateLimiter {
    type Settings = RateLimiterConfigBuilder;

    /// The limit and the timeout have run-time setters; a new refresh
    /// period needs a new instance.
    fn update_in_place(&self, next: &RateLimiterConfig) -> bool {
        let current = self.config();
        if current.limit_refresh_period() != next.limit_refresh_period() {
            return false;
        }
        if current.limit_for_period() != next.limit_for_period()
            && self
                .change_limit_for_period(next.limit_for_period())
                .is_err()
        {
            return false;
        }
        self.change_timeout_duration(next.timeout_duration());
        true
    }

    /// Its Redis-backed twins are visited right after it (feature `redis`).
    fn after_visit(_visitor: &mut impl KindVisitor) {
        #[cfg(feature = "redis")]
        _visitor.visit_distributed();
    }

    /// The Redis-backed twins share the rate limiter's code settings.
    fn rate_limiter_code(
        code: &CodeSettings<RateLimiterConfigBuilder>,
    ) -> Option<&CodeSettings<RateLimiterConfigBuilder>> {
        Some(code)
    }
}

bind! {
    RateLimiterConfig => RateLimiterConfigBuilder {
        "limit-for-period" => U32: limit_for_period,
        "limit-refresh-period" => Duration: limit_refresh_period,
        "timeout-duration" => Duration: timeout_duration,
    }
}

impl Apply for RateLimiterConfig {
    fn builder_with(v: &Values) -> RateLimiterConfigBuilder {
        Self::apply_bound(RateLimiterConfig::builder(), v)
    }

    fn build(builder: RateLimiterConfigBuilder) -> Result<Self, resil_core::ConfigError> {
        builder.build()
    }
}

impl Render for RateLimiterConfig {
    const KIND: Kind = Kind::RateLimiter;

    fn found(&self) -> Vec<(&'static str, Option<Val>)> {
        self.render_bound()
    }
}

impl Describe for RateLimiter {
    type Event = resil_core::rate_limiter::RateLimiterEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    fn metric_values(&self) -> Vec<Metric> {
        let m = self.metrics();
        vec![
            Metric::gauge(
                "ratelimiter_available_permissions",
                None,
                m.available_permissions() as f64,
            ),
            Metric::gauge(
                "ratelimiter_waiting_threads",
                None,
                m.number_of_waiting_threads() as f64,
            ),
        ]
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        describe_config(&self.config())
    }

    fn default_values() -> Vec<(&'static str, String)> {
        describe_config(&RateLimiterConfig::default())
    }

    fn health(&self) -> (Status, Option<String>) {
        let m = self.metrics();
        if m.number_of_waiting_threads() > 0 || m.available_permissions() < 0 {
            (
                Status::Degraded,
                Some(format!(
                    "{} callers waiting, {} permissions available",
                    m.number_of_waiting_threads(),
                    m.available_permissions()
                )),
            )
        } else {
            (Status::Up, None)
        }
    }
}

/// The Redis-backed twin's telemetry (feature `redis`).
#[cfg(feature = "redis")]
mod redis {
    use resil_core::distributed_rate_limiter::{
        DistributedRateLimiter, DistributedRateLimiterConfig, DistributedRateLimiterEvent,
        FailurePolicy, Topology,
    };
    use resil_core::event::EventStream;

    use crate::config::duration::format_duration as d;
    use crate::telemetry::describe::{Describe, Metric};
    use crate::telemetry::health::Status;

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

    /// A Redis-backed rate limiter reports under the rate limiter's kind, with
    /// Resilience4j's `ratelimiter_waiting_threads` and
    /// `ratelimiter_available_permissions` (the permits left after the last
    /// verdict this process saw) and resil's own counts of what Redis and the
    /// failure policy decided.
    impl Describe for DistributedRateLimiter {
        type Event = DistributedRateLimiterEvent;

        fn subscribe_events(&self) -> EventStream<Self::Event> {
            self.subscribe()
        }

        fn metric_values(&self) -> Vec<Metric> {
            let m = self.metrics();
            let acquires = "ratelimiter_distributed_acquire_calls";
            let fallbacks = "ratelimiter_distributed_fallback_calls";
            let failures = "ratelimiter_distributed_backend_failure_calls";
            let leases = "ratelimiter_distributed_lease_permits";
            let mut values = vec![
                Metric::gauge(
                    "ratelimiter_waiting_threads",
                    None,
                    f64::from(m.number_of_waiting_tasks()),
                ),
                Metric::counter(acquires, Some("successful"), m.successful_acquires()),
                Metric::counter(acquires, Some("failed"), m.failed_acquires()),
                Metric::counter(fallbacks, Some("granted"), m.fallback_grants()),
                Metric::counter(fallbacks, Some("refused"), m.fallback_refusals()),
                Metric::counter(failures, Some("timeout"), m.redis_timeouts()),
                Metric::counter(failures, Some("unavailable"), m.redis_unavailable()),
                Metric::counter(failures, Some("error"), m.redis_errors()),
                Metric::counter(failures, Some("auth"), m.redis_auth_failures()),
                Metric::counter(failures, Some("cannot_block"), m.cannot_block()),
                Metric::counter(
                    "ratelimiter_distributed_script_calls",
                    None,
                    m.script_calls(),
                ),
                // Published as gauges since they were introduced; issue 27
                // turns what happened into counters throughout.
                Metric::gauge(leases, Some("leased"), m.leased_permits() as f64),
                Metric::gauge(leases, Some("handed_out"), m.lease_grants() as f64),
                Metric::gauge(leases, Some("returned"), m.returned_permits() as f64),
            ];
            if let Some(left) = m.last_remaining() {
                values.push(Metric::gauge(
                    "ratelimiter_available_permissions",
                    None,
                    left as f64,
                ));
            }
            values
        }

        fn config_values(&self) -> Vec<(&'static str, String)> {
            distributed_config(self.config())
        }

        fn default_values() -> Vec<(&'static str, String)> {
            let defaults = DistributedRateLimiterConfig::builder()
                .build()
                .expect("the distributed limiter's defaults are valid");
            distributed_config(&defaults)
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
}
