use super::*;

fn traffic() -> Traffic {
    Traffic::new(200.0, Duration::from_millis(40), Duration::from_millis(120))
        .deadline(Duration::from_secs(1))
}

fn keys(findings: &[Finding], severity: Severity) -> Vec<&str> {
    findings
        .iter()
        .filter(|f| f.severity == severity)
        .map(|f| f.key_path())
        .collect()
}

#[test]
fn little_s_law_sizes_the_bulkhead() {
    let small = BulkheadConfig::builder()
        .max_concurrent_calls(23)
        .build()
        .unwrap();
    let f = advise(&Protection::new("inv").bulkhead(&small), &traffic());
    assert_eq!(
        f[0].to_string(),
        "warning: resilience4j.bulkhead.instances.inv.max-concurrent-calls: 23 is below the 24 \
         calls in flight at p99 (Little's law: 200 qps × 120ms): normal traffic is refused; \
         size it at 24 or more"
    );
    let enough = BulkheadConfig::builder()
        .max_concurrent_calls(24)
        .build()
        .unwrap();
    let f = advise(&Protection::new("inv").bulkhead(&enough), &traffic());
    assert_eq!(f[0].severity(), Severity::Info);
    assert!(f[0].message().contains("(8 at p50"));
}

#[test]
fn the_breaker_s_time_to_open_follows_its_window_and_minimum() {
    // Resilience4j's defaults: a count window of 100, 50 %, minimum 100. A
    // window full of successes needs 50 failures; an empty one, 100.
    let cb = CircuitBreakerConfig::default();
    let f = advise(&Protection::new("inv").circuit_breaker(&cb), &traffic());
    assert_eq!(
        f[0].message(),
        "after an outage starts, about 50 calls fail (≈0.25s at 200 qps) before the breaker \
         opens; from an empty window (after a restart or on closing) 100"
    );
    let timed = CircuitBreakerConfig::builder()
        .sliding_window_type(SlidingWindowType::TimeBased)
        .sliding_window_size(10)
        .minimum_number_of_calls(10)
        .build()
        .unwrap();
    let f = advise(&Protection::new("inv").circuit_breaker(&timed), &traffic());
    assert!(
        f[0].message().contains("about 1000 calls fail (≈5.0s"),
        "{}",
        f[0]
    );
}

#[test]
fn a_retry_outside_the_breaker_opens_it_sooner_and_a_hang_adds_a_timeout() {
    let cb = CircuitBreakerConfig::default();
    let retry = RetryConfig::default(); // 3 attempts
    let tl = TimeLimiterConfig::default(); // 1 s
    let f = advise(
        &Protection::new("inv")
            .circuit_breaker(&cb)
            .retry(&retry)
            .time_limiter(&tl),
        &Traffic::new(200.0, Duration::from_millis(40), Duration::from_millis(120)),
    );
    let opening = f
        .iter()
        .find(|f| f.key() == "minimum-number-of-calls")
        .unwrap();
    assert_eq!(
        opening.message(),
        "after an outage starts, about 50 calls fail (≈0.08s at 200 qps, 3 failed attempts a \
         request: the retry is outside the breaker) before the breaker opens, 1000ms more if the \
         downstream hangs (a failure is recorded when its timeout fires); from an empty window \
         (after a restart or on closing) 100"
    );
}

#[test]
fn a_low_traffic_breaker_that_opens_late_or_never_is_warned_about() {
    let slow = Traffic::new(1.0, Duration::from_millis(40), Duration::from_millis(120));
    let f = advise(
        &Protection::new("inv").circuit_breaker(&CircuitBreakerConfig::default()),
        &slow,
    );
    assert_eq!(f[0].severity(), Severity::Warning);
    assert!(
        f[0].message()
            .contains("about 50 calls fail (≈50.0s at 1 qps)"),
        "{}",
        f[0]
    );
    let timed = CircuitBreakerConfig::builder()
        .sliding_window_type(SlidingWindowType::TimeBased)
        .sliding_window_size(10)
        .minimum_number_of_calls(20)
        .build()
        .unwrap();
    let f = advise(&Protection::new("inv").circuit_breaker(&timed), &slow);
    assert_eq!(
        f[0].to_string(),
        "warning: resilience4j.circuitbreaker.instances.inv.minimum-number-of-calls: the 10s time \
         window holds at most 10 calls at 1 qps, fewer than minimum-number-of-calls 20: the breaker \
         never opens, however long the outage; lower minimum-number-of-calls or widen the window"
    );
}

