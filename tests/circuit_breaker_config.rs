//! Circuit breaker configuration: every invalid value is rejected with its
//! field, the value and the allowed range; the defaults are Resilience4j's.

use std::time::Duration;

use resil::circuit_breaker::{
    CircuitBreakerConfig, CircuitBreakerConfigBuilder, SlidingWindowType,
};
use resil::retry::IntervalFunction;

fn rejected(builder: CircuitBreakerConfigBuilder) -> String {
    builder
        .build()
        .expect_err("the value is invalid")
        .to_string()
}

fn b() -> CircuitBreakerConfigBuilder {
    CircuitBreakerConfig::builder()
}

#[test]
fn a_zero_failure_rate_threshold_is_rejected() {
    assert_eq!(
        rejected(b().failure_rate_threshold(0.0)),
        "invalid `failure_rate_threshold`: got 0, expected a percentage in (0, 100]"
    );
}

#[test]
fn a_failure_rate_threshold_above_100_is_rejected() {
    assert_eq!(
        rejected(b().failure_rate_threshold(100.5)),
        "invalid `failure_rate_threshold`: got 100.5, expected a percentage in (0, 100]"
    );
}

#[test]
fn a_nan_failure_rate_threshold_is_rejected() {
    assert_eq!(
        rejected(b().failure_rate_threshold(f32::NAN)),
        "invalid `failure_rate_threshold`: got NaN, expected a percentage in (0, 100]"
    );
}

#[test]
fn a_negative_slow_call_rate_threshold_is_rejected() {
    assert_eq!(
        rejected(b().slow_call_rate_threshold(-1.0)),
        "invalid `slow_call_rate_threshold`: got -1, expected a percentage in (0, 100]"
    );
}

#[test]
fn a_slow_call_rate_threshold_above_100_is_rejected() {
    assert_eq!(
        rejected(b().slow_call_rate_threshold(101.0)),
        "invalid `slow_call_rate_threshold`: got 101, expected a percentage in (0, 100]"
    );
}

#[test]
fn a_zero_slow_call_duration_threshold_is_rejected() {
    assert_eq!(
        rejected(b().slow_call_duration_threshold(Duration::ZERO)),
        "invalid `slow_call_duration_threshold`: got 0ns, expected a duration >= 1ns"
    );
}

#[test]
fn a_zero_sliding_window_size_is_rejected() {
    assert_eq!(
        rejected(b().sliding_window_size(0)),
        "invalid `sliding_window_size`: got 0, expected a number of calls in [1, 16777216]"
    );
}

#[test]
fn a_count_window_larger_than_16_mi_calls_is_rejected() {
    assert_eq!(
        rejected(b().sliding_window_size(16_777_217)),
        "invalid `sliding_window_size`: got 16777217, expected a number of calls in [1, 16777216]"
    );
}

#[test]
fn a_time_window_longer_than_a_week_is_rejected() {
    assert_eq!(
        rejected(
            b().sliding_window_type(SlidingWindowType::TimeBased)
                .sliding_window_size(604_801)
        ),
        "invalid `sliding_window_size`: got 604801, expected a number of seconds in [1, 604800]"
    );
}

#[test]
fn a_zero_minimum_number_of_calls_is_rejected() {
    assert_eq!(
        rejected(b().minimum_number_of_calls(0)),
        "invalid `minimum_number_of_calls`: got 0, expected an integer >= 1"
    );
}

#[test]
fn a_wait_in_the_open_state_below_one_millisecond_is_rejected() {
    assert_eq!(
        rejected(b().wait_duration_in_open_state(Duration::from_micros(999))),
        "invalid `wait_duration_in_open_state`: got 999µs, expected a duration >= 1ms"
    );
}

#[test]
fn an_invalid_wait_interval_function_is_rejected_under_its_own_name() {
    let err = b()
        .wait_interval_function_in_open_state(IntervalFunction::exponential(
            Duration::from_secs(1),
            0.5,
        ))
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "wait_interval_function_in_open_state");
    assert_eq!(err.expected(), "a multiplier >= 1.0");
}

#[test]
fn zero_permitted_calls_in_half_open_state_are_rejected() {
    assert_eq!(
        rejected(b().permitted_number_of_calls_in_half_open_state(0)),
        "invalid `permitted_number_of_calls_in_half_open_state`: got 0, expected an integer in [1, 16777216]"
    );
}

#[test]
fn more_than_16_mi_permitted_calls_in_half_open_state_are_rejected() {
    let err = b()
        .permitted_number_of_calls_in_half_open_state(u32::MAX)
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "permitted_number_of_calls_in_half_open_state");
    assert_eq!(err.got(), "4294967295");
}

#[test]
fn boundary_values_are_accepted() {
    let config = b()
        .failure_rate_threshold(100.0)
        .slow_call_rate_threshold(f32::MIN_POSITIVE)
        .slow_call_duration_threshold(Duration::from_nanos(1))
        .sliding_window_size(1)
        .minimum_number_of_calls(u32::MAX)
        .wait_duration_in_open_state(Duration::from_millis(1))
        .permitted_number_of_calls_in_half_open_state(1)
        .max_wait_duration_in_half_open_state(Duration::MAX)
        .build()
        .unwrap();
    assert_eq!(
        config.minimum_number_of_calls(),
        1,
        "capped at the window size"
    );
}

#[test]
fn the_default_config_is_resilience4j_s() {
    let c = CircuitBreakerConfig::default();
    assert_eq!(
        (
            c.sliding_window_type(),
            c.sliding_window_size(),
            c.minimum_number_of_calls(),
            c.failure_rate_threshold(),
            c.slow_call_rate_threshold(),
            c.slow_call_duration_threshold(),
            c.wait_duration_in_open_state(),
            c.automatic_transition_from_open_to_half_open_enabled(),
            c.permitted_number_of_calls_in_half_open_state(),
            c.max_wait_duration_in_half_open_state(),
        ),
        (
            SlidingWindowType::CountBased,
            100,
            100,
            50.0,
            100.0,
            Duration::from_secs(60),
            Duration::from_secs(60),
            false,
            10,
            Duration::ZERO,
        )
    );
    assert_eq!(
        CircuitBreakerConfig::builder()
            .build()
            .unwrap()
            .sliding_window_size(),
        100
    );
}
