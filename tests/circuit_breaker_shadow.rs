//! Shadow breakers (`CircuitBreaker::start_shadow`): a shadow fed a live
//! breaker's calls makes exactly the transitions and refusals a breaker
//! with its settings makes in the live one's place (property, manual
//! clock), never changes a call, survives its own predicates panicking, and
//! says which calls it could not judge.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use resil::circuit_breaker::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerEventKind, SlidingWindowType, State,
};
use resil::clock::ManualClock;
use resil::Error;

#[derive(Debug, Clone, Copy)]
enum Op {
    /// A call taking `ms` on the clock, failing or not.
    Call { ms: u64, fail: bool },
    /// Time passing between calls.
    Advance(u64),
}

#[derive(Debug)]
struct Down;

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u64..300, any::<bool>()).prop_map(|(ms, fail)| Op::Call { ms, fail }),
        1 => (1u64..2500).prop_map(Op::Advance),
    ]
}

/// The settings on trial: small window, 50 %, slow above 100 ms, 1 s open.
fn trial(time_based: bool) -> CircuitBreakerConfig {
    let b = CircuitBreakerConfig::builder()
        .failure_rate_threshold(50.0)
        .slow_call_rate_threshold(50.0)
        .slow_call_duration_threshold(Duration::from_millis(100))
        .minimum_number_of_calls(3)
        .wait_duration_in_open_state(Duration::from_secs(1))
        .permitted_number_of_calls_in_half_open_state(2);
    let b = if time_based {
        b.sliding_window_type(SlidingWindowType::TimeBased)
            .sliding_window_size(2)
    } else {
        b.sliding_window_size(4)
    };
    b.build().unwrap()
}

/// Records every state transition `breaker` publishes.
fn transitions(breaker: &CircuitBreaker) -> Arc<Mutex<Vec<(State, State)>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&seen);
    assert!(breaker.tap_notable(move |e| {
        if let CircuitBreakerEventKind::StateTransition { from, to } = e.kind() {
            sink.lock().unwrap().push((from, to));
        }
    }));
    seen
}

fn run(ops: &[Op], time_based: bool) -> Result<(), TestCaseError> {
    // The live breaker never refuses (METRICS_ONLY): every call reaches the
    // shadow, so the trial can be exact.
    let clock = ManualClock::new();
    let live =
        CircuitBreaker::with_clock("inventory", CircuitBreakerConfig::default(), clock.clone());
    live.transition_to_metrics_only().unwrap();
    let shadow = live.start_shadow(trial(time_based));
    assert!(shadow.is_shadow() && !live.is_shadow());
    let shadow_seen = transitions(&shadow);

    // The reference: the trial's settings deciding for real.
    let ref_clock = ManualClock::new();
    let reference = CircuitBreaker::with_clock("inventory", trial(time_based), ref_clock.clone());
    let reference_seen = transitions(&reference);

    for &op in ops {
        match op {
            Op::Advance(ms) => {
                clock.advance(Duration::from_millis(ms));
                ref_clock.advance(Duration::from_millis(ms));
            }
            Op::Call { ms, fail } => {
                let body = |c: &ManualClock| {
                    c.advance(Duration::from_millis(ms));
                    if fail {
                        Err(Down)
                    } else {
                        Ok(())
                    }
                };
                let live_out = live.call(|| body(&clock));
                prop_assert_eq!(live_out.is_ok(), !fail, "the shadow never decides a call");
                let reference_out = reference.call(|| body(&ref_clock));
                if matches!(reference_out, Err(Error::CallNotPermitted(_))) {
                    // The refused call still took its time on the live side.
                    ref_clock.advance(Duration::from_millis(ms));
                }
            }
        }
        prop_assert_eq!(shadow.state(), reference.state());
    }
    prop_assert_eq!(
        &*shadow_seen.lock().unwrap(),
        &*reference_seen.lock().unwrap()
    );
    prop_assert_eq!(
        shadow.call_totals().not_permitted(),
        reference.call_totals().not_permitted(),
        "the refusals it would have made"
    );
    prop_assert_eq!(
        shadow.metrics().failure_rate(),
        reference.metrics().failure_rate()
    );
    prop_assert_eq!(shadow.unobserved_calls(), 0);
    prop_assert_eq!(live.state(), State::MetricsOnly);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn a_shadow_makes_exactly_the_transitions_its_settings_make_when_they_decide(
        ops in proptest::collection::vec(op(), 0..80),
        time_based in any::<bool>(),
    ) {
        run(&ops, time_based)?;
    }
}

