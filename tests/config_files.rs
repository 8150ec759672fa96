//! Config files: seed 000's production example in TOML and YAML, every kind of
//! validation error with its key path, inheritance, and environment overrides.
#![cfg(all(feature = "toml", feature = "yaml"))]

use std::time::Duration;

use resil::circuit_breaker::SlidingWindowType;
use resil::config::{ConfigFileError, FileConfig, Format, Kind, ProblemKind, Source};

const MS: fn(u64) -> Duration = Duration::from_millis;

fn example(name: &str) -> String {
    format!("{}/examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn yaml(text: &str) -> Result<FileConfig, ConfigFileError> {
    FileConfig::from_yaml_str(text)
}

fn toml(text: &str) -> Result<FileConfig, ConfigFileError> {
    FileConfig::from_toml_str(text)
}

fn env(text: &str, vars: &[(&str, &str)]) -> Result<FileConfig, ConfigFileError> {
    FileConfig::from_str_with_env(text, Format::Yaml, vars.iter().copied())
}

/// The only problem of a configuration that must fail with exactly one.
fn only_problem(result: Result<FileConfig, ConfigFileError>) -> resil::config::Problem {
    let err = result.expect_err("the configuration must be rejected");
    assert_eq!(err.problems().len(), 1, "{err}");
    err.problems()[0].clone()
}

fn assert_seed_example(file: &FileConfig) {
    // Circuit breaker: everything comes from the named config `inventory-base`.
    let cb = file.circuit_breaker();
    assert_eq!(cb.instance_names().collect::<Vec<_>>(), ["inventory-query"]);
    assert_eq!(cb.config_names().collect::<Vec<_>>(), ["inventory-base"]);
    let q = cb.instance("inventory-query").unwrap();
    assert!(q.is_instance());
    assert_eq!(
        q.path(),
        "resilience4j.circuitbreaker.instances.inventory-query"
    );
    assert_eq!(q.chain(), ["inventory-base"]);
    let c = q.config();
    assert_eq!(c.sliding_window_type(), SlidingWindowType::CountBased);
    assert_eq!(c.sliding_window_size(), 20);
    assert_eq!(c.minimum_number_of_calls(), 10);
    assert_eq!(c.failure_rate_threshold(), 50.0);
    assert_eq!(c.slow_call_duration_threshold(), MS(500));
    assert_eq!(c.slow_call_rate_threshold(), 60.0);
    assert_eq!(c.wait_duration_in_open_state(), Duration::from_secs(10));
    assert_eq!(c.permitted_number_of_calls_in_half_open_state(), 3);
    assert_eq!(
        c.max_wait_duration_in_half_open_state(),
        Duration::from_secs(3)
    );
    assert!(!c.automatic_transition_from_open_to_half_open_enabled());
    assert!(c.wait_interval_function_in_open_state().is_none());
    assert_eq!(
        q.source("failure-rate-threshold"),
        Source::Config("inventory-base".into())
    );
    assert_eq!(
        q.path_of("slow-call-duration-threshold"),
        Some("resilience4j.circuitbreaker.configs.inventory-base.slow-call-duration-threshold")
    );
    assert!(q.record_errors().is_none() && q.ignore_errors().is_none());
    // The builder carries the same values, for code settings to go on top.
    let rebuilt = q.builder().build().unwrap();
    assert_eq!(rebuilt.sliding_window_size(), 20);
    assert_eq!(
        rebuilt.max_wait_duration_in_half_open_state(),
        Duration::from_secs(3)
    );
    // The named config resolves on its own too; an unconfigured name gets the defaults.
    assert_eq!(
        cb.config("inventory-base")
            .unwrap()
            .config()
            .minimum_number_of_calls(),
        10
    );
    let other = cb.for_name("payment-status");
    assert_eq!(other.name(), "default");
    assert_eq!(other.config().sliding_window_size(), 100);
    assert_eq!(other.source("sliding-window-size"), Source::Default);

    // Bulkhead.
    let b = file.bulkhead().instance("inventory-query").unwrap();
    assert_eq!(b.config().max_concurrent_calls(), 20);
    assert_eq!(b.config().max_wait_duration(), Duration::ZERO);
    assert!(b.config().fair_call_handling_enabled(), "the default");
    assert_eq!(b.source("max-concurrent-calls"), Source::Instance);
    assert_eq!(b.source("fair-call-handling-enabled"), Source::Default);
    assert!(b.chain().is_empty());

    // Time limiter.
    let t = file.time_limiter().instance("inventory-query").unwrap();
    assert_eq!(t.config().timeout_duration(), MS(800));
    assert!(t.config().cancel_running_future());

    // Retry, with its error-class names and the key path to blame for them.
    let r = file.retry().instance("inventory-query").unwrap();
    assert_eq!(r.config().max_attempts(), 2);
    assert_eq!(r.config().wait_duration(), MS(100));
    assert_eq!(r.config().interval_function().interval(1), MS(100));
    let retry_errors = r.retry_errors().unwrap();
    assert_eq!(retry_errors.names(), ["inventory_connection"]);
    assert_eq!(retry_errors.key(), "retry-errors");
    assert_eq!(
        retry_errors.path(),
        "resilience4j.retry.instances.inventory-query.retry-exceptions"
    );
    assert_eq!(retry_errors.source(), &Source::Instance);
    assert_eq!(r.ignore_errors().unwrap().names(), ["inventory_business"]);

    // Nothing else is configured.
    assert_eq!(file.rate_limiter().instance_names().count(), 0);
    assert_eq!(file.thread_pool_bulkhead().instance_names().count(), 0);
    assert_eq!(file.retry().config_names().count(), 0);
}

#[test]
fn the_yaml_example_is_seed_000s_configuration_value_for_value() {
    let file = FileConfig::from_file(example("resil.yaml")).unwrap();
    assert!(file.origin().unwrap().ends_with("examples/resil.yaml"));
    assert_seed_example(&file);
}

#[test]
fn the_toml_example_is_seed_000s_configuration_value_for_value() {
    let file = FileConfig::from_file(example("resil.toml")).unwrap();
    assert_seed_example(&file);
}

#[test]
fn both_examples_resolve_to_the_same_values_from_the_same_keys() {
    let a = FileConfig::from_file(example("resil.yaml")).unwrap();
    let b = FileConfig::from_file(example("resil.toml")).unwrap();
    let q = "inventory-query";
    // Everything but the location (each file has its own lines).
    fn same(
        p: Vec<resil::config::Provenance>,
    ) -> Vec<(String, Option<String>, String, Option<String>)> {
        p.into_iter()
            .map(|p| (p.key, p.value, p.source.to_string(), p.path))
            .collect()
    }
    assert_eq!(
        same(a.circuit_breaker().instance(q).unwrap().provenance()),
        same(b.circuit_breaker().instance(q).unwrap().provenance())
    );
    assert_eq!(
        same(a.retry().instance(q).unwrap().provenance()),
        same(b.retry().instance(q).unwrap().provenance())
    );
    assert_eq!(
        same(a.bulkhead().instance(q).unwrap().provenance()),
        same(b.bulkhead().instance(q).unwrap().provenance())
    );
    assert_eq!(
        same(a.time_limiter().instance(q).unwrap().provenance()),
        same(b.time_limiter().instance(q).unwrap().provenance())
    );
    let wait = a.retry().instance(q).unwrap().provenance();
    let wait = wait.iter().find(|p| p.key == "wait-duration").unwrap();
    assert!(
        wait.location.as_deref().unwrap().starts_with("resil.yaml:"),
        "{wait:?}"
    );
}

#[test]
fn provenance_lists_every_option_with_its_value_and_source() {
    let file = FileConfig::from_file(example("resil.yaml")).unwrap();
    let p = file
        .circuit_breaker()
        .instance("inventory-query")
        .unwrap()
        .provenance();
    let find = |key: &str| p.iter().find(|p| p.key == key).unwrap();
    let threshold = find("slow-call-duration-threshold");
    assert_eq!(threshold.value.as_deref(), Some("500ms"));
    assert_eq!(threshold.source, Source::Config("inventory-base".into()));
    let window = find("sliding-window-type");
    assert_eq!(window.value.as_deref(), Some("COUNT_BASED"));
    let multiplier = find("exponential-backoff-multiplier");
    assert_eq!(multiplier.value.as_deref(), Some("1.5"));
    assert_eq!(multiplier.source, Source::Default);
    assert_eq!(multiplier.path, None);
    assert_eq!(
        find("register-health-indicator").value,
        None,
        "the registry decides"
    );
    assert_eq!(
        p.len(),
        // 25, issue 29's `keyed.*` (two rows), and issue 30's
        // `failure-model`, its three thresholds and the ramp after recovery
        // (`warm-up-period`, `cold-factor`).
        33,
        "every circuit-breaker option once (`keyed.*` included), and no tags"
    );
    let _ = Kind::CircuitBreaker;
}

// ---- validation errors: one per kind of mistake, key path asserted --------

#[test]
fn an_out_of_range_value_names_the_full_key_path_the_value_and_the_range() {
    let p = only_problem(yaml(
        "resilience4j:\n  circuitbreaker:\n    instances:\n      inventory:\n        failure-rate-threshold: 0\n",
    ));
    assert_eq!(p.kind(), ProblemKind::InvalidValue);
    assert_eq!(
        p.path(),
        Some("resilience4j.circuitbreaker.instances.inventory.failure-rate-threshold")
    );
    assert_eq!(
        p.to_string(),
        "invalid `resilience4j.circuitbreaker.instances.inventory.failure-rate-threshold`: \
         got 0, expected a percentage in (0, 100]"
    );
    let core = p.config_error().unwrap();
    assert_eq!(core.got(), "0");
    assert_eq!(core.expected(), "a percentage in (0, 100]");
}

#[test]
fn every_range_resil_core_checks_is_reported_at_its_key_path() {
    let cases: &[(&str, &str, &str, &str)] = &[
        (
            "circuitbreaker",
            "slow-call-rate-threshold: 101",
            "slow-call-rate-threshold",
            "got 101, expected a percentage in (0, 100]",
        ),
        (
            "circuitbreaker",
            "slow-call-duration-threshold: 0",
            "slow-call-duration-threshold",
            "got 0ns, expected a duration >= 1ns",
        ),
        (
            "circuitbreaker",
            "sliding-window-size: 0",
            "sliding-window-size",
            "got 0, expected a number of calls in [1, 16777216]",
        ),
        (
            "circuitbreaker",
            "minimum-number-of-calls: 0",
            "minimum-number-of-calls",
            "got 0, expected an integer >= 1",
        ),
        (
            "circuitbreaker",
            "wait-duration-in-open-state: 0",
            "wait-duration-in-open-state",
            "got 0ns, expected a duration >= 1ms",
        ),
        (
            "circuitbreaker",
            "permitted-number-of-calls-in-half-open-state: 0",
            "permitted-number-of-calls-in-half-open-state",
            "got 0, expected an integer in [1, 16777216]",
        ),
        (
            "circuitbreaker",
            "exponential-backoff-multiplier: 0.5",
            "exponential-backoff-multiplier",
            "got multiplier 0.5, expected a multiplier >= 1.0",
        ),
        (
            "circuitbreaker",
            "randomized-wait-factor: 2",
            "randomized-wait-factor",
            "got randomization factor 2, expected a randomization factor in [0.0, 1.0]",
        ),
        (
            "retry",
            "max-attempts: 0",
            "max-attempts",
            "got 0, expected an integer >= 1",
        ),
        (
            "bulkhead",
            "max-concurrent-calls: 0",
            "max-concurrent-calls",
            "got 0, expected an integer in 1..=2147483647",
        ),
        (
            "thread-pool-bulkhead",
            "core-thread-pool-size: 0",
            "core-thread-pool-size",
            "got 0, expected an integer >= 1",
        ),
        (
            "ratelimiter",
            "limit-refresh-period: 0",
            "limit-refresh-period",
            "got 0ns, expected a duration in 1ns..=584 years (u64::MAX nanoseconds)",
        ),
        (
            "timelimiter",
            "timeout-duration: 0",
            "timeout-duration",
            "got 0ns, expected a duration > 0",
        ),
        (
            "retry",
            "event-consumer-buffer-size: 0",
            "event-consumer-buffer-size",
            "got 0, expected an integer >= 1",
        ),
    ];
    for (kind, line, key, tail) in cases {
        let text = format!("resilience4j:\n  {kind}:\n    instances:\n      x:\n        {line}\n");
        let p = only_problem(yaml(&text));
        let path = format!("resilience4j.{kind}.instances.x.{key}");
        assert_eq!(p.path(), Some(path.as_str()), "{line}");
        assert_eq!(p.to_string(), format!("invalid `{path}`: {tail}"), "{line}");
    }
}

#[test]
fn cross_field_ranges_blame_the_key_resil_core_names_in_the_files_spelling() {
    let p = only_problem(toml(
        "[resilience4j.thread-pool-bulkhead.instances.pool]\ncore-thread-pool-size = 3\nmax-thread-pool-size = 2\n",
    ));
    assert_eq!(
        p.to_string(),
        "invalid `resilience4j.thread-pool-bulkhead.instances.pool.max-thread-pool-size`: \
         got 2, expected an integer >= core-thread-pool-size (3)"
    );
    let p = only_problem(toml(
        "[resilience4j.ratelimiter.instances.api]\nlimit-for-period = 11\nlimit-refresh-period = \"10ns\"\n",
    ));
    assert_eq!(
        p.path(),
        Some("resilience4j.ratelimiter.instances.api.limit-for-period")
    );
    assert!(
        p.to_string()
            .contains("got 11, expected an integer in 1..=10"),
        "{p}"
    );
}

#[test]
fn an_unknown_key_suggests_the_close_one() {
    let p = only_problem(yaml(
        "resilience4j:\n  retry:\n    instances:\n      inventory:\n        max-atempts: 3\n",
    ));
    assert_eq!(p.kind(), ProblemKind::UnknownKey);
    assert_eq!(
        p.path(),
        Some("resilience4j.retry.instances.inventory.max-atempts")
    );
    assert_eq!(p.suggestion(), Some("max-attempts"));
    assert_eq!(
        p.to_string(),
        "unknown key `resilience4j.retry.instances.inventory.max-atempts`; did you mean `max-attempts`?"
    );
    // Kinds and sections get suggestions too; a far-off key gets none.
    let err = yaml(
        "resilience4j:\n  circuitbreakr: {}\n  retry:\n    instaces: {}\n    configs:\n      a:\n        colour: red\n",
    )
    .unwrap_err();
    let suggestions: Vec<_> = err.problems().iter().map(|p| p.suggestion()).collect();
    assert_eq!(
        suggestions,
        [Some("circuitbreaker"), None, Some("instances")],
        "{err}"
    );
}

#[test]
fn an_option_of_another_kind_or_at_the_wrong_level_says_so() {
    let p = only_problem(yaml(
        "resilience4j:\n  bulkhead:\n    instances:\n      a:\n        max-attempts: 3\n",
    ));
    assert!(
        p.to_string()
            .contains("`max-attempts` is a retry option, not a bulkhead one"),
        "{p}"
    );
    let p = only_problem(yaml("resilience4j:\n  retry:\n    max-attempts: 3\n"));
    assert!(
        p.to_string()
            .contains("options go in a config or an instance, e.g. `resilience4j.retry.configs.default.max-attempts`"),
        "{p}"
    );
}

#[test]
fn a_wrong_type_says_what_was_expected_and_what_was_found() {
    let p = only_problem(yaml(
        "resilience4j:\n  circuitbreaker:\n    instances:\n      a:\n        slow-call-duration-threshold: [1, 2]\n",
    ));
    assert_eq!(p.kind(), ProblemKind::WrongType);
    assert_eq!(
        p.to_string(),
        "invalid `resilience4j.circuitbreaker.instances.a.slow-call-duration-threshold`: got a list, \
         expected a duration like `10s`, `500ms`, `1m`, `PT0.5S` or an integer of milliseconds"
    );
    for (line, got, expected) in [
        ("failure-rate-threshold: \"fifty\"", "\"fifty\"", "a number"),
        (
            "sliding-window-size: 2.5",
            "2.5",
            "a whole number in [0, 4294967295]",
        ),
        (
            "automatic-transition-from-open-to-half-open-enabled: 1",
            "1",
            "`true` or `false`",
        ),
        (
            "record-exceptions: {a: 1}",
            "a map",
            "a list of error-class names",
        ),
        (
            "base-config: 7",
            "7",
            "the name of a config under `configs`",
        ),
    ] {
        let text =
            format!("resilience4j:\n  circuitbreaker:\n    instances:\n      a:\n        {line}\n");
        let p = only_problem(yaml(&text));
        assert!(
            p.to_string()
                .ends_with(&format!("got {got}, expected {expected}")),
            "{line}: {p}"
        );
    }
}

#[test]
fn bad_durations_words_and_numbers_are_rejected_with_the_reason() {
    let err = yaml(
        "resilience4j:\n  circuitbreaker:\n    instances:\n      a:\n        wait-duration-in-open-state: 1.5s\n        \
         sliding-window-type: SLIDING\n        sliding-window-size: -1\n        max-wait-duration-in-half-open-state: -5\n",
    )
    .unwrap_err();
    let messages: Vec<String> = err.problems().iter().map(ToString::to_string).collect();
    assert_eq!(messages.len(), 4, "{err}");
    assert!(
        messages[0].contains("max-wait-duration-in-half-open-state`: got -5, expected a duration")
    );
    assert!(messages[1]
        .contains("sliding-window-size`: got -1, expected a whole number in [0, 4294967295]"));
    assert!(messages[2].contains(
        "sliding-window-type`: got \"SLIDING\", expected one of `COUNT_BASED`, `TIME_BASED`"
    ));
    assert!(messages[3]
        .contains("wait-duration-in-open-state`: got \"1.5s\" (fractions need a smaller unit"));
}

#[test]
fn every_problem_in_the_file_is_listed_one_per_line_not_just_the_first() {
    let err = yaml(
        "resilience4j:
  circuitbreaker:
    instances:
      inventory:
        failure-rate-threshold: 0
        minimum-number-of-calls: 0
        failure-rate-treshold: 50
  retry:
    instances:
      inventory:
        max-attempts: 0
        wait-duration: soon
  bulkhead:
    instances:
      inventory:
        base-config: missing
",
    )
    .unwrap_err();
    let paths: Vec<_> = err.problems().iter().map(|p| p.path().unwrap()).collect();
    assert_eq!(
        paths,
        [
            "resilience4j.bulkhead.instances.inventory.base-config",
            "resilience4j.circuitbreaker.instances.inventory.failure-rate-threshold",
            "resilience4j.circuitbreaker.instances.inventory.failure-rate-treshold",
            "resilience4j.circuitbreaker.instances.inventory.minimum-number-of-calls",
            "resilience4j.retry.instances.inventory.max-attempts",
            "resilience4j.retry.instances.inventory.wait-duration",
        ]
    );
    let text = err.to_string();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], "6 problems in the configuration:");
    assert_eq!(lines.len(), 7);
    assert!(lines[1..].iter().all(|l| l.starts_with("  ")));
}

