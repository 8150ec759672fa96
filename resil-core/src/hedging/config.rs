//! Hedging configuration: how many extra attempts, after how long, and which
//! outcomes are not good enough (Polly v8's `HedgingStrategyOptions`).

use std::any::Any;
use std::fmt;
use std::time::Duration;

use crate::erased::{erase, Erased};
use crate::error::ConfigError;
use crate::retry::RetryBudget;

/// The most hedged attempts one call may add (Polly's bound).
pub const MAX_HEDGED_ATTEMPTS: u32 = 10;
/// Polly's default delay before the next hedged attempt.
pub const DEFAULT_DELAY: Duration = Duration::from_secs(2);

/// How a [`Hedging`](super::Hedging) races extra attempts against a slow one.
///
/// Defaults are Polly v8's: one hedged attempt (two attempts in all), started
/// 2 s after the first if it has not finished, or at once if it fails; every
/// error is a failure that starts the next attempt; every `Ok` value is
/// accepted.
///
/// * `delay = Duration::ZERO` starts every attempt at once (a parallel race);
/// * `delay = Duration::MAX` never hedges on time: the next attempt starts
///   only when one fails (a sequential fallback, like a retry without waits).
///
/// ```
/// use std::time::Duration;
/// use resil_core::hedging::HedgingConfig;
///
/// let config = HedgingConfig::builder()
///     .max_hedged_attempts(2)
///     .delay(Duration::from_millis(50))
///     .handle_error(|e: &std::io::Error| e.kind() != std::io::ErrorKind::NotFound)
///     .build()
///     .unwrap();
/// assert_eq!(config.max_hedged_attempts(), 2);
///
/// let err = HedgingConfig::builder().max_hedged_attempts(0).build().unwrap_err();
/// assert_eq!(err.to_string(), "invalid `max_hedged_attempts`: got 0, expected an integer in 1..=10");
/// ```
#[derive(Clone)]
pub struct HedgingConfig {
    max_hedged_attempts: u32,
    delay: Duration,
    handle_error: Vec<Predicate>,
    handle_result: Vec<Predicate>,
    budget: Option<RetryBudget>,
}

/// A type-erased predicate and the name of the type it was written for.
#[derive(Clone)]
struct Predicate {
    test: Erased<bool>,
    written_for: &'static str,
    /// Sees through `resil::Error<…>` levels around the type written for
    /// (a plain `call_async` around other primitives).
    look: crate::error::Look,
}

impl Default for HedgingConfig {
    fn default() -> Self {
        HedgingConfig {
            max_hedged_attempts: 1,
            delay: DEFAULT_DELAY,
            handle_error: Vec::new(),
            handle_result: Vec::new(),
            budget: None,
        }
    }
}

impl HedgingConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> HedgingConfigBuilder {
        HedgingConfigBuilder {
            config: HedgingConfig::default(),
        }
    }

    /// A builder starting from this configuration.
    pub fn to_builder(&self) -> HedgingConfigBuilder {
        HedgingConfigBuilder {
            config: self.clone(),
        }
    }

    /// Extra attempts a call may start after the first (Polly
    /// `MaxHedgedAttempts`, default 1, at most [`MAX_HEDGED_ATTEMPTS`]).
    #[inline]
    pub fn max_hedged_attempts(&self) -> u32 {
        self.max_hedged_attempts
    }

    /// How long the latest attempt may run before the next one starts (Polly
    /// `Delay`, default 2 s); zero starts them all at once, `Duration::MAX`
    /// only hedges on failure.
    #[inline]
    pub fn delay(&self) -> Duration {
        self.delay
    }

    /// The retry budget hedges draw on, if any.
    #[inline]
    pub fn budget(&self) -> Option<&RetryBudget> {
        self.budget.as_ref()
    }

    /// Whether an error is a failure that starts the next attempt (Polly
    /// `ShouldHandle`): without predicates written for its type, yes; with
    /// them, when one of them says so. A rejection by a resil primitive
    /// inside the attempt (shown as its own struct, `Timeout`,
    /// `BulkheadFull`, …) is a failure too unless a predicate written for that
    /// struct says otherwise: a refusal never beats an attempt still running.
    pub(crate) fn handles_error(&self, error: &dyn Any) -> bool {
        let inner = || {
            // A plain `call_async` around other primitives hands over a
            // `resil::Error<X>`: judged as `call_async_nested` judges it.
            let (inner, _) = self.handle_error.iter().find_map(|p| (p.look)(error))?;
            answer(&self.handle_error, inner)
        };
        answer(&self.handle_error, error)
            .or_else(inner)
            .unwrap_or(true)
    }

    /// Whether an `Ok` value is not good enough (only when a predicate written
    /// for its type says so).
    pub(crate) fn handles_result(&self, value: &dyn Any) -> bool {
        answer(&self.handle_result, value).unwrap_or(false)
    }

    /// Whether any result predicate exists (the fast path skips the check).
    #[inline]
    pub(crate) fn has_result_predicates(&self) -> bool {
        !self.handle_result.is_empty()
    }
}