#[test]
fn a_recorded_outage_opens_the_shadow_and_its_refusals_are_counted_not_made() {
    let clock = ManualClock::new();
    let lenient = CircuitBreakerConfig::builder()
        .sliding_window_size(4)
        .minimum_number_of_calls(4)
        .failure_rate_threshold(90.0)
        .build()
        .unwrap();
    let live = CircuitBreaker::with_clock("price", lenient, clock.clone());
    let shadow = live.start_shadow(trial(false));
    let seen = transitions(&shadow);
    for fail in [true, true, false, true] {
        let _ = live.call(|| if fail { Err(Down) } else { Ok(()) });
    }
    assert_eq!(live.state(), State::Closed, "75 % is below the live 90 %");
    assert_eq!(*seen.lock().unwrap(), [(State::Closed, State::Open)]);
    for _ in 0..3 {
        assert!(live.call(|| Ok::<_, Down>(())).is_ok());
    }
    // Opened on the third call (2 of 3 failed): the fourth and these three.
    assert_eq!(shadow.call_totals().not_permitted(), 4);
    assert_eq!(live.call_totals().not_permitted(), 0);
    clock.advance(Duration::from_millis(1001));
    for _ in 0..2 {
        live.call(|| Ok::<_, Down>(())).unwrap();
    }
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (State::Closed, State::Open),
            (State::Open, State::HalfOpen),
            (State::HalfOpen, State::Closed)
        ]
    );
    let detached = live.stop_shadow().unwrap();
    let _ = live.call(|| Err::<(), _>(Down));
    assert_eq!(
        detached.metrics().buffered_calls(),
        0,
        "a detached shadow sees no more calls"
    );
}

#[test]
fn calls_the_live_breaker_refused_are_unobserved_unless_the_shadow_would_refuse_them_too() {
    let live = CircuitBreaker::new("price", CircuitBreakerConfig::default());
    let shadow = live.start_shadow(trial(false));
    live.transition_to_forced_open().unwrap();
    for _ in 0..3 {
        assert!(live.call(|| Ok::<_, Down>(())).is_err());
    }
    assert_eq!(
        shadow.unobserved_calls(),
        3,
        "the shadow would have let them through"
    );
    assert_eq!(shadow.call_totals().not_permitted(), 0);
}

#[test]
fn a_panicking_shadow_predicate_changes_nothing_for_the_call_or_the_live_breaker() {
    let live = CircuitBreaker::new("price", CircuitBreakerConfig::default());
    let panicky = CircuitBreakerConfig::builder()
        .record_error(|_: &Down| panic!("a predicate on trial panics"))
        .build()
        .unwrap();
    let shadow = live.start_shadow(panicky);
    let out = live.call(|| Err::<(), _>(Down));
    assert!(matches!(out, Err(Error::Call(Down))));
    assert_eq!(live.metrics().failed_calls(), 1);
    assert_eq!(shadow.shadow_panics(), 1);
    assert_eq!(shadow.metrics().buffered_calls(), 0);
}

#[test]
fn a_shadow_classifies_with_its_own_predicates() {
    // The trial: business errors should not count (seed 000 §11.3: check the
    // classification before it acts).
    #[derive(Debug)]
    enum Failure {
        Business,
        Down,
    }
    let live = CircuitBreaker::new("orders", CircuitBreakerConfig::default());
    let shadow = live.start_shadow(
        CircuitBreakerConfig::builder()
            .ignore_error(|e: &Failure| matches!(e, Failure::Business))
            .build()
            .unwrap(),
    );
    let _ = live.call(|| Err::<(), _>(Failure::Business));
    let _ = live.call(|| Err::<(), _>(Failure::Down));
    assert_eq!(live.metrics().failed_calls(), 2);
    assert_eq!(shadow.metrics().failed_calls(), 1);
    assert_eq!(shadow.metrics().ignored_calls(), 1);
}

