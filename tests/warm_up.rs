//! Warm-up ramps, on the manual clock: the rate limiter's (Guava's
//! `SmoothWarmingUp`, Sentinel's warm-up controller: after idleness it starts
//! at `limit_for_period / cold_factor` and ramps to `limit_for_period` over
//! `warm_up_period`), and the circuit breaker's post-recovery ramp (after
//! HALF_OPEN closes it, a growing fraction of the calls, from
//! `1 / cold_factor`).

use std::time::Duration;

use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
use resil::clock::ManualClock;
use resil::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil::Error;

const SECOND: Duration = Duration::from_secs(1);

fn limiter(clock: &ManualClock, limit: u32, warm_up_secs: u64, cold_factor: u32) -> RateLimiter {
    let config = RateLimiterConfig::builder()
        .limit_for_period(limit)
        .limit_refresh_period(SECOND)
        .timeout_duration(Duration::ZERO)
        .warm_up_period(Duration::from_secs(warm_up_secs))
        .cold_factor(cold_factor)
        .build()
        .unwrap();
    RateLimiter::with_clock("catalog", config, clock.clone())
}

/// Permits granted this cycle when asking for far more.
fn granted(limiter: &RateLimiter) -> u32 {
    (0..1_000)
        .filter(|_| limiter.acquire_permission(1).is_ok())
        .count() as u32
}

#[test]
fn a_new_limiter_starts_cold_and_ramps_linearly_to_its_limit() {
    let clock = ManualClock::new();
    let l = limiter(&clock, 30, 10, 3);
    let mut seen = Vec::new();
    for _ in 0..12 {
        seen.push(granted(&l));
        clock.advance(SECOND);
    }
    // cold = 30 / 3 = 10, then + 20 × k / 10 each cycle.
    assert_eq!(seen, [10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30, 30]);
}

#[test]
fn idleness_longer_than_the_warm_up_period_makes_it_cold_again() {
    let clock = ManualClock::new();
    let l = limiter(&clock, 30, 4, 3);
    for _ in 0..6 {
        granted(&l);
        clock.advance(SECOND);
    }
    assert_eq!(granted(&l), 30, "warm");
    // Idle for the warm-up period exactly (4 cycles since the last acquire): still warm.
    clock.advance(4 * SECOND);
    assert_eq!(granted(&l), 30);
    // Idle for longer than the warm-up period: cold again.
    clock.advance(6 * SECOND);
    assert_eq!(granted(&l), 10);
    clock.advance(2 * SECOND);
    assert_eq!(granted(&l), 20, "half-way up again");
}

#[test]
fn a_gap_within_the_ramp_resumes_where_the_ramp_is_by_time() {
    let clock = ManualClock::new();
    let l = limiter(&clock, 100, 10, 4);
    assert_eq!(granted(&l), 25);
    clock.advance(5 * SECOND);
    // No acquire in cycles 1 to 4; cycle 5 is half-way: 25 + 75 × 5 / 10.
    assert_eq!(granted(&l), 62);
}

#[test]
fn reading_the_permits_does_not_skip_a_cycle_of_the_ramp() {
    let clock = ManualClock::new();
    let l = limiter(&clock, 30, 10, 3);
    assert!(l.available_permissions() >= 0);
    assert_eq!(granted(&l), 10, "a metrics read first does not warm it");
    clock.advance(20 * SECOND);
    let _ = l.available_permissions();
    assert_eq!(granted(&l), 10, "cold again after idleness, read or not");
}

#[test]
fn without_a_warm_up_period_the_first_cycle_is_full() {
    let clock = ManualClock::new();
    let l = limiter(&clock, 30, 0, 3);
    assert_eq!(granted(&l), 30);
}

#[test]
fn a_new_limit_for_period_is_the_ramps_new_end() {
    let clock = ManualClock::new();
    let l = limiter(&clock, 30, 2, 3);
    assert_eq!(granted(&l), 10);
    l.change_limit_for_period(60).unwrap();
    clock.advance(2 * SECOND);
    assert_eq!(granted(&l), 60);
    assert_eq!(l.config().limit_for_period(), 60);
}

// ---------------------------------------------------------------------------
// The circuit breaker's ramp after recovery.

fn recovering_breaker(clock: &ManualClock, ramp_secs: u64) -> CircuitBreaker {
    let config = CircuitBreakerConfig::builder()
        .sliding_window_size(10)
        .minimum_number_of_calls(10)
        .permitted_number_of_calls_in_half_open_state(2)
        .wait_duration_in_open_state(SECOND)
        .warm_up_period(Duration::from_secs(ramp_secs))
        .cold_factor(4)
        .build()
        .unwrap();
    let cb = CircuitBreaker::with_clock("catalog", config, clock.clone());
    cb.transition_to_open().unwrap();
    clock.advance(SECOND + Duration::from_millis(1));
    for _ in 0..2 {
        cb.call(|| Ok::<_, ()>(())).unwrap();
    }
    assert_eq!(cb.state(), State::Closed, "the probes closed it");
    cb
}

/// Calls the breaker admitted out of `n`.
fn admitted(cb: &CircuitBreaker, n: usize) -> usize {
    (0..n)
        .filter(|_| cb.call(|| Ok::<_, ()>(())).is_ok())
        .count()
}

#[test]
fn a_breaker_closed_by_its_probes_admits_a_growing_fraction_then_everything() {
    let clock = ManualClock::new();
    let cb = recovering_breaker(&clock, 8);
    assert_eq!(admitted(&cb, 40), 10, "a quarter at first");
    clock.advance(4 * SECOND);
    // Half-way: 1/4 + 3/4 × 1/2 = 5/8 (spread evenly from call 40 on).
    assert_eq!(admitted(&cb, 40), 25);
    clock.advance(4 * SECOND);
    assert_eq!(admitted(&cb, 40), 40, "the ramp is over");
    let refused = cb.metrics().not_permitted_calls();
    assert_eq!(refused, 45, "30 + 15 refused during the ramp, counted");
}

#[test]
fn a_ramp_refusal_says_closed_and_ramping_and_a_relapse_reopens() {
    let clock = ManualClock::new();
    let cb = recovering_breaker(&clock, 8);
    let refusal = (0..4)
        .find_map(|_| cb.call(|| Ok::<_, ()>(())).err())
        .expect("a quarter is admitted: some of four are refused");
    let Error::CallNotPermitted(r) = refusal else {
        panic!("{refusal:?}")
    };
    assert_eq!(r.state(), State::Closed);
    assert_eq!(
        r.to_string(),
        "circuit breaker 'catalog' is CLOSED and ramping up after recovery: this call is not permitted"
    );
    // The admitted calls are recorded as in CLOSED: failing ones reopen it.
    for _ in 0..200 {
        let _ = cb.call(|| Err::<(), _>(()));
    }
    assert_eq!(cb.state(), State::Open);
}

#[test]
fn a_manual_close_or_a_breaker_without_a_ramp_admits_everything() {
    let clock = ManualClock::new();
    let cb = recovering_breaker(&clock, 8);
    cb.transition_to_closed().unwrap();
    assert_eq!(admitted(&cb, 20), 20, "an operator's CLOSED does not ramp");
    let no_ramp = recovering_breaker(&clock, 0);
    assert_eq!(admitted(&no_ramp, 20), 20);
}
