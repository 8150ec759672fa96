//! The circuit breaker's Resilience4j parity and robustness fixes (issue 6):
//! the transition table, the half-open decision rule, the OPEN backoff, the
//! strict end of OPEN, interval validation, classification through composed
//! primitives, panicking predicates, a saturated clock, probe storage, and the
//! initial and after-half-open states. Time is a `ManualClock`; nothing sleeps.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use resil::bulkhead::{Bulkhead, BulkheadConfig};
use resil::circuit_breaker::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerEventKind, IllegalTransition, Outcome,
    ResultTransition, State,
};
use resil::clock::{ManualClock, TokioClock};
use resil::error::{BulkheadFull, Timeout};
use resil::retry::{IntervalFunction, Retry, RetryConfig};
use resil::time_limiter::{TimeLimiter, TimeLimiterConfig};
use resil::Error;

const MS: fn(u64) -> Duration = Duration::from_millis;
const SECS: fn(u64) -> Duration = Duration::from_secs;
/// One nanosecond: OPEN is left strictly after its wait.
const TICK: Duration = Duration::from_nanos(1);

#[derive(Debug, PartialEq)]
struct Io;

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
            events.drain().last().map(|e| e.kind()),
            Some(CircuitBreakerEventKind::Reset)
        );
    }
}

// ---- item 2: HALF_OPEN decides after min(minimum_number_of_calls, permitted) ----

fn probe_config(minimum: u32, probes: u32) -> CircuitBreakerConfig {
    CircuitBreakerConfig::builder()
        .minimum_number_of_calls(minimum)
        .permitted_number_of_calls_in_half_open_state(probes)
        .wait_duration_in_open_state(SECS(1))
        .build()
        .unwrap()
}

#[test]
fn with_minimum_2_and_4_probes_two_failing_probes_already_reopen() {
    let (cb, clock) = manual(probe_config(2, 4));
    cb.transition_to_open().unwrap();
    clock.advance(SECS(1) + TICK);
    let _ = cb.call(|| Err::<(), _>(Io));
    assert_eq!(cb.state(), State::HalfOpen);
    let m = cb.metrics();
    assert_eq!(
        m.minimum_number_of_calls(),
        2,
        "HALF_OPEN rates use the same rule"
    );
    assert_eq!((m.buffered_calls(), m.failure_rate()), (1, None));
    let _ = cb.call(|| Err::<(), _>(Io));
    assert_eq!(cb.state(), State::Open, "decided after 2 probes, not 4");
    let m = cb.metrics();
    assert_eq!((m.buffered_calls(), m.failure_rate()), (2, Some(100.0)));
}

#[test]
fn with_minimum_2_and_4_probes_two_successful_probes_already_close() {
    let (cb, clock) = manual(probe_config(2, 4));
    cb.transition_to_open().unwrap();
    clock.advance(SECS(1) + TICK);
    let late = cb.try_acquire_permission().unwrap();
    cb.call(|| Ok::<_, Io>(())).unwrap();
    cb.call(|| Ok::<_, Io>(())).unwrap();
    assert_eq!(cb.state(), State::Closed);
    late.on_error(&Io); // the round is over: a late probe decides nothing
    assert_eq!(cb.state(), State::Closed);
    assert_eq!(cb.metrics().buffered_calls(), 0);
}

#[test]
fn a_minimum_above_the_probe_count_waits_for_every_probe() {
    let (cb, clock) = manual(probe_config(10, 3));
    cb.transition_to_open().unwrap();
    clock.advance(SECS(1) + TICK);
    cb.call(|| Ok::<_, Io>(())).unwrap();
    assert_eq!(cb.metrics().minimum_number_of_calls(), 3);
    let _ = cb.call(|| Err::<(), _>(Io));
    assert_eq!(cb.state(), State::HalfOpen);
    let _ = cb.call(|| Err::<(), _>(Io));
    assert_eq!(cb.state(), State::Open, "2 of 3 failed: 66.7 % >= 50 %");
}

// ---- item 3: only counted openings advance the OPEN backoff ----

