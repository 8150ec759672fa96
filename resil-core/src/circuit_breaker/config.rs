//! The circuit breaker's configuration, its builder and call classification.

use std::any::{Any, TypeId};
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use super::state::MAX_PROBE_SLOTS;
use super::State;
use crate::erased::{erase, Erased};
use crate::error::{ConfigError, Error};
use crate::interval::IntervalFunction;

/// How the sliding window that feeds the failure and slow-call rates is cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SlidingWindowType {
    /// The last `sliding_window_size` completed calls (Resilience4j `COUNT_BASED`).
    #[default]
    CountBased,
    /// The calls completed in the last `sliding_window_size` seconds, in one-second
    /// buckets (Resilience4j `TIME_BASED`).
    TimeBased,
}

/// What opens a CLOSED breaker on failures (`failure-model` in a file). The
/// three models share everything else: the states, the half-open probes, the
/// slow-call rate, the events and the metrics (the sliding window is kept and
/// shown whatever the model).
///
/// | model | opens when | knobs |
/// |---|---|---|
/// | [`Rate`](Self::Rate) (default) | the window's failure rate ≥ `failure_rate_threshold`, once it holds `minimum_number_of_calls` | Resilience4j's |
/// | [`Consecutive`](Self::Consecutive) | `consecutive_failure_threshold` failures in a row (a success resets the run) | Envoy's `consecutive_5xx`, Linkerd's consecutive failures |
/// | [`Count`](Self::Count) | `failure_count_threshold` failures within any `failure_count_interval` | Sentinel's error-count rule |
///
/// `Count`'s window is **exact and sliding**: the breaker keeps the instants
/// of the last `failure_count_threshold` failures and opens when the oldest of
/// them is at most `failure_count_interval` before the newest. Sentinel's rule
/// counts in one fixed (tumbling) bucket per interval, so a burst straddling
/// a bucket boundary can hold almost twice the threshold without opening;
/// this one never misses it. It costs 8 bytes per counted failure and nothing
/// per success.
///
/// `Consecutive` and `Count` are not gated by `minimum_number_of_calls` (the
/// count is its own minimum). In HALF_OPEN they decide as Sentinel and
/// Linkerd do: the first failed probe reopens; the round closes once
/// `min(minimum_number_of_calls, permitted_number_of_calls_in_half_open_state)`
/// probes completed without a failure (and below the slow-call threshold).
///
/// ```
/// use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, FailureModel, State};
///
/// let config = CircuitBreakerConfig::builder()
///     .failure_model(FailureModel::Consecutive)
///     .consecutive_failure_threshold(3)
///     .build()
///     .unwrap();
/// let breaker = CircuitBreaker::new("payments", config);
/// let _ = breaker.call(|| Err::<(), _>("503"));
/// let _ = breaker.call(|| Err::<(), _>("503"));
/// let _ = breaker.call(|| Ok::<_, &str>(()));   // the run starts again
/// let _ = breaker.call(|| Err::<(), _>("503"));
/// let _ = breaker.call(|| Err::<(), _>("503"));
/// assert_eq!(breaker.state(), State::Closed);
/// let _ = breaker.call(|| Err::<(), _>("503")); // third in a row
/// assert_eq!(breaker.state(), State::Open);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum FailureModel {
    /// The failure rate of the sliding window (Resilience4j's model).
    #[default]
    Rate,
    /// A run of consecutive failures.
    Consecutive,
    /// A number of failures within a sliding interval.
    Count,
}

impl FailureModel {
    /// The file's word: `RATE`, `CONSECUTIVE`, `COUNT`.
    pub const fn as_str(self) -> &'static str {
        match self {
            FailureModel::Rate => "RATE",
            FailureModel::Consecutive => "CONSECUTIVE",
            FailureModel::Count => "COUNT",
        }
    }
}

impl fmt::Display for FailureModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The largest `failure_count_threshold` (the breaker keeps one instant per
/// counted failure).
pub const MAX_FAILURE_COUNT_THRESHOLD: u32 = 1 << 16;

/// How one completed call counts in the sliding window.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Outcome {
    /// Counted as a successful call (also every error no `record_error`
    /// predicate matched, when some are configured).
    Success,
    /// Counted as a failed call.
    Failure,
    /// Not counted at all (an `ignore_error` predicate matched); in HALF_OPEN the
    /// probe slot is given back.
    Ignored,
}

/// What a call's result asks of the breaker, beyond being recorded
/// (see [`CircuitBreakerConfigBuilder::transition_on_result`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ResultTransition {
    /// No transition: the outcome is only recorded.
    #[default]
    Stay,
    /// Open now, for the configured wait in the open state.
    Open,
    /// Open now, for exactly this long (e.g. an HTTP `Retry-After`).
    OpenFor(Duration),
}

type Predicate = Erased<bool>;
type TransitionFn = Erased<ResultTransition>;

/// The classification predicates, type-erased: one breaker is shared by calls
/// of different `T`/`E` (a registry hands the same instance to many call sites),
/// so each predicate is stored as `Fn(&dyn Any)` and applies to the values of the
/// type its closure was written for; it does not match any other type.
#[derive(Clone, Default)]
struct Classifier {
    record_error: Vec<Predicate>,
    ignore_error: Vec<Predicate>,
    record_result: Vec<Predicate>,
    transition_on_result: Vec<TransitionFn>,
    transition_on_error: Vec<TransitionFn>,
    /// One per error type `E` an error predicate is written for: shows a
    /// `resil::Error<E>` as what `call_nested` classifies (`Error::Call(e)` as
    /// `e`, an inner refusal as that refusal), so a plain `call` whose closure
    /// returns another primitive's result keeps every predicate's meaning.
    nested: Vec<(TypeId, Unwrap)>,
}

/// A `resil::Error<E>` (for one `E`) seen through `&dyn Any`, as
/// [`Error::classified`] shows it; `None` for any other type.
type Unwrap = fn(&dyn Any) -> Option<(&dyn Any, bool)>;

