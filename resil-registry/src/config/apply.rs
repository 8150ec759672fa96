//! Typed values → resil-core builders, one impl per kind: the only place that
//! knows which builder setter an option calls.

use std::collections::BTreeMap;
use std::time::Duration;

use resil_core::bulkhead::{
    AdaptiveBulkheadConfig, AdaptiveBulkheadConfigBuilder, BulkheadConfig, BulkheadConfigBuilder,
};
use resil_core::chaos::{ChaosConfig, ChaosConfigBuilder};
use resil_core::circuit_breaker::{
    CircuitBreakerConfig, CircuitBreakerConfigBuilder, SlidingWindowType, State,
};
use resil_core::hedging::{HedgingConfig, HedgingConfigBuilder};
use resil_core::rate_limiter::{RateLimiterConfig, RateLimiterConfigBuilder};
use resil_core::retry::{
    IntervalFunction, RetryConfig, RetryConfigBuilder, DEFAULT_MULTIPLIER,
    DEFAULT_RANDOMIZATION_FACTOR,
};
use resil_core::thread_pool_bulkhead::{ThreadPoolBulkheadConfig, ThreadPoolBulkheadConfigBuilder};
use resil_core::time_limiter::{TimeLimiterConfig, TimeLimiterConfigBuilder};
use resil_core::ConfigError;

use super::schema::{Kind, Val};
use super::setting::Setting;

/// An entry's merged settings, by canonical key.
pub(crate) type Values = BTreeMap<&'static str, Setting>;

/// How one kind's settings reach its resil-core builder.
pub(crate) trait Apply: Sized + Default + Clone {
    type Builder;
    const KIND: Kind;
    /// A builder from resil-core's defaults with every file value applied.
    fn builder_with(values: &Values) -> Self::Builder;
    fn build(builder: Self::Builder) -> Result<Self, ConfigError>;
}

fn get<'a>(values: &'a Values, key: &str) -> Option<&'a Val> {
    values.get(key).map(|s| &s.val)
}

fn percent(values: &Values, key: &str) -> Option<f32> {
    match get(values, key)? {
        Val::Percent(v) => Some(*v),
        _ => None,
    }
}

fn u32_of(values: &Values, key: &str) -> Option<u32> {
    match get(values, key)? {
        Val::U32(v) => Some(*v),
        _ => None,
    }
}

fn usize_of(values: &Values, key: &str) -> Option<usize> {
    match get(values, key)? {
        Val::Usize(v) => Some(*v),
        _ => None,
    }
}

fn f64_of(values: &Values, key: &str) -> Option<f64> {
    match get(values, key)? {
        Val::F64(v) => Some(*v),
        _ => None,
    }
}

fn duration(values: &Values, key: &str) -> Option<Duration> {
    match get(values, key)? {
        Val::Duration(d) => Some(*d),
        _ => None,
    }
}

fn flag(values: &Values, key: &str) -> Option<bool> {
    match get(values, key)? {
        Val::Bool(b) => Some(*b),
        _ => None,
    }
}

/// A state word (one of `schema::STATES`) as resil-core's `State`.
fn state(word: &str) -> State {
    match word {
        "OPEN" => State::Open,
        "HALF_OPEN" => State::HalfOpen,
        "FORCED_OPEN" => State::ForcedOpen,
        "DISABLED" => State::Disabled,
        "METRICS_ONLY" => State::MetricsOnly,
        _ => State::Closed,
    }
}

fn choice(values: &Values, key: &str) -> Option<&'static str> {
    match get(values, key)? {
        Val::Choice(c) => Some(c),
        _ => None,
    }
}

