//! Keyed families through the registry: configured like the instance of
//! the same name, in code or in a file, and following reloads.

use std::time::Duration;

use resil::circuit_breaker::State;
use resil::clock::ManualClock;
use resil::config::FileConfig;
use resil::Registry;

#[path = "support/budgets.rs"]
mod budgets;

const FILE: &str = r#"
[resilience4j.ratelimiter.instances.api]
limit-for-period = 2
limit-refresh-period = "1s"
timeout-duration = "0s"

[resilience4j.bulkhead.instances.per-host]
max-concurrent-calls = 1

[resilience4j.circuitbreaker.instances.hosts]
sliding-window-size = 2
minimum-number-of-calls = 2
wait-duration-in-open-state = "30s"
"#;

fn registry(clock: &ManualClock, file: &str) -> Registry {
    let registry = Registry::builder().clock(clock.clone()).build();
    registry
        .reload(FileConfig::from_toml_str(file).unwrap())
        .unwrap();
    registry
}

#[test]
fn a_family_is_configured_like_its_instance_and_shared_by_name() {
    let clock = ManualClock::new();
    let registry = registry(&clock, FILE);
    let api = registry.keyed_rate_limiter("api");
    assert!(api.get("tenant-1").try_acquire(2).is_ok());
    assert!(registry
        .keyed_rate_limiter("api")
        .get("tenant-1")
        .try_acquire(1)
        .is_err());
    assert!(api.get("tenant-2").try_acquire(1).is_ok());
    clock.advance(Duration::from_secs(1));
    assert!(api.get("tenant-1").try_acquire(2).is_ok());
    assert_eq!(api.counts().in_use, 2);
    // Keys are not names: the registry holds no rate limiter per tenant.
    assert!(registry
        .names::<resil::rate_limiter::RateLimiter>()
        .is_empty());

    let hosts = registry.keyed_bulkhead("per-host");
    let held = hosts.get("a").try_acquire().unwrap();
    assert!(hosts.get("a").try_acquire().is_err());
    assert!(hosts.get("b").try_acquire().is_ok());
    drop(held);

    let breakers = registry.keyed_circuit_breaker("hosts");
    for _ in 0..2 {
        let _ = breakers.get("down").call(|| Err::<(), _>("HTTP 503"));
    }
    assert_eq!(breakers.get("down").state(), State::Open);
    assert_eq!(breakers.get("up").state(), State::Closed);
    assert_eq!(
        registry.keyed_family_names(),
        [
            vec!["api".to_string()],
            vec!["hosts".to_string()],
            vec!["per-host".to_string()]
        ]
    );
}

#[test]
fn code_settings_configure_a_family_too() {
    let registry = Registry::new();
    registry
        .configure_rate_limiter("code", |b| {
            b.limit_for_period(1)
                .limit_refresh_period(Duration::from_secs(60))
                .timeout_duration(Duration::ZERO)
        })
        .unwrap();
    let family = registry.keyed_rate_limiter("code");
    assert!(family.get(&1u32).try_acquire(1).is_ok());
    assert!(family.get(&1u32).try_acquire(1).is_err());
}

#[test]
fn a_reload_gives_existing_keys_the_new_limit() {
    let clock = ManualClock::new();
    let registry = registry(&clock, FILE);
    let api = registry.keyed_rate_limiter("api");
    api.get("tenant-1").try_acquire(2).unwrap();
    registry
        .reload(
            FileConfig::from_toml_str(
                &FILE.replace("limit-for-period = 2", "limit-for-period = 5"),
            )
            .unwrap(),
        )
        .unwrap();
    assert_eq!(api.get("tenant-1").limit_for_period(), Some(5));
    assert_eq!(
        api.get("tenant-1").available_permissions(),
        3,
        "the 2 taken stay taken"
    );
    let hosts = registry.keyed_bulkhead("per-host");
    registry
        .reload(
            FileConfig::from_toml_str(
                &FILE.replace("max-concurrent-calls = 1", "max-concurrent-calls = 3"),
            )
            .unwrap(),
        )
        .unwrap();
    assert_eq!(hosts.get("a").available_concurrent_calls(), 3);
}