fn unwrap_nested<E: 'static>(any: &dyn Any) -> Option<(&dyn Any, bool)> {
    crate::error::look_inside::<E>(any).map(|(inner, refusal)| (inner, refusal.is_some()))
}

impl Classifier {
    /// The error predicates' answer for `error`, as it is, by Resilience4j's
    /// rule: once `record_error` predicates exist, what none records (an
    /// inner refusal included) is a success.
    fn judge_error(&self, error: &dyn Any) -> Verdict {
        let c = self;
        let (ignored, ignore_typed) = scan(&c.ignore_error, error);
        let (outcome, record_typed) = if ignored {
            (Outcome::Ignored, true)
        } else {
            let (recorded, typed) = scan(&c.record_error, error);
            let failure = recorded || c.record_error.is_empty();
            let outcome = if failure {
                Outcome::Failure
            } else {
                Outcome::Success
            };
            (outcome, typed)
        };
        let (transition, transition_typed) = first_transition(&c.transition_on_error, error);
        let configured = !(c.ignore_error.is_empty()
            && c.record_error.is_empty()
            && c.transition_on_error.is_empty());
        Verdict {
            outcome,
            transition,
            typed: !configured || ignore_typed || record_typed || transition_typed,
        }
    }

    /// Remembers how to look inside a `resil::Error<E>`.
    fn nests<E: 'static>(&mut self) {
        let id = TypeId::of::<E>();
        if !self.nested.iter().any(|(t, _)| *t == id) {
            self.nested.push((id, unwrap_nested::<E>));
        }
    }
}

/// Whether a predicate matched `value`, and whether any predicate was written
/// for `value`'s type (answered at all).
fn scan(predicates: &[Predicate], value: &dyn Any) -> (bool, bool) {
    let mut typed = false;
    for p in predicates {
        match p(value) {
            Some(true) => return (true, true),
            Some(false) => typed = true,
            None => {}
        }
    }
    (false, typed)
}

/// The first transition other than `Stay`, and whether any function was written
/// for `value`'s type.
fn first_transition(fns: &[TransitionFn], value: &dyn Any) -> (ResultTransition, bool) {
    let mut typed = false;
    for f in fns {
        match f(value) {
            Some(ResultTransition::Stay) => typed = true,
            Some(t) => return (t, true),
            None => {}
        }
    }
    (ResultTransition::Stay, typed)
}

/// What the predicates say about one completed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub(crate) outcome: Outcome,
    pub(crate) transition: ResultTransition,
    /// Some predicate of the relevant kind (error or value) was written for the
    /// type it was shown, or none is configured: nothing was silently skipped.
    pub(crate) typed: bool,
}

impl Verdict {
    const SUCCESS: Verdict = Verdict {
        outcome: Outcome::Success,
        transition: ResultTransition::Stay,
        typed: true,
    };
    const FAILURE: Verdict = Verdict {
        outcome: Outcome::Failure,
        transition: ResultTransition::Stay,
        typed: true,
    };
}

/// The shortest OPEN wait, for the fixed wait and every interval function alike.
pub(crate) const MIN_OPEN_WAIT: Duration = Duration::from_millis(1);

/// A circuit breaker's configuration. [`Default`] is Resilience4j's defaults:
///
/// | setting | default |
/// |---|---|
/// | `failure_rate_threshold` | 50.0 % |
/// | `slow_call_rate_threshold` | 100.0 % |
/// | `slow_call_duration_threshold` | 60 s |
/// | `sliding_window_type` | [`CountBased`](SlidingWindowType::CountBased) |
/// | `sliding_window_size` | 100 |
/// | `minimum_number_of_calls` | 100 |
/// | `wait_duration_in_open_state` | 60 s |
/// | `wait_interval_function_in_open_state` | none (the fixed wait above) |
/// | `automatic_transition_from_open_to_half_open_enabled` | false |
/// | `permitted_number_of_calls_in_half_open_state` | 10 |
/// | `max_wait_duration_in_half_open_state` | 0 (unlimited) |
/// | `transition_to_state_after_wait_duration` | [`Open`](State::Open) |
/// | `initial_state` | [`Closed`](State::Closed) |
/// | `failure_model` | [`Rate`](FailureModel::Rate) |
/// | `consecutive_failure_threshold` | 5 (with [`Consecutive`](FailureModel::Consecutive)) |
/// | `failure_count_threshold` | 5 (with [`Count`](FailureModel::Count)) |
/// | `failure_count_interval` | 10 s (with [`Count`](FailureModel::Count)) |
/// | `warm_up_period` | 0 (no ramp after HALF_OPEN closes) |
/// | `cold_factor` | 3 |
/// | classification | every error is a failure, every value a success |
///
/// ```
/// use std::time::Duration;
/// use resil_core::circuit_breaker::{CircuitBreakerConfig, SlidingWindowType};
///
/// let config = CircuitBreakerConfig::builder()
///     .sliding_window_type(SlidingWindowType::TimeBased)
///     .sliding_window_size(10)
///     .minimum_number_of_calls(20)
///     .slow_call_duration_threshold(Duration::from_secs(2))
///     .ignore_error(|e: &std::num::ParseIntError| true)
///     .build()
///     .unwrap();
/// assert_eq!(config.minimum_number_of_calls(), 20);
///
/// let err = CircuitBreakerConfig::builder().failure_rate_threshold(0.0).build().unwrap_err();
/// assert_eq!(err.to_string(), "invalid `failure_rate_threshold`: got 0, expected a percentage in (0, 100]");
/// ```
#[derive(Clone)]
pub struct CircuitBreakerConfig {
    pub(crate) failure_rate_threshold: f32,
    pub(crate) slow_call_rate_threshold: f32,
    pub(crate) slow_call_duration_threshold: Duration,
    pub(crate) sliding_window_type: SlidingWindowType,
    pub(crate) sliding_window_size: u32,
    pub(crate) minimum_number_of_calls: u32,
    pub(crate) wait_duration_in_open_state: Duration,
    pub(crate) wait_interval_function_in_open_state: Option<IntervalFunction>,
    pub(crate) automatic_transition: bool,
    pub(crate) permitted_number_of_calls_in_half_open_state: u32,
    pub(crate) max_wait_duration_in_half_open_state: Duration,
    pub(crate) transition_to_state_after_wait_duration: State,
    pub(crate) initial_state: State,
    pub(crate) failure_model: FailureModel,
    pub(crate) consecutive_failure_threshold: u32,
    pub(crate) failure_count_threshold: u32,
    pub(crate) failure_count_interval: Duration,
    pub(crate) warm_up_period: Duration,
    pub(crate) cold_factor: u32,
    /// `None` while no predicate is configured (the common case keeps the
    /// configuration, and so every breaker, small).
    classifier: Option<Arc<Classifier>>,
}