fn backoff_breaker() -> (CircuitBreaker, ManualClock) {
    manual(
        CircuitBreakerConfig::builder()
            .wait_interval_function_in_open_state(IntervalFunction::exponential(SECS(1), 2.0))
            .permitted_number_of_calls_in_half_open_state(1)
            .transition_on_error(|e: &&str| match *e {
                "retry-after" => ResultTransition::OpenFor(SECS(30)),
                _ => ResultTransition::Stay,
            })
            .build()
            .unwrap(),
    )
}

/// Asserts the current OPEN period lasts exactly `wait`, then fails the probe.
fn open_period_lasts(cb: &CircuitBreaker, clock: &ManualClock, wait: Duration) {
    clock.advance(wait);
    assert!(
        cb.try_acquire_permission().is_err(),
        "still OPEN at {wait:?}"
    );
    clock.advance(TICK);
    let probe = cb
        .try_acquire_permission()
        .expect("HALF_OPEN just after the wait");
    probe.on_error(&Io);
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn an_explicit_wait_and_forced_open_do_not_advance_the_open_backoff() {
    let (cb, clock) = backoff_breaker();
    cb.transition_to_open().unwrap(); // counted: 1st period, 1 s
    open_period_lasts(&cb, &clock, SECS(1)); // round failed: 2nd period, 2 s
    open_period_lasts(&cb, &clock, SECS(2)); // 3rd, 4 s

    cb.transition_to_open_for(SECS(30)).unwrap(); // explicit: not counted
    open_period_lasts(&cb, &clock, SECS(30)); // round failed: 4th, 8 s
    open_period_lasts(&cb, &clock, SECS(8)); // 5th, 16 s

    cb.transition_to_forced_open().unwrap(); // not counted either
    cb.transition_to_open().unwrap(); // counted: 6th, 32 s
    open_period_lasts(&cb, &clock, SECS(32)); // 7th, 64 s
    open_period_lasts(&cb, &clock, SECS(64));
}

#[test]
fn a_retry_after_transition_does_not_advance_the_open_backoff() {
    let (cb, clock) = backoff_breaker();
    // In CLOSED (the window is far from full), a Retry-After opens for 30 s.
    let _ = cb.call(|| Err::<(), _>("retry-after"));
    assert_eq!(cb.state(), State::Open);
    open_period_lasts(&cb, &clock, SECS(30)); // the failed round: 1st counted, 1 s
    open_period_lasts(&cb, &clock, SECS(1)); // 2nd, 2 s
    open_period_lasts(&cb, &clock, SECS(2));
}

// ---- item 4: OPEN is left strictly after its wait ----

#[test]
fn permission_and_state_leave_open_strictly_after_the_wait() {
    let (cb, clock) = manual(
        CircuitBreakerConfig::builder()
            .wait_duration_in_open_state(MS(200))
            .automatic_transition_from_open_to_half_open_enabled(true)
            .build()
            .unwrap(),
    );
    cb.transition_to_open().unwrap();
    clock.advance(MS(200));
    assert_eq!(
        cb.state(),
        State::Open,
        "state() at the instant the wait ends"
    );
    assert!(
        cb.try_acquire_permission().is_err(),
        "permission at that instant"
    );
    clock.advance(TICK);
    assert_eq!(cb.state(), State::HalfOpen);
}

#[tokio::test(start_paused = true)]
async fn the_timer_leaves_open_strictly_after_the_wait() {
    let config = CircuitBreakerConfig::builder()
        .automatic_transition_from_open_to_half_open_enabled(true)
        .wait_duration_in_open_state(MS(200))
        .build()
        .unwrap();
    let cb = CircuitBreaker::with_clock("timer", config, TokioClock::new());
    let mut events = cb.subscribe();
    cb.transition_to_open().unwrap();
    events.drain();
    tokio::time::advance(MS(200)).await;
    tokio::task::yield_now().await;
    assert!(
        events.drain().is_empty(),
        "no transition at the instant the wait ends"
    );
    tokio::time::advance(MS(1)).await;
    tokio::task::yield_now().await;
    let kinds: Vec<_> = events.drain().into_iter().map(|e| e.kind()).collect();
    assert_eq!(
        kinds,
        [CircuitBreakerEventKind::StateTransition {
            from: State::Open,
            to: State::HalfOpen
        }]
    );
}

// ---- item 5: every OPEN wait is at least 1 ms; one of the two wait settings ----

#[test]
fn fixed_and_custom_open_intervals_below_1ms_are_rejected() {
    for f in [
        IntervalFunction::fixed(Duration::ZERO),
        IntervalFunction::fixed(Duration::from_micros(999)),
        IntervalFunction::custom(|_| Duration::from_micros(500)),
    ] {
        let err = CircuitBreakerConfig::builder()
            .wait_interval_function_in_open_state(f)
            .build()
            .unwrap_err();
        assert_eq!(err.field(), "wait_interval_function_in_open_state");
        assert_eq!(err.expected(), "intervals >= 1ms");
    }
    let err = CircuitBreakerConfig::builder()
        .wait_interval_function_in_open_state(IntervalFunction::custom(|_| panic!("boom")))
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "wait_interval_function_in_open_state");
}

