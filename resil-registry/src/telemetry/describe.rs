//! What telemetry reads from each kind: its state, its metrics, its effective
//! configuration as key/value pairs, and its health.

use resil_core::bulkhead::{AdaptiveBulkhead, Bulkhead};
use resil_core::chaos::Chaos;
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
use resil_core::hedging::Hedging;
use resil_core::rate_limiter::RateLimiter;
use resil_core::retry::Retry;
use resil_core::thread_pool_bulkhead::ThreadPoolBulkhead;
use resil_core::time_limiter::TimeLimiter;

use resil_core::event::EventStream;

use super::health::Status;

/// One metric: Resilience4j's name, an optional `kind` label, the value.
pub(crate) type MetricValue = (&'static str, Option<&'static str>, f64);

/// What telemetry needs from a primitive.
pub trait Describe {
    /// The primitive's own event type.
    type Event: std::fmt::Debug + Clone + Send + 'static;
    /// A subscription to the primitive's own events.
    fn subscribe_events(&self) -> EventStream<Self::Event>;
    /// Resilience4j's state name, for kinds that have states (none by
    /// default).
    fn state_label(&self) -> Option<&'static str> {
        None
    }
    /// The metrics, under Resilience4j's names (without the `resilience4j_` prefix).
    fn metric_values(&self) -> Vec<MetricValue>;
    /// The effective configuration, with the keys a config file uses.
    fn config_values(&self) -> Vec<(&'static str, String)>;
    /// The configuration values of Resilience4j's defaults, same keys.
    fn default_values() -> Vec<(&'static str, String)>
    where
        Self: Sized;
    /// Health from the instance's own point of view, with the reason (UP by
    /// default, for kinds that have nothing to report).
    fn health(&self) -> (Status, Option<String>) {
        (Status::Up, None)
    }
}

/// A duration as a config file writes it (the loader parses it back).
#[cfg(feature = "redis")]
fn d(v: std::time::Duration) -> String {
    crate::config::format_duration(v)
}

impl Describe for CircuitBreaker {
    type Event = resil_core::circuit_breaker::CircuitBreakerEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    fn state_label(&self) -> Option<&'static str> {
        Some(self.state().as_str())
    }

    fn metric_values(&self) -> Vec<MetricValue> {
        let m = self.metrics();
        vec![
            (
                "circuitbreaker_calls",
                Some("successful"),
                m.successful_calls() as f64,
            ),
            (
                "circuitbreaker_calls",
                Some("failed"),
                m.failed_calls() as f64,
            ),
            (
                "circuitbreaker_calls",
                Some("ignored"),
                m.ignored_calls() as f64,
            ),
            (
                "circuitbreaker_calls",
                Some("not_permitted"),
                m.not_permitted_calls() as f64,
            ),
            // Resilience4j publishes -1 while below the minimum number of calls.
            (
                "circuitbreaker_failure_rate",
                None,
                m.failure_rate().map_or(-1.0, f64::from),
            ),
            (
                "circuitbreaker_slow_call_rate",
                None,
                m.slow_call_rate().map_or(-1.0, f64::from),
            ),
            // The window's calls by kind, as Resilience4j tags this gauge.
            (
                "circuitbreaker_buffered_calls",
                Some("successful"),
                m.successful_calls() as f64,
            ),
            (
                "circuitbreaker_buffered_calls",
                Some("failed"),
                m.failed_calls() as f64,
            ),
            (
                "circuitbreaker_slow_calls",
                Some("successful"),
                m.slow_successful_calls() as f64,
            ),
            (
                "circuitbreaker_slow_calls",
                Some("failed"),
                m.slow_failed_calls() as f64,
            ),
        ]
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        describe_config(self.config())
    }

    fn default_values() -> Vec<(&'static str, String)> {
        describe_config(&CircuitBreakerConfig::default())
    }

    fn health(&self) -> (Status, Option<String>) {
        let m = self.metrics();
        match self.state() {
            State::Closed | State::Disabled | State::MetricsOnly => (Status::Up, None),
            State::HalfOpen => (
                Status::Degraded,
                Some("HALF_OPEN: probing whether the backend recovered".to_owned()),
            ),
            State::Open => (
                Status::Down,
                Some(format!(
                    "OPEN: failure rate {} (threshold {}%), slow-call rate {} (threshold {}%)",
                    m.failure_rate()
                        .map_or("n/a".to_owned(), |r| format!("{r}%")),
                    self.config().failure_rate_threshold(),
                    m.slow_call_rate()
                        .map_or("n/a".to_owned(), |r| format!("{r}%")),
                    self.config().slow_call_rate_threshold(),
                )),
            ),
            State::ForcedOpen => (Status::Down, Some("FORCED_OPEN by an operator".to_owned())),
        }
    }
}

