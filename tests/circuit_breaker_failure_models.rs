//! The breaker's failure models (`failure-model: RATE | CONSECUTIVE |
//! COUNT`), each driven on the manual clock: what opens CLOSED, how HALF_OPEN
//! decides, what the slow-call rate, METRICS_ONLY, events, metrics and a
//! reload keep doing whatever the model; and a proptest of both new models
//! against a small reference model.

use std::time::Duration;

use proptest::prelude::*;
use resil::circuit_breaker::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerConfigBuilder, CircuitBreakerEventKind,
    FailureModel, State,
};
use resil::clock::ManualClock;
use resil::Error;

#[derive(Debug)]
struct Down;
#[derive(Debug)]
struct Business;

fn fail(cb: &CircuitBreaker) -> bool {
    matches!(cb.call(|| Err::<(), _>(Down)), Err(Error::Call(_)))
}

fn succeed(cb: &CircuitBreaker) -> bool {
    cb.call(|| Ok::<_, Down>(())).is_ok()
}

fn ignored(cb: &CircuitBreaker) -> bool {
    matches!(cb.call(|| Err::<(), _>(Business)), Err(Error::Call(_)))
}

fn consecutive(k: u32) -> CircuitBreakerConfigBuilder {
    CircuitBreakerConfig::builder()
        .failure_model(FailureModel::Consecutive)
        .consecutive_failure_threshold(k)
        .wait_duration_in_open_state(Duration::from_secs(1))
        .permitted_number_of_calls_in_half_open_state(3)
        .ignore_error(|_: &Business| true)
}

fn count(n: u32, interval: Duration) -> CircuitBreakerConfigBuilder {
    CircuitBreakerConfig::builder()
        .failure_model(FailureModel::Count)
        .failure_count_threshold(n)
        .failure_count_interval(interval)
        .wait_duration_in_open_state(Duration::from_secs(1))
        .permitted_number_of_calls_in_half_open_state(3)
        .ignore_error(|_: &Business| true)
}

fn breaker(config: CircuitBreakerConfigBuilder, clock: &ManualClock) -> CircuitBreaker {
    CircuitBreaker::with_clock("dep", config.build().unwrap(), clock.clone())
}

#[test]
fn consecutive_opens_after_k_failures_in_a_row_and_a_success_resets_the_run() {
    let clock = ManualClock::new();
    let cb = breaker(consecutive(5), &clock);
    for _ in 0..4 {
        assert!(fail(&cb));
    }
    assert_eq!(cb.metrics().consecutive_failures(), 4);
    assert!(succeed(&cb));
    assert_eq!(cb.metrics().consecutive_failures(), 0);
    for _ in 0..4 {
        assert!(fail(&cb));
    }
    // An ignored error neither extends nor ends the run.
    assert!(ignored(&cb));
    assert_eq!(cb.metrics().consecutive_failures(), 4);
    assert_eq!(cb.state(), State::Closed);
    assert!(fail(&cb));
    assert_eq!(cb.state(), State::Open);
    assert!(!succeed(&cb), "OPEN refuses");
    // The window is still kept and shown: 10 recorded calls, 9 failed (the
    // ignored error is not recorded), far below the default minimum of 100
    // calls, which CONSECUTIVE does not wait for.
    let m = cb.metrics();
    assert_eq!((m.buffered_calls(), m.failed_calls()), (10, 9));
    assert_eq!(m.failure_rate(), None);
}

