//! Many threads on one breaker: invariants that must add up exactly, repeated
//! many times. Time is a frozen `ManualClock`, so every round is deterministic in
//! its totals whatever the interleaving.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Barrier;
use std::time::Duration;

use resil::circuit_breaker::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerEventKind, State,
};
use resil::clock::ManualClock;
use resil::Error;

const THREADS: usize = 8;

#[derive(Debug)]
enum Failure {
    Down,
    Ignored,
}

#[test]
fn exactly_n_half_open_probes_are_admitted_across_racing_threads_in_every_round() {
    const PROBES: usize = 7;
    let clock = ManualClock::new();
    let config = CircuitBreakerConfig::builder()
        .permitted_number_of_calls_in_half_open_state(PROBES as u32)
        .wait_duration_in_open_state(Duration::from_secs(1))
        .build()
        .unwrap();
    let cb = CircuitBreaker::with_clock("race", config, clock.clone());
    let mut events = cb.subscribe();
    for round in 0..200 {
        cb.transition_to_open().unwrap();
        clock.advance(Duration::from_secs(1) + Duration::from_nanos(1)); // strictly after the wait
        events.drain();
        let barrier = Barrier::new(THREADS);
        let permits: Vec<_> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..THREADS)
                .map(|_| {
                    s.spawn(|| {
                        barrier.wait();
                        (0..4)
                            .filter_map(|_| cb.try_acquire_permission().ok())
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap())
                .collect()
        });
        assert_eq!(permits.len(), PROBES, "round {round}");
        let to_half_open = events
            .drain()
            .iter()
            .filter(|e| {
                e.kind()
                    == CircuitBreakerEventKind::StateTransition {
                        from: State::Open,
                        to: State::HalfOpen,
                    }
            })
            .count();
        assert_eq!(
            to_half_open, 1,
            "one winner moves OPEN to HALF_OPEN, round {round}"
        );
        assert_eq!(
            cb.metrics().not_permitted_calls(),
            (THREADS * 4 - PROBES) as u64
        );
        drop(permits);
        let again: Vec<_> = (0..PROBES + 3)
            .filter_map(|_| cb.try_acquire_permission().ok())
            .collect();
        assert_eq!(again.len(), PROBES, "dropped probes gave every slot back");
    }
}

#[test]
fn counts_add_up_exactly_to_calls_made_while_probes_race_and_the_breaker_reopens() {
    const CALLS_PER_THREAD: u64 = 50;
    let clock = ManualClock::new();
    let config = CircuitBreakerConfig::builder()
        .permitted_number_of_calls_in_half_open_state(10)
        .ignore_error(|e: &Failure| matches!(e, Failure::Ignored))
        .build()
        .unwrap();
    let cb = CircuitBreaker::with_clock("sum", config, clock);
    for round in 0..200 {
        cb.transition_to_open().unwrap();
        cb.transition_to_half_open().unwrap();
        // The calls that run get consecutive sequence numbers; their outcome is
        // a function of it: success, ignored, failure, failure, …
        let seq = AtomicU64::new(0);
        let barrier = Barrier::new(THREADS);
        std::thread::scope(|s| {
            for _ in 0..THREADS {
                s.spawn(|| {
                    barrier.wait();
                    for _ in 0..CALLS_PER_THREAD {
                        let out = cb.call(|| match seq.fetch_add(1, Ordering::Relaxed) % 4 {
                            0 => Ok(()),
                            1 => Err(Failure::Ignored),
                            _ => Err(Failure::Down),
                        });
                        if let Err(Error::CallNotPermitted(r)) = out {
                            assert!(matches!(r.state(), State::HalfOpen | State::Open));
                        }
                    }
                });
            }
        });
        let ran = seq.load(Ordering::Relaxed);
        let m = cb.metrics();
        assert_eq!(m.state(), State::Open, "round {round}");
        // Ten recorded probes are sequence numbers 0..13 or 0..14 minus the
        // ignored ones: 4 successes (0, 4, 8, 12) and 6 failures, 60 %.
        assert_eq!(
            (m.successful_calls(), m.failed_calls()),
            (4, 6),
            "round {round}"
        );
        assert!(matches!(m.ignored_calls(), 3 | 4), "round {round}: {m:?}");
        assert_eq!(
            m.successful_calls() + m.failed_calls() + m.ignored_calls(),
            ran,
            "every call that ran was counted once"
        );
        assert_eq!(
            m.successful_calls() + m.failed_calls() + m.ignored_calls() + m.not_permitted_calls(),
            THREADS as u64 * CALLS_PER_THREAD,
            "round {round}: {m:?}"
        );
    }
}

#[test]
fn counts_add_up_exactly_in_a_closed_breaker_hammered_by_many_threads() {
    const CALLS_PER_THREAD: u64 = 5_000;
    let config = CircuitBreakerConfig::builder()
        .sliding_window_size(1 << 16)
        .ignore_error(|e: &Failure| matches!(e, Failure::Ignored))
        .build()
        .unwrap();
    let cb = CircuitBreaker::with_clock("closed", config, ManualClock::new());
    let barrier = Barrier::new(THREADS);
    std::thread::scope(|s| {
        for t in 0..THREADS as u64 {
            let (cb, barrier) = (&cb, &barrier);
            s.spawn(move || {
                barrier.wait();
                for i in 0..CALLS_PER_THREAD {
                    let _ = cb.call(|| match (t + i) % 5 {
                        0 => Err(Failure::Down),
                        1 => Err(Failure::Ignored),
                        _ => Ok(()),
                    });
                }
            });
        }
    });
    let m = cb.metrics();
    let total = THREADS as u64 * CALLS_PER_THREAD;
    assert_eq!(m.state(), State::Closed);
    assert_eq!(
        (m.failed_calls(), m.ignored_calls(), m.successful_calls()),
        (total / 5, total / 5, total * 3 / 5)
    );
    assert_eq!(m.buffered_calls() + m.ignored_calls(), total);
    assert_eq!(
        m.failure_rate(),
        Some(25.0),
        "one failure per four recorded calls"
    );
}