const TIERS: &str = r#"
resilience4j:
  ratelimiter:
    instances:
      api:
        limit-for-period: 10
        limit-refresh-period: 1s
        timeout-duration: 0s
        keyed:
          max-keys: 100000
          idle-ttl: 10m
          overrides:
            "gold-*": { limit-for-period: 1000 }
            "tenant-42": { limit-for-period: 5 }
  bulkhead:
    instances:
      per-host:
        max-concurrent-calls: 2
        keyed:
          max-keys: 3
          overrides:
            "slow-*": { max-concurrent-calls: 1 }
  circuitbreaker:
    instances:
      hosts:
        keyed:
          overrides:
            "flaky-*": { minimum-number-of-calls: 2, sliding-window-size: 2 }
"#;

#[test]
fn tiers_from_the_file_the_most_specific_winning_and_reloaded() {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    registry
        .reload(FileConfig::from_yaml_str(TIERS).unwrap())
        .unwrap();
    let api = registry.keyed_rate_limiter("api");
    assert_eq!(api.keyed_config().max_keys(), 100_000);
    assert_eq!(api.keyed_config().idle_ttl(), Duration::from_secs(600));
    assert_eq!(api.get("gold-1").limit_for_period(), Some(1000));
    assert_eq!(api.get("tenant-42").limit_for_period(), Some(5));
    assert_eq!(api.get("tenant-7").limit_for_period(), Some(10));
    assert_eq!(
        registry
            .keyed_bulkhead("per-host")
            .keyed_config()
            .max_keys(),
        3
    );
    assert_eq!(
        registry
            .keyed_bulkhead("per-host")
            .get("slow-1")
            .available_concurrent_calls(),
        1
    );
    assert_eq!(
        registry
            .keyed_bulkhead("per-host")
            .get("fast-1")
            .available_concurrent_calls(),
        2
    );
    let hosts = registry.keyed_circuit_breaker("hosts");
    assert_eq!(hosts.get("flaky-1").config().minimum_number_of_calls(), 2);
    assert_eq!(
        hosts.get("steady-1").config().minimum_number_of_calls(),
        100
    );

    // A reload applies new overrides to the keys already held.
    api.get("tenant-42").try_acquire(5).unwrap();
    registry
        .reload(
            FileConfig::from_yaml_str(
                &TIERS.replace("{ limit-for-period: 5 }", "{ limit-for-period: 8 }"),
            )
            .unwrap(),
        )
        .unwrap();
    assert_eq!(api.get("tenant-42").limit_for_period(), Some(8));
    assert_eq!(api.get("tenant-42").available_permissions(), 3);
}

#[test]
fn keyed_mistakes_name_their_key_path_and_line() {
    let cases = [
        ("max-kees: 5", "unknown key `resilience4j.ratelimiter.instances.api.keyed.max-kees`; did you mean `max-keys`?"),
        ("max-keys: 0", "resilience4j.ratelimiter.instances.api.keyed.max-keys"),
        ("idle-ttl: soon", "resilience4j.ratelimiter.instances.api.keyed.idle-ttl"),
        (
            "overrides: { \"gold-*\": { limit-for-periods: 5 } }",
            "did you mean `limit-for-period`?",
        ),
        (
            "overrides: { \"gold-*\": { timeout-duration: 5s } }",
            "cannot differ per key; a key override may set `limit-for-period`",
        ),
    ];
    for (keyed, expected) in cases {
        let yaml = format!(
            "resilience4j:\n  ratelimiter:\n    instances:\n      api:\n        keyed:\n          {keyed}\n"
        );
        let err = FileConfig::from_yaml_str(&yaml).unwrap_err().to_string();
        assert!(err.contains(expected), "{keyed}: {err}");
        assert!(err.contains("line 6"), "{keyed}: {err}");
    }
}

