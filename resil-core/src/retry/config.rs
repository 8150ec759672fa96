//! Retry configuration: attempts, waits, what is retried and what is ignored.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::budget::RetryBudget;
use crate::erased::{erase, Erased};
use crate::error::{ConfigError, ErrorKind};
use crate::interval::IntervalFunction;

/// A type-erased predicate over an error or a result (`None` for a value of
/// any type other than the one it was written for).
type Predicate = Erased<bool>;
type KindPredicate = Arc<dyn Fn(ErrorKind) -> bool + Send + Sync>;

/// Resilience4j's default `max_attempts` (the first call plus two retries).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
/// Resilience4j's default `wait_duration` between attempts.
pub const DEFAULT_WAIT_DURATION: Duration = Duration::from_millis(500);

/// How a [`Retry`](super::Retry) decides whether, when and how often to try again.
///
/// Defaults are Resilience4j's: 3 attempts in all (the first call counts), a
/// fixed 500 ms between them, every error retried, no result retried.
///
/// # Classification
///
/// For each failed attempt, in this order:
///
/// 1. an error matching [`ignore_error`](RetryConfigBuilder::ignore_error) is
///    returned at once, never retried, and counted as an ignored error (ignore
///    wins over every retry rule);
/// 2. without any [`retry_on_error`](RetryConfigBuilder::retry_on_error)
///    predicate every error is retried; with predicates, only errors some
///    predicate accepts are retried, the others are returned at once;
/// 3. an `Ok` value matching [`retry_on_result`](RetryConfigBuilder::retry_on_result)
///    is retried like an error; when the attempts run out on such a value, the
///    **last value is returned as `Ok`** (Resilience4j's behaviour) and the call
///    is counted in `failed_calls_with_retry`;
/// 4. a refusal by another resil primitive inside the retried call (only visible
///    to [`Retry::call_nested`](super::Retry::call_nested) and
///    [`Retry::call_async_nested`](super::Retry::call_async_nested)) is retried
///    only if [`retry_on_rejection`](RetryConfigBuilder::retry_on_rejection)
///    says so; by default only [`ErrorKind::Timeout`] is (see there).
///
/// Predicates are written for concrete types (`|e: &std::io::Error| …`) and are
/// type-erased, so one retry can serve call sites with different error types:
/// a predicate answers "no" for values of any other type. Calling a predicate
/// setter again adds a predicate (either one accepting is enough). The type must
/// be the call's exact type: a predicate on `Option<u32>` never sees the
/// `Option<i32>` an unannotated `Some(7)` produces, so annotate literals.
///
/// ```
/// use std::time::Duration;
/// use resil_core::retry::{IntervalFunction, RetryConfig};
///
/// let config = RetryConfig::builder()
///     .max_attempts(4)
///     .interval_function(IntervalFunction::exponential(Duration::from_millis(100), 2.0))
///     .retry_on_error(|e: &std::io::Error| e.kind() == std::io::ErrorKind::ConnectionRefused)
///     .build()
///     .unwrap();
/// assert_eq!(config.max_attempts(), 4);
/// assert_eq!(config.interval_function().interval(3), Duration::from_millis(400));
///
/// let err = RetryConfig::builder().max_attempts(0).build().unwrap_err();
/// assert_eq!(err.to_string(), "invalid `max_attempts`: got 0, expected an integer >= 1");
/// ```
#[derive(Clone)]
pub struct RetryConfig {
    max_attempts: u32,
    wait_duration: Duration,
    interval_function: IntervalFunction,
    interval_function_set: bool,
    retry_on_error: Option<Predicate>,
    retry_on_result: Option<Predicate>,
    ignore_error: Option<Predicate>,
    retry_on_rejection: Option<KindPredicate>,
    budget: Option<RetryBudget>,
}

impl RetryConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> RetryConfigBuilder {
        RetryConfigBuilder {
            config: RetryConfig::default(),
        }
    }

    /// A builder starting from this configuration (to derive a variant of it).
    pub fn to_builder(&self) -> RetryConfigBuilder {
        RetryConfigBuilder {
            config: self.clone(),
        }
    }

    /// The most attempts one call makes, the first call included.
    #[inline]
    pub fn max_attempts(&self) -> u32 {
        self.max_attempts
    }

    /// The fixed wait set with `wait_duration` (unused when an
    /// `interval_function` was set).
    #[inline]
    pub fn wait_duration(&self) -> Duration {
        self.wait_duration
    }

    /// The function that gives each wait: the one set with `interval_function`,
    /// or a fixed `wait_duration`.
    #[inline]
    pub fn interval_function(&self) -> &IntervalFunction {
        &self.interval_function
    }

    /// The retry budget every retry draws on, if any.
    #[inline]
    pub fn budget(&self) -> Option<&RetryBudget> {
        self.budget.as_ref()
    }

    #[inline]
    pub(crate) fn is_ignored(&self, error: &dyn Any) -> bool {
        self.ignore_error.as_ref().is_some_and(|p| holds(p, error))
    }

    #[inline]
    pub(crate) fn retries_error(&self, error: &dyn Any) -> bool {
        self.retry_on_error.as_ref().is_none_or(|p| holds(p, error))
    }

    #[inline]
    pub(crate) fn retries_result(&self, value: &dyn Any) -> bool {
        self.retry_on_result
            .as_ref()
            .is_some_and(|p| holds(p, value))
    }

    #[inline]
    pub(crate) fn retries_rejection(&self, kind: ErrorKind) -> bool {
        match &self.retry_on_rejection {
            Some(p) => p(kind),
            None => default_retries_rejection(kind),
        }
    }
}