#[test]
fn fast_successes_skipping_the_lock_never_hide_a_concurrent_failure() {
    let config = CircuitBreakerConfig::builder()
        .sliding_window_size(100)
        .failure_rate_threshold(100.0)
        .build()
        .unwrap();
    let cb = CircuitBreaker::with_clock("clean", config, ManualClock::new());
    for _ in 0..100 {
        cb.call(|| Ok::<_, Failure>(())).unwrap();
    }
    for _ in 0..20 {
        let barrier = Barrier::new(THREADS);
        std::thread::scope(|s| {
            for t in 0..THREADS {
                let (cb, barrier) = (&cb, &barrier);
                s.spawn(move || {
                    barrier.wait();
                    for i in 0..2_000 {
                        let fail = t == 0 && i % 400 == 0;
                        let _ = cb.call(|| if fail { Err(Failure::Down) } else { Ok(()) });
                    }
                });
            }
        });
        let m = cb.metrics();
        assert_eq!(m.state(), State::Closed);
        assert_eq!(m.buffered_calls(), 100);
        assert!(m.failed_calls() <= 5, "{m:?}");
        // 99 fast successes after one failure: it must still be in the window.
        let _ = cb.call(|| Err::<(), _>(Failure::Down));
        for _ in 0..99 {
            cb.call(|| Ok::<_, Failure>(())).unwrap();
        }
        assert_eq!(cb.metrics().failed_calls(), 1);
        cb.call(|| Ok::<_, Failure>(())).unwrap();
        assert_eq!(cb.metrics().failed_calls(), 0);
    }
}

/// Issue 27's accounting identity: two threads make a million mixed calls
/// each through a breaker that opens, half-opens and closes many times
/// (the clock advances as they go), and the cumulative totals the registry
/// publishes (`resilience4j_circuitbreaker_calls_seconds_count{kind}` and
/// `resilience4j_circuitbreaker_not_permitted_calls_total`) equal, kind by
/// kind, what the callers saw — so they add up to every call made. The
/// window's own counts are reset by each transition; these never are.
#[test]
fn cumulative_totals_equal_what_two_threads_saw_over_two_million_mixed_calls() {
    use resil::circuit_breaker::CallKind;
    const CALLS: u64 = 1_000_000;
    let clock = ManualClock::new();
    let config = CircuitBreakerConfig::builder()
        .sliding_window_size(20)
        .minimum_number_of_calls(10)
        .failure_rate_threshold(50.0)
        .wait_duration_in_open_state(Duration::from_millis(1))
        .permitted_number_of_calls_in_half_open_state(4)
        .ignore_error(|e: &Failure| matches!(e, Failure::Ignored))
        .build()
        .unwrap();
    let cb = CircuitBreaker::with_clock("totals", config, clock.clone());
    // successful, failed, ignored, not permitted, as each caller saw them;
    // and how often a caller found the breaker OPEN at a clock step.
    let seen: [AtomicU64; 4] = Default::default();
    let found_open = AtomicU64::new(0);
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let (cb, clock, seen, found_open) = (&cb, &clock, &seen, &found_open);
            s.spawn(move || {
                for i in 0..CALLS {
                    // Failure-heavy stretches open the breaker; the clock
                    // moving on lets it half-open and close again.
                    if i % 1_000 == 0 {
                        if cb.state() == State::Open {
                            found_open.fetch_add(1, Ordering::Relaxed);
                        }
                        clock.advance(Duration::from_millis(1));
                    }
                    let phase = (i / 5_000 + t) % 3;
                    let result = cb.call(|| match (phase, i % 7) {
                        (0, _) | (_, 0) => Err(Failure::Down),
                        (_, 1) => Err(Failure::Ignored),
                        _ => Ok(()),
                    });
                    let slot = match result {
                        Ok(()) => 0,
                        Err(Error::Call(Failure::Down)) => 1,
                        Err(Error::Call(Failure::Ignored)) => 2,
                        Err(Error::CallNotPermitted(_)) => 3,
                        Err(other) => panic!("unexpected {other:?}"),
                    };
                    seen[slot].fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    let seen: Vec<u64> = seen.iter().map(|n| n.load(Ordering::Relaxed)).collect();
    let totals = cb.call_totals();
    assert_eq!(
        [
            totals.timer(CallKind::Successful).count(),
            totals.timer(CallKind::Failed).count(),
            totals.timer(CallKind::Ignored).count(),
            totals.not_permitted(),
        ],
        [seen[0], seen[1], seen[2], seen[3]]
    );
    assert_eq!(totals.calls(), 2 * CALLS);
    // The run exercised what it claims to: refusals, failures, ignored
    // errors, and a breaker found OPEN again and again.
    assert!(seen.iter().all(|&n| n > 0), "{seen:?}");
    let found_open = found_open.load(Ordering::Relaxed);
    assert!(found_open > 10, "found OPEN {found_open} times");
}
