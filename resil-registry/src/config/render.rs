//! The one renderer: a resil-core config's effective value of every option a
//! file can set, as the typed value the loader reads ([`Val`]), so that the
//! snapshot, the provenance's defaults and the docs write each value the way
//! the loader parses it back (`1500ms`, never `1.5s`).

use std::time::Duration;

use resil_core::bulkhead::{AdaptiveBulkheadConfig, BulkheadConfig};
use resil_core::chaos::ChaosConfig;
use resil_core::circuit_breaker::{CircuitBreakerConfig, SlidingWindowType};
use resil_core::hedging::HedgingConfig;
use resil_core::rate_limiter::RateLimiterConfig;
use resil_core::retry::{
    IntervalFunction, RetryConfig, DEFAULT_MULTIPLIER, DEFAULT_RANDOMIZATION_FACTOR,
};
use resil_core::thread_pool_bulkhead::ThreadPoolBulkheadConfig;
use resil_core::time_limiter::TimeLimiterConfig;

use super::bind::Bind;
use super::schema::{Kind, Target, Val, SLIDING_WINDOW_TYPES, STATES};

/// A resil-core config the renderer writes: its kind and every file-settable
/// option it can tell, one impl per config below (the simple options from
/// their bindings, `bind.rs`; the others by hand).
pub(crate) trait Render: Bind {
    /// The kind whose rows of the option table it renders.
    const KIND: Kind;
    /// `(file key, value)` for the options the config can tell (`None`: an
    /// unset cap).
    fn found(&self) -> Vec<(&'static str, Option<Val>)>;
}

/// Every file-settable option of `config`'s kind with its effective value,
/// in the kind's table order; options a config cannot tell (error lists,
/// registry settings, an unset cap) are left out.
pub(crate) fn values<C: Render>(config: &C) -> Vec<(&'static str, Val)> {
    let found = config.found();
    // The table's order, and only its core options: a key rendered here that
    // the table lacks would be a value the loader refuses.
    C::KIND
        .options()
        .iter()
        .filter(|o| o.target == Target::Core)
        .filter_map(|o| {
            let (_, v) = found.iter().find(|(k, _)| *k == o.key)?;
            Some((o.key, v.clone()?))
        })
        .collect()
}

/// `values`, each as a config file writes it.
pub(crate) fn rendered<C: Render>(config: &C) -> Vec<(&'static str, String)> {
    values(config)
        .into_iter()
        .map(|(k, v)| (k, v.to_string()))
        .collect()
}

impl Render for CircuitBreakerConfig {
    const KIND: Kind = Kind::CircuitBreaker;

    fn found(&self) -> Vec<(&'static str, Option<Val>)> {
        let c = self;
        let f = c.wait_interval_function_in_open_state();
        let wait: Duration = f
            .and_then(IntervalFunction::initial)
            .unwrap_or(c.wait_duration_in_open_state());
        let window = match c.sliding_window_type() {
            SlidingWindowType::CountBased => "COUNT_BASED",
            SlidingWindowType::TimeBased => "TIME_BASED",
        };
        let after_wait = c.transition_to_state_after_wait_duration().as_str();
        let mut out = c.render_bound();
        out.extend([
            (
                "sliding-window-type",
                Some(word(SLIDING_WINDOW_TYPES, window)),
            ),
            ("wait-duration-in-open-state", Some(Val::Duration(wait))),
            (
                "transition-to-state-after-wait-duration",
                Some(word(STATES, after_wait)),
            ),
            (
                "initial-state",
                Some(word(STATES, c.initial_state().as_str())),
            ),
        ]);
        out.extend(backoff(f, "exponential-max-wait-duration-in-open-state"));
        out
    }
}

impl Render for RetryConfig {
    const KIND: Kind = Kind::Retry;

    fn found(&self) -> Vec<(&'static str, Option<Val>)> {
        // With backoff, `wait-duration` is the interval function's first wait.
        let f = self.interval_function();
        let wait = f.initial().unwrap_or(self.wait_duration());
        let mut out = self.render_bound();
        out.push(("wait-duration", Some(Val::Duration(wait))));
        out.extend(backoff(Some(f), "exponential-max-wait-duration"));
        out
    }
}

impl Render for BulkheadConfig {
    const KIND: Kind = Kind::Bulkhead;

    fn found(&self) -> Vec<(&'static str, Option<Val>)> {
        self.render_bound()
    }
}

impl Render for ThreadPoolBulkheadConfig {
    const KIND: Kind = Kind::ThreadPoolBulkhead;

    fn found(&self) -> Vec<(&'static str, Option<Val>)> {
        self.render_bound()
    }
}

impl Render for RateLimiterConfig {
    const KIND: Kind = Kind::RateLimiter;

