//! `resil::advise` over real config files, one finding per file in
//! `tests/data/advise/`, and `cargo run --example advise` as the guide runs it.

#[path = "../examples/advise.rs"]
mod example;

use std::time::Duration;

use resil::advisor::{Finding, Severity, Traffic};
use resil::config::FileConfig;

fn data(name: &str) -> String {
    format!("{}/tests/data/advise/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn traffic() -> Traffic {
    Traffic::new(200.0, Duration::from_millis(40), Duration::from_millis(120))
        .deadline(Duration::from_secs(1))
}

fn advise(name: &str, traffic: &Traffic) -> Vec<Finding> {
    let file = FileConfig::from_file(data(name)).unwrap();
    resil::advise(&file, traffic)
}

fn find<'a>(findings: &'a [Finding], key_path: &str) -> &'a Finding {
    findings
        .iter()
        .find(|f| f.key_path() == key_path)
        .unwrap_or_else(|| panic!("no finding for {key_path} in {findings:#?}"))
}

fn warnings(findings: &[Finding]) -> Vec<&str> {
    findings
        .iter()
        .filter(|f| f.severity() == Severity::Warning)
        .map(Finding::key_path)
        .collect()
}

#[test]
fn the_bulkhead_is_sized_by_little_s_law() {
    let f = advise("bulkhead.yaml", &traffic());
    let bulkhead = find(
        &f,
        "resilience4j.bulkhead.instances.inventory.max-concurrent-calls",
    );
    assert_eq!(bulkhead.severity(), Severity::Warning);
    assert!(
        bulkhead
            .message()
            .starts_with("20 is below the 24 calls in flight at p99"),
        "{bulkhead}"
    );
    assert_eq!(
        bulkhead.set_at(),
        Some("bulkhead.yaml:6 resilience4j.bulkhead.instances.inventory.max-concurrent-calls")
    );
    // At 100 qps the same 20 slots cover the 12 in flight.
    let quiet = Traffic::new(100.0, Duration::from_millis(40), Duration::from_millis(120));
    let f = advise("bulkhead.yaml", &quiet);
    assert_eq!(f[0].severity(), Severity::Info);
    assert!(
        f[0].message().starts_with("20 covers the 12 calls"),
        "{}",
        f[0]
    );
}

#[test]
fn the_failures_and_seconds_before_the_breaker_opens_follow_the_window_and_the_traffic() {
    let admin = Traffic::new(1.0, Duration::from_millis(40), Duration::from_millis(120));
    let f = advise("breaker_opening.yaml", &admin);
    let reports = find(
        &f,
        "resilience4j.circuitbreaker.instances.reports.minimum-number-of-calls",
    );
    assert_eq!(reports.severity(), Severity::Warning, "50 s at 1 qps");
    assert!(
        reports.message().starts_with(
            "after an outage starts, about 50 calls fail (≈50.0s at 1 qps) before the breaker \
             opens; from an empty window (after a restart or on closing) 100"
        ),
        "{reports}"
    );
    assert_eq!(reports.set_at(), Some("default"));
    let exports = find(
        &f,
        "resilience4j.circuitbreaker.instances.exports.minimum-number-of-calls",
    );
    assert_eq!(exports.severity(), Severity::Warning);
    assert!(
        exports.message().contains("the breaker never opens"),
        "{exports}"
    );
    // At 200 qps both open in well under a second.
    let f = advise("breaker_opening.yaml", &traffic());
    assert!(warnings(&f).is_empty(), "{f:#?}");
    assert!(find(
        &f,
        "resilience4j.circuitbreaker.instances.exports.minimum-number-of-calls"
    )
    .message()
    .contains("about 1000 calls fail (≈5.0s at 200 qps)"));
}

