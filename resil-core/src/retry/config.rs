//! Retry configuration: attempts, waits, what is retried and what is ignored.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::budget::RetryBudget;
use crate::erased::{erase, Erased};
use crate::error::{look_inside, ConfigError, ErrorKind, Look};
use crate::interval::IntervalFunction;

/// A type-erased predicate over an error or a result (`None` for a value of
/// any type other than the one it was written for), with the name of that type
/// for diagnostics.
#[derive(Clone)]
struct Predicate {
    test: Erased<bool>,
    written_for: &'static str,
    /// Sees through `resil::Error<…>` levels around the type written for
    /// (a plain `call` around other primitives).
    look: Look,
}
type KindPredicate = Arc<dyn Fn(ErrorKind) -> bool + Send + Sync>;
/// `interval_bi_function`, erased: `None` when the outcome's type is not the
/// one it was written for, else the wait (or `None` to stop retrying).
type BiFunction = Arc<dyn Fn(u32, Attempted<'_>) -> Option<Option<Duration>> + Send + Sync>;
/// `consume_result_before_retry_attempt`, erased: receives `&mut Option<T>`
/// and takes the value out when `T` is its type.
type Consumer = Arc<dyn Fn(u32, &mut dyn Any) + Send + Sync>;

/// A failed attempt's outcome as the type-erased hooks see it.
#[derive(Clone, Copy)]
pub(crate) enum Attempted<'a> {
    /// An `Ok` value that `retry_on_result` retries.
    Value(&'a dyn Any),
    /// The call's own error, or an inner primitive's rejection struct.
    Error(&'a dyn Any),
}

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
///    is counted in `failed_calls_with_retry`, unless
///    [`fail_after_max_attempts`](RetryConfigBuilder::fail_after_max_attempts)
///    turns it into [`Error::MaxRetriesExceeded`](crate::Error::MaxRetriesExceeded);
/// 4. a refusal by another resil primitive inside the retried call (only visible
///    to [`Retry::call_nested`](super::Retry::call_nested) and
///    [`Retry::call_async_nested`](super::Retry::call_async_nested)) is shown to
///    the predicates as its own struct ([`Timeout`](crate::error::Timeout),
///    [`CallNotPermitted`](crate::error::CallNotPermitted), …): `ignore_error`
///    and `retry_on_error` predicates written for that struct decide it; with
///    none, [`retry_on_rejection`](RetryConfigBuilder::retry_on_rejection)
///    does, by default retrying only [`ErrorKind::Timeout`].
///
/// Predicates are written for concrete types (`|e: &std::io::Error| …`) and are
/// type-erased, so one retry can serve call sites with different error types:
/// a predicate answers "no" for values of any other type. Calling a predicate
/// setter again adds a predicate (either one accepting is enough). The type must
/// be the call's exact type: a predicate on `Option<u32>` never sees the
/// `Option<i32>` an unannotated `Some(7)` produces, so annotate literals.
///
/// # Composition
///
/// A retry around other resil primitives sees `resil::Error<E>`. Predicates
/// written for `E` still classify `Error::Call(e)`, through
/// [`call_nested`](super::Retry::call_nested) and also through plain
/// [`call`](super::Retry::call) (a predicate for `E` looks inside an
/// `Error<E>`, up to four levels deep). Through a plain `call`, an inner
/// rejection found inside the `Error<E>` of a type `E` some error predicate
/// is written for is classified as the `_nested` calls classify it (its
/// struct's predicates, else `retry_on_rejection`); without any predicate
/// for `E`, the plain call cannot tell it from a call error: use the
/// `_nested` calls. When an error arrives that no error predicate was
/// written for, while some exist, the retry traces it once, at debug level
/// (target `resil_core::retry`), naming both types.
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
    interval_bi_function: Option<BiFunction>,
    retry_on_error: Vec<Predicate>,
    retry_on_result: Vec<Predicate>,
    ignore_error: Vec<Predicate>,
    retry_on_rejection: Option<KindPredicate>,
    fail_after_max_attempts: bool,
    consume_result_before_retry_attempt: Option<Consumer>,
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

    /// Whether an `interval_bi_function` is set.
    #[inline]
    pub fn has_interval_bi_function(&self) -> bool {
        self.interval_bi_function.is_some()
    }

    /// Whether running out of attempts on a retried result is an error
    /// ([`Error::MaxRetriesExceeded`](crate::Error::MaxRetriesExceeded)) rather
    /// than the last value (default `false`).
    #[inline]
    pub fn fail_after_max_attempts(&self) -> bool {
        self.fail_after_max_attempts
    }

    /// The retry budget every retry draws on, if any.
    #[inline]
    pub fn budget(&self) -> Option<&RetryBudget> {
        self.budget.as_ref()
    }

    #[inline]
    pub(crate) fn is_ignored(&self, error: &dyn Any) -> bool {
        answer(&self.ignore_error, error) == Some(true)
    }

    /// Whether the call's own error is retried: every error when there is no
    /// `retry_on_error` predicate, else only one some predicate accepts.
    #[cfg(test)]
    pub(crate) fn retries_error(&self, error: &dyn Any) -> bool {
        self.retry_on_error.is_empty() || answer(&self.retry_on_error, error) == Some(true)
    }

    /// Without a `retry_on_result` predicate (the common case) this is one
    /// inlined length check: no call, and the value need not be spilled to
    /// memory to be seen as `&dyn Any`.
    #[inline(always)]
    pub(crate) fn retries_result(&self, value: &dyn Any) -> bool {
        !self.retry_on_result.is_empty() && answer(&self.retry_on_result, value) == Some(true)
    }

    /// Whether an inner primitive's rejection is retried: a `retry_on_error`
    /// predicate written for its struct decides, else `retry_on_rejection`.
    #[inline]
    pub(crate) fn retries_rejection(&self, kind: ErrorKind, rejection: &dyn Any) -> bool {
        if let Some(answer) = answer(&self.retry_on_error, rejection) {
            return answer;
        }
        match &self.retry_on_rejection {
            Some(p) => p(kind),
            None => default_retries_rejection(kind),
        }
    }

    /// The wait before the next attempt, from `interval_bi_function` if it is
    /// written for this outcome's type, else from the interval function;
    /// `None` when the bi-function says stop.
    #[inline]
    pub(crate) fn wait_after(&self, attempt: u32, outcome: Attempted<'_>) -> Option<Duration> {
        match self
            .interval_bi_function
            .as_ref()
            .and_then(|f| f(attempt, outcome))
        {
            Some(decided) => decided,
            None => Some(self.interval_function.interval(attempt)),
        }
    }

    /// Hands a discarded `Ok` value to `consume_result_before_retry_attempt`
    /// (when it is written for the value's type; otherwise the value is left
    /// in `value` and dropped by the caller).
    #[inline]
    pub(crate) fn consume(&self, attempt: u32, value: &mut dyn Any) {
        if let Some(consume) = &self.consume_result_before_retry_attempt {
            consume(attempt, value);
        }
    }

    /// Classifies the call's own error, running each predicate at most once:
    /// ignored, retried or not, and whether error predicates exist but none
    /// is written for `error`'s type (they can never match it).
    #[inline]
    pub(crate) fn classify_error(&self, error: &dyn Any) -> (ErrorClass, bool) {
        let ignored = answer(&self.ignore_error, error);
        if ignored == Some(true) {
            return (ErrorClass::Ignored, false);
        }
        let retried = answer(&self.retry_on_error, error);
        let class = if self.retry_on_error.is_empty() || retried == Some(true) {
            ErrorClass::Retried
        } else {
            ErrorClass::NotRetried
        };
        let has_predicates = !(self.ignore_error.is_empty() && self.retry_on_error.is_empty());
        (
            class,
            has_predicates && ignored.is_none() && retried.is_none(),
        )
    }

    /// A refusal inside `error` when `error` is a `resil::Error<X>` (however
    /// deep) for a type `X` some error predicate is written for: what a plain
    /// `call` around other primitives hands over, classified then as
    /// `call_nested` classifies a refusal.
    pub(crate) fn inner_refusal<'e>(&self, error: &'e dyn Any) -> Option<(ErrorKind, &'e dyn Any)> {
        self.ignore_error
            .iter()
            .chain(&self.retry_on_error)
            .find_map(|p| match (p.look)(error) {
                Some((refusal, Some(kind))) => Some((kind, refusal)),
                _ => None,
            })
    }

    /// The types the error predicates are written for: "`a`, `b`".
    #[cold]
    pub(crate) fn error_predicate_types(&self) -> String {
        let mut names: Vec<&str> = Vec::new();
        for p in self.ignore_error.iter().chain(&self.retry_on_error) {
            if !names.contains(&p.written_for) {
                names.push(p.written_for);
            }
        }
        names
            .iter()
            .map(|n| format!("`{n}`"))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// What the error predicates make of the call's own error.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ErrorClass {
    /// `ignore_error` accepts it.
    Ignored,
    /// Retried (no `retry_on_error` predicate, or one accepts it).
    Retried,
    /// Returned at once: `retry_on_error` predicates exist, none accepts it.
    NotRetried,
}

fn written_for(predicates: &[Predicate]) -> Vec<&'static str> {
    predicates.iter().map(|p| p.written_for).collect()
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

/// Erases a predicate written for `X`. It also looks inside a
/// `resil::Error<X>`: a plain `call` whose closure returns the result of
/// another resil primitive still has its `Error::Call(x)` classified by the
/// predicates written for `X` (a refusal inside answers "not my type").
fn predicate<X: 'static>(f: impl Fn(&X) -> bool + Send + Sync + 'static) -> Predicate {
    let direct = erase(f);
    Predicate {
        test: Arc::new(move |any: &dyn Any| match direct(any) {
            Some(answer) => Some(answer),
            // The call's own error inside `resil::Error<X>`, however deep; an
            // inner refusal is classified as one (`inner_refusal`).
            None => match look_inside::<X>(any) {
                Some((x, None)) => direct(x),
                _ => None,
            },
        }),
        written_for: std::any::type_name::<X>(),
        look: look_inside::<X>,
    }
}