impl Default for CircuitBreakerConfig {
    fn default() -> Self {
        CircuitBreakerConfig {
            failure_rate_threshold: 50.0,
            slow_call_rate_threshold: 100.0,
            slow_call_duration_threshold: Duration::from_secs(60),
            sliding_window_type: SlidingWindowType::CountBased,
            sliding_window_size: 100,
            minimum_number_of_calls: 100,
            wait_duration_in_open_state: Duration::from_secs(60),
            wait_interval_function_in_open_state: None,
            automatic_transition: false,
            permitted_number_of_calls_in_half_open_state: 10,
            max_wait_duration_in_half_open_state: Duration::ZERO,
            transition_to_state_after_wait_duration: State::Open,
            initial_state: State::Closed,
            failure_model: FailureModel::Rate,
            consecutive_failure_threshold: 5,
            failure_count_threshold: 5,
            failure_count_interval: Duration::from_secs(10),
            warm_up_period: Duration::ZERO,
            cold_factor: 3,
            classifier: None,
        }
    }
}

/// The largest count window (one byte per slot) and time window (one bucket per
/// second) a configuration may ask for.
pub const MAX_COUNT_WINDOW_SIZE: u32 = 1 << 24;
/// The longest time window, in seconds: one week of one-second buckets.
pub const MAX_TIME_WINDOW_SECONDS: u32 = 7 * 24 * 3600;

impl CircuitBreakerConfig {
    /// A builder starting from Resilience4j's defaults.
    pub fn builder() -> CircuitBreakerConfigBuilder {
        CircuitBreakerConfig::default().to_builder()
    }

    /// A builder starting from this configuration (for derived configurations,
    /// Resilience4j's `from(config)`). Setting `wait_duration_in_open_state` or
    /// `wait_interval_function_in_open_state` on it replaces whichever of the two
    /// this configuration uses.
    pub fn to_builder(&self) -> CircuitBreakerConfigBuilder {
        CircuitBreakerConfigBuilder {
            config: self.clone(),
            wait_duration_set: false,
            wait_function_set: false,
        }
    }

    /// Failure rate (percent) at or above which the breaker opens.
    pub fn failure_rate_threshold(&self) -> f32 {
        self.failure_rate_threshold
    }

    /// Slow-call rate (percent) at or above which the breaker opens.
    pub fn slow_call_rate_threshold(&self) -> f32 {
        self.slow_call_rate_threshold
    }

    /// A call strictly longer than this is slow.
    pub fn slow_call_duration_threshold(&self) -> Duration {
        self.slow_call_duration_threshold
    }

    /// Count- or time-based window.
    pub fn sliding_window_type(&self) -> SlidingWindowType {
        self.sliding_window_type
    }

    /// Window size: calls (count-based) or seconds (time-based).
    pub fn sliding_window_size(&self) -> u32 {
        self.sliding_window_size
    }

    /// Calls needed in the window before any rate is computed. For a count
    /// window this is capped at the window size, as Resilience4j does.
    pub fn minimum_number_of_calls(&self) -> u32 {
        match self.sliding_window_type {
            SlidingWindowType::CountBased => {
                self.minimum_number_of_calls.min(self.sliding_window_size)
            }
            SlidingWindowType::TimeBased => self.minimum_number_of_calls,
        }
    }

    /// The wait in OPEN before a probe is allowed (when no interval function is set).
    pub fn wait_duration_in_open_state(&self) -> Duration {
        self.wait_duration_in_open_state
    }

    /// The function of successive OPEN periods that replaces the fixed wait.
    pub fn wait_interval_function_in_open_state(&self) -> Option<&IntervalFunction> {
        self.wait_interval_function_in_open_state.as_ref()
    }

    /// Whether OPEN moves to HALF_OPEN by itself once the wait has passed.
    pub fn automatic_transition_from_open_to_half_open_enabled(&self) -> bool {
        self.automatic_transition
    }

    /// How many probe calls HALF_OPEN lets through.
    pub fn permitted_number_of_calls_in_half_open_state(&self) -> u32 {
        self.permitted_number_of_calls_in_half_open_state
    }

    /// How long HALF_OPEN waits for its probes before giving up (zero:
    /// forever).
    pub fn max_wait_duration_in_half_open_state(&self) -> Duration {
        self.max_wait_duration_in_half_open_state
    }

    /// The state HALF_OPEN moves to when `max_wait_duration_in_half_open_state`
    /// passes without a decision: OPEN or CLOSED.
    pub fn transition_to_state_after_wait_duration(&self) -> State {
        self.transition_to_state_after_wait_duration
    }

    /// The state a new breaker starts in.
    pub fn initial_state(&self) -> State {
        self.initial_state
    }

    /// What opens the breaker on failures (see [`FailureModel`]).
    pub fn failure_model(&self) -> FailureModel {
        self.failure_model
    }

    /// Failures in a row that open the breaker ([`FailureModel::Consecutive`]).
    pub fn consecutive_failure_threshold(&self) -> u32 {
        self.consecutive_failure_threshold
    }

    /// Failures within `failure_count_interval` that open the breaker
    /// ([`FailureModel::Count`]).
    pub fn failure_count_threshold(&self) -> u32 {
        self.failure_count_threshold
    }