#[test]
fn a_custom_interval_that_later_drops_below_1ms_is_raised_to_1ms() {
    let (cb, clock) = manual(
        CircuitBreakerConfig::builder()
            .wait_interval_function_in_open_state(IntervalFunction::custom(|n| {
                if n == 1 {
                    SECS(1)
                } else {
                    Duration::ZERO
                }
            }))
            .permitted_number_of_calls_in_half_open_state(1)
            .build()
            .unwrap(),
    );
    cb.transition_to_open().unwrap();
    clock.advance(SECS(1) + TICK);
    let _ = cb.call(|| Err::<(), _>(Io)); // 2nd period: the function says 0
    assert_eq!(cb.state(), State::Open);
    clock.advance(MS(1));
    assert!(cb.try_acquire_permission().is_err(), "OPEN for 1 ms, not 0");
    clock.advance(TICK);
    assert!(cb.try_acquire_permission().is_ok());
}

#[test]
fn a_randomized_open_interval_builds_every_time_and_waits_at_least_1ms() {
    // Draws of randomized(1 ms, 0.9) fall in [0.1 ms, 1.9 ms]: validation must
    // not depend on the draw, and no OPEN period may be shorter than 1 ms.
    for _ in 0..200 {
        CircuitBreakerConfig::builder()
            .wait_interval_function_in_open_state(IntervalFunction::randomized(MS(1), 0.9))
            .build()
            .unwrap();
    }
    let (cb, clock) = manual(
        CircuitBreakerConfig::builder()
            .wait_interval_function_in_open_state(IntervalFunction::randomized(MS(1), 0.9))
            .permitted_number_of_calls_in_half_open_state(1)
            .build()
            .unwrap(),
    );
    cb.transition_to_open().unwrap();
    for _ in 0..50 {
        assert!(cb.try_acquire_permission().is_err(), "refused at the start");
        clock.advance(MS(1) - TICK);
        assert!(
            cb.try_acquire_permission().is_err(),
            "OPEN for at least 1 ms"
        );
        clock.advance(MS(1) + TICK);
        let _ = cb.call(|| Err::<(), _>(Io)); // the probe fails: OPEN again
        assert_eq!(cb.state(), State::Open);
    }
}

#[test]
fn setting_both_open_waits_on_one_builder_is_an_error_naming_both() {
    let err = CircuitBreakerConfig::builder()
        .wait_duration_in_open_state(SECS(5))
        .wait_interval_function_in_open_state(IntervalFunction::exponential(SECS(1), 2.0))
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "wait_duration_in_open_state");
    assert_eq!(
        err.to_string(),
        "invalid `wait_duration_in_open_state`: got 5s together with \
         `wait_interval_function_in_open_state`, expected either `wait_duration_in_open_state` \
         or `wait_interval_function_in_open_state`, not both"
    );
    let reversed = CircuitBreakerConfig::builder()
        .wait_interval_function_in_open_state(IntervalFunction::fixed(SECS(1)))
        .wait_duration_in_open_state(SECS(5))
        .build();
    assert!(reversed.is_err(), "either order");
}