#[test]
fn consecutive_ignores_the_failure_rate_threshold_and_a_small_window() {
    let clock = ManualClock::new();
    // A window of 2 calls at 100 % failures would open a RATE breaker at
    // the second failure; CONSECUTIVE waits for its run of 4.
    let cb = breaker(
        consecutive(4)
            .sliding_window_size(2)
            .minimum_number_of_calls(2),
        &clock,
    );
    for _ in 0..3 {
        assert!(fail(&cb));
        assert_eq!(cb.state(), State::Closed);
    }
    assert_eq!(cb.metrics().failure_rate(), Some(100.0));
    assert!(fail(&cb));
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn count_opens_after_n_failures_within_the_interval_whatever_succeeds_between() {
    let clock = ManualClock::new();
    let cb = breaker(count(3, Duration::from_secs(10)), &clock);
    assert!(fail(&cb));
    for _ in 0..50 {
        assert!(succeed(&cb));
    }
    clock.advance(Duration::from_secs(4));
    assert!(fail(&cb));
    assert!(succeed(&cb));
    clock.advance(Duration::from_secs(6));
    assert_eq!(cb.metrics().failures_in_interval(), 2);
    // The third failure lands exactly 10 s after the first: within.
    assert!(fail(&cb));
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn count_does_not_open_when_the_failures_spread_over_more_than_the_interval() {
    let clock = ManualClock::new();
    let cb = breaker(count(3, Duration::from_secs(10)), &clock);
    for _ in 0..10 {
        assert!(fail(&cb));
        // Three failures span 10 s + 2 ms: never within one interval.
        clock.advance(Duration::from_millis(5_001));
    }
    assert_eq!(cb.state(), State::Closed);
    // 5 001 ms after the last failure, the one before it is 10 002 ms old.
    assert_eq!(cb.metrics().failures_in_interval(), 1);
}

#[test]
fn count_slides_exactly_a_burst_across_a_ten_second_boundary_opens() {
    // Sentinel's tumbling bucket would split this burst 2 + 2 at t = 10 s
    // and not open with a threshold of 3; the sliding window opens.
    let clock = ManualClock::new();
    let cb = breaker(count(3, Duration::from_secs(10)), &clock);
    clock.advance(Duration::from_millis(9_000));
    assert!(fail(&cb));
    clock.advance(Duration::from_millis(900));
    assert!(fail(&cb));
    clock.advance(Duration::from_millis(200));
    assert_eq!(cb.state(), State::Closed);
    assert!(fail(&cb));
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn a_failed_probe_reopens_and_a_clean_round_closes_for_both_models() {
    for config in [
        consecutive(2).minimum_number_of_calls(2),
        count(2, Duration::from_secs(5)).minimum_number_of_calls(2),
    ] {
        let clock = ManualClock::new();
        let cb = breaker(config, &clock);
        let model = cb.config().failure_model();
        assert!(fail(&cb) && fail(&cb));
        assert_eq!(cb.state(), State::Open, "{model}");

        // A success then a failure: the failure reopens at once.
        clock.advance(Duration::from_millis(1_001));
        assert!(succeed(&cb));
        assert_eq!(cb.state(), State::HalfOpen, "{model}");
        assert!(fail(&cb));
        assert_eq!(cb.state(), State::Open, "{model}: a failed probe reopens");

        // An ignored probe gives its slot back and decides nothing; two
        // successes (min(minimum 2, permitted 3)) close.
        clock.advance(Duration::from_millis(1_001));
        assert!(ignored(&cb));
        assert!(succeed(&cb));
        assert_eq!(cb.state(), State::HalfOpen, "{model}");
        assert!(succeed(&cb));
        assert_eq!(cb.state(), State::Closed, "{model}: a clean round closes");

        // CLOSED starts with no memory of the failures that opened it.
        let m = cb.metrics();
        assert_eq!(
            (m.consecutive_failures(), m.failures_in_interval()),
            (0, 0),
            "{model}"
        );
        assert!(fail(&cb));
        assert_eq!(cb.state(), State::Closed, "{model}");
    }
}

#[test]
fn the_slow_call_rate_still_opens_whatever_the_failure_model() {
    for config in [consecutive(5), count(5, Duration::from_secs(10))] {
        let clock = ManualClock::new();
        let cb = breaker(
            config
                .sliding_window_size(4)
                .minimum_number_of_calls(4)
                .slow_call_duration_threshold(Duration::from_millis(100))
                .slow_call_rate_threshold(50.0),
            &clock,
        );
        for _ in 0..2 {
            assert!(succeed(&cb));
        }
        for _ in 0..2 {
            let slow = cb.call(|| {
                clock.advance(Duration::from_millis(150));
                Ok::<_, Down>(())
            });
            assert!(slow.is_ok());
        }
        assert_eq!(cb.state(), State::Open, "{}", cb.config().failure_model());
        assert_eq!(cb.metrics().slow_call_rate(), Some(50.0));
    }
}

#[test]
fn each_model_publishes_its_own_threshold_event() {
    let clock = ManualClock::new();
    let cb = breaker(consecutive(2), &clock);
    let mut events = cb.subscribe();
    assert!(fail(&cb) && fail(&cb));
    let kinds: Vec<_> = events.drain().iter().map(|e| e.kind()).collect();
    assert!(
        kinds.contains(&CircuitBreakerEventKind::ConsecutiveFailuresExceeded { failures: 2 }),
        "{kinds:?}"
    );
    assert!(kinds.contains(&CircuitBreakerEventKind::StateTransition {
        from: State::Closed,
        to: State::Open
    }));

    let cb = breaker(count(2, Duration::from_secs(3)), &clock);
    let mut events = cb.subscribe();
    assert!(fail(&cb) && fail(&cb));
    let got = events.drain();
    let kinds: Vec<_> = got.iter().map(|e| e.kind()).collect();
    assert!(
        kinds.contains(&CircuitBreakerEventKind::FailureCountExceeded {
            failures: 2,
            interval: Duration::from_secs(3)
        }),
        "{kinds:?}"
    );
    let labels: Vec<&str> = got.iter().map(|e| e.label()).collect();
    assert!(labels.contains(&"FAILURE_COUNT_EXCEEDED"), "{labels:?}");
}

#[test]
fn metrics_only_reports_a_tripped_model_once_and_never_opens() {
    let clock = ManualClock::new();
    let cb = breaker(consecutive(2), &clock);
    cb.transition_to_metrics_only().unwrap();
    let mut events = cb.subscribe();
    for _ in 0..6 {
        assert!(fail(&cb));
    }
    assert_eq!(cb.state(), State::MetricsOnly);
    let exceeded = events
        .drain()
        .iter()
        .filter(|e| {
            matches!(
                e.kind(),
                CircuitBreakerEventKind::ConsecutiveFailuresExceeded { .. }
            )
        })
        .count();
    assert_eq!(exceeded, 1);
    assert_eq!(cb.metrics().consecutive_failures(), 6);
}

#[test]
fn a_reload_with_the_same_window_carries_the_run_over() {
    let clock = ManualClock::new();
    let cb = breaker(consecutive(3), &clock);
    assert!(fail(&cb) && fail(&cb));
    let (next, carried) = cb.reconfigured(consecutive(3).build().unwrap());
    assert!(carried);
    assert_eq!(next.metrics().consecutive_failures(), 2);
    assert!(fail(&next));
    assert_eq!(next.state(), State::Open);
}

#[test]
fn the_rate_model_keeps_no_run_and_is_the_default() {
    let clock = ManualClock::new();
    let cb = breaker(
        CircuitBreakerConfig::builder()
            .sliding_window_size(4)
            .minimum_number_of_calls(4),
        &clock,
    );
    assert_eq!(cb.config().failure_model(), FailureModel::Rate);
    for _ in 0..3 {
        assert!(fail(&cb));
    }
    assert_eq!(cb.metrics().consecutive_failures(), 0);
    assert_eq!(cb.state(), State::Closed);
    assert!(succeed(&cb));
    assert_eq!(cb.state(), State::Open, "75 % >= 50 %");
}

// ---------------------------------------------------------------------------
// Proptest against a reference model of CONSECUTIVE and COUNT.

#[derive(Debug, Clone, Copy)]
enum Op {
    Success,
    Failure,
    Ignored,
    Advance(u64),
}

#[derive(Debug)]
enum ModelState {
    /// The run, and the instants of the failures (ms) since CLOSED.
    Closed {
        run: u32,
        failures: Vec<u64>,
    },
    Open {
        until: u64,
    },
    /// Successful probes so far.
    HalfOpen(u32),
}

struct Model {
    consecutive: bool,
    threshold: u32,
    interval: u64,
    decide_after: u32,
    wait: u64,
    now: u64,
    state: ModelState,
}

impl Model {
    fn open(&mut self) {
        self.state = ModelState::Open {
            until: self.now + self.wait,
        };
    }

    /// Whether the call was permitted.
    fn call(&mut self, op: Op) -> bool {
        if let ModelState::Open { until } = self.state {
            if self.now <= until {
                return false;
            }
            self.state = ModelState::HalfOpen(0);
        }
        let failed = match op {
            Op::Success => false,
            Op::Failure => true,
            Op::Ignored => return true,
            Op::Advance(_) => unreachable!(),
        };
        let (now, threshold, interval) = (self.now, self.threshold as usize, self.interval);
        match &mut self.state {
            ModelState::Closed { run, failures } => {
                if !failed {
                    *run = 0;
                    return true;
                }
                *run += 1;
                failures.push(now);
                let tripped = if self.consecutive {
                    *run >= self.threshold
                } else {
                    failures.len() >= threshold
                        && now - failures[failures.len() - threshold] <= interval
                };
                if tripped {
                    self.open();
                }
            }
            ModelState::HalfOpen(ok) => {
                if failed {
                    self.open();
                } else {
                    *ok += 1;
                    if *ok >= self.decide_after {
                        self.state = ModelState::Closed {
                            run: 0,
                            failures: Vec::new(),
                        };
                    }
                }
            }
            ModelState::Open { .. } => unreachable!(),
        }
        true
    }

    fn state(&self) -> State {
        match self.state {
            ModelState::Closed { .. } => State::Closed,
            ModelState::Open { .. } => State::Open,
            ModelState::HalfOpen(_) => State::HalfOpen,
        }
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Success),
        4 => Just(Op::Failure),
        1 => Just(Op::Ignored),
        2 => (0u64..8).prop_map(Op::Advance),
    ]
}

proptest! {
    #[test]
    fn consecutive_and_count_match_a_reference_model(
        consecutive in any::<bool>(),
        threshold in 1u32..5,
        interval in 1u64..20,
        minimum in 1u32..5,
        probes in 1u32..4,
        ops in proptest::collection::vec(op(), 0..150),
    ) {
        let clock = ManualClock::new();
        let builder = CircuitBreakerConfig::builder()
            .failure_model(if consecutive { FailureModel::Consecutive } else { FailureModel::Count })
            .consecutive_failure_threshold(threshold)
            .failure_count_threshold(threshold)
            .failure_count_interval(Duration::from_millis(interval))
            .sliding_window_size(3)
            .minimum_number_of_calls(minimum)
            .permitted_number_of_calls_in_half_open_state(probes)
            .wait_duration_in_open_state(Duration::from_millis(10))
            .ignore_error(|_: &Business| true);
        let cb = breaker(builder, &clock);
        let mut model = Model {
            consecutive,
            threshold,
            interval,
            decide_after: minimum.min(probes),
            wait: 10,
            now: 0,
            state: ModelState::Closed { run: 0, failures: Vec::new() },
        };
        for (i, op) in ops.into_iter().enumerate() {
            let permitted = match op {
                Op::Advance(ms) => {
                    clock.advance(Duration::from_millis(ms));
                    model.now += ms;
                    continue;
                }
                Op::Success => succeed(&cb),
                Op::Failure => fail(&cb),
                Op::Ignored => ignored(&cb),
            };
            prop_assert_eq!(permitted, model.call(op), "op {} {:?}", i, op);
            prop_assert_eq!(cb.state(), model.state(), "after op {} {:?}", i, op);
            if let ModelState::Closed { run, .. } = model.state {
                prop_assert_eq!(cb.metrics().consecutive_failures(), run, "after op {} {:?}", i, op);
            }
        }
    }
}