    /// The sliding interval `failure_count_threshold` failures must fall
    /// within ([`FailureModel::Count`]).
    pub fn failure_count_interval(&self) -> Duration {
        self.failure_count_interval
    }

    /// The ramp after HALF_OPEN closes the breaker (zero: none). See
    /// [`CircuitBreakerConfigBuilder::warm_up_period`].
    pub fn warm_up_period(&self) -> Duration {
        self.warm_up_period
    }

    /// The ramp starts by admitting `1 / cold_factor` of the calls.
    pub fn cold_factor(&self) -> u32 {
        self.cold_factor
    }

    /// Completed probes after which HALF_OPEN decides:
    /// `min(minimum_number_of_calls, permitted_number_of_calls_in_half_open_state)`,
    /// as Resilience4j's half-open metrics (a count window of the permitted size)
    /// compute it. Rates in HALF_OPEN are reported from this many probes on.
    pub fn half_open_minimum_number_of_calls(&self) -> u32 {
        self.minimum_number_of_calls
            .min(self.permitted_number_of_calls_in_half_open_state)
    }

    /// How an error counts: `Ignored` if an `ignore_error` predicate matches; else
    /// `Failure` if no `record_error` predicate is configured or one matches; else
    /// `Success` (Resilience4j: an error not recorded counts as a success).
    ///
    /// The error is passed as `&dyn Any`, so predicates apply only to the type
    /// they were written for. For an error that arrived as a `resil::Error<E>`
    /// from an inner primitive, use
    /// [`classify_nested_error`](Self::classify_nested_error).
    pub fn classify_error(&self, error: &dyn Any) -> Outcome {
        self.judge_error(error, false).outcome
    }

    /// How an error returned by a composed call counts (what
    /// [`CircuitBreaker::call_nested`](super::CircuitBreaker::call_nested)
    /// records): [`Error::Call`]`(e)` exactly as
    /// [`classify_error`](Self::classify_error)`(e)`, by the predicates written
    /// for `E`; an inner rejection ([`Timeout`](crate::error::Timeout),
    /// [`BulkheadFull`](crate::error::BulkheadFull), …) by the predicates written
    /// for that rejection type, with Resilience4j's rule for everything else:
    /// without `record_error` predicates every error is a `Failure` (a
    /// `TimeoutException` or `BulkheadFullException` too); once there are
    /// some, only what they record is, so a rejection they do not name counts
    /// as a `Success` (as a `BulkheadFullException` missing from
    /// `recordExceptions` does).
    ///
    /// ```
    /// use std::time::Duration;
    /// use resil_core::circuit_breaker::{CircuitBreakerConfig, Outcome};
    /// use resil_core::error::{BulkheadFull, Timeout};
    /// use resil_core::Error;
    ///
    /// #[derive(Debug)]
    /// enum InvError { Business, Down }
    ///
    /// let config = CircuitBreakerConfig::builder()
    ///     .ignore_error(|e: &InvError| matches!(e, InvError::Business))
    ///     .record_error(|e: &InvError| matches!(e, InvError::Down))
    ///     .ignore_error(|_: &BulkheadFull| true)
    ///     .build()
    ///     .unwrap();
    /// let timeout = Error::<InvError>::from(Timeout::new("inv", Duration::from_secs(1)));
    /// assert_eq!(config.classify_nested_error(&Error::Call(InvError::Business)), Outcome::Ignored);
    /// assert_eq!(config.classify_nested_error(&Error::Call(InvError::Down)), Outcome::Failure);
    /// // A record list that does not name timeouts: a timeout is a success,
    /// // as in Resilience4j with `recordExceptions` given.
    /// assert_eq!(config.classify_nested_error(&timeout), Outcome::Success);
    /// assert_eq!(
    ///     config.classify_nested_error(&Error::<InvError>::from(BulkheadFull::new("inv"))),
    ///     Outcome::Ignored
    /// );
    /// ```
    pub fn classify_nested_error<E: 'static>(&self, error: &Error<E>) -> Outcome {
        let (inner, rejection) = error.classified();
        self.judge_error(inner, rejection).outcome
    }

    /// How a successful value counts: `Failure` if a `record_result` predicate
    /// matches, else `Success`.
    pub fn classify_value(&self, value: &dyn Any) -> Outcome {
        self.judge_value(value).outcome
    }

    /// The transition a successful value asks for (`transition_on_result`).
    pub fn transition_for_value(&self, value: &dyn Any) -> ResultTransition {
        self.judge_value(value).transition
    }

    /// The transition an error asks for (`transition_on_error`).
    pub fn transition_for_error(&self, error: &dyn Any) -> ResultTransition {
        self.judge_error(error, false).transition
    }

    /// Every error predicate's answer for `error`, by Resilience4j's rule:
    /// ignored if an `ignore_error` predicate matches; else a failure if no
    /// `record_error` predicate exists or one matches; else a success. A
    /// `rejection` (a resil refusal from an inner primitive) follows the same
    /// rule: with a record list that does not name it, it is a success. May
    /// panic if a user predicate does.
    pub(crate) fn judge_error(&self, error: &dyn Any, rejection: bool) -> Verdict {
        let Some(c) = &self.classifier else {
            return Verdict::FAILURE;
        };
        let verdict = c.judge_error(error);
        if verdict.typed || rejection {
            return verdict;
        }
        // No predicate is written for this type: it may be a `resil::Error<E>`
        // returned by an inner primitive through a plain `call`, classified as
        // `call_nested` would (predicates written for `Error<E>` itself, if
        // any, answered above and win).
        for (_, unwrap) in &c.nested {
            if let Some((inner, _)) = unwrap(error) {
                return c.judge_error(inner);
            }
        }
        verdict
    }

    /// Every value predicate's answer for `value`. May panic if a user
    /// predicate does.
    pub(crate) fn judge_value(&self, value: &dyn Any) -> Verdict {
        let Some(c) = &self.classifier else {
            return Verdict::SUCCESS;
        };
        let (recorded, record_typed) = scan(&c.record_result, value);
        let (transition, transition_typed) = first_transition(&c.transition_on_result, value);
        let configured = !(c.record_result.is_empty() && c.transition_on_result.is_empty());
        Verdict {
            outcome: if recorded {
                Outcome::Failure
            } else {
                Outcome::Success
            },
            transition,
            typed: !configured || record_typed || transition_typed,
        }
    }

    /// Whether any predicate looks at successful values (else values skip
    /// classification entirely: the hot path).
    #[inline]
    pub(crate) fn inspects_values(&self) -> bool {
        self.classifier
            .as_ref()
            .is_some_and(|c| !c.record_result.is_empty() || !c.transition_on_result.is_empty())
    }
}