/// The default for rejections from primitives inside the retry: a time limiter's
/// timeout is a failed attempt like any other and is retried; every other refusal
/// (an open breaker, a full bulkhead, a rate limiter, an inner retry budget, a
/// spent deadline) would only be refused again at once, so it is returned as is.
fn default_retries_rejection(kind: ErrorKind) -> bool {
    kind == ErrorKind::Timeout
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            max_attempts: DEFAULT_MAX_ATTEMPTS,
            wait_duration: DEFAULT_WAIT_DURATION,
            interval_function: IntervalFunction::fixed(DEFAULT_WAIT_DURATION),
            interval_function_set: false,
            retry_on_error: None,
            retry_on_result: None,
            ignore_error: None,
            retry_on_rejection: None,
            budget: None,
        }
    }
}

impl fmt::Debug for RetryConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RetryConfig")
            .field("max_attempts", &self.max_attempts)
            .field("wait_duration", &self.wait_duration)
            .field("interval_function", &self.interval_function)
            .field("retry_on_error", &self.retry_on_error.is_some())
            .field("retry_on_result", &self.retry_on_result.is_some())
            .field("ignore_error", &self.ignore_error.is_some())
            .field("retry_on_rejection", &self.retry_on_rejection.is_some())
            .field("budget", &self.budget)
            .finish()
    }
}

/// Builds a [`RetryConfig`]; setters are named after Resilience4j's, in snake case.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `.build()` is called"]
pub struct RetryConfigBuilder {
    config: RetryConfig,
}

fn any_of(previous: Option<Predicate>, next: Predicate) -> Option<Predicate> {
    Some(match previous {
        None => next,
        Some(previous) => Arc::new(move |v: &dyn Any| Some(holds(&previous, v) || holds(&next, v))),
    })
}

/// Whether `predicate` was written for `value`'s type and accepts it.
fn holds(predicate: &Predicate, value: &dyn Any) -> bool {
    predicate(value) == Some(true)
}

impl RetryConfigBuilder {
    /// The most attempts one call makes, **including the first call**
    /// (default 3). Must be ≥ 1; 1 means "never retry".
    pub fn max_attempts(mut self, max_attempts: u32) -> Self {
        self.config.max_attempts = max_attempts;
        self
    }

    /// A fixed wait between attempts (default 500 ms). Ignored when an
    /// [`interval_function`](Self::interval_function) is set, whatever the order
    /// of the two calls.
    pub fn wait_duration(mut self, wait_duration: Duration) -> Self {
        self.config.wait_duration = wait_duration;
        if !self.config.interval_function_set {
            self.config.interval_function = IntervalFunction::fixed(wait_duration);
        }
        self
    }

    /// The wait before each retry as a function of the attempts made so far:
    /// exponential, randomized, exponential-random, capped or custom. Overrides
    /// [`wait_duration`](Self::wait_duration).
    pub fn interval_function(mut self, interval_function: IntervalFunction) -> Self {
        self.config.interval_function = interval_function;
        self.config.interval_function_set = true;
        self
    }