#[test]
fn a_slow_call_threshold_above_the_timeout_and_a_timeout_at_the_deadline_are_found() {
    let f = advise("timeouts.yaml", &traffic());
    assert_eq!(
        warnings(&f),
        [
            "resilience4j.circuitbreaker.instances.inventory.slow-call-duration-threshold",
            "resilience4j.timelimiter.instances.inventory.timeout-duration",
        ]
    );
    let slow = &f[0];
    assert!(slow
        .message()
        .starts_with("2000ms is not below the time limiter's 1000ms"));
    assert_eq!(
        slow.set_at(),
        Some(
            "timeouts.yaml:7 resilience4j.circuitbreaker.configs.base.slow-call-duration-threshold"
        ),
        "the value is inherited from its base config"
    );
    assert!(f[1]
        .message()
        .starts_with("1000ms is not below the 1000ms end-to-end deadline: it never fires"));
}

#[test]
fn a_retry_without_backoff_and_one_that_retries_every_error_are_found() {
    let f = advise("retry.yaml", &traffic());
    assert_eq!(
        warnings(&f),
        [
            "resilience4j.retry.instances.eager.wait-duration",
            "resilience4j.retry.instances.everything.retry-exceptions",
        ]
    );
    assert!(f[0]
        .message()
        .starts_with("the retry does not wait between attempts"));
    assert!(f[1]
        .message()
        .starts_with("no list of errors to retry and no predicate: every error is retried"));
    assert!(
        !f.iter()
            .any(|f| f.key_path().contains(".careful.") && f.severity() == Severity::Warning),
        "a retry that names its errors and waits is fine"
    );
    assert!(
        !f.iter()
            .any(|f| f.key_path().contains(".predicated.") && f.severity() == Severity::Warning),
        "a predicate decides what is retried"
    );
}

#[test]
fn attempts_times_the_timeout_plus_the_waits_above_the_deadline_are_found() {
    let f = advise("deadline.yaml", &traffic());
    assert_eq!(
        warnings(&f),
        ["resilience4j.retry.instances.payment.max-attempts"]
    );
    assert!(f[0]
        .message()
        .starts_with("3 attempts × 400ms + 400ms of waits = 1600ms exceeds the 1000ms deadline"));
    // With a 2 s deadline it fits.
    let relaxed = Traffic::new(200.0, Duration::from_millis(40), Duration::from_millis(120))
        .deadline(Duration::from_secs(2));
    assert!(warnings(&advise("deadline.yaml", &relaxed)).is_empty());
}

#[test]
fn one_breaker_named_by_several_calls_is_found() {
    let f = advise("shared_breaker.yaml", &traffic());
    assert_eq!(
        warnings(&f),
        ["resilience4j.circuitbreaker.instances.catalog"]
    );
    let shared = find(&f, "resilience4j.circuitbreaker.instances.catalog");
    assert!(shared
        .message()
        .starts_with("one breaker for 2 downstreams (catalog-export, catalog-query)"));
}

#[test]
fn an_indicator_allowed_to_fail_on_the_liveness_path_is_found() {
    let f = advise("health.yaml", &traffic());
    let payment = find(
        &f,
        "resilience4j.circuitbreaker.instances.payment.allow-health-indicator-to-fail",
    );
    assert_eq!(payment.severity(), Severity::Warning);
    assert!(payment.message().contains("the liveness probe follows it"));
    // The liveness group names breakers, not rate limiters: a note only.
    let quotes = find(
        &f,
        "resilience4j.ratelimiter.instances.quotes.allow-health-indicator-to-fail",
    );
    assert_eq!(quotes.severity(), Severity::Info);
    assert!(
        !f.iter().any(|f| f.key_path().contains(".inventory.allow")),
        "resil's defaults never fail the health check"
    );
}