#[test]
fn a_value_inherited_from_a_bad_config_is_reported_once_where_it_is_written() {
    let p = only_problem(yaml(
        "resilience4j:\n  retry:\n    configs:\n      base:\n        max-attempts: 0\n    instances:\n      \
         a: {base-config: base}\n      b: {base-config: base}\n",
    ));
    assert_eq!(
        p.path(),
        Some("resilience4j.retry.configs.base.max-attempts")
    );
}

#[test]
fn the_same_key_twice_in_two_spellings_is_an_error() {
    let p = only_problem(yaml(
        "resilience4j:\n  retry:\n    instances:\n      a:\n        max-attempts: 2\n        max_attempts: 3\n",
    ));
    assert_eq!(p.kind(), ProblemKind::Duplicate);
    assert_eq!(
        p.to_string(),
        "`resilience4j.retry.instances.a.max_attempts` is given twice (as `max-attempts` and as `max_attempts`)"
    );
    let p = only_problem(yaml(
        "resilience4j:\n  circuitbreaker: {}\n  circuit-breaker: {}\n",
    ));
    assert_eq!(p.kind(), ProblemKind::Duplicate);
}

#[test]
fn java_only_keys_are_warnings_and_other_top_level_keys_are_the_application_s() {
    // A Java-only starter key loads, ignored with a warning naming why.
    let file = yaml(
        "resilience4j:\n  circuitbreaker:\n    instances:\n      a:\n        writable-stack-trace-enabled: false\n",
    )
    .unwrap();
    assert_eq!(file.warnings().len(), 1);
    assert_eq!(file.warnings()[0].kind(), ProblemKind::Ignored);
    assert!(
        file.warnings()[0].to_string().contains("no stack trace"),
        "{}",
        file.warnings()[0]
    );
    // Spring Boot binds by prefix: `management`, `spring`, … are not resil's.
    let file = yaml("management:\n  endpoints: {}\nserver: {port: 80}\n").unwrap();
    assert_eq!(file.ignored_keys(), ["management", "server"]);
    // The aspect order cannot come from a file: an error saying what to write.
    let p = only_problem(yaml(
        "resilience4j:\n  circuitbreaker:\n    circuitBreakerAspectOrder: 1\n",
    ));
    assert_eq!(p.kind(), ProblemKind::Unsupported);
    assert!(p.to_string().contains("order = ["), "{p}");
    // Inside `resilience4j`, an unknown key is still an error.
    let p = only_problem(yaml("resilience4j:\n  rety: {}\n"));
    assert_eq!(p.suggestion(), Some("retry"));
}