#[test]
fn a_derived_config_replaces_whichever_open_wait_its_base_had() {
    let with_function = CircuitBreakerConfig::builder()
        .wait_interval_function_in_open_state(IntervalFunction::exponential(SECS(1), 2.0))
        .build()
        .unwrap();
    let fixed = with_function
        .to_builder()
        .wait_duration_in_open_state(SECS(5))
        .build()
        .unwrap();
    assert!(fixed.wait_interval_function_in_open_state().is_none());
    assert_eq!(fixed.wait_duration_in_open_state(), SECS(5));
    let (cb, clock) = manual(fixed);
    cb.transition_to_open().unwrap();
    clock.advance(SECS(5));
    assert!(cb.try_acquire_permission().is_err());
    clock.advance(TICK);
    assert!(cb.try_acquire_permission().is_ok());

    let with_duration = CircuitBreakerConfig::builder()
        .wait_duration_in_open_state(SECS(5))
        .build()
        .unwrap();
    let grown = with_duration
        .to_builder()
        .wait_interval_function_in_open_state(IntervalFunction::fixed(SECS(2)))
        .build()
        .unwrap();
    let (cb, clock) = manual(grown);
    cb.transition_to_open().unwrap();
    clock.advance(SECS(2) + TICK);
    assert!(
        cb.try_acquire_permission().is_ok(),
        "the function replaced the 5 s"
    );
}

// ---- item 8: composition keeps classification ----

#[derive(Debug, Clone, PartialEq)]
enum InvError {
    Business,
    Down,
}

fn inventory_breaker() -> CircuitBreaker {
    CircuitBreaker::new(
        "inventory",
        CircuitBreakerConfig::builder()
            .sliding_window_size(4)
            .minimum_number_of_calls(4)
            .ignore_error(|e: &InvError| matches!(e, InvError::Business))
            .record_error(|e: &InvError| matches!(e, InvError::Down))
            .build()
            .unwrap(),
    )
}

#[test]
fn a_nested_call_classifies_the_inner_error_by_the_predicates_written_for_it() {
    let cb = inventory_breaker();
    let bh = Bulkhead::new("inventory", BulkheadConfig::default());
    for _ in 0..10 {
        let out = cb.call_nested(|| bh.call(|| Err::<u32, _>(InvError::Business)));
        assert_eq!(out, Err(Error::Call(InvError::Business)));
    }
    assert_eq!(
        cb.state(),
        State::Closed,
        "ignored business errors never open it"
    );
    assert_eq!(cb.metrics().ignored_calls(), 10);
    assert_eq!(cb.metrics().buffered_calls(), 0);

    for _ in 0..4 {
        let _ = cb.call_nested(|| bh.call(|| Err::<u32, _>(InvError::Down)));
    }
    assert_eq!(cb.state(), State::Open);
    let refused = cb.call_nested(|| bh.call(|| Ok::<u32, InvError>(1)));
    assert!(matches!(refused, Err(Error::CallNotPermitted(r)) if r.name() == "inventory"));
}

