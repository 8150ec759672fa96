//! The circuit breaker's Resilience4j parity and robustness fixes (issue 6):
//! the transition table, the half-open decision rule, the OPEN backoff, the
//! strict end of OPEN, interval validation, classification through composed
//! primitives, panicking predicates, a saturated clock, probe storage, and the
//! initial and after-half-open states. Time is a `ManualClock`; nothing sleeps.

use std::time::Duration;

use resil::circuit_breaker::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerEventKind, IllegalTransition, State,
};
use resil::clock::ManualClock;

const ALL: [State; 6] = [
    State::Closed,
    State::Open,
    State::HalfOpen,
    State::ForcedOpen,
    State::Disabled,
    State::MetricsOnly,
];

fn manual(config: CircuitBreakerConfig) -> (CircuitBreaker, ManualClock) {
    let clock = ManualClock::new();
    (
        CircuitBreaker::with_clock("backend", config, clock.clone()),
        clock,
    )
}

/// Moves a fresh breaker into `state` through legal transitions.
fn breaker_in(state: State) -> CircuitBreaker {
    let (cb, _) = manual(CircuitBreakerConfig::default());
    let result = match state {
        State::Closed => Ok(()),
        State::Open => cb.transition_to_open(),
        State::HalfOpen => cb
            .transition_to_open()
            .and_then(|()| cb.transition_to_half_open()),
        State::ForcedOpen => cb.transition_to_forced_open(),
        State::Disabled => cb.transition_to_disabled(),
        State::MetricsOnly => cb.transition_to_metrics_only(),
    };
    result.unwrap();
    assert_eq!(cb.state(), state);
    cb
}

fn transition(cb: &CircuitBreaker, to: State) -> Result<(), IllegalTransition> {
    match to {
        State::Closed => cb.transition_to_closed(),
        State::Open => cb.transition_to_open(),
        State::HalfOpen => cb.transition_to_half_open(),
        State::ForcedOpen => cb.transition_to_forced_open(),
        State::Disabled => cb.transition_to_disabled(),
        State::MetricsOnly => cb.transition_to_metrics_only(),
    }
}

// ---- item 1: the transition table ----

#[test]
fn illegal_transitions_are_refused_naming_the_breaker_and_both_states_and_change_nothing() {
    for (from, to) in [
        (State::Closed, State::HalfOpen),
        (State::MetricsOnly, State::Open),
        (State::MetricsOnly, State::HalfOpen),
    ] {
        let cb = breaker_in(from);
        let _ = cb.call(|| Err::<(), _>("recorded before"));
        let before = cb.metrics();
        let mut events = cb.subscribe();
        let refused = transition(&cb, to).unwrap_err();
        assert_eq!(refused.name(), "backend");
        assert_eq!((refused.from(), refused.to()), (from, to));
        assert_eq!(
            refused.to_string(),
            format!("circuit breaker 'backend' cannot move from {from} to {to}")
        );
        assert_eq!(cb.state(), from, "{from} -> {to} left the state unchanged");
        assert_eq!(
            cb.metrics(),
            before,
            "{from} -> {to} left the metrics unchanged"
        );
        assert!(
            events.drain().is_empty(),
            "{from} -> {to} published nothing"
        );
    }
    let metrics_only = breaker_in(State::MetricsOnly);
    assert!(metrics_only
        .transition_to_open_for(Duration::from_secs(1))
        .is_err());
    assert_eq!(metrics_only.state(), State::MetricsOnly);
}

#[test]
fn every_other_transition_of_resilience4js_table_is_carried_out() {
    for from in ALL {
        for to in ALL {
            if !from.can_transition_to(to) {
                continue;
            }
            let cb = breaker_in(from);
            transition(&cb, to).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(cb.state(), to, "{from} -> {to}");
        }
    }
}

#[test]
fn reset_is_always_allowed_and_publishes_a_reset_event() {
    for from in ALL {
        let cb = breaker_in(from);
        let mut events = cb.subscribe();
        cb.reset();
        assert_eq!(cb.state(), State::Closed);
        assert_eq!(
            events.drain().last().map(|e| *e.kind()),
            Some(CircuitBreakerEventKind::Reset)
        );
    }
}