#[tokio::test(start_paused = true)]
async fn permits_feed_the_shadow_and_a_cancelled_call_leaves_nothing_behind() {
    let live = CircuitBreaker::new("price", CircuitBreakerConfig::default());
    let shadow = live.start_shadow(trial(false));
    live.call_async(async { Err::<(), _>(Down) })
        .await
        .unwrap_err();
    let permit = live.try_acquire_permission().unwrap();
    permit.on_result(&Ok::<_, Down>(()));
    assert_eq!(shadow.metrics().buffered_calls(), 2);
    let pending = live.call_async(std::future::pending::<Result<(), Down>>());
    let cancelled = tokio::time::timeout(Duration::from_millis(5), pending).await;
    assert!(cancelled.is_err());
    assert_eq!(shadow.metrics().buffered_calls(), 2);
    assert_eq!(shadow.unobserved_calls(), 0);
}

#[test]
fn under_concurrent_calls_every_completed_call_is_offered_to_the_shadow_exactly_once() {
    // Stress with an exact invariant: the live breaker never refuses
    // (METRICS_ONLY), so each completed call is recorded by the shadow, or
    // refused by it, or lost to its own panicking predicate; calls whose body
    // panics complete nowhere.
    //
    // Time is a manual clock the threads move on (1 ms every 50 calls), so
    // the shadow opens, half-opens and closes again as the calls go, on any
    // machine; a single-threaded prefix makes sure its predicate panics and
    // it refuses at least once, whatever the threads' interleaving.
    const THREADS: u64 = 4;
    const CALLS: u64 = 5_000;
    let clock = ManualClock::new();
    let live = CircuitBreaker::with_clock("price", CircuitBreakerConfig::default(), clock.clone());
    live.transition_to_metrics_only().unwrap();
    let shadow = live.start_shadow(
        CircuitBreakerConfig::builder()
            .sliding_window_size(10)
            .minimum_number_of_calls(5)
            .wait_duration_in_open_state(Duration::from_millis(1))
            .permitted_number_of_calls_in_half_open_state(3)
            .record_error(|e: &u64| {
                assert!(e % 97 != 0, "a trial predicate panics now and then");
                true
            })
            .build()
            .unwrap(),
    );
    // The prefix: a trial predicate that panics (291 = 3 × 97), then five
    // failures (the shadow's minimum) that open it, then one call it refuses.
    let prefix: [u64; 7] = [291, 3, 6, 9, 12, 15, 1];
    for n in prefix {
        let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            live.call(|| if n % 3 == 0 { Err(n) } else { Ok(n) })
        }));
    }
    assert_eq!(shadow.shadow_panics(), 1);
    assert_eq!(shadow.call_totals().not_permitted(), 1);
    std::thread::scope(|s| {
        for t in 0..THREADS {
            let (live, clock) = (&live, &clock);
            s.spawn(move || {
                for i in 0..CALLS {
                    if i % 50 == 0 {
                        clock.advance(Duration::from_millis(1));
                    }
                    let n = t * CALLS + i;
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        live.call(|| {
                            assert!(n % 101 != 0, "the call itself panics now and then");
                            if n % 3 == 0 {
                                Err(n)
                            } else {
                                Ok(n)
                            }
                        })
                    }));
                }
            });
        }
    });
    let completed = live.call_totals().calls();
    let panicked_calls = (0..THREADS * CALLS).filter(|n| n % 101 == 0).count() as u64;
    assert_eq!(
        completed,
        prefix.len() as u64 + THREADS * CALLS - panicked_calls
    );
    assert_eq!(
        shadow.call_totals().calls() + shadow.shadow_panics(),
        completed,
        "each completed call reached the shadow once"
    );
    assert!(shadow.shadow_panics() > 0 && shadow.call_totals().not_permitted() > 0);
    assert_eq!(shadow.unobserved_calls(), 0);
}