#[test]
fn inner_rejections_follow_resilience4j_s_record_list_rule() {
    let timeout = || Err::<u32, Error<InvError>>(Timeout::new("tl", SECS(1)).into());
    let full = || Err::<u32, Error<InvError>>(BulkheadFull::new("bh").into());

    // Without any record predicate, every error is a failure: refusals too.
    let cb = CircuitBreaker::new(
        "inventory",
        CircuitBreakerConfig::builder()
            .sliding_window_size(4)
            .minimum_number_of_calls(4)
            .build()
            .unwrap(),
    );
    for _ in 0..4 {
        assert!(matches!(cb.call_nested(timeout), Err(Error::Timeout(_))));
    }
    assert_eq!(cb.state(), State::Open);
    assert_eq!(cb.metrics().failed_calls(), 4);

    // `record_error` is written only for InvError (Resilience4j's
    // `recordExceptions` naming only the inventory's exception): a timeout
    // or a full bulkhead it does not list is a success, as a
    // `BulkheadFullException` missing from the list is in Resilience4j.
    let cb = inventory_breaker();
    for _ in 0..4 {
        assert!(matches!(cb.call_nested(timeout), Err(Error::Timeout(_))));
        assert!(matches!(cb.call_nested(full), Err(Error::BulkheadFull(_))));
    }
    assert_eq!(cb.state(), State::Closed);
    let m = cb.metrics();
    // The window holds the last 4 of the 8 calls, all successes.
    assert_eq!((m.failed_calls(), m.successful_calls()), (0, 4));
    assert_eq!(m.failure_rate(), Some(0.0));

    let cb = CircuitBreaker::new(
        "inventory",
        CircuitBreakerConfig::builder()
            .ignore_error(|_: &BulkheadFull| true)
            .record_error(|t: &Timeout| t.after() >= SECS(2))
            .build()
            .unwrap(),
    );
    let _ = cb.call_nested(full);
    let _ = cb.call_nested(timeout);
    let m = cb.metrics();
    assert_eq!(
        (m.ignored_calls(), m.buffered_calls(), m.failed_calls()),
        (1, 1, 0)
    );
    assert_eq!(
        cb.config()
            .classify_nested_error(&Error::<InvError>::from(Timeout::new("tl", SECS(3)))),
        Outcome::Failure
    );
}

async fn fetch(outcome: Result<u32, InvError>) -> Result<u32, InvError> {
    outcome
}

#[tokio::test(start_paused = true)]
async fn the_readme_composition_keeps_business_errors_ignored() {
    // Reproduces issue 6, item 8: retry(breaker(time limiter(bulkhead(call)))) by hand.
    let cb = inventory_breaker();
    let tl = TimeLimiter::new("inventory", TimeLimiterConfig::default());
    let bh = Bulkhead::new("inventory", BulkheadConfig::default());
    let retry = Retry::new(
        "inventory",
        RetryConfig::builder()
            .retry_on_error(|e: &InvError| matches!(e, InvError::Down))
            .build()
            .unwrap(),
    );
    for _ in 0..8 {
        let out = retry
            .call_async_nested(|| {
                cb.call_async_nested(async {
                    tl.call_async(bh.call_async(fetch(Err(InvError::Business))))
                        .await
                        .map_err(Error::flatten)
                })
            })
            .await;
        assert_eq!(out, Err(Error::Call(InvError::Business)));
    }
    assert_eq!(cb.state(), State::Closed);
    assert_eq!(cb.metrics().ignored_calls(), 8);

    let down = retry
        .call_async_nested(|| {
            cb.call_async_nested(async {
                tl.call_async(bh.call_async(fetch(Err(InvError::Down))))
                    .await
                    .map_err(Error::flatten)
            })
        })
        .await;
    assert_eq!(down, Err(Error::Call(InvError::Down)));
    assert_eq!(
        cb.metrics().failed_calls(),
        3,
        "each attempt is one failure"
    );
}

/// Collects the messages of `tracing` events.
#[derive(Default, Clone)]
struct Events(Arc<Mutex<Vec<(tracing::Level, String)>>>);

impl tracing::Subscriber for Events {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        struct Message(String);
        impl tracing::field::Visit for Message {
            fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
                if field.name() == "message" {
                    self.0 = format!("{value:?}");
                }
            }
        }
        let mut m = Message(String::new());
        event.record(&mut m);
        self.0
            .lock()
            .unwrap()
            .push((*event.metadata().level(), m.0));
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[test]
fn predicates_that_cannot_match_what_the_breaker_sees_are_reported_once_at_debug() {
    let events = Events::default();
    tracing::subscriber::with_default(events.clone(), || {
        // Other tests of this binary may have registered the event\'s callsite
        // (as "never") on threads without a subscriber: recompute it for ours.
        tracing::callsite::rebuild_interest_cache();
        let cb = inventory_breaker();
        let bh = Bulkhead::new("inventory", BulkheadConfig::default());
        // An error of a type no predicate is written for.
        for _ in 0..3 {
            let _ = cb.call(|| Err::<u32, _>(std::io::Error::other("down")));
        }
        // `call_nested`, and `call` around another primitive, see `InvError`
        // inside the `resil::Error`: nothing to report.
        let quiet = inventory_breaker();
        let _ = quiet.call_nested(|| bh.call(|| Err::<u32, _>(InvError::Business)));
        let _ = quiet.call(|| bh.call(|| Err::<u32, _>(InvError::Business)));
    });
    let events = events.0.lock().unwrap();
    assert_eq!(events.len(), 1, "{events:?}");
    let (level, message) = &events[0];
    assert_eq!(*level, tracing::Level::DEBUG);
    assert!(message.contains("circuit breaker 'inventory'"), "{message}");
    assert!(
        message.contains("std::io::error::Error"),
        "names the type it saw: {message}"
    );
    assert!(
        message.contains("written for"),
        "says why none matches: {message}"
    );
}