#[test]
fn the_snapshot_shows_each_familys_config_overrides_and_counts() {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    registry
        .reload(FileConfig::from_yaml_str(TIERS).unwrap())
        .unwrap();
    let api = registry.keyed_rate_limiter("api");
    for _ in 0..7 {
        let _ = api.get("tenant-42").try_acquire(1);
    }
    let snapshot = registry.keyed_snapshot(3);
    let f = snapshot.iter().find(|f| f.name == "api").unwrap();
    assert_eq!(
        (f.aspect, f.max_keys, f.idle_ttl.as_str()),
        ("rate_limiter", 100_000, "10m")
    );
    assert_eq!(f.default, "limit-for-period=10");
    assert_eq!(
        f.overrides,
        [
            ("gold-*".to_string(), "limit-for-period=1000".to_string()),
            ("tenant-42".to_string(), "limit-for-period=5".to_string())
        ]
    );
    assert_eq!(f.keys_in_use, 1);
    assert_eq!(f.top_by_refusals, [("tenant-42".to_string(), 2)]);
}

const BUDGETS: &str = r#"
resilience4j:
  retry:
    instances:
      calls:
        wait-duration: 0s
        keyed:
          max-keys: 2
          idle-ttl: 1m
"#;

/// The registry of `BUDGETS` whose retry `calls` has, in code, a budget of
/// one retry a second and nothing per call.
fn budgets_registry(clock: &ManualClock) -> Registry {
    let registry = Registry::builder().clock(clock.clone()).build();
    registry
        .reload(FileConfig::from_yaml_str(BUDGETS).unwrap())
        .unwrap();
    registry
        .configure_retry("calls", |b| b.budget(budgets::one_retry_budget()))
        .unwrap();
    registry
}

