//! Typed values → resil-core builders: the trait each kind's config
//! implements in its module (`kinds/`), and the readers those impls share.
//! The simple options (one value, one setter) are set from their bindings
//! (`bind.rs`); the rest (the backoff keys' interval functions, the window
//! type, the states, chaos's latency pair) are written in the kind's module.

use std::time::Duration;

use resil_core::retry::{IntervalFunction, DEFAULT_MULTIPLIER, DEFAULT_RANDOMIZATION_FACTOR};
use resil_core::ConfigError;

use super::render::Render;
use super::schema::Val;
pub(crate) use super::setting::Values;

/// How one kind's settings reach its resil-core builder.
pub trait Apply: Render + Sized + Default + Clone {
    /// A builder from resil-core's defaults with every file value applied.
    fn builder_with(values: &Values) -> Self::Builder;
    /// Validates a builder.
    fn build(builder: Self::Builder) -> Result<Self, ConfigError>;
}

pub(crate) fn get<'a>(values: &'a Values, key: &str) -> Option<&'a Val> {
    values.get(key).map(|s| &s.val)
}

pub(crate) fn f64_of(values: &Values, key: &str) -> Option<f64> {
    match get(values, key)? {
        Val::F64(v) => Some(*v),
        _ => None,
    }
}

pub(crate) fn duration(values: &Values, key: &str) -> Option<Duration> {
    match get(values, key)? {
        Val::Duration(d) => Some(*d),
        _ => None,
    }
}

pub(crate) fn flag(values: &Values, key: &str) -> Option<bool> {
    match get(values, key)? {
        Val::Bool(b) => Some(*b),
        _ => None,
    }
}

pub(crate) fn choice(values: &Values, key: &str) -> Option<&'static str> {
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
pub(crate) fn backoff(values: &Values, wait: Duration, max_key: &str) -> Option<IntervalFunction> {
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