#[test]
fn the_example_prints_the_readme_s_findings_for_the_production_file() {
    let args: Vec<String> = [
        concat!(env!("CARGO_MANIFEST_DIR"), "/examples/resil.yaml"),
        "--qps",
        "200",
        "--p50",
        "40ms",
        "--p99",
        "120ms",
        "--deadline",
        "1s",
    ]
    .map(String::from)
    .to_vec();
    let lines = example::run(&args).unwrap();
    let lines: Vec<String> = lines
        .into_iter()
        .map(|l| l.replace(env!("CARGO_MANIFEST_DIR"), "."))
        .collect();
    assert_eq!(
        lines,
        [
            "./examples/resil.yaml at 200 qps, p50 40ms, p99 120ms, deadline 1s",
            "warning: resilience4j.bulkhead.instances.inventory-query.max-concurrent-calls: 20 is \
             below the 24 calls in flight at p99 (Little's law: 200 qps × 120ms): normal traffic \
             is refused; size it at 24 or more (set at resil.yaml:36 \
             resilience4j.bulkhead.instances.inventory-query.max-concurrent-calls)",
            "warning: resilience4j.retry.instances.inventory-query.max-attempts: 2 attempts × \
             800ms + 100ms of waits = 1700ms exceeds the 1000ms deadline: the last attempts can \
             never finish (set at resil.yaml:46 \
             resilience4j.retry.instances.inventory-query.max-attempts)",
            "info: resilience4j.circuitbreaker.instances.inventory-query.minimum-number-of-calls: \
             after an outage starts, about 10 calls fail (≈0.03s at 200 qps, 2 failed attempts a \
             request: the retry is outside the breaker) before the breaker opens, 800ms more if \
             the downstream hangs (a failure is recorded when its timeout fires); from an empty \
             window (after a restart or on closing) 10 (set at resil.yaml:22 \
             resilience4j.circuitbreaker.configs.inventory-base.minimum-number-of-calls)",
            "2 warnings, 1 note",
        ]
    );
}

#[test]
fn bad_arguments_name_the_flag_and_the_allowed_form() {
    let run = |args: &[&str]| {
        let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
        match example::run(&args) {
            Err(example::Failure::Usage(e)) => e,
            other => panic!("expected a usage error, got {other:?}"),
        }
    };
    let base = ["f.yaml", "--qps", "200", "--p50", "40ms", "--p99", "120ms"];
    assert_eq!(
        run(&["f.yaml", "--qps", "fast", "--p50", "40ms", "--p99", "120ms"]),
        "`--qps fast`: expected a positive number of calls a second, such as 200 or 0.5"
    );
    assert!(run(&[
        "f.yaml",
        "--qps",
        "200",
        "--p50",
        "40 parsecs",
        "--p99",
        "120ms"
    ])
    .starts_with("`--p50 40 parsecs`: "));
    assert!(run(&[&base[..], &["--deadline=soon"]].concat())
        .ends_with("expected a duration such as 40ms, 1s or PT0.5S"));
    assert_eq!(
        run(&[&base[..], &["--p90", "80ms"]].concat()),
        "unknown flag `--p90`; expected one of `--qps`, `--p50`, `--p99`, `--deadline`"
    );
    assert!(run(&base[..5]).starts_with("missing `--p99`; usage: advise <config file>"));
    assert!(run(&["--qps", "200", "--p50", "40ms", "--p99", "120ms"])
        .starts_with("missing the config file"));
    assert!(run(&[&base[..], &["--deadline"]].concat()).starts_with("`--deadline` needs a value"));
    assert!(
        run(&["f.yaml", "--qps", "200", "--p50", "200ms", "--p99", "120ms"])
            .starts_with("`--p99 120ms` is below `--p50 200ms`")
    );
    let missing = vec![
        "no-such.yaml".to_string(),
        "--qps".into(),
        "1".into(),
        "--p50".into(),
        "1ms".into(),
        "--p99".into(),
        "2ms".into(),
    ];
    assert!(
        matches!(example::run(&missing), Err(example::Failure::File(e)) if e.starts_with("no-such.yaml: "))
    );
}

// Reproduces issue 27 (item 5): a typo under `resil.http` passed the check.
#[test]
fn a_resil_http_typo_is_a_file_the_advisor_cannot_load() {
    let file = data("resil_http_typo.yaml");
    let args = vec![
        file.clone(),
        "--qps".into(),
        "200".into(),
        "--p50".into(),
        "40ms".into(),
        "--p99".into(),
        "120ms".into(),
    ];
    let Err(example::Failure::File(e)) = example::run(&args) else {
        panic!("the file must not load");
    };
    assert!(
        e.ends_with(
            "resil_http_typo.yaml, line 12: unknown key \
             `resil.http.instances.inventory.ignore-statuses`; did you mean `ignore-status`? \
             (the keys of an HTTP classifier: `record-status`, `ignore-status`, \
             `success-status`, `retry-after-status`)"
        ),
        "{e}"
    );
}
