//! The circuit breaker: its file options, how a reload carries its window
//! over, how an operator's override survives a rebuild, its error lists,
//! health and metrics.

use std::sync::Arc;
use std::time::Duration;

use resil_core::circuit_breaker::{
    CallKind, CircuitBreaker, CircuitBreakerConfig, CircuitBreakerConfigBuilder, FailureModel,
    SlidingWindowType, State,
};
use resil_core::clock::SharedClock;
use resil_core::event::EventStream;

use super::bind;
use super::primitive;
use crate::classes::{ErrorClasses, ErrorList};
use crate::config::apply::{backoff, choice, duration, Apply, Values};
use crate::config::bind::Bind;
use crate::config::render::{backoff_values, word, Render};
use crate::config::resolved::{ErrorNames, Resolved};
use crate::config::schema::{Val, FAILURE_MODELS, SLIDING_WINDOW_TYPES, STATES};
use crate::handle::Handle;
use crate::kind::Kind;
use crate::overrides::{Overrides, Transition};
use crate::primitive::{Hooks, NoTwins};
use crate::shadow::{ShadowRun, TrialContext};
use crate::telemetry::describe::{describe_config, Describe, Family, Metric, Telemetry};
use crate::telemetry::health::Status;

primitive!(CircuitBreaker: CircuitBreakerConfig => CircuitBreakerConfigBuilder, Kind::CircuitBreaker);

impl Hooks for CircuitBreaker {
    type Settings = CircuitBreakerConfigBuilder;
    type Twins = NoTwins;

    /// A window of the same type and size carries the state and window over.
    fn rebuilt(
        &self,
        _name: Arc<str>,
        config: &CircuitBreakerConfig,
        _clock: Option<&SharedClock>,
    ) -> Option<(Self, bool)> {
        Some(self.reconfigured(config.clone()))
    }

    /// A manual override (with its TTL) stays in force. Without one, a
    /// breaker whose state could not be carried over keeps the mode an
    /// operator or a transition set (DISABLED, METRICS_ONLY, FORCED_OPEN)
    /// and starts CLOSED otherwise.
    fn before_install(
        overrides: &Overrides,
        name: &str,
        previous: &Self,
        next: &Self,
        carried: bool,
    ) {
        // A running shadow trial goes on beside the rebuilt breaker.
        previous.move_shadow_to(next);
        if let Some(o) = overrides.get(name) {
            let _ = transition(next, Transition::of_mode(o.mode));
            return;
        }
        if carried {
            return;
        }
        let _ = match previous.state() {
            State::Disabled => next.transition_to_disabled(),
            State::MetricsOnly => next.transition_to_metrics_only(),
            State::ForcedOpen => next.transition_to_forced_open(),
            _ => Ok(()),
        };
    }

    /// Breakers have shadows: the staged settings beside the live ones.
    fn start_shadow(
        handle: &Handle<Self>,
        config: &CircuitBreakerConfig,
        trial: &TrialContext,
    ) -> Option<Box<dyn ShadowRun>> {
        Some(crate::shadow::Run::start(handle, config, trial))
    }

    /// The call timers keep a histogram when asked. Rebuilt breakers share
    /// their predecessor's timers, so a histogram once on stays on.
    fn instrument(&self, histograms: bool) {
        if histograms {
            self.enable_call_histogram();
        }
    }

    fn error_lists(entry: &Resolved<CircuitBreakerConfig>) -> Vec<(ErrorNames<'_>, ErrorList)> {
        let mut lists = Vec::new();
        if let Some(names) = entry.record_errors() {
            lists.push((names, ErrorList::BreakerRecord));
        }
        if let Some(names) = entry.ignore_errors() {
            lists.push((names, ErrorList::BreakerIgnore));
        }
        for (key, list) in [
            (
                "record-failure-predicate",
                ErrorList::BreakerRecordPredicate,
            ),
            (
                "ignore-exception-predicate",
                ErrorList::BreakerIgnorePredicate,
            ),
            ("record-result-predicate", ErrorList::BreakerResultPredicate),
        ] {
            if let Some(names) = entry.predicate_names(key) {
                lists.push((names, list));
            }
        }
        lists
    }

    fn apply_error_list(
        classes: &ErrorClasses,
        builder: CircuitBreakerConfigBuilder,
        list: ErrorList,
        names: &[String],
    ) -> CircuitBreakerConfigBuilder {
        classes.apply_breaker(builder, list, names)
    }