#[test]
fn syntax_errors_unknown_extensions_and_missing_files_are_problems_too() {
    let p = only_problem(toml("[resilience4j\n"));
    assert_eq!(p.kind(), ProblemKind::Syntax);
    assert!(p.to_string().starts_with("not valid TOML: "), "{p}");
    let p = only_problem(yaml("resilience4j: [\n"));
    assert!(p.to_string().starts_with("not valid YAML: "), "{p}");
    let p = only_problem(FileConfig::from_file("resil.json"));
    assert!(
        p.to_string()
            .contains("name the file `*.toml`, `*.yaml`, `*.yml` or `*.properties`"),
        "{p}"
    );
    let err = FileConfig::from_file("/nonexistent/resil.yaml").unwrap_err();
    assert_eq!(err.problems()[0].kind(), ProblemKind::Io);
    assert!(
        err.to_string()
            .starts_with("1 problem in `/nonexistent/resil.yaml`:"),
        "{err}"
    );
}

// ---- inheritance -----------------------------------------------------------

const CHAIN: &str = "
resilience4j:
  circuit-breaker:
    tags: {team: storage}
    configs:
      default:
        sliding-window-size: 50
        tags: {tier: '2'}
      shared:
        failure-rate-threshold: 40
        minimum-number-of-calls: 5
      inventory-base:
        base-config: shared
        failure-rate-threshold: 30
        wait-duration-in-open-state: PT1M30S
    instances:
      inventory:
        base-config: inventory-base
        minimum-number-of-calls: 7
        tags: {tier: '1'}
      plain: {}
      shared: {}