impl Describe for Retry {
    type Event = resil_core::retry::RetryEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    fn metric_values(&self) -> Vec<MetricValue> {
        let m = self.metrics();
        vec![
            (
                "retry_calls",
                Some("successful_without_retry"),
                m.successful_calls_without_retry() as f64,
            ),
            (
                "retry_calls",
                Some("successful_with_retry"),
                m.successful_calls_with_retry() as f64,
            ),
            (
                "retry_calls",
                Some("failed_without_retry"),
                m.failed_calls_without_retry() as f64,
            ),
            (
                "retry_calls",
                Some("failed_with_retry"),
                m.failed_calls_with_retry() as f64,
            ),
        ]
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        describe_config(self.config())
    }

    fn default_values() -> Vec<(&'static str, String)> {
        describe_config(&resil_core::retry::RetryConfig::default())
    }
}

impl Describe for Bulkhead {
    type Event = resil_core::bulkhead::BulkheadEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    fn metric_values(&self) -> Vec<MetricValue> {
        let m = self.metrics();
        vec![
            (
                "bulkhead_available_concurrent_calls",
                None,
                m.available_concurrent_calls() as f64,
            ),
            (
                "bulkhead_max_allowed_concurrent_calls",
                None,
                m.max_allowed_concurrent_calls() as f64,
            ),
        ]
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        describe_config(&self.config())
    }

    fn default_values() -> Vec<(&'static str, String)> {
        describe_config(&resil_core::bulkhead::BulkheadConfig::default())
    }

    fn health(&self) -> (Status, Option<String>) {
        if self.available_concurrent_calls() == 0 {
            (
                Status::Degraded,
                Some("every concurrent-call slot is taken".to_owned()),
            )
        } else {
            (Status::Up, None)
        }
    }
}

impl Describe for ThreadPoolBulkhead {
    type Event = resil_core::thread_pool_bulkhead::ThreadPoolBulkheadEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    fn metric_values(&self) -> Vec<MetricValue> {
        let m = self.metrics();
        vec![
            (
                "thread_pool_bulkhead_active_thread_count",
                None,
                m.active_thread_count() as f64,
            ),
            (
                "thread_pool_bulkhead_thread_pool_size",
                None,
                m.thread_pool_size() as f64,
            ),
            (
                "thread_pool_bulkhead_core_thread_pool_size",
                None,
                m.core_thread_pool_size() as f64,
            ),
            (
                "thread_pool_bulkhead_max_thread_pool_size",
                None,
                m.maximum_thread_pool_size() as f64,
            ),
            (
                "thread_pool_bulkhead_queue_depth",
                None,
                m.queue_depth() as f64,
            ),
            (
                "thread_pool_bulkhead_queue_capacity",
                None,
                m.queue_capacity() as f64,
            ),
        ]
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        describe_config(self.config())
    }

    fn default_values() -> Vec<(&'static str, String)> {
        describe_config(&resil_core::thread_pool_bulkhead::ThreadPoolBulkheadConfig::default())
    }

    fn health(&self) -> (Status, Option<String>) {
        let m = self.metrics();
        if m.remaining_queue_capacity() == 0 && m.queue_capacity() > 0 {
            (Status::Degraded, Some("the queue is full".to_owned()))
        } else {
            (Status::Up, None)
        }
    }
}