/// The default for rejections from primitives inside the retry: a time limiter's
/// timeout is a failed attempt like any other and is retried; every other refusal
/// (an open breaker, a full bulkhead, a rate limiter, an inner retry budget, a
/// spent deadline, a throttler shedding for an overloaded downstream) would
/// only be refused again at once, so it is returned as is.
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
            interval_bi_function: None,
            retry_on_error: Vec::new(),
            retry_on_result: Vec::new(),
            ignore_error: Vec::new(),
            retry_on_rejection: None,
            fail_after_max_attempts: false,
            consume_result_before_retry_attempt: None,
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
            .field("interval_bi_function", &self.interval_bi_function.is_some())
            .field("retry_on_error", &written_for(&self.retry_on_error))
            .field("retry_on_result", &written_for(&self.retry_on_result))
            .field("ignore_error", &written_for(&self.ignore_error))
            .field("retry_on_rejection", &self.retry_on_rejection.is_some())
            .field("fail_after_max_attempts", &self.fail_after_max_attempts)
            .field(
                "consume_result_before_retry_attempt",
                &self.consume_result_before_retry_attempt.is_some(),
            )
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

    /// The wait before each retry as a function of the attempts made so far
    /// **and the failed attempt's outcome** (Resilience4j's
    /// `intervalBiFunction`): `Err(&e)` for an error, `Ok(&v)` for a value
    /// that `retry_on_result` retries. Return `Some(wait)`, or `None` to stop
    /// retrying now: the call then ends on this outcome as if its attempts had
    /// run out (an [`RetryEventKind::Error`](super::RetryEventKind::Error), the value
    /// or the error returned).
    ///
    /// Written for one pair of types; an outcome of other types (another call
    /// site, an inner primitive's rejection) waits
    /// [`interval_function`](Self::interval_function)'s interval. Like the
    /// predicates, it sees `Error::Call(e)` of a nested call as `e` and an
    /// inner rejection as its struct (see [`RetryConfig`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// use resil_core::clock::ManualClock;
    /// use resil_core::retry::{Retry, RetryConfig};
    ///
    /// #[derive(Debug)]
    /// enum Http { TooManyRequests { retry_after: Duration }, BadRequest }
    ///
    /// let config = RetryConfig::builder()
    ///     .interval_bi_function(|_attempt, outcome: Result<&String, &Http>| match outcome {
    ///         Err(Http::TooManyRequests { retry_after }) => Some(*retry_after),
    ///         Err(Http::BadRequest) => None, // no point: stop now
    ///         Ok(_) => Some(Duration::from_millis(100)),
    ///     })
    ///     .build()
    ///     .unwrap();
    /// let clock = ManualClock::new();
    /// let retry = Retry::with_clock("quotes", config, clock.clone());
    /// let mut calls = 0;
    /// let out = retry.call(|| {
    ///     calls += 1;
    ///     if calls == 1 {
    ///         Err(Http::TooManyRequests { retry_after: Duration::from_secs(2) })
    ///     } else {
    ///         Ok(String::from("quote"))
    ///     }
    /// });
    /// assert_eq!(out.unwrap(), "quote");
    /// assert_eq!(clock.elapsed(), Duration::from_secs(2)); // honoured Retry-After
    /// ```
    pub fn interval_bi_function<T: 'static, E: 'static>(
        mut self,
        f: impl Fn(u32, Result<&T, &E>) -> Option<Duration> + Send + Sync + 'static,
    ) -> Self {
        self.config.interval_bi_function = Some(Arc::new(move |attempt, outcome| match outcome {
            Attempted::Value(v) => v.downcast_ref::<T>().map(|v| f(attempt, Ok(v))),
            Attempted::Error(e) => match e.downcast_ref::<E>() {
                Some(e) => Some(f(attempt, Err(e))),
                None => match look_inside::<E>(e) {
                    Some((e, None)) => e.downcast_ref::<E>().map(|e| f(attempt, Err(e))),
                    _ => None,
                },
            },
        }));
        self
    }

    /// Retries only errors of type `E` that `predicate` accepts (and errors
    /// accepted by any other `retry_on_error` predicate). Without any, every
    /// error is retried.
    ///
    /// `E` may also be an inner primitive's rejection struct
    /// ([`Timeout`](crate::error::Timeout), [`BulkheadFull`](crate::error::BulkheadFull),
    /// …) for a nested call: such a predicate decides that rejection in place
    /// of [`retry_on_rejection`](Self::retry_on_rejection).
    pub fn retry_on_error<E: 'static>(
        mut self,
        predicate: impl Fn(&E) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.config.retry_on_error.push(self::predicate(predicate));
        self
    }

    /// Retries a successful value of type `T` that `predicate` accepts, as if it
    /// were a failure. When the attempts run out on such a value, the last value
    /// is returned as `Ok` and the call counts as failed (see [`RetryConfig`]).
    pub fn retry_on_result<T: 'static>(
        mut self,
        predicate: impl Fn(&T) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.config.retry_on_result.push(self::predicate(predicate));
        self
    }

    /// Returns errors of type `E` that `predicate` accepts at once, without
    /// retrying and without counting them as failures. Wins over
    /// [`retry_on_error`](Self::retry_on_error). `E` may be an inner
    /// rejection struct, as for `retry_on_error`.
    pub fn ignore_error<E: 'static>(
        mut self,
        predicate: impl Fn(&E) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.config.ignore_error.push(self::predicate(predicate));
        self
    }

    /// Which refusals by resil primitives *inside* the retried call are retried
    /// ([`Retry::call_nested`](super::Retry::call_nested) and
    /// [`Retry::call_async_nested`](super::Retry::call_async_nested) see them;
    /// plain calls too, inside the `resil::Error<E>` of a type `E` an error
    /// predicate is written for)
    /// when no `retry_on_error` predicate is written for the rejection's struct.
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

    /// When the attempts run out on a value `retry_on_result` still retries,
    /// return [`Error::MaxRetriesExceeded`](crate::Error::MaxRetriesExceeded)
    /// instead of that value (Resilience4j's `failAfterMaxAttempts`, default
    /// `false`). The value goes to
    /// [`consume_result_before_retry_attempt`](Self::consume_result_before_retry_attempt)
    /// if one is set, else it is dropped.
    pub fn fail_after_max_attempts(mut self, fail: bool) -> Self {
        self.config.fail_after_max_attempts = fail;
        self
    }

    /// A hook that receives every `Ok` value of type `T` the retry discards,
    /// with the attempt that produced it (1 = the first call): a value
    /// `retry_on_result` retries, before the next attempt (Resilience4j's
    /// `consumeResultBeforeRetryAttempt`), and a value dropped because
    /// `fail_after_max_attempts`, the budget or the deadline ended the call.
    /// Use it to release what the value holds (a pooled connection, a
    /// response body). Values of other types are simply dropped.
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use resil_core::retry::{Retry, RetryConfig};
    ///
    /// let released = Arc::new(Mutex::new(Vec::new()));
    /// let log = released.clone();
    /// let config = RetryConfig::builder()
    ///     .wait_duration(std::time::Duration::ZERO)
    ///     .retry_on_result(|status: &u16| *status == 503)
    ///     .consume_result_before_retry_attempt(move |attempt, status: u16| {
    ///         log.lock().unwrap().push((attempt, status));
    ///     })
    ///     .build()
    ///     .unwrap();
    /// let retry = Retry::new("gateway", config);
    /// let mut statuses = [503u16, 503, 200].into_iter();
    /// let out = retry.call(|| Ok::<u16, ()>(statuses.next().unwrap()));
    /// assert_eq!(out, Ok(200));
    /// assert_eq!(*released.lock().unwrap(), [(1, 503), (2, 503)]);
    /// ```
    pub fn consume_result_before_retry_attempt<T: 'static>(
        mut self,
        consume: impl Fn(u32, T) + Send + Sync + 'static,
    ) -> Self {
        self.config.consume_result_before_retry_attempt =
            Some(Arc::new(move |attempt, slot: &mut dyn Any| {
                if let Some(value) = slot.downcast_mut::<Option<T>>().and_then(Option::take) {
                    consume(attempt, value);
                }
            }));
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
    use crate::error::Error;

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
        assert!(config.retries_rejection(ErrorKind::Timeout, &()));
        for kind in [
            ErrorKind::CallNotPermitted,
            ErrorKind::BulkheadFull,
            ErrorKind::RequestNotPermitted,
            ErrorKind::RetryBudgetExhausted,
            ErrorKind::DeadlineExceeded,
            ErrorKind::Throttled,
        ] {
            assert!(!config.retries_rejection(kind, &()), "{kind}");
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
        assert_eq!(
            config.classify_error(&1u64),
            (ErrorClass::NotRetried, true),
            "predicates exist, none for u64"
        );
        assert_eq!(config.error_predicate_types(), "`u32`, `&str`");
        assert_eq!(
            config.classify_error(&3u32),
            (ErrorClass::NotRetried, false)
        );
        assert_eq!(config.classify_error(&7u32), (ErrorClass::Ignored, false));
        assert_eq!(
            RetryConfig::default().classify_error(&3u32),
            (ErrorClass::Retried, false)
        );
        // A predicate for `u32` looks inside a `resil::Error<u32>`.
        assert!(config.retries_error(&Error::Call(1u32)));
        assert!(config.is_ignored(&Error::Call(7u32)));
        assert!(config.is_ignored(&7u32));
        assert!(!config.is_ignored(&7u64));
    }

    #[test]
    fn the_rejection_policy_can_be_replaced() {
        let config = RetryConfig::builder()
            .retry_on_rejection(|k| k == ErrorKind::RequestNotPermitted)
            .build()
            .unwrap();
        assert!(config.retries_rejection(ErrorKind::RequestNotPermitted, &()));
        assert!(!config.retries_rejection(ErrorKind::Timeout, &()));
    }
}