";

#[test]
fn a_base_config_chain_applies_default_then_each_base_root_first_then_the_instance() {
    let file = yaml(CHAIN).unwrap();
    let cb = file.circuit_breaker();
    let i = cb.instance("inventory").unwrap();
    assert_eq!(i.chain(), ["default", "shared", "inventory-base"]);
    let c = i.config();
    assert_eq!(c.sliding_window_size(), 50);
    assert_eq!(c.failure_rate_threshold(), 30.0);
    assert_eq!(c.minimum_number_of_calls(), 7);
    assert_eq!(c.wait_duration_in_open_state(), Duration::from_secs(90));
    assert_eq!(c.slow_call_rate_threshold(), 100.0);
    assert_eq!(
        i.source("sliding-window-size"),
        Source::Config("default".into())
    );
    assert_eq!(
        i.source("failure-rate-threshold"),
        Source::Config("inventory-base".into())
    );
    assert_eq!(i.source("minimum-number-of-calls"), Source::Instance);
    assert_eq!(i.source("slow-call-rate-threshold"), Source::Default);
    assert_eq!(
        i.tags().collect::<Vec<_>>(),
        [("team", "storage"), ("tier", "1")]
    );

    // Without base-config: `default`; with a config of its own name: that config.
    let plain = cb.instance("plain").unwrap();
    assert_eq!(plain.chain(), ["default"]);
    assert_eq!(plain.config().failure_rate_threshold(), 50.0);
    assert_eq!(
        plain.tags().collect::<Vec<_>>(),
        [("team", "storage"), ("tier", "2")]
    );
    let shared = cb.instance("shared").unwrap();
    assert_eq!(shared.chain(), ["default", "shared"]);
    assert_eq!(shared.config().failure_rate_threshold(), 40.0);
    // Unconfigured names: a named config of the same name, else `default`.
    assert_eq!(cb.for_name("inventory-base").chain(), ["default", "shared"]);
    assert_eq!(cb.for_name("anything").name(), "default");
    assert_eq!(cb.default_config().config().sliding_window_size(), 50);
}

#[test]
fn a_base_config_cycle_is_rejected_with_the_whole_cycle() {
    let p = only_problem(yaml(
        "resilience4j:\n  retry:\n    configs:\n      a: {base-config: b}\n      b: {base-config: c}\n      \
         c: {base-config: a}\n    instances:\n      x: {base-config: b}\n",
    ));
    assert_eq!(p.kind(), ProblemKind::Cycle);
    assert_eq!(p.path(), Some("resilience4j.retry.configs.c.base-config"));
    assert_eq!(
        p.to_string(),
        "base-config cycle: `a` → `b` → `c` → `a` (at `resilience4j.retry.configs.c.base-config`)"
    );
    let p = only_problem(yaml(
        "resilience4j:\n  retry:\n    configs:\n      a: {base-config: a}\n",
    ));
    assert_eq!(
        p.to_string(),
        "base-config cycle: `a` → `a` (at `resilience4j.retry.configs.a.base-config`)"
    );
}

#[test]
fn an_unknown_base_is_rejected_with_the_chain_that_reached_it_and_a_suggestion() {
    let p = only_problem(yaml(
        "resilience4j:\n  retry:\n    configs:\n      inventory-base: {base-config: comon}\n      common: {}\n    \
         instances:\n      inventory: {base-config: inventory-base}\n",
    ));
    assert_eq!(p.kind(), ProblemKind::UnknownBase);
    assert_eq!(
        p.path(),
        Some("resilience4j.retry.configs.inventory-base.base-config")
    );
    assert_eq!(p.suggestion(), Some("common"));
    assert_eq!(
        p.to_string(),
        "unknown base-config `comon` at `resilience4j.retry.configs.inventory-base.base-config` \
         (chain: instance `inventory` → `inventory-base` → `comon`); did you mean `common`?; \
         configs: `common`, `inventory-base`"
    );
}

#[test]
fn a_default_with_a_base_config_ends_the_implicit_chain_instead_of_looping() {
    let file = yaml(
        "resilience4j:\n  bulkhead:\n    configs:\n      default: {base-config: wide, max-wait-duration: 5ms}\n      \
         wide: {max-concurrent-calls: 99}\n    instances:\n      a: {}\n",
    )
    .unwrap();
    let a = file.bulkhead().instance("a").unwrap();
    assert_eq!(a.chain(), ["wide", "default"]);
    assert_eq!(a.config().max_concurrent_calls(), 99);
    assert_eq!(a.config().max_wait_duration(), MS(5));
}

#[test]
fn backoff_keys_build_resil_cores_interval_functions() {
    let file = yaml(
        "resilience4j:
  retry:
    instances:
      exp:
        wait-duration: 100ms
        enable-exponential-backoff: true
        exponential-backoff-multiplier: 2
        exponential-max-wait-duration: 300ms
  circuitbreaker:
    instances:
      grow:
        wait-duration-in-open-state: 1s
        enable-exponential-backoff: true
",
    )
    .unwrap();
    let f = file
        .retry()
        .instance("exp")
        .unwrap()
        .config()
        .interval_function()
        .clone();
    let waits: Vec<_> = (1..=4).map(|n| f.interval(n)).collect();
    assert_eq!(waits, [MS(100), MS(200), MS(300), MS(300)]);
    let cb = file
        .circuit_breaker()
        .instance("grow")
        .unwrap()
        .config()
        .clone();
    let f = cb.wait_interval_function_in_open_state().unwrap();
    assert_eq!(
        f.interval(2),
        MS(1500),
        "Resilience4j's default multiplier 1.5"
    );
    // resil-core's interval checks land on the key that set the part it names.
    let p = only_problem(yaml(
        "resilience4j:\n  retry:\n    instances:\n      z:\n        wait-duration: 0\n        \
         enable-exponential-backoff: true\n",
    ));
    assert_eq!(
        p.to_string(),
        "invalid `resilience4j.retry.instances.z.wait-duration`: got initial interval 0ns, \
         expected initial interval >= 1ms"
    );
    let p = only_problem(yaml(
        "resilience4j:\n  retry:\n    instances:\n      z:\n        exponential-max-wait-duration: 0\n",
    ));
    assert_eq!(
        p.path(),
        Some("resilience4j.retry.instances.z.exponential-max-wait-duration")
    );
}