// ---- item 9: a panicking predicate does not wedge HALF_OPEN ----

fn one_probe_breaker(config: CircuitBreakerConfig) -> CircuitBreaker {
    let (cb, clock) = manual(
        config
            .to_builder()
            .permitted_number_of_calls_in_half_open_state(1)
            .wait_duration_in_open_state(SECS(1))
            .build()
            .unwrap(),
    );
    cb.transition_to_open().unwrap();
    clock.advance(SECS(1) + TICK);
    cb
}

fn panicking_configs() -> Vec<(&'static str, CircuitBreakerConfig)> {
    let b = CircuitBreakerConfig::builder;
    vec![
        (
            "record_result",
            b().record_result(|_: &u32| panic!("predicate"))
                .build()
                .unwrap(),
        ),
        (
            "ignore_error",
            b().ignore_error(|_: &Io| panic!("predicate"))
                .build()
                .unwrap(),
        ),
        (
            "record_error",
            b().record_error(|_: &Io| panic!("predicate"))
                .build()
                .unwrap(),
        ),
        (
            "transition_on_result",
            b().transition_on_result(|_: &u32| -> ResultTransition { panic!("predicate") })
                .build()
                .unwrap(),
        ),
        (
            "transition_on_error",
            b().transition_on_error(|_: &Io| -> ResultTransition { panic!("predicate") })
                .build()
                .unwrap(),
        ),
    ]
}

fn outcome_for(name: &str) -> Result<u32, Io> {
    if name.ends_with("result") {
        Ok(1)
    } else {
        Err(Io)
    }
}

#[test]
fn a_panicking_predicate_returns_the_probe_slot_and_the_panic_reaches_the_caller() {
    for (name, config) in panicking_configs() {
        let cb = one_probe_breaker(config);
        let panicked = catch_unwind(AssertUnwindSafe(|| cb.call(|| outcome_for(name))));
        assert!(panicked.is_err(), "{name}: the panic reached the caller");
        assert_eq!(cb.state(), State::HalfOpen, "{name}");
        assert!(
            cb.try_acquire_permission().is_ok(),
            "{name}: the probe slot came back"
        );
        let cb = one_probe_breaker(cb.config().clone());
        let nested = catch_unwind(AssertUnwindSafe(|| {
            cb.call_nested(|| outcome_for(name).map_err(Error::Call))
        }));
        assert!(nested.is_err(), "{name}: nested");
        assert!(cb.try_acquire_permission().is_ok(), "{name}: nested slot");
    }
}

#[tokio::test]
async fn a_panicking_predicate_returns_the_probe_slot_of_an_async_call() {
    for (name, config) in panicking_configs() {
        let cb = one_probe_breaker(config);
        let panicked = AssertUnwindSafe(cb.call_async(async { outcome_for(name) }))
            .catch_unwind()
            .await;
        assert!(panicked.is_err(), "{name}: the panic reached the caller");
        assert!(
            cb.try_acquire_permission().is_ok(),
            "{name}: the probe slot came back"
        );
        let cb = one_probe_breaker(cb.config().clone());
        let nested = AssertUnwindSafe(
            cb.call_async_nested(async { outcome_for(name).map_err(Error::Call) }),
        )
        .catch_unwind()
        .await;
        assert!(nested.is_err(), "{name}: nested");
        assert!(cb.try_acquire_permission().is_ok(), "{name}: nested slot");
    }
}