/// Resilience4j's backoff keys → an interval function starting at `wait`, when
/// `enable-exponential-backoff` or `enable-randomized-wait` is on. Both on is
/// exponential backoff with each wait randomized (Resilience4j's retry does
/// the same; its circuit breaker refuses the pair). The cap applies to the
/// exponential forms only, as in Resilience4j.
fn backoff(values: &Values, wait: Duration, max_key: &str) -> Option<IntervalFunction> {
    let exponential = flag(values, "enable-exponential-backoff") == Some(true);
    let randomized = flag(values, "enable-randomized-wait") == Some(true);
    let multiplier = f64_of(values, "exponential-backoff-multiplier").unwrap_or(DEFAULT_MULTIPLIER);
    let factor = f64_of(values, "randomized-wait-factor").unwrap_or(DEFAULT_RANDOMIZATION_FACTOR);
    let f = match (exponential, randomized) {
        (false, false) => return None,
        (true, true) => IntervalFunction::exponential_random(wait, multiplier, factor),
        (true, false) => IntervalFunction::exponential(wait, multiplier),
        (false, true) => IntervalFunction::randomized(wait, factor),
    };
    Some(match duration(values, max_key) {
        Some(max) if exponential => f.with_max(max),
        _ => f,
    })
}

impl Apply for CircuitBreakerConfig {
    type Builder = CircuitBreakerConfigBuilder;
    const KIND: Kind = Kind::CircuitBreaker;

    fn builder_with(v: &Values) -> CircuitBreakerConfigBuilder {
        let mut b = CircuitBreakerConfig::builder();
        if let Some(x) = percent(v, "failure-rate-threshold") {
            b = b.failure_rate_threshold(x);
        }
        if let Some(x) = percent(v, "slow-call-rate-threshold") {
            b = b.slow_call_rate_threshold(x);
        }
        if let Some(x) = duration(v, "slow-call-duration-threshold") {
            b = b.slow_call_duration_threshold(x);
        }
        if let Some(x) = choice(v, "sliding-window-type") {
            b = b.sliding_window_type(match x {
                "TIME_BASED" => SlidingWindowType::TimeBased,
                _ => SlidingWindowType::CountBased,
            });
        }
        if let Some(x) = u32_of(v, "sliding-window-size") {
            b = b.sliding_window_size(x);
        }
        if let Some(x) = u32_of(v, "minimum-number-of-calls") {
            b = b.minimum_number_of_calls(x);
        }
        if let Some(x) = flag(v, "automatic-transition-from-open-to-half-open-enabled") {
            b = b.automatic_transition_from_open_to_half_open_enabled(x);
        }
        if let Some(x) = u32_of(v, "permitted-number-of-calls-in-half-open-state") {
            b = b.permitted_number_of_calls_in_half_open_state(x);
        }
        if let Some(x) = duration(v, "max-wait-duration-in-half-open-state") {
            b = b.max_wait_duration_in_half_open_state(x);
        }
        if let Some(x) = choice(v, "transition-to-state-after-wait-duration") {
            b = b.transition_to_state_after_wait_duration(state(x));
        }
        if let Some(x) = choice(v, "initial-state") {
            b = b.initial_state(state(x));
        }
        // With backoff, `wait-duration-in-open-state` is the first interval
        // (Resilience4j's meaning); resil-core takes one or the other.
        let wait = duration(v, "wait-duration-in-open-state");
        let default_wait = CircuitBreakerConfig::default().wait_duration_in_open_state();
        let max_key = "exponential-max-wait-duration-in-open-state";
        match backoff(v, wait.unwrap_or(default_wait), max_key) {
            Some(f) => b = b.wait_interval_function_in_open_state(f),
            None => {
                if let Some(x) = wait {
                    b = b.wait_duration_in_open_state(x);
                }
            }
        }
        b
    }

    fn build(builder: CircuitBreakerConfigBuilder) -> Result<Self, ConfigError> {
        builder.build()
    }
}

impl Apply for RetryConfig {
    type Builder = RetryConfigBuilder;
    const KIND: Kind = Kind::Retry;