#[test]
fn snake_and_camel_case_keys_and_every_kind_spelling_are_accepted() {
    let file = toml(
        "[resilience4j.rate_limiter.instances.api]\nlimit_for_period = 10\nlimitRefreshPeriod = \"1s\"\n\
         [resilience4j.time-limiter.instances.api]\ntimeout_duration = \"2s\"\n",
    )
    .unwrap();
    let rl = file.rate_limiter().instance("api").unwrap();
    assert_eq!(rl.config().limit_for_period(), 10);
    assert_eq!(rl.config().limit_refresh_period(), Duration::from_secs(1));
    assert_eq!(
        rl.path_of("limit-refresh-period"),
        Some("resilience4j.rate_limiter.instances.api.limitRefreshPeriod")
    );
    assert_eq!(
        file.time_limiter()
            .instance("api")
            .unwrap()
            .config()
            .timeout_duration(),
        Duration::from_secs(2)
    );
}

#[test]
fn same_settings_compares_values_not_where_they_came_from() {
    let a = yaml("resilience4j:\n  retry:\n    instances:\n      x: {max-attempts: 4}\n").unwrap();
    let b = yaml(
        "resilience4j:\n  retry:\n    configs:\n      four: {max-attempts: 4}\n    instances:\n      x: {base-config: four}\n",
    )
    .unwrap();
    let c = yaml("resilience4j:\n  retry:\n    instances:\n      x: {max-attempts: 5}\n").unwrap();
    let x = |f: &FileConfig| f.retry().instance("x").unwrap().clone();
    assert!(x(&a).same_settings(&x(&b)));
    assert!(!x(&a).same_settings(&x(&c)));
}

// ---- environment overrides -------------------------------------------------

const WITH_INSTANCES: &str = "
resilience4j:
  circuitbreaker:
    configs:
      base: {failure-rate-threshold: 40}
    instances:
      inventory-query: {base-config: base}
";

#[test]
fn an_env_variable_overrides_one_key_after_the_file() {
    let file = env(
        WITH_INSTANCES,
        &[
            (
                "RESIL_CIRCUITBREAKER_INSTANCES_INVENTORY_QUERY_FAILURE_RATE_THRESHOLD",
                "60",
            ),
            ("RESIL_CONFIG", "/etc/resil.yaml"),
            ("PATH", "/usr/bin"),
        ],
    )
    .unwrap();
    let q = file.circuit_breaker().instance("inventory-query").unwrap();
    assert_eq!(q.config().failure_rate_threshold(), 60.0);
    let var = "RESIL_CIRCUITBREAKER_INSTANCES_INVENTORY_QUERY_FAILURE_RATE_THRESHOLD";
    assert_eq!(q.source("failure-rate-threshold"), Source::Env(var.into()));
    assert_eq!(
        q.path_of("failure-rate-threshold"),
        Some("resilience4j.circuitbreaker.instances.inventory-query.failure-rate-threshold")
    );
}

#[test]
fn env_variables_reach_configs_lists_base_configs_and_new_instances() {
    let file = env(
        WITH_INSTANCES,
        &[
            (
                "RESIL_CIRCUIT_BREAKER_CONFIGS_BASE_SLIDING_WINDOW_TYPE",
                "time_based",
            ),
            (
                "RESIL_CIRCUITBREAKER_INSTANCES_INVENTORY_QUERY_RECORD_ERRORS",
                "timeout, inventory_connection",
            ),
            ("RESIL_RETRY_INSTANCES_PAYMENT_STATUS_MAX_ATTEMPTS", "5"),
            (
                "RESIL_RETRY_INSTANCES_PAYMENT_STATUS_WAIT_DURATION",
                "PT0.25S",
            ),
            ("RESIL_CIRCUITBREAKER_INSTANCES_ORDERS_BASE_CONFIG", "base"),
        ],
    )
    .unwrap();
    let q = file.circuit_breaker().instance("inventory-query").unwrap();
    assert_eq!(
        q.config().sliding_window_type(),
        SlidingWindowType::TimeBased,
        "through `base`"
    );
    assert_eq!(
        q.record_errors().unwrap().names(),
        ["timeout", "inventory_connection"]
    );
    let p = file.retry().instance("payment-status").unwrap();
    assert_eq!(p.config().max_attempts(), 5);
    assert_eq!(p.config().wait_duration(), MS(250));
    assert_eq!(p.path(), "resilience4j.retry.instances.payment-status");
    let orders = file.circuit_breaker().instance("orders").unwrap();
    assert_eq!(orders.chain(), ["base"]);
    assert_eq!(orders.config().failure_rate_threshold(), 40.0);
    // Only the environment: no file at all.
    let only =
        FileConfig::from_env([("RESIL_BULKHEAD_INSTANCES_A_MAX_CONCURRENT_CALLS", "3")]).unwrap();
    assert_eq!(
        only.bulkhead()
            .instance("a")
            .unwrap()
            .config()
            .max_concurrent_calls(),
        3
    );
}

#[test]
fn a_bad_env_value_names_the_variable_and_the_key_it_sets() {
    let var = "RESIL_CIRCUITBREAKER_INSTANCES_INVENTORY_QUERY_FAILURE_RATE_THRESHOLD";
    let p = only_problem(env(WITH_INSTANCES, &[(var, "0")]));
    assert_eq!(p.env_var(), Some(var));
    assert_eq!(
        p.to_string(),
        format!(
            "invalid `{var}` (sets `resilience4j.circuitbreaker.instances.inventory-query.failure-rate-threshold`): \
             got 0, expected a percentage in (0, 100]"
        )
    );
    let p = only_problem(env(WITH_INSTANCES, &[(var, "sixty")]));
    assert_eq!(p.kind(), ProblemKind::WrongType);
    assert!(
        p.to_string().ends_with("got \"sixty\", expected a number"),
        "{p}"
    );
}

#[test]
fn an_env_variable_that_names_no_key_is_an_error_with_a_suggestion() {
    let var = "RESIL_CIRCUITBREAKER_INSTANCES_INVENTORY_FAILURE_RATE_TRESHOLD";
    let p = only_problem(env(WITH_INSTANCES, &[(var, "60")]));
    assert_eq!(p.kind(), ProblemKind::UnknownVariable);
    assert_eq!(p.env_var(), Some(var));
    assert_eq!(
        p.suggestion(),
        Some("RESIL_CIRCUITBREAKER_INSTANCES_INVENTORY_FAILURE_RATE_THRESHOLD")
    );
    let p = only_problem(env(
        WITH_INSTANCES,
        &[(
            "RESIL_CIRCUITBRAKER_INSTANCES_A_FAILURE_RATE_THRESHOLD",
            "60",
        )],
    ));
    assert_eq!(p.suggestion(), Some("CIRCUITBREAKER"));
    let p = only_problem(env(WITH_INSTANCES, &[("RESIL_RETRY_MAX_ATTEMPTS", "3")]));
    assert!(
        p.to_string()
            .contains("write `RESIL_RETRY_INSTANCES_<NAME>_<KEY>`"),
        "{p}"
    );
}