impl fmt::Debug for CircuitBreakerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let empty = Classifier::default();
        let c = self.classifier.as_deref().unwrap_or(&empty);
        f.debug_struct("CircuitBreakerConfig")
            .field("failure_rate_threshold", &self.failure_rate_threshold)
            .field("slow_call_rate_threshold", &self.slow_call_rate_threshold)
            .field(
                "slow_call_duration_threshold",
                &self.slow_call_duration_threshold,
            )
            .field("sliding_window_type", &self.sliding_window_type)
            .field("sliding_window_size", &self.sliding_window_size)
            .field("minimum_number_of_calls", &self.minimum_number_of_calls)
            .field(
                "wait_duration_in_open_state",
                &self.wait_duration_in_open_state,
            )
            .field(
                "wait_interval_function_in_open_state",
                &self.wait_interval_function_in_open_state,
            )
            .field(
                "automatic_transition_from_open_to_half_open_enabled",
                &self.automatic_transition,
            )
            .field(
                "permitted_number_of_calls_in_half_open_state",
                &self.permitted_number_of_calls_in_half_open_state,
            )
            .field(
                "max_wait_duration_in_half_open_state",
                &self.max_wait_duration_in_half_open_state,
            )
            .field(
                "transition_to_state_after_wait_duration",
                &self.transition_to_state_after_wait_duration,
            )
            .field("initial_state", &self.initial_state)
            .field("failure_model", &self.failure_model)
            .field(
                "consecutive_failure_threshold",
                &self.consecutive_failure_threshold,
            )
            .field("failure_count_threshold", &self.failure_count_threshold)
            .field("failure_count_interval", &self.failure_count_interval)
            .field("warm_up_period", &self.warm_up_period)
            .field("cold_factor", &self.cold_factor)
            .field("record_error", &c.record_error.len())
            .field("ignore_error", &c.ignore_error.len())
            .field("record_result", &c.record_result.len())
            .field("transition_on_result", &c.transition_on_result.len())
            .field("transition_on_error", &c.transition_on_error.len())
            .finish()
    }
}

/// Builds a [`CircuitBreakerConfig`]; every setter takes and returns the builder,
/// [`build`](Self::build) validates.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct CircuitBreakerConfigBuilder {
    config: CircuitBreakerConfig,
    /// Which of the two OPEN-wait settings were set on this builder (both is an
    /// error, as in Resilience4j).
    wait_duration_set: bool,
    wait_function_set: bool,
}

impl CircuitBreakerConfigBuilder {
    fn classifier(&mut self) -> &mut Classifier {
        Arc::make_mut(self.config.classifier.get_or_insert_with(Default::default))
    }

    /// Failure rate in percent, in (0, 100], at or above which the breaker opens.
    pub fn failure_rate_threshold(mut self, percent: f32) -> Self {
        self.config.failure_rate_threshold = percent;
        self
    }

    /// Slow-call rate in percent, in (0, 100], at or above which the breaker opens.
    pub fn slow_call_rate_threshold(mut self, percent: f32) -> Self {
        self.config.slow_call_rate_threshold = percent;
        self
    }

    /// A call that takes strictly longer than this is slow (≥ 1 ns).
    pub fn slow_call_duration_threshold(mut self, threshold: Duration) -> Self {
        self.config.slow_call_duration_threshold = threshold;
        self
    }

    /// Count- or time-based sliding window.
    pub fn sliding_window_type(mut self, kind: SlidingWindowType) -> Self {
        self.config.sliding_window_type = kind;
        self
    }

    /// The window's size: calls for a count window (1 to 16 777 216), seconds for
    /// a time window (1 to 604 800, one week).
    pub fn sliding_window_size(mut self, size: u32) -> Self {
        self.config.sliding_window_size = size;
        self
    }

    /// Calls the window must hold before rates are computed (≥ 1; capped at the
    /// window size for a count window).
    pub fn minimum_number_of_calls(mut self, calls: u32) -> Self {
        self.config.minimum_number_of_calls = calls;
        self
    }

    /// How long OPEN refuses calls before allowing probes (≥ 1 ms). OPEN is
    /// left strictly *after* the wait, as in Resilience4j.
    ///
    /// Do not combine with
    /// [`wait_interval_function_in_open_state`](Self::wait_interval_function_in_open_state)
    /// on one builder: [`build`](Self::build) rejects setting both. On a builder
    /// from [`to_builder`](CircuitBreakerConfig::to_builder), it replaces the
    /// interval function the base configuration had.
    pub fn wait_duration_in_open_state(mut self, wait: Duration) -> Self {
        self.config.wait_duration_in_open_state = wait;
        self.config.wait_interval_function_in_open_state = None;
        self.wait_duration_set = true;
        self
    }

