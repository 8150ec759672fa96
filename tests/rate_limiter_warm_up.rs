//! The rate limiter's warm-up (Guava's `SmoothWarmingUp`, Sentinel's warm-up
//! controller): after idleness it starts at `limit_for_period / cold_factor`
//! and ramps to `limit_for_period` over `warm_up_period`, on the manual clock.

use std::time::Duration;

use resil::clock::ManualClock;
use resil::rate_limiter::{RateLimiter, RateLimiterConfig};

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
