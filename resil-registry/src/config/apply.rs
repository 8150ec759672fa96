//! Typed values → resil-core builders, one impl per kind. The simple options
//! (one value, one setter) are set from their bindings (`bind.rs`); this file
//! holds the rest: the backoff keys' interval functions, the window type, the
//! states, chaos's latency pair.

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

use super::bind::Bind;
use super::schema::{Kind, Val};
pub(crate) use super::setting::Values;

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
        let mut b = Self::apply_bound(CircuitBreakerConfig::builder(), v);
        if let Some(x) = choice(v, "sliding-window-type") {
            b = b.sliding_window_type(match x {
                "TIME_BASED" => SlidingWindowType::TimeBased,
                _ => SlidingWindowType::CountBased,
            });
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
        let mut b = Self::apply_bound(RetryConfig::builder(), v);
        if let Some(x) = duration(v, "wait-duration") {
            b = b.wait_duration(x);
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
        Self::apply_bound(BulkheadConfig::builder(), v)
    }

    fn build(builder: BulkheadConfigBuilder) -> Result<Self, ConfigError> {
        builder.build()
    }
}

impl Apply for ThreadPoolBulkheadConfig {
    type Builder = ThreadPoolBulkheadConfigBuilder;
    const KIND: Kind = Kind::ThreadPoolBulkhead;

    fn builder_with(v: &Values) -> ThreadPoolBulkheadConfigBuilder {
        Self::apply_bound(ThreadPoolBulkheadConfig::builder(), v)
    }

    fn build(builder: ThreadPoolBulkheadConfigBuilder) -> Result<Self, ConfigError> {
        builder.build()
    }
}

impl Apply for RateLimiterConfig {
    type Builder = RateLimiterConfigBuilder;
    const KIND: Kind = Kind::RateLimiter;

    fn builder_with(v: &Values) -> RateLimiterConfigBuilder {
        Self::apply_bound(RateLimiterConfig::builder(), v)
    }

    fn build(builder: RateLimiterConfigBuilder) -> Result<Self, ConfigError> {
        builder.build()
    }
}

impl Apply for TimeLimiterConfig {
    type Builder = TimeLimiterConfigBuilder;
    const KIND: Kind = Kind::TimeLimiter;

    fn builder_with(v: &Values) -> TimeLimiterConfigBuilder {
        Self::apply_bound(TimeLimiterConfig::builder(), v)
    }

    fn build(builder: TimeLimiterConfigBuilder) -> Result<Self, ConfigError> {
        builder.build()
    }
}

impl Apply for HedgingConfig {
    type Builder = HedgingConfigBuilder;
    const KIND: Kind = Kind::Hedging;

    fn builder_with(v: &Values) -> HedgingConfigBuilder {
        Self::apply_bound(HedgingConfig::builder(), v)
    }

    fn build(builder: HedgingConfigBuilder) -> Result<Self, ConfigError> {
        builder.build()
    }
}

impl Apply for AdaptiveBulkheadConfig {
    type Builder = AdaptiveBulkheadConfigBuilder;
    const KIND: Kind = Kind::AdaptiveBulkhead;

    fn builder_with(v: &Values) -> AdaptiveBulkheadConfigBuilder {
        Self::apply_bound(AdaptiveBulkheadConfig::builder(), v)
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
        let mut b = Self::apply_bound(ChaosConfig::builder(), v);
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