#[test]
fn an_env_name_matching_two_instances_is_ambiguous() {
    let p = only_problem(env(
        "resilience4j:\n  retry:\n    instances:\n      a-b: {}\n      a_b: {}\n",
        &[("RESIL_RETRY_INSTANCES_A_B_MAX_ATTEMPTS", "2")],
    ));
    assert!(
        p.to_string()
            .contains("is ambiguous: `a-b`, `a_b` all read `A_B`"),
        "{p}"
    );
}

#[test]
fn the_readme_error_example_is_what_the_loader_prints() {
    let err = env(
        "resilience4j:
  circuitbreaker:
    instances:
      inventory:
        failure-rate-threshold: 0
  retry:
    configs:
      common: {}
      inventory-base: {base-config: comon}
    instances:
      inventory:
        base-config: inventory-base
        max-atempts: 3
        wait-duration: [100ms]
",
        &[("RESIL_BULKHEAD_INSTANCES_A_MAX_CONCURRENT_CALLS", "0")],
    )
    .unwrap_err();
    let readme = include_str!("../docs/configuration.md");
    let block = readme
        .split("5 problems in `resil.yaml`:\n")
        .nth(1)
        .unwrap();
    let shown: Vec<&str> = block
        .lines()
        .take_while(|l| !l.starts_with("```"))
        .collect();
    let text = err.to_string();
    let printed: Vec<&str> = text.lines().skip(1).collect();
    assert_eq!(printed, shown);
    assert_eq!(
        text.lines().next(),
        Some("5 problems in the configuration:")
    );
}

#[test]
fn state_keys_and_fail_after_max_attempts_reach_resil_core() {
    let file = yaml(
        "resilience4j:
  circuitbreaker:
    instances:
      quiet:
        initial-state: metrics_only
        transition-to-state-after-wait-duration: CLOSED
  retry:
    instances:
      strict: {fail-after-max-attempts: true}
",
    )
    .unwrap();
    let quiet = file.circuit_breaker().instance("quiet").unwrap();
    assert_eq!(
        quiet.config().initial_state(),
        resil::circuit_breaker::State::MetricsOnly
    );
    assert_eq!(
        quiet.config().transition_to_state_after_wait_duration(),
        resil::circuit_breaker::State::Closed
    );
    let p = quiet.provenance();
    let initial = p.iter().find(|p| p.key == "initial-state").unwrap();
    assert_eq!(initial.value.as_deref(), Some("METRICS_ONLY"));
    assert!(file
        .retry()
        .instance("strict")
        .unwrap()
        .config()
        .fail_after_max_attempts());
    // resil-core decides which states are allowed after the half-open wait.
    let p = only_problem(yaml(
        "resilience4j:\n  circuitbreaker:\n    instances:\n      x:\n        \
         transition-to-state-after-wait-duration: HALF_OPEN\n",
    ));
    assert_eq!(
        p.path(),
        Some("resilience4j.circuitbreaker.instances.x.transition-to-state-after-wait-duration")
    );
    let p = only_problem(yaml(
        "resilience4j:\n  circuitbreaker:\n    instances:\n      x:\n        initial-state: HALF-OPENED\n",
    ));
    assert!(
        p.to_string()
            .contains("expected one of `CLOSED`, `OPEN`, `HALF_OPEN`"),
        "{p}"
    );
}

// ---- robustness: no input makes the loader panic ---------------------------

mod never_panics {
    use super::*;
    use proptest::prelude::*;

    const KEYS: &[&str] = &[
        "resilience4j",
        "circuitbreaker",
        "retry",
        "bulkhead",
        "thread-pool-bulkhead",
        "ratelimiter",
        "timelimiter",
        "configs",
        "instances",
        "default",
        "a",
        "b",
        "base-config",
        "tags",
        "failure-rate-threshold",
        "sliding-window-size",
        "sliding-window-type",
        "wait-duration-in-open-state",
        "max-attempts",
        "wait-duration",
        "retry-exceptions",
        "enable-exponential-backoff",
        "exponential-backoff-multiplier",
        "initial-state",
        "core-thread-pool-size",
        "max-thread-pool-size",
        "limit-for-period",
        "limit-refresh-period",
        "timeout-duration",
        "max-concurrent-calls",
        "fail-after-max-attempts",
    ];
    const VALUES: &[&str] = &[
        "0",
        "1",
        "-1",
        "50",
        "101",
        "1.5",
        "true",
        "null",
        "[]",
        "[a, b]",
        "{}",
        "10s",
        "500ms",
        "PT0.5S",
        "P",
        "1.5s",
        "18446744073709551615",
        "COUNT_BASED",
        "OPEN",
        "a",
        "b",
        "default",
        "~",
        "\"\"",
        "é",
        "9999999999999999999999d",
    ];

    /// A YAML document of nested maps built from the schema's own words, so
    /// most inputs get deep into the loader instead of failing to parse.
    fn document() -> impl Strategy<Value = String> {
        let line = (
            0usize..6,
            0..KEYS.len(),
            proptest::option::of(0..VALUES.len()),
        );
        proptest::collection::vec(line, 0..40).prop_map(|lines| {
            let mut out = String::new();
            let mut depth = 0;
            for (indent, key, value) in lines {
                let indent = indent.min(depth);
                out.push_str(&"  ".repeat(indent));
                out.push_str(KEYS[key]);
                match value {
                    Some(v) => {
                        out.push_str(": ");
                        out.push_str(VALUES[v]);
                        depth = indent;
                    }
                    None => {
                        out.push(':');
                        depth = indent + 1;
                    }
                }
                out.push('\n');
            }
            out
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]

        #[test]
        fn any_document_loads_or_lists_problems_that_each_say_where(doc in document()) {
            if let Err(err) = FileConfig::from_yaml_str(&doc) {
                prop_assert!(!err.problems().is_empty());
                for p in err.problems() {
                    prop_assert!(
                        p.path().is_some() || p.kind() == ProblemKind::Syntax,
                        "{p}"
                    );
                }
            }
        }

        #[test]
        fn any_text_is_a_duration_or_an_error(text in "\\PC{0,12}") {
            let _ = resil::config::parse_duration(&text);
            let _ = resil::config::parse_duration(&format!("PT{text}"));
        }

        #[test]
        fn any_override_variable_is_applied_or_reported(
            words in proptest::collection::vec("(CIRCUITBREAKER|RETRY|INSTANCES|CONFIGS|A|B|MAX|ATTEMPTS|WAIT|DURATION|BASE|CONFIG|_|)", 0..8),
            value in "(0|1|10s|x|a,b|)",
        ) {
            let var = format!("RESIL_{}", words.join("_"));
            let _ = FileConfig::from_env([(var.as_str(), value.as_str())]);
        }
    }
}

#[test]
fn problems_carry_the_line_of_the_file_they_are_on() {
    let err = toml(
        "[resilience4j.retry.configs.base]\nmax-attempts = 0\n\n[resilience4j.retry.instances.a]\n\
         base-config = \"base\"\nwait-duration = \"soon\"\nretry-exceptions = [\"ok\", 5]\n",
    )
    .unwrap_err();
    let lines: Vec<_> = err
        .problems()
        .iter()
        .map(|p| (p.path().unwrap(), p.line()))
        .collect();
    assert_eq!(
        lines,
        [
            ("resilience4j.retry.configs.base.max-attempts", Some(2)),
            (
                "resilience4j.retry.instances.a.retry-exceptions[1]",
                Some(7)
            ),
            ("resilience4j.retry.instances.a.wait-duration", Some(6)),
        ]
    );
    assert!(err
        .to_string()
        .contains("\n  line 6: invalid `resilience4j.retry.instances.a.wait-duration`"));
    // A default that does not fit the values around it is placed on its entry.
    let p = only_problem(toml(
        "[resilience4j.ratelimiter.instances.api]\nlimit-refresh-period = \"10ns\"\n",
    ));
    assert_eq!(
        p.path(),
        Some("resilience4j.ratelimiter.instances.api.limit-for-period")
    );
    assert_eq!(p.line(), Some(1));
    // Environment problems have no line.
    let p = only_problem(env("", &[("RESIL_RETRY_INSTANCES_A_MAX_ATTEMPTS", "0")]));
    assert_eq!(p.line(), None);
}

// ---- end to end: the example file running in a registry --------------------

/// The program's error type, named in the example's error lists.
#[derive(Debug, PartialEq)]
enum InventoryError {
    Connection,
    Business,
}

impl resil::ErrorClass for InventoryError {
    fn error_class(&self) -> &'static str {
        match self {
            InventoryError::Connection => "inventory_connection",
            InventoryError::Business => "inventory_business",
        }
    }
    fn error_classes() -> &'static [&'static str] {
        &["inventory_connection", "inventory_business"]
    }
}