    /// Grows successive OPEN periods: the `n`-th counted OPEN period since the
    /// breaker last closed lasts `f.interval(n)` (the count restarts in CLOSED,
    /// DISABLED and METRICS_ONLY).
    ///
    /// Counted openings are those that use the configured wait: a threshold
    /// reached in CLOSED or HALF_OPEN, a half-open round timed out,
    /// `transition_to_open()`, a [`ResultTransition::Open`]. An opening for an
    /// explicit duration (`transition_to_open_for`, [`ResultTransition::OpenFor`])
    /// and FORCED_OPEN do not advance the count.
    ///
    /// Every interval must be at least 1 ms, as the fixed wait: `build` checks
    /// the function's parameters and the first interval of a fixed, exponential
    /// or custom function; any interval below 1 ms met later (a custom
    /// function's, a randomized draw) is raised to 1 ms when used. Do not
    /// combine with `wait_duration_in_open_state` on one builder (see there).
    pub fn wait_interval_function_in_open_state(mut self, f: IntervalFunction) -> Self {
        self.config.wait_interval_function_in_open_state = Some(f);
        self.wait_function_set = true;
        self
    }

    /// Move OPEN → HALF_OPEN when the wait has passed even without a call (a
    /// tokio timer when a runtime is current; `state()` also applies a due
    /// transition, so the state is right without a runtime).
    pub fn automatic_transition_from_open_to_half_open_enabled(mut self, enabled: bool) -> Self {
        self.config.automatic_transition = enabled;
        self
    }

    /// How many probe calls HALF_OPEN lets through (1 to 16 777 216). The
    /// round is decided once `min(minimum_number_of_calls, this)` of them
    /// completed, as in Resilience4j.
    pub fn permitted_number_of_calls_in_half_open_state(mut self, calls: u32) -> Self {
        self.config.permitted_number_of_calls_in_half_open_state = calls;
        self
    }

    /// After this long in HALF_OPEN without a decision, move to
    /// `transition_to_state_after_wait_duration` (OPEN by default; zero, the
    /// default: wait for the probes forever).
    pub fn max_wait_duration_in_half_open_state(mut self, max_wait: Duration) -> Self {
        self.config.max_wait_duration_in_half_open_state = max_wait;
        self
    }

    /// The state HALF_OPEN moves to when `max_wait_duration_in_half_open_state`
    /// passes without a decision: [`State::Open`] (the default) or
    /// [`State::Closed`] (for low traffic, where a round may never fill).
    /// Anything else is rejected by [`build`](Self::build).
    pub fn transition_to_state_after_wait_duration(mut self, state: State) -> Self {
        self.config.transition_to_state_after_wait_duration = state;
        self
    }

    /// The state a new breaker starts in (CLOSED by default). Any state is
    /// allowed: OPEN starts the first OPEN period (as if the threshold had just
    /// been reached), HALF_OPEN a probe round; FORCED_OPEN, DISABLED and
    /// METRICS_ONLY keep a breaker off until an operator moves it.
    pub fn initial_state(mut self, state: State) -> Self {
        self.config.initial_state = state;
        self
    }

    /// What opens the breaker on failures: the window's failure rate (the
    /// default), a run of consecutive failures, or a count of failures within
    /// an interval (see [`FailureModel`]).
    pub fn failure_model(mut self, model: FailureModel) -> Self {
        self.config.failure_model = model;
        self
    }

    /// With [`FailureModel::Consecutive`]: this many failures in a row open
    /// the breaker (≥ 1; default 5). A success resets the run; an ignored
    /// error neither counts nor resets.
    pub fn consecutive_failure_threshold(mut self, failures: u32) -> Self {
        self.config.consecutive_failure_threshold = failures;
        self
    }

    /// With [`FailureModel::Count`]: this many failures within
    /// `failure_count_interval` open the breaker (1 to 65 536; default 5).
    pub fn failure_count_threshold(mut self, failures: u32) -> Self {
        self.config.failure_count_threshold = failures;
        self
    }

    /// With [`FailureModel::Count`]: the sliding interval the failures must
    /// fall within (≥ 1 ms; default 10 s).
    pub fn failure_count_interval(mut self, interval: Duration) -> Self {
        self.config.failure_count_interval = interval;
        self
    }

    /// A post-recovery ramp: when the half-open probes close the breaker, it
    /// does not let the whole traffic onto a downstream that has just
    /// recovered (seed 000 §二十八, "小批探测与预热"): for `warm_up_period` it
    /// admits a fraction of the calls growing linearly from `1 / cold_factor`
    /// to all of them (the rate limiter's warm-up, Guava's and Sentinel's
    /// cold factor), and refuses the others with
    /// [`CallNotPermitted`](crate::error::CallNotPermitted) in state CLOSED,
    /// counted as not permitted. Admissions are spread evenly (call `n` of
    /// the ramp is admitted when `floor((n + 1)·f) > floor(n·f)` for the
    /// fraction `f` at that moment), so a test can count them. Admitted
    /// calls are recorded as in CLOSED, so a relapse reopens it. Zero (the
    /// default) turns it off; only a HALF_OPEN → CLOSED decided by the probes
    /// ramps (not a manual transition or a reset).
    ///
    /// ```
    /// use std::time::Duration;
    /// use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
    /// use resil_core::clock::ManualClock;
    ///
    /// let clock = ManualClock::new();
    /// let config = CircuitBreakerConfig::builder()
    ///     .sliding_window_size(2)
    ///     .minimum_number_of_calls(2)
    ///     .permitted_number_of_calls_in_half_open_state(1)
    ///     .wait_duration_in_open_state(Duration::from_secs(1))
    ///     .warm_up_period(Duration::from_secs(10))
    ///     .build()
    ///     .unwrap();
    /// let breaker = CircuitBreaker::with_clock("catalog", config, clock.clone());
    /// breaker.transition_to_open().unwrap();
    /// clock.advance(Duration::from_millis(1_001));
    /// breaker.call(|| Ok::<_, ()>(())).unwrap(); // the probe closes it
    /// assert_eq!(breaker.state(), State::Closed);
    /// let admitted = |n| (0..n).filter(|_| breaker.call(|| Ok::<_, ()>(())).is_ok()).count();
    /// assert_eq!(admitted(30), 10); // a third at first
    /// clock.advance(Duration::from_secs(10));
    /// assert_eq!(admitted(30), 30); // the ramp is over
    /// ```
    pub fn warm_up_period(mut self, period: Duration) -> Self {
        self.config.warm_up_period = period;
        self
    }