    fn builder_with(v: &Values) -> RetryConfigBuilder {
        let mut b = RetryConfig::builder();
        if let Some(x) = u32_of(v, "max-attempts") {
            b = b.max_attempts(x);
        }
        if let Some(x) = duration(v, "wait-duration") {
            b = b.wait_duration(x);
        }
        if let Some(x) = flag(v, "fail-after-max-attempts") {
            b = b.fail_after_max_attempts(x);
        }
        let wait = duration(v, "wait-duration").unwrap_or(RetryConfig::default().wait_duration());
        if let Some(f) = backoff(v, wait, "exponential-max-wait-duration") {
            b = b.interval_function(f);
        }
        b
    }

    fn build(builder: RetryConfigBuilder) -> Result<Self, ConfigError> {
        builder.build()
    }
}

impl Apply for BulkheadConfig {
    type Builder = BulkheadConfigBuilder;
    const KIND: Kind = Kind::Bulkhead;

    fn builder_with(v: &Values) -> BulkheadConfigBuilder {
        let mut b = BulkheadConfig::builder();
        if let Some(x) = u32_of(v, "max-concurrent-calls") {
            b = b.max_concurrent_calls(x);
        }
        if let Some(x) = duration(v, "max-wait-duration") {
            b = b.max_wait_duration(x);
        }
        if let Some(x) = flag(v, "fair-call-handling-enabled") {
            b = b.fair_call_handling_enabled(x);
        }
        b
    }

    fn build(builder: BulkheadConfigBuilder) -> Result<Self, ConfigError> {
        builder.build()
    }
}

impl Apply for ThreadPoolBulkheadConfig {
    type Builder = ThreadPoolBulkheadConfigBuilder;
    const KIND: Kind = Kind::ThreadPoolBulkhead;

    fn builder_with(v: &Values) -> ThreadPoolBulkheadConfigBuilder {
        let mut b = ThreadPoolBulkheadConfig::builder();
        if let Some(x) = usize_of(v, "core-thread-pool-size") {
            b = b.core_thread_pool_size(x);
        }
        if let Some(x) = usize_of(v, "max-thread-pool-size") {
            b = b.max_thread_pool_size(x);
        }
        if let Some(x) = usize_of(v, "queue-capacity") {
            b = b.queue_capacity(x);
        }
        if let Some(x) = duration(v, "keep-alive-duration") {
            b = b.keep_alive_duration(x);
        }
        b
    }

    fn build(builder: ThreadPoolBulkheadConfigBuilder) -> Result<Self, ConfigError> {
        builder.build()
    }
}

impl Apply for RateLimiterConfig {
    type Builder = RateLimiterConfigBuilder;
    const KIND: Kind = Kind::RateLimiter;

    fn builder_with(v: &Values) -> RateLimiterConfigBuilder {
        let mut b = RateLimiterConfig::builder();
        if let Some(x) = u32_of(v, "limit-for-period") {
            b = b.limit_for_period(x);
        }
        if let Some(x) = duration(v, "limit-refresh-period") {
            b = b.limit_refresh_period(x);
        }
        if let Some(x) = duration(v, "timeout-duration") {
            b = b.timeout_duration(x);
        }
        b
    }

    fn build(builder: RateLimiterConfigBuilder) -> Result<Self, ConfigError> {
        builder.build()
    }
}

impl Apply for TimeLimiterConfig {
    type Builder = TimeLimiterConfigBuilder;
    const KIND: Kind = Kind::TimeLimiter;

    fn builder_with(v: &Values) -> TimeLimiterConfigBuilder {
        let mut b = TimeLimiterConfig::builder();
        if let Some(x) = duration(v, "timeout-duration") {
            b = b.timeout_duration(x);
        }
        if let Some(x) = flag(v, "cancel-running-future") {
            b = b.cancel_running_future(x);
        }
        b
    }

    fn build(builder: TimeLimiterConfigBuilder) -> Result<Self, ConfigError> {
        builder.build()
    }
}

impl Apply for HedgingConfig {
    type Builder = HedgingConfigBuilder;
    const KIND: Kind = Kind::Hedging;