#[test]
fn the_example_file_runs_in_a_registry_with_the_programs_error_classes() {
    let clock = resil::clock::ManualClock::new(); // retry waits advance it instead of sleeping
    let registry = resil::Registry::builder().clock(clock.clone()).build();
    registry.register_error_class::<InventoryError>();
    registry
        .reload(FileConfig::from_file(example("resil.yaml")).unwrap())
        .unwrap();

    let breaker = registry.circuit_breaker("inventory-query");
    assert_eq!(breaker.config().sliding_window_size(), 20);
    assert_eq!(breaker.config().slow_call_duration_threshold(), MS(500));
    assert_eq!(
        registry
            .bulkhead("inventory-query")
            .config()
            .max_concurrent_calls(),
        20
    );
    assert_eq!(
        registry
            .time_limiter("inventory-query")
            .config()
            .timeout_duration(),
        MS(800)
    );

    // retry-exceptions: a connection failure is tried twice (100 ms apart);
    // ignore-exceptions: a business error returns at once.
    let retry = registry.retry("inventory-query");
    let mut attempts = 0;
    let out = retry.call(|| {
        attempts += 1;
        Err::<(), _>(InventoryError::Connection)
    });
    assert_eq!(out, Err(resil::Error::Call(InventoryError::Connection)));
    assert_eq!(attempts, 2);
    let mut attempts = 0;
    let _ = retry.call(|| {
        attempts += 1;
        Err::<(), _>(InventoryError::Business)
    });
    assert_eq!(attempts, 1);

    // Without the program's classes the names are unknown: an error naming the list.
    let err = resil::Registry::from_file(example("resil.yaml")).unwrap_err();
    let mut paths: Vec<_> = err
        .problems()
        .iter()
        .map(|p| (p.kind(), p.path().unwrap()))
        .collect();
    paths.sort_by_key(|(_, path)| *path);
    assert_eq!(
        paths,
        [
            (
                ProblemKind::UnknownErrorClass,
                "resilience4j.retry.instances.inventory-query.ignore-exceptions[0]"
            ),
            (
                ProblemKind::UnknownErrorClass,
                "resilience4j.retry.instances.inventory-query.retry-exceptions[0]"
            ),
        ]
    );
}

/// A build without the `redis` feature cannot honour `backend = "redis"`: the
/// file is refused, rather than quietly protected by a local limiter.
#[cfg(not(feature = "redis"))]
#[test]
fn a_redis_backend_without_the_redis_feature_is_refused_naming_the_key() {
    let problem = only_problem(toml(
        "[resilience4j.ratelimiter.instances.api]\nbackend = \"redis\"\n",
    ));
    let text = problem.to_string();
    assert!(
        text.contains("resilience4j.ratelimiter.instances.api.backend") && text.contains("local"),
        "{text}"
    );
}

/// The same typos as the attributes' (`resil-macros`' `attr.rs` tests and
/// `tests/ui/fail/attr-misspelled-option.rs`): one did-you-mean, so the
/// same suggestion.
#[test]
fn a_misspelled_key_gets_the_suggestion_an_attribute_gets() {
    for (kind, typo, want) in [
        (
            "circuitbreaker",
            "failure-rate-treshold",
            "failure-rate-threshold",
        ),
        (
            "circuitbreaker",
            "failure_rate_treshold",
            "failure-rate-threshold",
        ),
        (
            "circuitbreaker",
            "slidng-window-size",
            "sliding-window-size",
        ),
        ("retry", "max-atempts", "max-attempts"),
    ] {
        let p = only_problem(yaml(&format!(
            "resilience4j:\n  {kind}:\n    instances:\n      inventory:\n        {typo}: 50\n"
        )));
        assert_eq!(p.suggestion(), Some(want));
        assert_eq!(
            p.to_string(),
            format!("unknown key `resilience4j.{kind}.instances.inventory.{typo}`; did you mean `{want}`?")
        );
    }
}

// `resil.http`: resil's own namespace, read by the same loader as the
// `resilience4j` tree (issue 27, item 5: `ignore-statuses: [404]` printed
// "config OK" and the breaker opened on 404s).

const INVENTORY_YAML: &str =
    "resilience4j:\n  circuitbreaker:\n    instances:\n      inventory-query: {}\n";

#[test]
fn a_misspelled_resil_http_key_in_yaml_is_an_error_with_its_line_the_keys_and_a_suggestion() {
    let text = format!(
        "{INVENTORY_YAML}resil:\n  http:\n    instances:\n      inventory-query:\n        ignore-statuses: [404]\n"
    );
    let err = yaml(&text).expect_err("a typo in resil.http must not load");
    assert_eq!(
        err.to_string(),
        "1 problem in the configuration:\n  line 9: unknown key \
         `resil.http.instances.inventory-query.ignore-statuses`; did you mean `ignore-status`? \
         (the keys of an HTTP classifier: `record-status`, `ignore-status`, `success-status`, \
         `retry-after-status`)"
    );
    let p = &err.problems()[0];
    assert_eq!(p.kind(), ProblemKind::UnknownKey);
    assert_eq!(p.line(), Some(9));
    assert_eq!(p.suggestion(), Some("ignore-status"));
    assert_eq!(
        p.path(),
        Some("resil.http.instances.inventory-query.ignore-statuses")
    );
}