    /// Retries only errors of type `E` that `predicate` accepts (and errors
    /// accepted by any other `retry_on_error` predicate). Without any, every
    /// error is retried.
    pub fn retry_on_error<E: 'static>(
        mut self,
        predicate: impl Fn(&E) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.config.retry_on_error = any_of(self.config.retry_on_error, erase(predicate));
        self
    }

    /// Retries a successful value of type `T` that `predicate` accepts, as if it
    /// were a failure. When the attempts run out on such a value, the last value
    /// is returned as `Ok` and the call counts as failed (see [`RetryConfig`]).
    pub fn retry_on_result<T: 'static>(
        mut self,
        predicate: impl Fn(&T) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.config.retry_on_result = any_of(self.config.retry_on_result, erase(predicate));
        self
    }

    /// Returns errors of type `E` that `predicate` accepts at once, without
    /// retrying and without counting them as failures. Wins over
    /// [`retry_on_error`](Self::retry_on_error).
    pub fn ignore_error<E: 'static>(
        mut self,
        predicate: impl Fn(&E) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.config.ignore_error = any_of(self.config.ignore_error, erase(predicate));
        self
    }

    /// Which refusals by resil primitives *inside* the retried call are retried
    /// (only [`Retry::call_nested`](super::Retry::call_nested) and
    /// [`Retry::call_async_nested`](super::Retry::call_async_nested) see them).
    ///
    /// The default retries [`ErrorKind::Timeout`] only: an open circuit breaker
    /// (`CallNotPermitted`), a full bulkhead, a rate limiter's refusal, an inner
    /// retry's exhausted budget or a spent deadline would be refused again at
    /// once, and retrying them just turns a fast refusal into a tight loop
    /// (seed 003, `order`). They are returned at once and counted as failed.
    pub fn retry_on_rejection(
        mut self,
        predicate: impl Fn(ErrorKind) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.config.retry_on_rejection = Some(Arc::new(predicate));
        self
    }

    /// A retry budget shared with other retries: each call deposits into it,
    /// each retry withdraws, and a retry it refuses ends the call with
    /// [`Error::RetryBudgetExhausted`](crate::Error::RetryBudgetExhausted).
    /// The budget is a shared handle: retries built from clones of this
    /// configuration draw on the same balance.
    pub fn budget(mut self, budget: RetryBudget) -> Self {
        self.config.budget = Some(budget);
        self
    }

    /// Checks every value and returns the configuration, or an error naming the
    /// first invalid field, its value and the allowed range.
    pub fn build(self) -> Result<RetryConfig, ConfigError> {
        let config = self.config;
        if config.max_attempts < 1 {
            return Err(ConfigError::new(
                "max_attempts",
                config.max_attempts,
                "an integer >= 1",
            ));
        }
        config.interval_function.validate("interval_function")?;
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_defaults_are_resilience4js() {
        let config = RetryConfig::default();
        assert_eq!(config.max_attempts(), 3);
        assert_eq!(config.wait_duration(), Duration::from_millis(500));
        assert_eq!(
            config.interval_function().interval(1),
            Duration::from_millis(500)
        );
        assert_eq!(
            config.interval_function().interval(2),
            Duration::from_millis(500)
        );
        assert!(config.budget().is_none());
        assert!(config.retries_error(&"any error"));
        assert!(!config.retries_result(&"any value"));
        assert!(!config.is_ignored(&"any error"));
        assert!(config.retries_rejection(ErrorKind::Timeout));
        for kind in [
            ErrorKind::CallNotPermitted,
            ErrorKind::BulkheadFull,
            ErrorKind::RequestNotPermitted,
            ErrorKind::RetryBudgetExhausted,
            ErrorKind::DeadlineExceeded,
        ] {
            assert!(!config.retries_rejection(kind), "{kind}");
        }
    }

    #[test]
    fn max_attempts_zero_is_rejected_naming_the_field() {
        let err = RetryConfig::builder().max_attempts(0).build().unwrap_err();
        assert_eq!(err.field(), "max_attempts");
        assert_eq!(err.got(), "0");
        assert_eq!(err.expected(), "an integer >= 1");
    }

    #[test]
    fn a_bad_interval_function_is_rejected_naming_the_field() {
        let err = RetryConfig::builder()
            .interval_function(IntervalFunction::exponential(Duration::from_millis(1), 0.9))
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid `interval_function`: got multiplier 0.9, expected a multiplier >= 1.0"
        );
    }

    #[test]
    fn an_interval_function_overrides_wait_duration_in_either_order() {
        let exp = IntervalFunction::exponential(Duration::from_millis(10), 2.0);
        for config in [
            RetryConfig::builder()
                .wait_duration(Duration::from_secs(1))
                .interval_function(exp.clone()),
            RetryConfig::builder()
                .interval_function(exp.clone())
                .wait_duration(Duration::from_secs(1)),
        ] {
            let config = config.build().unwrap();
            assert_eq!(config.wait_duration(), Duration::from_secs(1));
            assert_eq!(
                config.interval_function().interval(3),
                Duration::from_millis(40)
            );
        }
        let fixed = RetryConfig::builder()
            .wait_duration(Duration::from_millis(20))
            .build()
            .unwrap();
        assert_eq!(
            fixed.interval_function().interval(5),
            Duration::from_millis(20)
        );
    }

    #[test]
    fn predicates_match_only_their_own_type_and_accumulate() {
        let config = RetryConfig::builder()
            .retry_on_error(|e: &u32| *e == 1)
            .retry_on_error(|e: &&str| e.starts_with("net"))
            .ignore_error(|e: &u32| *e == 7)
            .build()
            .unwrap();
        assert!(config.retries_error(&1u32));
        assert!(!config.retries_error(&2u32));
        assert!(config.retries_error(&"network down"));
        assert!(!config.retries_error(&1u64), "another type never matches");
        assert!(config.is_ignored(&7u32));
        assert!(!config.is_ignored(&7u64));
    }

    #[test]
    fn the_rejection_policy_can_be_replaced() {
        let config = RetryConfig::builder()
            .retry_on_rejection(|k| k == ErrorKind::RequestNotPermitted)
            .build()
            .unwrap();
        assert!(config.retries_rejection(ErrorKind::RequestNotPermitted));
        assert!(!config.retries_rejection(ErrorKind::Timeout));
    }
}