    fn found(&self) -> Vec<(&'static str, Option<Val>)> {
        self.render_bound()
    }
}

impl Render for TimeLimiterConfig {
    const KIND: Kind = Kind::TimeLimiter;

    fn found(&self) -> Vec<(&'static str, Option<Val>)> {
        self.render_bound()
    }
}

impl Render for HedgingConfig {
    const KIND: Kind = Kind::Hedging;

    fn found(&self) -> Vec<(&'static str, Option<Val>)> {
        self.render_bound()
    }
}

impl Render for AdaptiveBulkheadConfig {
    const KIND: Kind = Kind::AdaptiveBulkhead;

    fn found(&self) -> Vec<(&'static str, Option<Val>)> {
        self.render_bound()
    }
}

impl Render for ChaosConfig {
    const KIND: Kind = Kind::Chaos;

    fn found(&self) -> Vec<(&'static str, Option<Val>)> {
        // One builder call sets both (`inject_latency(rate, latency)`).
        let mut out = self.render_bound();
        out.extend([
            ("latency-rate", Some(Val::F64(self.latency_rate()))),
            ("latency", Some(Val::Duration(self.latency()))),
        ]);
        out
    }
}

fn word(words: &'static [&'static str], w: &str) -> Val {
    Val::Choice(words.iter().find(|x| **x == w).copied().unwrap_or(words[0]))
}

/// The backoff keys an interval function stands for (Resilience4j's
/// `enable-exponential-backoff`, `exponential-backoff-multiplier`, its cap,
/// `enable-randomized-wait`, `randomized-wait-factor`).
fn backoff(
    f: Option<&IntervalFunction>,
    max_key: &'static str,
) -> Vec<(&'static str, Option<Val>)> {
    let multiplier = f.and_then(IntervalFunction::multiplier);
    let factor = f.and_then(IntervalFunction::randomization_factor);
    vec![
        (
            "enable-exponential-backoff",
            Some(Val::Bool(multiplier.is_some())),
        ),
        (
            "exponential-backoff-multiplier",
            Some(Val::F64(multiplier.unwrap_or(DEFAULT_MULTIPLIER))),
        ),
        (
            max_key,
            f.and_then(IntervalFunction::max).map(Val::Duration),
        ),
        ("enable-randomized-wait", Some(Val::Bool(factor.is_some()))),
        (
            "randomized-wait-factor",
            Some(Val::F64(factor.unwrap_or(DEFAULT_RANDOMIZATION_FACTOR))),
        ),
    ]
}

#[cfg(test)]
mod tests {

    use resil_core::bulkhead::{AdaptiveBulkheadConfig, BulkheadConfig};
    use resil_core::chaos::ChaosConfig;
    use resil_core::circuit_breaker::CircuitBreakerConfig;
    use resil_core::hedging::HedgingConfig;
    use resil_core::rate_limiter::RateLimiterConfig;
    use resil_core::retry::RetryConfig;
    use resil_core::thread_pool_bulkhead::ThreadPoolBulkheadConfig;
    use resil_core::time_limiter::TimeLimiterConfig;
    use resil_options::Default as Defaulted;

    use super::super::schema::{Kind, Target};
    use super::rendered;

    /// The option table's defaults are resil-core's, as the renderer writes
    /// them; every core option with a fixed default is rendered.
    #[test]
    fn the_option_tables_defaults_are_the_configs_defaults() {
        fn of<C: super::Render + Default>() -> (Kind, Vec<(&'static str, String)>) {
            (C::KIND, rendered(&C::default()))
        }
        let defaults = [
            of::<CircuitBreakerConfig>(),
            of::<RetryConfig>(),
            of::<BulkheadConfig>(),
            of::<ThreadPoolBulkheadConfig>(),
            of::<RateLimiterConfig>(),
            of::<TimeLimiterConfig>(),
            of::<HedgingConfig>(),
            of::<AdaptiveBulkheadConfig>(),
            of::<ChaosConfig>(),
        ];
        assert_eq!(defaults.len(), Kind::ALL.len(), "every kind is rendered");
        for (kind, values) in defaults {
            for (key, value) in &values {
                let row = kind.option(key).unwrap();
                match row.default {
                    Defaulted::Is(d) => assert_eq!(d, value, "{kind} {key}"),
                    Defaulted::Computed(_) => {}
                    Defaulted::Unset(why) => {
                        panic!("{kind} {key}: rendered {value}, table says unset ({why})")
                    }
                }
            }
            for row in kind.options() {
                if row.target == Target::Core && row.default.value().is_some() {
                    assert!(
                        values.iter().any(|(k, _)| *k == row.key),
                        "{kind} {}: in the table, not rendered",
                        row.key
                    );
                }
            }
        }
    }
}