    fn builder_with(v: &Values) -> HedgingConfigBuilder {
        let mut b = HedgingConfig::builder();
        if let Some(x) = u32_of(v, "max-hedged-attempts") {
            b = b.max_hedged_attempts(x);
        }
        if let Some(x) = duration(v, "delay") {
            b = b.delay(x);
        }
        b
    }

    fn build(builder: HedgingConfigBuilder) -> Result<Self, ConfigError> {
        builder.build()
    }
}

impl Apply for AdaptiveBulkheadConfig {
    type Builder = AdaptiveBulkheadConfigBuilder;
    const KIND: Kind = Kind::AdaptiveBulkhead;

    fn builder_with(v: &Values) -> AdaptiveBulkheadConfigBuilder {
        let mut b = AdaptiveBulkheadConfig::builder();
        if let Some(x) = u32_of(v, "initial-limit") {
            b = b.initial_limit(x);
        }
        if let Some(x) = u32_of(v, "min-limit") {
            b = b.min_limit(x);
        }
        if let Some(x) = u32_of(v, "max-limit") {
            b = b.max_limit(x);
        }
        if let Some(x) = f64_of(v, "smoothing") {
            b = b.smoothing(x);
        }
        if let Some(x) = u32_of(v, "probe-multiplier") {
            b = b.probe_multiplier(x);
        }
        if let Some(x) = duration(v, "min-window-time") {
            b = b.min_window_time(x);
        }
        if let Some(x) = duration(v, "max-window-time") {
            b = b.max_window_time(x);
        }
        if let Some(x) = u32_of(v, "window-size") {
            b = b.window_size(x);
        }
        if let Some(x) = duration(v, "min-rtt-threshold") {
            b = b.min_rtt_threshold(x);
        }
        b
    }

    fn build(builder: AdaptiveBulkheadConfigBuilder) -> Result<Self, ConfigError> {
        builder.build()
    }
}

impl Apply for ChaosConfig {
    type Builder = ChaosConfigBuilder;
    const KIND: Kind = Kind::Chaos;

    /// `errors` and `results` (with their rates) are added by the registry,
    /// which holds the registered injections.
    fn builder_with(v: &Values) -> ChaosConfigBuilder {
        let mut b = ChaosConfig::builder();
        if let Some(x) = flag(v, "enabled") {
            b = b.enabled(x);
        }
        let rate = f64_of(v, "latency-rate");
        let latency = duration(v, "latency");
        if rate.is_some() || latency.is_some() {
            b = b.inject_latency(rate.unwrap_or(0.0), latency.unwrap_or(Duration::ZERO));
        }
        b
    }

    fn build(builder: ChaosConfigBuilder) -> Result<Self, ConfigError> {
        builder.build()
    }
}

/// Resilience4j's default for option `key` of `kind`, as a file writes it
/// (the one renderer's, `render.rs`); `None` for an option without one.
pub(crate) fn default_value(kind: Kind, key: &str) -> Option<String> {
    let values = match kind {
        Kind::CircuitBreaker => super::render::values(&CircuitBreakerConfig::default()),
        Kind::Retry => super::render::values(&RetryConfig::default()),
        Kind::Bulkhead => super::render::values(&BulkheadConfig::default()),
        Kind::ThreadPoolBulkhead => super::render::values(&ThreadPoolBulkheadConfig::default()),
        Kind::RateLimiter => super::render::values(&RateLimiterConfig::default()),
        Kind::TimeLimiter => super::render::values(&TimeLimiterConfig::default()),
        Kind::Hedging => super::render::values(&HedgingConfig::default()),
        Kind::AdaptiveBulkhead => super::render::values(&AdaptiveBulkheadConfig::default()),
        Kind::Chaos => super::render::values(&ChaosConfig::default()),
    };
    values
        .into_iter()
        .find(|(k, _)| *k == key)
        .map(|(_, v)| v.to_string())
}