    /// How cold the ramp starts: `1 / cold_factor` of the calls (≥ 1;
    /// default 3). Only with a `warm_up_period`.
    pub fn cold_factor(mut self, factor: u32) -> Self {
        self.config.cold_factor = factor;
        self
    }

    /// Records errors of type `E` for which `predicate` holds as failures. Once
    /// any `record_error` predicate is set, an error that no predicate matches
    /// (including errors of other types) counts as a **success**, as in
    /// Resilience4j's `recordExceptions`. May be called several times (any match).
    pub fn record_error<E: 'static>(
        mut self,
        predicate: impl Fn(&E) -> bool + Send + Sync + 'static,
    ) -> Self {
        let c = self.classifier();
        c.record_error.push(erase(predicate));
        c.nests::<E>();
        self
    }

    /// Ignores errors of type `E` for which `predicate` holds: they count neither
    /// as success nor as failure, and in HALF_OPEN give their probe slot back.
    /// Checked before `record_error`.
    pub fn ignore_error<E: 'static>(
        mut self,
        predicate: impl Fn(&E) -> bool + Send + Sync + 'static,
    ) -> Self {
        let c = self.classifier();
        c.ignore_error.push(erase(predicate));
        c.nests::<E>();
        self
    }

    /// Records successful values of type `T` for which `predicate` holds as
    /// failures (an HTTP 503 returned as a value).
    pub fn record_result<T: 'static>(
        mut self,
        predicate: impl Fn(&T) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.classifier().record_result.push(erase(predicate));
        self
    }

    /// Lets a successful value of type `T` open the breaker: after the outcome is
    /// recorded, [`ResultTransition::Open`] opens for the configured wait and
    /// [`ResultTransition::OpenFor`] for the duration it names (HTTP 429/503 with
    /// `Retry-After`). Applies in CLOSED and HALF_OPEN to calls permitted in the
    /// current state.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resil_core::circuit_breaker::{CircuitBreakerConfig, ResultTransition};
    ///
    /// struct Response { status: u16, retry_after: Option<Duration> }
    ///
    /// let config = CircuitBreakerConfig::builder()
    ///     .transition_on_result(|r: &Response| match (r.status, r.retry_after) {
    ///         (429 | 503, Some(after)) => ResultTransition::OpenFor(after),
    ///         _ => ResultTransition::Stay,
    ///     })
    ///     .build()
    ///     .unwrap();
    /// # let _ = config;
    /// ```
    pub fn transition_on_result<T: 'static>(
        mut self,
        f: impl Fn(&T) -> ResultTransition + Send + Sync + 'static,
    ) -> Self {
        self.classifier().transition_on_result.push(erase(f));
        self
    }

    /// As [`transition_on_result`](Self::transition_on_result), for errors of
    /// type `E` (a `Retry-After` carried by an error).
    pub fn transition_on_error<E: 'static>(
        mut self,
        f: impl Fn(&E) -> ResultTransition + Send + Sync + 'static,
    ) -> Self {
        let c = self.classifier();
        c.transition_on_error.push(erase(f));
        c.nests::<E>();
        self
    }

    /// Validates every value and returns the configuration, or the first invalid
    /// field with its allowed range.
    pub fn build(self) -> Result<CircuitBreakerConfig, ConfigError> {
        let c = &self.config;
        percentage("failure_rate_threshold", c.failure_rate_threshold)?;
        percentage("slow_call_rate_threshold", c.slow_call_rate_threshold)?;
        if c.slow_call_duration_threshold.is_zero() {
            return Err(ConfigError::new(
                "slow_call_duration_threshold",
                "0ns",
                "a duration >= 1ns",
            ));
        }
        let (max_size, expected) = match c.sliding_window_type {
            SlidingWindowType::CountBased => {
                (MAX_COUNT_WINDOW_SIZE, "a number of calls in [1, 16777216]")
            }
            SlidingWindowType::TimeBased => (
                MAX_TIME_WINDOW_SECONDS,
                "a number of seconds in [1, 604800]",
            ),
        };
        if !(1..=max_size).contains(&c.sliding_window_size) {
            return Err(ConfigError::new(
                "sliding_window_size",
                c.sliding_window_size,
                expected,
            ));
        }
        if c.minimum_number_of_calls == 0 {
            return Err(ConfigError::new(
                "minimum_number_of_calls",
                0,
                "an integer >= 1",
            ));
        }
        if self.wait_duration_set && self.wait_function_set {
            return Err(ConfigError::new(
                "wait_duration_in_open_state",
                format!(
                    "{:?} together with `wait_interval_function_in_open_state`",
                    c.wait_duration_in_open_state
                ),
                "either `wait_duration_in_open_state` or `wait_interval_function_in_open_state`, not both",
            ));
        }
        if c.wait_duration_in_open_state < MIN_OPEN_WAIT {
            return Err(ConfigError::new(
                "wait_duration_in_open_state",
                format!("{:?}", c.wait_duration_in_open_state),
                "a duration >= 1ms",
            ));
        }
        if let Some(f) = &c.wait_interval_function_in_open_state {
            let field = "wait_interval_function_in_open_state";
            f.validate(field)?;
            // The first interval, twice: two different answers mean a
            // randomized function, whose parameters `validate` checked and whose
            // every draw is raised to 1 ms when used; checking one random draw
            // here would make `build` itself random.
            match catch_unwind(AssertUnwindSafe(|| (f.interval(1), f.interval(1)))) {
                Ok((first, again)) if first != again => {}
                Ok((first, _)) if first >= MIN_OPEN_WAIT => {}
                Ok((first, _)) => {
                    return Err(ConfigError::new(
                        field,
                        format!("a first interval of {first:?}"),
                        "intervals >= 1ms",
                    ))
                }
                Err(_) => {
                    return Err(ConfigError::new(
                        field,
                        "a function that panicked for the first interval",
                        "a function returning intervals >= 1ms",
                    ))
                }
            }
        }
        if !matches!(
            c.transition_to_state_after_wait_duration,
            State::Open | State::Closed
        ) {
            return Err(ConfigError::new(
                "transition_to_state_after_wait_duration",
                c.transition_to_state_after_wait_duration,
                "OPEN or CLOSED",
            ));
        }
        if !(1..=MAX_PROBE_SLOTS).contains(&c.permitted_number_of_calls_in_half_open_state) {
            return Err(ConfigError::new(
                "permitted_number_of_calls_in_half_open_state",
                c.permitted_number_of_calls_in_half_open_state,
                "an integer in [1, 16777216]",
            ));
        }
        if c.consecutive_failure_threshold == 0 {
            return Err(ConfigError::new(
                "consecutive_failure_threshold",
                0,
                "an integer >= 1",
            ));
        }
        if !(1..=MAX_FAILURE_COUNT_THRESHOLD).contains(&c.failure_count_threshold) {
            return Err(ConfigError::new(
                "failure_count_threshold",
                c.failure_count_threshold,
                "an integer in [1, 65536]",
            ));
        }
        if c.cold_factor == 0 {
            return Err(ConfigError::new("cold_factor", 0, "an integer >= 1"));
        }
        if c.failure_count_interval < Duration::from_millis(1) {
            return Err(ConfigError::new(
                "failure_count_interval",
                format!("{:?}", c.failure_count_interval),
                "a duration >= 1ms",
            ));
        }
        Ok(self.config)
    }
}