impl Describe for RateLimiter {
    type Event = resil_core::rate_limiter::RateLimiterEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    fn metric_values(&self) -> Vec<MetricValue> {
        let m = self.metrics();
        vec![
            (
                "ratelimiter_available_permissions",
                None,
                m.available_permissions() as f64,
            ),
            (
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
        describe_config(&resil_core::rate_limiter::RateLimiterConfig::default())
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

impl Describe for TimeLimiter {
    type Event = resil_core::time_limiter::TimeLimiterEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    fn metric_values(&self) -> Vec<MetricValue> {
        let m = self.metrics();
        vec![
            (
                "timelimiter_calls",
                Some("successful"),
                m.successful_calls() as f64,
            ),
            ("timelimiter_calls", Some("failed"), m.failed_calls() as f64),
            (
                "timelimiter_calls",
                Some("timeout"),
                m.timeout_calls() as f64,
            ),
        ]
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        describe_config(self.config())
    }

    fn default_values() -> Vec<(&'static str, String)> {
        describe_config(&resil_core::time_limiter::TimeLimiterConfig::default())
    }
}

/// Hedging is not Resilience4j's: its metrics carry resil's own prefix,
/// `resil_hedging_calls{kind=won_by_primary|won_by_hedge|all_failed|cancelled}`
/// (every call ends in exactly one) and
/// `resil_hedging_hedges{kind=started|budget_refused}`.
impl Describe for Hedging {
    type Event = resil_core::hedging::HedgingEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    fn metric_values(&self) -> Vec<MetricValue> {
        let m = self.metrics();
        vec![
            (
                "resil_hedging_calls",
                Some("won_by_primary"),
                m.won_by_primary() as f64,
            ),
            (
                "resil_hedging_calls",
                Some("won_by_hedge"),
                m.won_by_hedge() as f64,
            ),
            (
                "resil_hedging_calls",
                Some("all_failed"),
                m.all_failed() as f64,
            ),
            (
                "resil_hedging_calls",
                Some("cancelled"),
                m.cancelled() as f64,
            ),
            (
                "resil_hedging_hedges",
                Some("started"),
                m.hedges_started() as f64,
            ),
            (
                "resil_hedging_hedges",
                Some("budget_refused"),
                m.budget_refused() as f64,
            ),
        ]
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        describe_config(self.config())
    }

    fn default_values() -> Vec<(&'static str, String)> {
        describe_config(&resil_core::hedging::HedgingConfig::default())
    }
}

/// The adaptive bulkhead publishes beside the bulkhead's names:
/// `resilience4j_bulkhead_adaptive_limit` (the current limit, a gauge),
/// `…_concurrent_calls`, `…_available_concurrent_calls`, `…_min_rtt_seconds`
/// and `resilience4j_bulkhead_adaptive_calls{kind=rejected|dropped|sampled}`.
impl Describe for AdaptiveBulkhead {
    type Event = resil_core::bulkhead::AdaptiveBulkheadEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    fn metric_values(&self) -> Vec<MetricValue> {
        let m = self.metrics();
        vec![
            ("bulkhead_adaptive_limit", None, f64::from(m.limit())),
            (
                "bulkhead_adaptive_concurrent_calls",
                None,
                f64::from(m.concurrent_calls()),
            ),
            (
                "bulkhead_adaptive_available_concurrent_calls",
                None,
                f64::from(m.available_concurrent_calls()),
            ),
            (
                "bulkhead_adaptive_min_rtt_seconds",
                None,
                m.min_rtt().as_secs_f64(),
            ),
            (
                "bulkhead_adaptive_calls",
                Some("rejected"),
                m.rejected_calls() as f64,
            ),
            (
                "bulkhead_adaptive_calls",
                Some("dropped"),
                m.dropped_calls() as f64,
            ),
            (
                "bulkhead_adaptive_calls",
                Some("sampled"),
                m.samples() as f64,
            ),
        ]
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        describe_config(&self.config())
    }

    fn default_values() -> Vec<(&'static str, String)> {
        describe_config(&resil_core::bulkhead::AdaptiveBulkheadConfig::default())
    }

    fn health(&self) -> (Status, Option<String>) {
        let m = self.metrics();
        if m.available_concurrent_calls() == 0 {
            (
                Status::Degraded,
                Some(format!(
                    "every slot under the adaptive limit ({}) is taken",
                    m.limit()
                )),
            )
        } else {
            (Status::Up, None)
        }
    }
}

/// Chaos is not Resilience4j's: `resil_chaos_injections{kind=latency|error|result}`,
/// `resil_chaos_calls` (calls made while enabled) and `resil_chaos_enabled`
/// (1 while injecting). Its state is `ENABLED` or `DISABLED`; enabled, it is
/// DEGRADED with a reason (never DOWN), so a drill left on is visible in
/// every health check without taking the service out of rotation.
impl Describe for Chaos {
    type Event = resil_core::chaos::ChaosEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    fn state_label(&self) -> Option<&'static str> {
        Some(if self.status().enabled() {
            "ENABLED"
        } else {
            "DISABLED"
        })
    }

    fn metric_values(&self) -> Vec<MetricValue> {
        let m = self.metrics();
        let enabled = self.status().enabled();
        vec![
            (
                "resil_chaos_injections",
                Some("latency"),
                m.latencies_injected() as f64,
            ),
            (
                "resil_chaos_injections",
                Some("error"),
                m.errors_injected() as f64,
            ),
            (
                "resil_chaos_injections",
                Some("result"),
                m.results_injected() as f64,
            ),
            ("resil_chaos_calls", None, m.calls_while_enabled() as f64),
            ("resil_chaos_enabled", None, if enabled { 1.0 } else { 0.0 }),
        ]
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        describe_config(self.config())
    }

    fn default_values() -> Vec<(&'static str, String)> {
        describe_config(&resil_core::chaos::ChaosConfig::default())
    }

    fn health(&self) -> (Status, Option<String>) {
        let status = self.status();
        if !status.enabled() {
            return (Status::Up, None);
        }
        let why = status
            .reason()
            .map_or_else(|| "by the config file".to_owned(), |r| format!("`{r}`"));
        let until = status.expires_in().map_or_else(
            || "until switched off".to_owned(),
            |left| {
                format!(
                    "for {} more",
                    crate::config::format_duration(std::time::Duration::from_millis(
                        left.as_millis() as u64
                    ))
                )
            },
        );
        (
            Status::Degraded,
            Some(format!("chaos injection ENABLED {why}, {until}")),
        )
    }
}

/// The configuration values of any kind's config, with the keys a config
/// file uses (empty for a type that is not a primitive's config).
pub(crate) fn describe_config<C: crate::config::Render>(config: &C) -> Vec<(&'static str, String)> {
    crate::config::rendered(config)
}

/// `redis://user:secret@host/` → `redis://user:***@host/`: a snapshot must not
/// publish the password.
#[cfg(feature = "redis")]
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

#[cfg(feature = "redis")]
fn distributed_config(
    c: &resil_core::distributed_rate_limiter::DistributedRateLimiterConfig,
) -> Vec<(&'static str, String)> {
    use resil_core::distributed_rate_limiter::FailurePolicy;
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
    if c.topology() == resil_core::distributed_rate_limiter::Topology::Sentinel {
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
#[cfg(feature = "redis")]
impl Describe for resil_core::distributed_rate_limiter::DistributedRateLimiter {
    type Event = resil_core::distributed_rate_limiter::DistributedRateLimiterEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    fn metric_values(&self) -> Vec<MetricValue> {
        let m = self.metrics();
        let mut values = vec![
            (
                "ratelimiter_waiting_threads",
                None,
                f64::from(m.number_of_waiting_tasks()),
            ),
            (
                "ratelimiter_distributed_acquire_calls",
                Some("successful"),
                m.successful_acquires() as f64,
            ),
            (
                "ratelimiter_distributed_acquire_calls",
                Some("failed"),
                m.failed_acquires() as f64,
            ),
            (
                "ratelimiter_distributed_fallback_calls",
                Some("granted"),
                m.fallback_grants() as f64,
            ),
            (
                "ratelimiter_distributed_fallback_calls",
                Some("refused"),
                m.fallback_refusals() as f64,
            ),
            (
                "ratelimiter_distributed_backend_failure_calls",
                Some("timeout"),
                m.redis_timeouts() as f64,
            ),
            (
                "ratelimiter_distributed_backend_failure_calls",
                Some("unavailable"),
                m.redis_unavailable() as f64,
            ),
            (
                "ratelimiter_distributed_backend_failure_calls",
                Some("error"),
                m.redis_errors() as f64,
            ),
            (
                "ratelimiter_distributed_backend_failure_calls",
                Some("auth"),
                m.redis_auth_failures() as f64,
            ),
            (
                "ratelimiter_distributed_backend_failure_calls",
                Some("cannot_block"),
                m.cannot_block() as f64,
            ),
            (
                "ratelimiter_distributed_script_calls",
                None,
                m.script_calls() as f64,
            ),
            (
                "ratelimiter_distributed_lease_permits",
                Some("leased"),
                m.leased_permits() as f64,
            ),
            (
                "ratelimiter_distributed_lease_permits",
                Some("handed_out"),
                m.lease_grants() as f64,
            ),
            (
                "ratelimiter_distributed_lease_permits",
                Some("returned"),
                m.returned_permits() as f64,
            ),
        ];
        if let Some(left) = m.last_remaining() {
            values.push(("ratelimiter_available_permissions", None, left as f64));
        }
        values
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        distributed_config(self.config())
    }

    fn default_values() -> Vec<(&'static str, String)> {
        let defaults =
            resil_core::distributed_rate_limiter::DistributedRateLimiterConfig::builder()
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

#[cfg(all(test, feature = "redis"))]
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