/// `None` when no predicate is written for `value`'s type; otherwise whether
/// one of those accepts it.
fn answer(predicates: &[Predicate], value: &dyn Any) -> Option<bool> {
    let mut applies = false;
    for p in predicates {
        match (p.test)(value) {
            Some(true) => return Some(true),
            Some(false) => applies = true,
            None => {}
        }
    }
    applies.then_some(false)
}

impl fmt::Debug for HedgingConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let names = |ps: &[Predicate]| ps.iter().map(|p| p.written_for).collect::<Vec<_>>();
        f.debug_struct("HedgingConfig")
            .field("max_hedged_attempts", &self.max_hedged_attempts)
            .field("delay", &self.delay)
            .field("handle_error", &names(&self.handle_error))
            .field("handle_result", &names(&self.handle_result))
            .field("budget", &self.budget)
            .finish()
    }
}

/// Builds a [`HedgingConfig`]; [`build`](Self::build) checks every value.
#[derive(Clone)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct HedgingConfigBuilder {
    config: HedgingConfig,
}

impl fmt::Debug for HedgingConfigBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("HedgingConfigBuilder")
            .field(&self.config)
            .finish()
    }
}

impl HedgingConfigBuilder {
    /// Extra attempts after the first: `1..=10`.
    pub fn max_hedged_attempts(mut self, attempts: u32) -> Self {
        self.config.max_hedged_attempts = attempts;
        self
    }

    /// How long the latest attempt may run before the next starts; zero starts
    /// every attempt at once, `Duration::MAX` hedges only on failure.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.config.delay = delay;
        self
    }

    /// Errors of type `X` for which `predicate` is `true` start the next
    /// attempt at once; those for which every predicate written for `X` is
    /// `false` are accepted and end the call. `X` may be the call's own error
    /// or a rejection struct (`resil::error::Timeout`, …) from a primitive
    /// inside the attempt. Without predicates for a type, every error of it is
    /// a failure. Through a plain `call_async` whose attempts are protected by
    /// other primitives, a `resil::Error<X>` (up to four levels deep) is judged
    /// as `call_async_nested` judges it: the call's own `X`, or the inner
    /// refusal's struct.
    pub fn handle_error<X: 'static>(
        mut self,
        predicate: impl Fn(&X) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.config.handle_error.push(Predicate {
            test: erase(predicate),
            written_for: std::any::type_name::<X>(),
            look: crate::error::look_inside::<X>,
        });
        self
    }

    /// `Ok` values of type `T` for which `predicate` is `true` are not good
    /// enough: they start the next attempt at once, as a failure does (and are
    /// returned if every attempt ends that way).
    pub fn handle_result<T: 'static>(
        mut self,
        predicate: impl Fn(&T) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.config.handle_result.push(Predicate {
            test: erase(predicate),
            written_for: std::any::type_name::<T>(),
            look: crate::error::look_inside::<T>,
        });
        self
    }

    /// A retry budget (shared with retries by cloning the handle): every call
    /// deposits into it as a first attempt, every hedged attempt withdraws one
    /// retry, and a hedge the budget cannot pay for is not started, so
    /// hedging can never add more load than the budget allows.
    pub fn budget(mut self, budget: RetryBudget) -> Self {
        self.config.budget = Some(budget);
        self
    }

    /// The configuration, or the first invalid value with its field name.
    pub fn build(self) -> Result<HedgingConfig, ConfigError> {
        let c = self.config;
        if !(1..=MAX_HEDGED_ATTEMPTS).contains(&c.max_hedged_attempts) {
            return Err(ConfigError::new(
                "max_hedged_attempts",
                c.max_hedged_attempts,
                "an integer in 1..=10",
            ));
        }
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_pollys() {
        let c = HedgingConfig::default();
        assert_eq!(c.max_hedged_attempts(), 1);
        assert_eq!(c.delay(), Duration::from_secs(2));
        assert!(c.budget().is_none());
        assert!(c.handles_error(&std::io::Error::other("x")));
        assert!(!c.handles_result(&7u32));
    }

    #[test]
    fn max_hedged_attempts_is_checked_at_both_ends() {
        for ok in [1, 10] {
            assert!(HedgingConfig::builder()
                .max_hedged_attempts(ok)
                .build()
                .is_ok());
        }
        for bad in [0, 11, u32::MAX] {
            let err = HedgingConfig::builder()
                .max_hedged_attempts(bad)
                .build()
                .unwrap_err();
            assert_eq!(err.field(), "max_hedged_attempts");
            assert_eq!(err.got(), bad.to_string());
        }
    }

    #[test]
    fn predicates_answer_only_for_their_own_type() {
        let c = HedgingConfig::builder()
            .handle_error(|e: &u32| *e >= 500)
            .handle_result(|v: &&str| v.is_empty())
            .build()
            .unwrap();
        assert!(c.handles_error(&503u32));
        assert!(!c.handles_error(&404u32));
        assert!(c.handles_error(&"other type"), "no predicate: a failure");
        assert!(c.handles_result(&""));
        assert!(!c.handles_result(&"stock"));
        assert!(!c.handles_result(&1u8));
        assert_eq!(
            format!("{c:?}"),
            "HedgingConfig { max_hedged_attempts: 1, delay: 2s, handle_error: [\"u32\"], \
             handle_result: [\"&str\"], budget: None }"
        );
    }
}