#[test]
fn a_retry_budget_per_key_is_configured_by_the_retrys_budget_and_the_files_bounds() {
    let clock = ManualClock::new();
    let registry = budgets_registry(&clock);
    let budgets = registry.keyed_retry_budget("calls");
    assert_eq!(budgets.config().min_retries_per_second(), 1);
    assert_eq!(budgets.keyed_config().max_keys(), 2);
    assert_eq!(budgets.keyed_config().idle_ttl(), Duration::from_secs(60));

    // The retry draws on the key's budget: `a` spends its one retry.
    let retry = registry.retry("calls");
    let out: Result<(), resil::Error<&str>> =
        retry.with_budget(&budgets.get("a")).call(|| Err("down"));
    assert_eq!(
        out.unwrap_err().kind(),
        resil::ErrorKind::RetryBudgetExhausted
    );
    assert_eq!(budgets.get("a").available_retries(), 0);
    assert_eq!(budgets.get("b").available_retries(), 1, "b has its own");
    assert_eq!(registry.keyed_retry_budget_names(), ["calls"]);

    let snapshot = registry.keyed_snapshot(3);
    let f = snapshot.iter().find(|f| f.aspect == "retry").unwrap();
    assert_eq!(
        (f.name.as_str(), f.max_keys, f.idle_ttl.as_str()),
        ("calls", 2, "1m")
    );
    assert_eq!(
        f.default,
        "retry-ratio=0, min-retries-per-second=1, window=1s"
    );
    assert_eq!(f.top_by_refusals, [("a".to_string(), 1)]);
    let text = registry.prometheus_text();
    assert!(
        text.contains(r#"resil_keyed_keys{aspect="retry",name="calls"} 2"#)
            || text.contains(r#"resil_keyed_keys{name="calls",aspect="retry"} 2"#),
        "{text}"
    );
}

#[test]
fn a_key_that_spent_its_retries_is_not_evicted_into_a_fresh_budget() {
    let clock = ManualClock::new();
    let registry = budgets_registry(&clock);
    let budgets = registry.keyed_retry_budget("calls");
    assert!(budgets.get("spent").withdraw());
    assert!(!budgets.get("spent").withdraw());
    // `fresh` holds nothing a new budget would not: it makes room.
    assert_eq!(budgets.get("fresh").available_retries(), 1);
    for key in ["x", "y", "z"] {
        assert_eq!(budgets.get(key).available_retries(), 1);
    }
    assert_eq!(budgets.counts().evicted_full, 3);
    assert_eq!(budgets.get("spent").available_retries(), 0, "still spent");

    // Every slot holds a budget inside its window: a new key is refused,
    // and its budget pays for no retry.
    assert!(budgets.get("z").withdraw());
    let refused = budgets.get("w");
    assert!(refused.is_refused());
    assert!(!refused.withdraw());
    drop(refused);
    assert_eq!(budgets.counts().refused, 1);

    // Once the window has passed, the keys are at rest and go when idle.
    clock.advance(Duration::from_secs(60));
    assert_eq!(budgets.evict_idle(), 2);
    assert_eq!(budgets.counts().in_use, 0);
    assert_eq!(budgets.get("spent").available_retries(), 1);
}

const BUDGET_TIERS: &str = r#"
resilience4j:
  retry:
    instances:
      tiered:
        wait-duration: 0s
        budget-retry-ratio: 0.5
        budget-window: 2s
        keyed:
          overrides:
            "gold-*": { budget-min-retries-per-second: 50 }
            "tenant-42": { budget-min-retries-per-second: 0, budget-retry-ratio: 0 }
"#;

#[test]
fn a_retry_budget_and_its_tiers_come_from_the_file_and_follow_a_reload() {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    registry
        .reload(FileConfig::from_yaml_str(BUDGET_TIERS).unwrap())
        .unwrap();
    // The unkeyed retry draws on a budget of the file's settings.
    let retry = registry.retry("tiered");
    let own = retry.config().budget().unwrap().config();
    assert_eq!(
        (
            own.retry_ratio(),
            own.min_retries_per_second(),
            own.window()
        ),
        (0.5, 10, Duration::from_secs(2))
    );
    // Each key's budget: the instance's, or its override's laid on top.
    let budgets = registry.keyed_retry_budget("tiered");
    assert_eq!(
        budgets.get("gold-1").available_retries(),
        100,
        "50/s over 2 s"
    );
    assert_eq!(
        budgets.get("tenant-7").available_retries(),
        20,
        "10/s over 2 s"
    );
    assert_eq!(budgets.get("tenant-42").available_retries(), 0);
    assert_eq!(budgets.get("tenant-42").config().retry_ratio(), 0.0);
    let snapshot = registry.keyed_snapshot(3);
    let f = snapshot.iter().find(|f| f.aspect == "retry").unwrap();
    assert_eq!(
        f.overrides[0],
        (
            "gold-*".to_string(),
            "retry-ratio=0.5, min-retries-per-second=50, window=2s".to_string()
        )
    );
    // The snapshot renders the file's values as the file writes them.
    let snapshot = registry.snapshot();
    let instance = snapshot
        .instances
        .iter()
        .find(|i| i.kind == "retry" && i.name == "tiered")
        .unwrap();
    let config = format!("{:?}", instance.config);
    assert!(
        config.contains("budget-retry-ratio") && config.contains("0.5"),
        "{config}"
    );

    // A reload changes the tiers for keys created from then on.
    registry
        .reload(
            FileConfig::from_yaml_str(&BUDGET_TIERS.replace(
                "budget-min-retries-per-second: 50",
                "budget-min-retries-per-second: 5",
            ))
            .unwrap(),
        )
        .unwrap();
    assert_eq!(
        budgets.get("gold-1").available_retries(),
        100,
        "a key held keeps its budget"
    );
    assert_eq!(
        budgets.get("gold-2").available_retries(),
        10,
        "5/s over 2 s"
    );
}

#[test]
fn retry_budget_mistakes_name_their_key_path() {
    let cases = [
        (
            "        budget-window: 2m\n",
            "resilience4j.retry.instances.calls.budget-window",
        ),
        (
            "        budget-retry-ratio: 11\n",
            "resilience4j.retry.instances.calls.budget-retry-ratio",
        ),
        (
            "        budget-retry-ration: 0.5\n",
            "did you mean `budget-retry-ratio`?",
        ),
        (
            "        keyed:\n          overrides: { \"gold-*\": { max-attempts: 5 } }\n",
            "a key override may set `budget-retry-ratio`, `budget-min-retries-per-second`, `budget-window`",
        ),
    ];
    for (lines, expected) in cases {
        let yaml = format!("resilience4j:\n  retry:\n    instances:\n      calls:\n{lines}");
        let err = FileConfig::from_yaml_str(&yaml).unwrap_err().to_string();
        assert!(err.contains(expected), "{lines}: {err}");
    }
}