fn percentage(field: &'static str, value: f32) -> Result<(), ConfigError> {
    if value > 0.0 && value <= 100.0 {
        Ok(())
    } else {
        Err(ConfigError::new(field, value, "a percentage in (0, 100]"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug)]
    struct Io;
    #[derive(Debug)]
    struct Business;

    #[test]
    fn defaults_are_resilience4j_defaults() {
        let c = CircuitBreakerConfig::default();
        assert_eq!(c.sliding_window_type(), SlidingWindowType::CountBased);
        assert_eq!(c.sliding_window_size(), 100);
        assert_eq!(c.minimum_number_of_calls(), 100);
        assert_eq!(c.failure_rate_threshold(), 50.0);
        assert_eq!(c.slow_call_duration_threshold(), Duration::from_secs(60));
        assert_eq!(c.slow_call_rate_threshold(), 100.0);
        assert_eq!(c.wait_duration_in_open_state(), Duration::from_secs(60));
        assert!(!c.automatic_transition_from_open_to_half_open_enabled());
        assert_eq!(c.permitted_number_of_calls_in_half_open_state(), 10);
        assert_eq!(c.max_wait_duration_in_half_open_state(), Duration::ZERO);
        assert!(c.wait_interval_function_in_open_state().is_none());
        assert_eq!(c.classify_error(&Io), Outcome::Failure);
        assert_eq!(c.classify_value(&5u8), Outcome::Success);
    }

    #[test]
    fn ignore_is_checked_before_record_and_unrecorded_errors_count_as_success() {
        let c = CircuitBreakerConfig::builder()
            .record_error(|_: &Io| true)
            .ignore_error(|_: &Business| true)
            .record_error(|_: &Business| true)
            .build()
            .unwrap();
        assert_eq!(c.classify_error(&Io), Outcome::Failure);
        assert_eq!(c.classify_error(&Business), Outcome::Ignored);
        assert_eq!(c.classify_error(&"other"), Outcome::Success);
    }

    #[test]
    fn a_count_window_caps_the_minimum_at_its_size_and_a_time_window_does_not() {
        let count = CircuitBreakerConfig::builder()
            .sliding_window_size(4)
            .minimum_number_of_calls(10)
            .build()
            .unwrap();
        assert_eq!(count.minimum_number_of_calls(), 4);
        let time = count
            .to_builder()
            .sliding_window_type(SlidingWindowType::TimeBased)
            .build()
            .unwrap();
        assert_eq!(time.minimum_number_of_calls(), 10);
    }

    #[test]
    fn failure_model_defaults_and_ranges_name_their_field() {
        let c = CircuitBreakerConfig::default();
        assert_eq!(c.failure_model(), FailureModel::Rate);
        assert_eq!(c.consecutive_failure_threshold(), 5);
        assert_eq!(c.failure_count_threshold(), 5);
        assert_eq!(c.failure_count_interval(), Duration::from_secs(10));
        let err = |b: CircuitBreakerConfigBuilder| b.build().unwrap_err().to_string();
        assert_eq!(
            err(CircuitBreakerConfig::builder().consecutive_failure_threshold(0)),
            "invalid `consecutive_failure_threshold`: got 0, expected an integer >= 1"
        );
        assert_eq!(
            err(CircuitBreakerConfig::builder().failure_count_threshold(70_000)),
            "invalid `failure_count_threshold`: got 70000, expected an integer in [1, 65536]"
        );
        assert_eq!(
            err(CircuitBreakerConfig::builder().failure_count_interval(Duration::from_micros(10))),
            "invalid `failure_count_interval`: got 10µs, expected a duration >= 1ms"
        );
        assert_eq!(FailureModel::Consecutive.to_string(), "CONSECUTIVE");
    }

    #[test]
    fn the_first_non_stay_transition_wins() {
        let c = CircuitBreakerConfig::builder()
            .transition_on_result(|v: &u16| {
                if *v == 503 {
                    ResultTransition::OpenFor(Duration::from_secs(7))
                } else {
                    ResultTransition::Stay
                }
            })
            .transition_on_error(|_: &Io| ResultTransition::Open)
            .build()
            .unwrap();
        assert_eq!(
            c.transition_for_value(&503u16),
            ResultTransition::OpenFor(Duration::from_secs(7))
        );
        assert_eq!(c.transition_for_value(&200u16), ResultTransition::Stay);
        assert_eq!(c.transition_for_value(&503u32), ResultTransition::Stay);
        assert_eq!(c.transition_for_error(&Io), ResultTransition::Open);
        assert!(c.inspects_values());
    }
}