// ---- item 12: a clock at its maximum reading ----

/// Runs `f` on its own thread and fails (instead of hanging) if it does not
/// answer within 10 s; a spinning acquire would never answer.
fn answers<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(SECS(10))
        .unwrap_or_else(|_| panic!("{what} did not answer: it spins"))
}

fn saturated(config: CircuitBreakerConfig) -> (CircuitBreaker, ManualClock) {
    let (cb, clock) = manual(config);
    clock.advance(Duration::MAX);
    assert_eq!(clock.elapsed(), Duration::from_nanos(u64::MAX));
    (cb, clock)
}

fn with_max_wait() -> CircuitBreakerConfig {
    CircuitBreakerConfig::builder()
        .max_wait_duration_in_half_open_state(SECS(3))
        .permitted_number_of_calls_in_half_open_state(2)
        .build()
        .unwrap()
}

#[test]
fn an_open_breaker_whose_clock_reads_its_maximum_answers_every_acquire() {
    let (cb, _clock) = saturated(with_max_wait());
    cb.transition_to_open().unwrap();
    let (first, state) = answers("acquire in OPEN at u64::MAX", move || {
        let first = cb
            .try_acquire_permission()
            .map(|_| ())
            .map_err(|r| r.state());
        (first, cb.state())
    });
    // The wait ends at the last reading there is: it never passes.
    assert_eq!(first, Err(State::Open));
    assert_eq!(state, State::Open);
}

#[test]
fn a_breaker_opened_before_its_clock_saturated_probes_and_answers() {
    let (cb, clock) = manual(with_max_wait());
    cb.transition_to_open().unwrap();
    clock.advance(Duration::MAX);
    let states = answers("acquire after a jump to u64::MAX", move || {
        let mut states = Vec::new();
        for _ in 0..4 {
            states.push(match cb.try_acquire_permission() {
                Ok(p) => {
                    let s = p.state();
                    std::mem::forget(p); // a probe that never returns
                    Ok(s)
                }
                Err(r) => Err(r.state()),
            });
        }
        states.push(Ok(cb.state()));
        let _ = cb.metrics();
        states
    });
    assert_eq!(
        states,
        [
            Ok(State::HalfOpen),
            Ok(State::HalfOpen),
            Err(State::HalfOpen),
            Err(State::HalfOpen),
            Ok(State::HalfOpen)
        ]
    );
}

#[test]
fn a_half_open_breaker_at_the_maximum_reading_answers_with_or_without_a_max_wait() {
    for config in [with_max_wait(), CircuitBreakerConfig::default()] {
        let (cb, _clock) = saturated(config);
        cb.transition_to_open().unwrap();
        cb.transition_to_half_open().unwrap();
        let state = answers("acquire in HALF_OPEN at u64::MAX", move || {
            let probe = cb.try_acquire_permission().map(|p| p.state());
            (probe, cb.state())
        });
        assert_eq!(state, (Ok(State::HalfOpen), State::HalfOpen));
    }
}

#[test]
fn a_closed_breaker_whose_clock_reads_its_maximum_records_and_opens() {
    for window in [
        resil::circuit_breaker::SlidingWindowType::CountBased,
        resil::circuit_breaker::SlidingWindowType::TimeBased,
    ] {
        let config = CircuitBreakerConfig::builder()
            .sliding_window_type(window)
            .sliding_window_size(4)
            .minimum_number_of_calls(4)
            .build()
            .unwrap();
        let (cb, _clock) = saturated(config);
        let state = answers("calls at u64::MAX", move || {
            for _ in 0..4 {
                let _ = cb.call(|| Err::<(), _>(Io));
            }
            (cb.state(), cb.metrics().failure_rate())
        });
        assert_eq!(state, (State::Open, Some(100.0)), "{window:?}");
    }
}

/// A faulty custom clock: every other reading is its maximum, the rest zero.
#[derive(Debug, Default)]
struct FlappingClock(std::sync::atomic::AtomicU64);

