//! Property test: a breaker driven by random sequential calls and clock moves
//! behaves exactly like a small reference model of Resilience4j's state machine
//! (count window, minimum calls, >= threshold, lazy OPEN -> HALF_OPEN strictly
//! after the wait, a probe round decided after min(minimum calls, N) probes,
//! ignored probes giving their slot back).

use std::time::Duration;

use proptest::prelude::*;
use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
use resil::clock::ManualClock;
use resil::Error;

#[derive(Debug, Clone, Copy)]
enum Op {
    Success,
    Failure,
    Ignored,
    Advance(u64),
}

#[derive(Debug)]
struct Ignored;
#[derive(Debug)]
struct Down;

#[derive(Debug)]
enum ModelState {
    Closed(Vec<bool>),
    Open { until: u64, shown: Vec<bool> },
    HalfOpen(Vec<bool>),
}

struct Model {
    window: usize,
    minimum: usize,
    probes: usize,
    wait: u64,
    now: u64,
    state: ModelState,
}

fn exceeded(outcomes: &[bool], minimum: usize) -> Option<bool> {
    (outcomes.len() >= minimum).then(|| {
        let failed = outcomes.iter().filter(|f| **f).count();
        failed as f32 * 100.0 / outcomes.len() as f32 >= 50.0
    })
}

impl Model {
    /// Returns whether the call was permitted.
    fn call(&mut self, op: Op) -> bool {
        if let ModelState::Open { until, .. } = self.state {
            if self.now <= until {
                return false;
            }
            self.state = ModelState::HalfOpen(Vec::new());
        }
        let failed = match op {
            Op::Success => false,
            Op::Failure => true,
            Op::Ignored => return true,
            Op::Advance(_) => unreachable!(),
        };
        let (minimum, now, wait) = (self.minimum, self.now, self.wait);
        match &mut self.state {
            ModelState::Closed(w) => {
                w.push(failed);
                if w.len() > self.window {
                    w.remove(0);
                }
                if exceeded(w, minimum.min(self.window)) == Some(true) {
                    let shown = std::mem::take(w);
                    self.state = ModelState::Open {
                        until: now + wait,
                        shown,
                    };
                }
            }
            ModelState::HalfOpen(p) => {
                p.push(failed);
                match exceeded(p, minimum.min(self.probes)) {
                    Some(true) => {
                        let shown = std::mem::take(p);
                        self.state = ModelState::Open {
                            until: now + wait,
                            shown,
                        };
                    }
                    Some(false) => self.state = ModelState::Closed(Vec::new()),
                    None => {}
                }
            }
            ModelState::Open { .. } => unreachable!(),
        }
        true
    }

    fn expected(&self) -> (State, u64, u64) {
        let (state, shown) = match &self.state {
            ModelState::Closed(w) => (State::Closed, w),
            ModelState::Open { shown, .. } => (State::Open, shown),
            ModelState::HalfOpen(p) => (State::HalfOpen, p),
        };
        let failed = shown.iter().filter(|f| **f).count() as u64;
        (state, shown.len() as u64, failed)
    }
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => Just(Op::Success),
        3 => Just(Op::Failure),
        1 => Just(Op::Ignored),
        2 => (0u64..15).prop_map(Op::Advance),
    ]
}

proptest! {
    #[test]
    fn the_breaker_matches_a_reference_model_of_its_state_machine(
        window in 1usize..6,
        minimum in 1usize..8,
        probes in 1usize..4,
        ops in proptest::collection::vec(op(), 0..120),
    ) {
        let clock = ManualClock::new();
        let config = CircuitBreakerConfig::builder()
            .sliding_window_size(window as u32)
            .minimum_number_of_calls(minimum as u32)
            .permitted_number_of_calls_in_half_open_state(probes as u32)
            .wait_duration_in_open_state(Duration::from_millis(10))
            .ignore_error(|_: &Ignored| true)
            .build()
            .unwrap();
        let cb = CircuitBreaker::with_clock("model", config, clock.clone());
        let mut model = Model {
            window,
            minimum,
            probes,
            wait: 10,
            now: 0,
            state: ModelState::Closed(Vec::new()),
        };
        for (i, op) in ops.into_iter().enumerate() {
            let permitted = match op {
                Op::Advance(ms) => {
                    clock.advance(Duration::from_millis(ms));
                    model.now += ms;
                    continue;
                }
                Op::Success => cb.call(|| Ok::<_, Down>(())).is_ok(),
                Op::Failure => matches!(cb.call(|| Err::<(), _>(Down)), Err(Error::Call(_))),
                Op::Ignored => matches!(cb.call(|| Err::<(), _>(Ignored)), Err(Error::Call(_))),
            };
            prop_assert_eq!(permitted, model.call(op), "op {} {:?}", i, op);
            let m = cb.metrics();
            prop_assert_eq!(
                (m.state(), m.buffered_calls(), m.failed_calls()),
                model.expected(),
                "after op {} {:?}", i, op
            );
        }
    }
}