    fn apply_http(
        classes: &ErrorClasses,
        builder: CircuitBreakerConfigBuilder,
        file: &crate::config::FileConfig,
        name: &str,
    ) -> CircuitBreakerConfigBuilder {
        classes.apply_http_breaker(builder, file, name)
    }
}

/// Moves `breaker` as an operator's transition says.
pub(crate) fn transition(breaker: &CircuitBreaker, to: Transition) -> Result<(), String> {
    let result = match to {
        Transition::Closed => breaker.transition_to_closed(),
        Transition::Open => breaker.transition_to_open(),
        Transition::HalfOpen => breaker.transition_to_half_open(),
        Transition::ForcedOpen => breaker.transition_to_forced_open(),
        Transition::Disabled => breaker.transition_to_disabled(),
        Transition::MetricsOnly => breaker.transition_to_metrics_only(),
        Transition::Reset => {
            breaker.reset();
            Ok(())
        }
    };
    result.map_err(|e| e.to_string())
}

bind! {
    CircuitBreakerConfig => CircuitBreakerConfigBuilder {
        "failure-rate-threshold" => Percent: failure_rate_threshold,
        "slow-call-rate-threshold" => Percent: slow_call_rate_threshold,
        "slow-call-duration-threshold" => Duration: slow_call_duration_threshold,
        "sliding-window-size" => U32: sliding_window_size,
        "minimum-number-of-calls" => U32: minimum_number_of_calls,
        "consecutive-failure-threshold" => U32: consecutive_failure_threshold,
        "failure-count-threshold" => U32: failure_count_threshold,
        "failure-count-interval" => Duration: failure_count_interval,
        "warm-up-period" => Duration: warm_up_period,
        "cold-factor" => U32: cold_factor,
        "automatic-transition-from-open-to-half-open-enabled" => Bool: automatic_transition_from_open_to_half_open_enabled,
        "permitted-number-of-calls-in-half-open-state" => U32: permitted_number_of_calls_in_half_open_state,
        "max-wait-duration-in-half-open-state" => Duration: max_wait_duration_in_half_open_state,
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

impl Apply for CircuitBreakerConfig {
    fn builder_with(v: &Values) -> CircuitBreakerConfigBuilder {
        let mut b = Self::apply_bound(CircuitBreakerConfig::builder(), v);
        if let Some(x) = choice(v, "sliding-window-type") {
            b = b.sliding_window_type(match x {
                "TIME_BASED" => SlidingWindowType::TimeBased,
                _ => SlidingWindowType::CountBased,
            });
        }
        if let Some(x) = choice(v, "failure-model") {
            b = b.failure_model(match x {
                "CONSECUTIVE" => FailureModel::Consecutive,
                "COUNT" => FailureModel::Count,
                _ => FailureModel::Rate,
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

    fn build(builder: CircuitBreakerConfigBuilder) -> Result<Self, resil_core::ConfigError> {
        builder.build()
    }
}

impl Render for CircuitBreakerConfig {
    const KIND: Kind = Kind::CircuitBreaker;

    fn found(&self) -> Vec<(&'static str, Option<Val>)> {
        let c = self;
        let f = c.wait_interval_function_in_open_state();
        let wait: Duration = f
            .and_then(resil_core::retry::IntervalFunction::initial)
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
            (
                "failure-model",
                Some(word(FAILURE_MODELS, c.failure_model().as_str())),
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
        out.extend(backoff_values(
            f,
            "exponential-max-wait-duration-in-open-state",
        ));
        out
    }
}

const CALLS: Family = Family::new(
    "circuitbreaker_calls",
    "Calls the circuit breaker permitted, by outcome (kind): their number, total and longest duration",
);
const NOT_PERMITTED: Family = Family::new(
    "circuitbreaker_not_permitted_calls",
    "Calls the circuit breaker refused (OPEN, HALF_OPEN without a free probe, FORCED_OPEN)",
);
const STATE: Family = Family::new(
    "circuitbreaker_state",
    "The state of the circuit breaker: 1 for the state it is in, 0 for the others",
);
const BUFFERED: Family = Family::new(
    "circuitbreaker_buffered_calls",
    "Calls in the sliding window, by outcome (kind)",
);
const MAX_BUFFERED: Family = Family::new(
    "circuitbreaker_max_buffered_calls",
    "The size of the sliding window (calls, or seconds for a time-based window)",
);
const SLOW: Family = Family::new(
    "circuitbreaker_slow_calls",
    "Slow calls in the sliding window, by outcome (kind)",
);
const FAILURE_RATE: Family = Family::new(
    "circuitbreaker_failure_rate",
    "The failure rate of the sliding window in percent (-1 below the minimum number of calls)",
);
const SLOW_CALL_RATE: Family = Family::new(
    "circuitbreaker_slow_call_rate",
    "The slow call rate of the sliding window in percent (-1 below the minimum number of calls)",
);

/// Every state and its `state` label, in Resilience4j's order.
const STATE_LABELS: [(State, &str); 6] = [
    (State::Closed, "closed"),
    (State::Open, "open"),
    (State::HalfOpen, "half_open"),
    (State::ForcedOpen, "forced_open"),
    (State::Disabled, "disabled"),
    (State::MetricsOnly, "metrics_only"),
];

impl Telemetry for CircuitBreaker {
    fn state_label(&self) -> Option<&'static str> {
        Some(self.state().as_str())
    }

    fn metric_values(&self) -> Vec<Metric> {
        let m = self.metrics();
        let totals = self.call_totals();
        let mut values: Vec<Metric> = CallKind::ALL
            .iter()
            .map(|&kind| Metric::timer(CALLS, Some(kind.as_str()), totals.timer(kind)))
            .collect();
        values.extend([
            Metric::counter(NOT_PERMITTED, Some("not_permitted"), totals.not_permitted()),
            // Resilience4j publishes -1 while below the minimum number of calls.
            Metric::percent(FAILURE_RATE, m.failure_rate().map_or(-1.0, f64::from)),
            Metric::percent(SLOW_CALL_RATE, m.slow_call_rate().map_or(-1.0, f64::from)),
            Metric::gauge(BUFFERED, Some("successful"), m.successful_calls() as f64),
            Metric::gauge(BUFFERED, Some("failed"), m.failed_calls() as f64),
            Metric::gauge(
                MAX_BUFFERED,
                None,
                f64::from(self.config().sliding_window_size()),
            ),
            Metric::gauge(SLOW, Some("successful"), m.slow_successful_calls() as f64),
            Metric::gauge(SLOW, Some("failed"), m.slow_failed_calls() as f64),
        ]);
        let now = self.state();
        values.extend(STATE_LABELS.iter().map(|&(state, label)| {
            Metric::gauge(STATE, Some(label), if state == now { 1.0 } else { 0.0 }).keyed("state")
        }));
        values
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        describe_config(self.config())
    }

    fn health(&self) -> (Status, Option<String>) {
        let m = self.metrics();
        match self.state() {
            State::Closed | State::Disabled | State::MetricsOnly => (Status::Up, None),
            State::HalfOpen => (
                Status::Degraded,
                Some("HALF_OPEN: probing whether the backend recovered".to_owned()),
            ),
            State::Open => {
                let c = self.config();
                let failures = match c.failure_model() {
                    FailureModel::Rate => format!(
                        "failure rate {} (threshold {}%)",
                        m.failure_rate()
                            .map_or("n/a".to_owned(), |r| format!("{r}%")),
                        c.failure_rate_threshold(),
                    ),
                    FailureModel::Consecutive => format!(
                        "{} consecutive failures (threshold {})",
                        m.consecutive_failures(),
                        c.consecutive_failure_threshold(),
                    ),
                    FailureModel::Count => format!(
                        "{} failures within {:?} (threshold {})",
                        m.failures_in_interval(),
                        c.failure_count_interval(),
                        c.failure_count_threshold(),
                    ),
                };
                (
                    Status::Down,
                    Some(format!(
                        "OPEN: {failures}, slow-call rate {} (threshold {}%)",
                        m.slow_call_rate()
                            .map_or("n/a".to_owned(), |r| format!("{r}%")),
                        c.slow_call_rate_threshold(),
                    )),
                )
            }
            State::ForcedOpen => (Status::Down, Some("FORCED_OPEN by an operator".to_owned())),
        }
    }
}

impl Describe for CircuitBreaker {
    type Event = resil_core::circuit_breaker::CircuitBreakerEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    const TAPS_NOTABLE: bool = true;

    fn tap_notable(&self, tap: resil_core::event::NotableTap<Self::Event>) {
        CircuitBreaker::tap_notable(self, tap);
    }

    fn default_values() -> Vec<(&'static str, String)> {
        describe_config(&CircuitBreakerConfig::default())
    }
}