impl resil::clock::Clock for FlappingClock {
    fn now_nanos(&self) -> u64 {
        if self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 2 == 0 {
            u64::MAX
        } else {
            0
        }
    }
}

#[test]
fn a_clock_that_jumps_back_and_forth_cannot_make_an_acquire_spin() {
    for config in [with_max_wait(), CircuitBreakerConfig::default()] {
        let cb = CircuitBreaker::with_clock("flapping", config, FlappingClock::default());
        cb.transition_to_open().unwrap();
        let answered = answers("acquire on a flapping clock", move || {
            (0..100)
                .filter(|_| {
                    let permit = cb.try_acquire_permission();
                    let _ = cb.state();
                    permit.is_ok()
                })
                .count()
        });
        assert!(answered <= 100);
    }
}

// ---- item 13: probe storage sized to what is used ----

#[test]
fn the_largest_probe_count_costs_no_memory_until_used_and_little_after() {
    let config = CircuitBreakerConfig::builder()
        .sliding_window_size(10)
        .minimum_number_of_calls(3)
        .permitted_number_of_calls_in_half_open_state(1 << 24)
        .build()
        .unwrap();
    let (cb, clock) = manual(config);
    let closed = cb.memory_footprint();
    println!("memory_footprint with 2^24 permitted probes: {closed} bytes");
    assert!(closed < 4096, "{closed} bytes with 2^24 permitted probes");
    cb.transition_to_open().unwrap();
    clock.advance(SECS(60) + TICK);
    for _ in 0..2 {
        cb.call(|| Ok::<_, Io>(())).unwrap();
    }
    assert_eq!(cb.state(), State::HalfOpen);
    assert_eq!(
        cb.memory_footprint(),
        closed,
        "a probe round allocates nothing"
    );
    cb.call(|| Ok::<_, Io>(())).unwrap();
    assert_eq!(
        cb.state(),
        State::Closed,
        "decided after min(3, 2^24) probes"
    );
}

// ---- item 16: initial state and the state after the half-open max wait ----

#[test]
fn a_breaker_starts_in_its_configured_initial_state() {
    assert_eq!(
        CircuitBreakerConfig::default().initial_state(),
        State::Closed
    );
    for state in ALL {
        let config = CircuitBreakerConfig::builder()
            .initial_state(state)
            .build()
            .unwrap();
        let (cb, _) = manual(config);
        assert_eq!(cb.state(), state);
    }
    let (cb, clock) = manual(
        CircuitBreakerConfig::builder()
            .initial_state(State::Open)
            .wait_duration_in_open_state(SECS(5))
            .build()
            .unwrap(),
    );
    assert!(matches!(
        cb.call(|| Ok::<_, Io>(())),
        Err(Error::CallNotPermitted(_))
    ));
    clock.advance(SECS(5) + TICK);
    cb.call(|| Ok::<_, Io>(())).unwrap();
    assert_eq!(cb.state(), State::HalfOpen);
}

#[test]
fn an_expired_half_open_round_goes_to_the_configured_state() {
    assert_eq!(
        CircuitBreakerConfig::default().transition_to_state_after_wait_duration(),
        State::Open
    );
    for to in [State::Open, State::Closed] {
        let (cb, clock) = manual(
            CircuitBreakerConfig::builder()
                .max_wait_duration_in_half_open_state(SECS(3))
                .transition_to_state_after_wait_duration(to)
                .build()
                .unwrap(),
        );
        cb.transition_to_open().unwrap();
        clock.advance(SECS(60) + TICK);
        let stuck = cb.try_acquire_permission().unwrap();
        clock.advance(SECS(3) + TICK);
        assert_eq!(cb.state(), to);
        drop(stuck);
    }
}

#[test]
fn only_open_or_closed_may_follow_an_expired_half_open_round() {
    for state in [
        State::HalfOpen,
        State::ForcedOpen,
        State::Disabled,
        State::MetricsOnly,
    ] {
        let err = CircuitBreakerConfig::builder()
            .transition_to_state_after_wait_duration(state)
            .build()
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            format!(
                "invalid `transition_to_state_after_wait_duration`: got {state}, expected OPEN or CLOSED"
            )
        );
    }
}
