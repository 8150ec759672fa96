//! The simple options' bindings: an option whose typed value goes straight
//! to one resil-core builder setter, and comes back from the config getter of
//! the same name (resil-core names both alike), is one line here. From that
//! line [`Bind`] applies the file's value (`apply.rs`) and renders the
//! effective value (`render.rs`), so the two sides cannot disagree.
//!
//! Adding a simple option: its row in resil-options' table, its builder
//! method and getter in resil-core, and one line below. Options that are not
//! a value passed to one setter (the backoff keys' interval functions, the
//! window type, the states, chaos's latency pair, retry's first wait) stay
//! hand-written in `apply.rs` and `render.rs`.

use resil_core::bulkhead::{
    AdaptiveBulkheadConfig, AdaptiveBulkheadConfigBuilder, BulkheadConfig, BulkheadConfigBuilder,
};
use resil_core::chaos::{ChaosConfig, ChaosConfigBuilder};
use resil_core::circuit_breaker::{CircuitBreakerConfig, CircuitBreakerConfigBuilder};
use resil_core::hedging::{HedgingConfig, HedgingConfigBuilder};
use resil_core::rate_limiter::{RateLimiterConfig, RateLimiterConfigBuilder};
use resil_core::retry::{RetryConfig, RetryConfigBuilder};
use resil_core::thread_pool_bulkhead::{ThreadPoolBulkheadConfig, ThreadPoolBulkheadConfigBuilder};
use resil_core::time_limiter::{TimeLimiterConfig, TimeLimiterConfigBuilder};

use super::schema::Val;
use super::setting::Values;

/// A config's simple options, both ways.
pub(crate) trait Bind {
    /// resil-core's builder of the config.
    type Builder;
    /// `b` with every simple option `values` holds set.
    fn apply_bound(b: Self::Builder, values: &Values) -> Self::Builder;
    /// `(file key, effective value)` of every simple option, in binding order.
    fn render_bound(&self) -> Vec<(&'static str, Option<Val>)>;
}

/// `Config => Builder { "file-key" => ValVariant: setter_and_getter, … }`.
macro_rules! bind {
    ($($config:ty => $builder:ty { $($key:literal => $val:ident: $name:ident,)+ })+) => {$(
        impl Bind for $config {
            type Builder = $builder;

            fn apply_bound(mut b: $builder, values: &Values) -> $builder {
                $(
                    if let Some(Val::$val(x)) = values.get($key).map(|s| &s.val) {
                        b = b.$name(*x);
                    }
                )+
                b
            }

            fn render_bound(&self) -> Vec<(&'static str, Option<Val>)> {
                vec![$(($key, Some(Val::$val(self.$name())))),+]
            }
        }
    )+};
}

bind! {
    CircuitBreakerConfig => CircuitBreakerConfigBuilder {
        "failure-rate-threshold" => Percent: failure_rate_threshold,
        "slow-call-rate-threshold" => Percent: slow_call_rate_threshold,
        "slow-call-duration-threshold" => Duration: slow_call_duration_threshold,
        "sliding-window-size" => U32: sliding_window_size,
        "minimum-number-of-calls" => U32: minimum_number_of_calls,
        "automatic-transition-from-open-to-half-open-enabled" => Bool: automatic_transition_from_open_to_half_open_enabled,
        "permitted-number-of-calls-in-half-open-state" => U32: permitted_number_of_calls_in_half_open_state,
        "max-wait-duration-in-half-open-state" => Duration: max_wait_duration_in_half_open_state,
    }
    RetryConfig => RetryConfigBuilder {
        "max-attempts" => U32: max_attempts,
        "fail-after-max-attempts" => Bool: fail_after_max_attempts,
    }
    BulkheadConfig => BulkheadConfigBuilder {
        "max-concurrent-calls" => U32: max_concurrent_calls,
        "max-wait-duration" => Duration: max_wait_duration,
        "fair-call-handling-enabled" => Bool: fair_call_handling_enabled,
    }
    ThreadPoolBulkheadConfig => ThreadPoolBulkheadConfigBuilder {
        "core-thread-pool-size" => Usize: core_thread_pool_size,
        "max-thread-pool-size" => Usize: max_thread_pool_size,
        "queue-capacity" => Usize: queue_capacity,
        "keep-alive-duration" => Duration: keep_alive_duration,
    }
    RateLimiterConfig => RateLimiterConfigBuilder {
        "limit-for-period" => U32: limit_for_period,
        "limit-refresh-period" => Duration: limit_refresh_period,
        "timeout-duration" => Duration: timeout_duration,
    }
    TimeLimiterConfig => TimeLimiterConfigBuilder {
        "timeout-duration" => Duration: timeout_duration,
        "cancel-running-future" => Bool: cancel_running_future,
    }
    HedgingConfig => HedgingConfigBuilder {
        "max-hedged-attempts" => U32: max_hedged_attempts,
        "delay" => Duration: delay,
    }
    AdaptiveBulkheadConfig => AdaptiveBulkheadConfigBuilder {
        "initial-limit" => U32: initial_limit,
        "min-limit" => U32: min_limit,
        "max-limit" => U32: max_limit,
        "smoothing" => F64: smoothing,
        "probe-multiplier" => U32: probe_multiplier,
        "min-window-time" => Duration: min_window_time,
        "max-window-time" => Duration: max_window_time,
        "window-size" => U32: window_size,
        "min-rtt-threshold" => Duration: min_rtt_threshold,
    }
    ChaosConfig => ChaosConfigBuilder {
        "enabled" => Bool: enabled,
    }
}

#[cfg(test)]
mod tests {
    use resil_options::Ty;

    use super::super::render::Render;
    use super::super::schema::{Kind, Target};
    use super::*;

    /// Every bound key is a core option of the config's kind in the table,
    /// bound once, with the value type the table gives it: a misspelt key
    /// would otherwise be silently never applied.
    #[test]
    fn every_binding_is_a_core_row_of_its_kind_with_its_type() {
        fn check<C: Bind + Render + Default>() {
            let kind: Kind = C::KIND;
            let bound = C::default().render_bound();
            for (i, (key, val)) in bound.iter().enumerate() {
                let row = kind
                    .option(key)
                    .unwrap_or_else(|| panic!("{kind} {key}: not in the table"));
                assert_eq!(row.key, *key, "{kind} {key}: not the canonical key");
                assert_eq!(row.target, Target::Core, "{kind} {key}: not a core option");
                let typed = matches!(
                    (row.ty, val),
                    (Ty::Percent, Some(Val::Percent(_)))
                        | (Ty::U32, Some(Val::U32(_)))
                        | (Ty::Usize, Some(Val::Usize(_)))
                        | (Ty::F64, Some(Val::F64(_)))
                        | (Ty::Duration, Some(Val::Duration(_)))
                        | (Ty::Bool, Some(Val::Bool(_)))
                );
                assert!(
                    typed,
                    "{kind} {key}: bound as {val:?}, the table says {:?}",
                    row.ty
                );
                assert!(
                    bound[..i].iter().all(|(k, _)| k != key),
                    "{kind} {key}: bound twice"
                );
            }
        }
        check::<CircuitBreakerConfig>();
        check::<RetryConfig>();
        check::<BulkheadConfig>();
        check::<ThreadPoolBulkheadConfig>();
        check::<RateLimiterConfig>();
        check::<TimeLimiterConfig>();
        check::<HedgingConfig>();
        check::<AdaptiveBulkheadConfig>();
        check::<ChaosConfig>();
    }
}