#[test]
fn a_misspelled_resil_http_key_in_toml_is_an_error_with_its_line_and_a_suggestion() {
    let err = toml(
        "[resilience4j.retry.instances.inventory-query]\nmax-attempts = 2\n\n\
         [resil.http.instances.inventory-query]\nsuccess-status = [200]\nrecord-staus = [\"500-599\"]\n",
    )
    .expect_err("a typo in resil.http must not load");
    assert_eq!(
        err.to_string(),
        "1 problem in the configuration:\n  line 6: unknown key \
         `resil.http.instances.inventory-query.record-staus`; did you mean `record-status`? \
         (the keys of an HTTP classifier: `record-status`, `ignore-status`, `success-status`, \
         `retry-after-status`)"
    );
}

#[cfg(feature = "properties")]
#[test]
fn a_misspelled_resil_http_key_in_properties_is_an_error_with_its_line_and_a_suggestion() {
    let text = "resilience4j.circuitbreaker.instances.inventory-query.failure-rate-threshold=50\n\
                # the classifier\n\
                resil.http.instances.inventory-query.ignore-status=409\n\
                resil.http.instances.inventory-query.retry-after-statuses[0]=503\n";
    let err = FileConfig::from_str_with_env(text, Format::Properties, [("", ""); 0])
        .expect_err("a typo in resil.http must not load");
    assert_eq!(
        err.to_string(),
        "1 problem in the configuration:\n  line 4: unknown key \
         `resil.http.instances.inventory-query.retry-after-statuses`; did you mean \
         `retry-after-status`? (the keys of an HTTP classifier: `record-status`, \
         `ignore-status`, `success-status`, `retry-after-status`)"
    );
    // Spelled right, every format reads the same sets, lists as `key[i]` too.
    let file = FileConfig::from_str_with_env(
        &text.replace("retry-after-statuses", "retry-after-status"),
        Format::Properties,
        [("", ""); 0],
    )
    .unwrap();
    let entry = file.http().instance("inventory-query").unwrap();
    use resil::config::StatusKey;
    assert_eq!(
        entry.get(StatusKey::IgnoreStatus).unwrap().ranges(),
        [(409, 409)]
    );
    assert_eq!(
        entry.get(StatusKey::RetryAfterStatus).unwrap().ranges(),
        [(503, 503)]
    );
}

#[test]
fn a_resil_http_name_that_is_no_instance_of_the_file_suggests_the_close_one() {
    let text = format!(
        "{INVENTORY_YAML}  retry:\n    instances:\n      prices: {{}}\n\
         resil.http.instances.inventory-qurey:\n  ignore-status: [404]\n"
    );
    let err = yaml(&text).expect_err("a misspelled classifier name must not load");
    assert_eq!(
        err.to_string(),
        "1 problem in the configuration:\n  line 8: unknown HTTP classifier `inventory-qurey` \
         at `resil.http.instances.inventory-qurey`; did you mean `inventory-query`? (a \
         classifier is named after an instance the file configures under `resilience4j`: \
         `inventory-query`, `prices`)"
    );
    assert_eq!(err.problems()[0].suggestion(), Some("inventory-query"));
    // A named config counts (an instance of that name inherits it), and so
    // does an instance an environment override creates.
    let by_config = "resilience4j.bulkhead.configs.reports: {}\nresil.http.instances.reports: {}\n";
    assert!(yaml(by_config).is_ok());
    let by_env = env(
        "resil.http.instances.payments:\n  success-status: [200]\n",
        &[("RESIL_RETRY_INSTANCES_PAYMENTS_MAX_ATTEMPTS", "2")],
    );
    assert!(by_env.is_ok(), "{}", by_env.unwrap_err());
    // `default` names every instance, no one in particular.
    let p = only_problem(yaml(
        "resilience4j.retry.configs.default.max-attempts: 2\nresil.http.instances.default: {}\n",
    ));
    assert!(
        p.to_string()
            .contains("the file configures none under `resilience4j`"),
        "{p}"
    );
}

#[test]
fn a_resil_http_client_name_that_is_no_instance_of_the_file_suggests_the_close_one() {
    let text = format!(
        "{INVENTORY_YAML}  retry:\n    instances:\n      prices: {{}}\n\
         resil:\n  http-client:\n    instances:\n      prises:\n        replay-methods: idempotent\n"
    );
    let err = yaml(&text).expect_err("a misspelled client layer name must not load");
    assert_eq!(
        err.to_string(),
        "1 problem in the configuration:\n  line 11: unknown client layer `prises` at \
         `resil.http-client.instances.prises`; did you mean `prices`? (a client layer is named \
         after an instance the file configures under `resilience4j`: `inventory-query`, `prices`)"
    );
    assert_eq!(err.problems()[0].suggestion(), Some("prices"));
    let right = text.replace("prises:", "prices:");
    assert!(yaml(&right).is_ok(), "{}", yaml(&right).unwrap_err());
}

#[test]
fn other_resil_keys_are_errors_too_and_bad_status_sets_keep_their_precise_message() {
    let text = format!(
        "{INVENTORY_YAML}resil:\n  htpp: {{}}\n  http:\n    instance: {{}}\n    instances:\n      \
         inventory-query:\n        record-status: [500-599, 60x]\n"
    );
    let err = yaml(&text).expect_err("unknown resil keys must not load");
    assert_eq!(
        err.to_string(),
        "3 problems in the configuration:\n  \
         line 6: unknown key `resil.htpp`; did you mean `http`? (resil's own keys: `http`, `inbound-guard`, `http-client`, `config`)\n  \
         line 8: unknown key `resil.http.instance`; did you mean `instances`? (keys of \
         `resil.http`: `instances`)\n  \
         line 11: invalid `resil.http.instances.inventory-query.record-status`: invalid status \
         `60x` in `500-599, 60x`: expected a status code (100-999) or a range of them such as \
         `500-599`"
    );
    // `resil` is no longer an application key.
    let file = yaml(&format!("{INVENTORY_YAML}resil: {{}}\napp: {{}}\n")).unwrap();
    assert_eq!(file.ignored_keys(), ["app"]);
}

#[test]
fn resil_http_environment_overrides_replace_a_files_set_and_a_typo_is_an_error() {
    use resil::config::StatusKey;

    let text =
        format!("{INVENTORY_YAML}resil.http.instances.inventory-query.ignore-status: [409]\n");
    let file = env(
        &text,
        &[(
            "RESIL_HTTP_INSTANCES_INVENTORY_QUERY_IGNORE_STATUS",
            "404,409",
        )],
    )
    .unwrap();
    let entry = file.http().instance("inventory-query").unwrap();
    assert_eq!(
        entry.get(StatusKey::IgnoreStatus).unwrap().ranges(),
        [(404, 404), (409, 409)]
    );
    let p = only_problem(env(
        &text,
        &[(
            "RESIL_HTTP_INSTANCES_INVENTORY_QUERY_IGNORE_STATUSES",
            "404",
        )],
    ));
    assert_eq!(p.kind(), ProblemKind::UnknownVariable);
    assert_eq!(
        p.suggestion(),
        Some("RESIL_HTTP_INSTANCES_INVENTORY_QUERY_IGNORE_STATUS")
    );
    // A name that is no instance of the file: the same check as in the file.
    let p = only_problem(env(
        &text,
        &[(
            "RESIL_HTTP_INSTANCES_INVENTORY_QUERIES_IGNORE_STATUS",
            "404",
        )],
    ));
    assert_eq!(p.suggestion(), Some("inventory-query"), "{p}");
}
