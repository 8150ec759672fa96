//! Issue 30's file keys, read as a Spring file writes them: the breaker's
//! `failure-model` and its thresholds, the `resilience4j.throttler` section,
//! the rate limiter's `warm-up-period` and `cold-factor`; each bad value
//! named by its key path, each typo answered with the close key.

use std::time::Duration;

use resil::circuit_breaker::{FailureModel, State};
use resil::config::{ConfigFileError, FileConfig, ProblemKind};
use resil::Registry;

fn yaml(text: &str) -> Result<FileConfig, ConfigFileError> {
    FileConfig::from_yaml_str(text)
}

fn only_problem(result: Result<FileConfig, ConfigFileError>) -> resil::config::Problem {
    let err = result.expect_err("the configuration must be rejected");
    assert_eq!(err.problems().len(), 1, "{err}");
    err.problems()[0].clone()
}

#[test]
fn failure_models_are_read_from_the_file_and_drive_the_breaker() {
    let registry = Registry::from_yaml_str(
        "resilience4j:
  circuitbreaker:
    instances:
      payments:
        failure-model: CONSECUTIVE
        consecutive-failure-threshold: 3
      search:
        failureModel: count
        failure-count-threshold: 20
        failure-count-interval: 30s
",
    )
    .unwrap();
    let payments = registry.circuit_breaker("payments");
    assert_eq!(payments.config().failure_model(), FailureModel::Consecutive);
    assert_eq!(payments.config().consecutive_failure_threshold(), 3);
    for _ in 0..3 {
        let _ = payments.call(|| Err::<(), _>("503"));
    }
    assert_eq!(payments.state(), State::Open);

    let search = registry.circuit_breaker("search").config().clone();
    assert_eq!(search.failure_model(), FailureModel::Count);
    assert_eq!(search.failure_count_threshold(), 20);
    assert_eq!(search.failure_count_interval(), Duration::from_secs(30));

    let default = registry.circuit_breaker("other").config().clone();
    assert_eq!(default.failure_model(), FailureModel::Rate);
}

#[test]
fn a_bad_failure_model_names_its_key_path_and_the_words_it_takes() {
    let p = only_problem(yaml(
        "resilience4j:\n  circuitbreaker:\n    instances:\n      a:\n        failure-model: CONSECUTIVELY\n",
    ));
    assert_eq!(p.kind(), ProblemKind::InvalidValue);
    assert_eq!(
        p.path(),
        Some("resilience4j.circuitbreaker.instances.a.failure-model")
    );
    assert!(
        p.to_string()
            .contains("got \"CONSECUTIVELY\", expected one of `RATE`, `CONSECUTIVE`, `COUNT`"),
        "{p}"
    );
    let p = only_problem(yaml(
        "resilience4j:\n  circuitbreaker:\n    instances:\n      a:\n        failure-count-threshold: 70000\n",
    ));
    assert_eq!(
        p.path(),
        Some("resilience4j.circuitbreaker.instances.a.failure-count-threshold")
    );
    assert!(
        p.to_string()
            .contains("got 70000, expected an integer in [1, 65536]"),
        "{p}"
    );
}

#[test]
fn typos_of_the_new_keys_get_the_close_key() {
    for (kind, typo, want) in [
        (
            "circuitbreaker",
            "consecutive-failure-treshold",
            "consecutive-failure-threshold",
        ),
        ("circuitbreaker", "failure-modle", "failure-model"),
        ("throttler", "acepts-multiplier", "accepts-multiplier"),
        ("ratelimiter", "warmup-periods", "warm-up-period"),
    ] {
        let p = only_problem(yaml(&format!(
            "resilience4j:\n  {kind}:\n    instances:\n      inventory:\n        {typo}: 5\n"
        )));
        assert_eq!(p.kind(), ProblemKind::UnknownKey, "{p}");
        assert_eq!(p.suggestion(), Some(want), "{p}");
        assert_eq!(
            p.to_string(),
            format!("unknown key `resilience4j.{kind}.instances.inventory.{typo}`; did you mean `{want}`?")
        );
    }
    // The section itself, misspelt.
    let err = yaml("resilience4j:\n  throtler: {}\n").unwrap_err();
    assert_eq!(err.problems()[0].suggestion(), Some("throttler"), "{err}");
}

#[test]
fn the_throttler_section_configures_named_throttlers() {
    let registry = Registry::from_yaml_str(
        "resilience4j:
  throttler:
    configs:
      default:
        accepts-multiplier: 1.5
    instances:
      search:
        sliding-window-duration: 1m
        max-rejection-probability: 0.9
",
    )
    .unwrap();
    let search = registry.throttler("search");
    let c = search.config();
    assert_eq!(c.accepts_multiplier(), 1.5);
    assert_eq!(c.sliding_window_duration(), Duration::from_secs(60));
    assert_eq!(c.max_rejection_probability(), 0.9);
    let p = only_problem(yaml(
        "resilience4j:\n  throttler:\n    instances:\n      a:\n        sliding-window-duration: 1500ms\n",
    ));
    assert_eq!(
        p.path(),
        Some("resilience4j.throttler.instances.a.sliding-window-duration")
    );
    assert!(
        p.to_string().contains("expected whole seconds in [1s, 1h]"),
        "{p}"
    );
}

#[test]
fn the_rate_limiters_warm_up_is_read_from_the_file() {
    let registry = Registry::from_yaml_str(
        "resilience4j:
  ratelimiter:
    instances:
      catalog:
        limit-for-period: 30
        limit-refresh-period: 1s
        warm-up-period: 10s
        cold-factor: 5
",
    )
    .unwrap();
    let c = registry.rate_limiter("catalog").config();
    assert_eq!(c.warm_up_period(), Duration::from_secs(10));
    assert_eq!(c.cold_factor(), 5);
    let p = only_problem(yaml(
        "resilience4j:\n  ratelimiter:\n    instances:\n      a:\n        limit-refresh-period: 1s\n        warm-up-period: 10ms\n",
    ));
    assert_eq!(
        p.path(),
        Some("resilience4j.ratelimiter.instances.a.warm-up-period")
    );
}