#[test]
fn a_count_window_of_a_few_milliseconds_is_warned_about() {
    let tiny = CircuitBreakerConfig::builder()
        .sliding_window_size(10)
        .minimum_number_of_calls(10)
        .build()
        .unwrap();
    let f = advise(&Protection::new("inv").circuit_breaker(&tiny), &traffic());
    assert_eq!(
        keys(&f, Severity::Warning),
        ["resilience4j.circuitbreaker.instances.inv.sliding-window-size"]
    );
    assert!(
        f[0].message().contains("covers 50ms of traffic"),
        "{}",
        f[0]
    );
}

#[test]
fn thresholds_that_defeat_each_other_are_warned_about() {
    let cb = CircuitBreakerConfig::builder()
        .slow_call_duration_threshold(Duration::from_secs(2))
        .build()
        .unwrap();
    let tl = TimeLimiterConfig::builder()
        .timeout_duration(Duration::from_secs(1))
        .build()
        .unwrap();
    let f = advise(
        &Protection::new("inv")
            .circuit_breaker(&cb)
            .time_limiter(&tl),
        &traffic(),
    );
    assert_eq!(
        keys(&f, Severity::Warning),
        [
            "resilience4j.circuitbreaker.instances.inv.slow-call-duration-threshold",
            "resilience4j.timelimiter.instances.inv.timeout-duration",
        ]
    );
}

#[test]
fn a_retry_without_backoff_and_one_that_cannot_fit_the_deadline_are_warned_about() {
    let eager = RetryConfig::builder()
        .wait_duration(Duration::ZERO)
        .build()
        .unwrap();
    let tl = TimeLimiterConfig::builder()
        .timeout_duration(Duration::from_millis(300))
        .build()
        .unwrap();
    let f = advise(
        &Protection::new("inv").retry(&eager).time_limiter(&tl),
        &traffic(),
    );
    assert_eq!(
        keys(&f, Severity::Warning),
        ["resilience4j.retry.instances.inv.wait-duration"],
        "3 × 300 ms fits in 1 s"
    );
    let default = RetryConfig::default();
    let f = advise(
        &Protection::new("inv").retry(&default).time_limiter(&tl),
        &traffic(),
    );
    assert_eq!(
        f[0].message(),
        "3 attempts × 300ms + 1000ms of waits = 1900ms exceeds the 1000ms deadline: \
         the last attempts can never finish"
    );
    assert!(advise(&Protection::new("inv"), &traffic()).is_empty());
}

#[test]
fn a_timeout_under_the_p99_is_warned_about() {
    let tl = TimeLimiterConfig::builder()
        .timeout_duration(Duration::from_millis(100))
        .build()
        .unwrap();
    let f = advise(&Protection::new("inv").time_limiter(&tl), &traffic());
    assert_eq!(
        keys(&f, Severity::Warning),
        ["resilience4j.timelimiter.instances.inv.timeout-duration"]
    );
    assert!(f[0].message().contains("below the 120ms p99"), "{}", f[0]);
}

#[test]
fn a_retry_of_every_error_is_warned_about_only_when_known() {
    let retry = RetryConfig::builder()
        .wait_duration(Duration::from_millis(100))
        .max_attempts(2)
        .build()
        .unwrap();
    assert!(keys(
        &advise(&Protection::new("inv").retry(&retry), &traffic()),
        Severity::Warning
    )
    .is_empty());
    let f = advise(
        &Protection::new("inv")
            .retry(&retry)
            .retries_every_error(true),
        &traffic(),
    );
    assert_eq!(
        keys(&f, Severity::Warning),
        ["resilience4j.retry.instances.inv.retry-exceptions"]
    );
    let f = advise(
        &Protection::new("inv")
            .retry(&retry)
            .retries_every_error(false),
        &traffic(),
    );
    assert!(keys(&f, Severity::Warning).is_empty());
}

#[test]
fn equal_waits_are_noted_as_no_backoff() {
    let f = advise(
        &Protection::new("inv").retry(&RetryConfig::default()),
        &traffic(),
    );
    assert_eq!(f[0].severity(), Severity::Info);
    assert!(
        f[0].message()
            .starts_with("every retry waits the same 500ms"),
        "{}",
        f[0]
    );
}

#[test]
fn an_oversized_bulkhead_is_noted() {
    let big = BulkheadConfig::builder()
        .max_concurrent_calls(200)
        .build()
        .unwrap();
    let f = advise(&Protection::new("inv").bulkhead(&big), &traffic());
    assert!(
        f[0].message()
            .starts_with("200 is over 5× the 24 calls in flight"),
        "{}",
        f[0]
    );
}

#[test]
fn health_indicators_that_may_fail_are_flagged_and_the_defaults_are_not() {
    let path = "resilience4j.circuitbreaker.instances.inv";
    assert_eq!(
        advise_health(path, &HealthIndicator::new(true, false).on_liveness(true)),
        None
    );
    assert_eq!(
        advise_health(path, &HealthIndicator::new(false, true).on_liveness(true)),
        None
    );
    let f = advise_health(path, &HealthIndicator::new(true, true)).unwrap();
    assert_eq!(f.severity(), Severity::Info);
    let f = advise_health(path, &HealthIndicator::new(true, true).on_liveness(true)).unwrap();
    assert_eq!(f.severity(), Severity::Warning);
    assert_eq!(
        f.key_path(),
        "resilience4j.circuitbreaker.instances.inv.allow-health-indicator-to-fail"
    );
}

#[test]
fn a_breaker_shared_by_two_downstreams_is_warned_about() {
    let path = "resilience4j.circuitbreaker.instances.catalog";
    assert_eq!(advise_shared_breaker(path, &["catalog-export"]), None);
    let f = advise_shared_breaker(path, &["catalog-export", "catalog-query"]).unwrap();
    assert_eq!(f.key_path(), path);
    assert!(f
        .message()
        .starts_with("one breaker for 2 downstreams (catalog-export, catalog-query)"));
    assert_eq!(f.key(), "catalog");
    let f = f.with_set_at("default");
    assert!(f.to_string().ends_with(" (the default)"));
}

#[test]
fn extreme_settings_and_a_panicking_interval_function_give_findings_not_panics() {
    use crate::IntervalFunction;
    let huge = RetryConfig::builder()
        .max_attempts(u32::MAX)
        .wait_duration(Duration::from_secs(u64::MAX / 4))
        .build()
        .unwrap();
    let forever = TimeLimiterConfig::builder()
        .timeout_duration(Duration::MAX)
        .build()
        .unwrap();
    let f = advise(
        &Protection::new("inv").retry(&huge).time_limiter(&forever),
        &traffic(),
    );
    assert!(f.iter().any(|f| f.key() == "max-attempts"), "{f:#?}");
    let panicky = RetryConfig::builder()
        .interval_function(IntervalFunction::custom(|_| panic!("user code")))
        .build()
        .unwrap();
    let f = advise(&Protection::new("inv").retry(&panicky), &traffic());
    assert!(
        f[0].message().contains("interval function panicked"),
        "{}",
        f[0]
    );
    let nothing = Traffic::new(f64::NAN, Duration::ZERO, Duration::ZERO);
    let cb = CircuitBreakerConfig::default();
    let b = BulkheadConfig::default();
    let f = advise(
        &Protection::new("inv").circuit_breaker(&cb).bulkhead(&b),
        &nothing,
    );
    assert!(!f.is_empty());
}
