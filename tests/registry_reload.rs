//! A registry configured from a file: precedence across file and code, error
//! classes by name, provenance in the snapshot, and reloads that apply all or
//! nothing.
#![cfg(feature = "toml")]

use std::time::Duration;

use resil::circuit_breaker::{CircuitBreaker, Outcome, State};
use resil::config::FileConfig;
use resil::rate_limiter::RateLimiter;
use resil::registry_crate::{Kind, RegistryError, RegistryEventKind, ReloadError, Transition};
use resil::{ErrorClass, Handle, Registry};

#[derive(Debug)]
enum InventoryError {
    Connection,
    Business,
}

impl ErrorClass for InventoryError {
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

const FILE: &str = r#"
[resilience4j.circuitbreaker.configs.default]
sliding-window-size = 50
minimum-number-of-calls = 40

[resilience4j.circuitbreaker.configs.base]
failure-rate-threshold = 20
minimum-number-of-calls = 22

[resilience4j.circuitbreaker.configs.named]
base-config = "base"
failure-rate-threshold = 30

[resilience4j.circuitbreaker.instances.inventory]
base-config = "named"
slow-call-rate-threshold = 45
record-errors = ["inventory_connection"]
tags = { team = "stock" }

[resilience4j.ratelimiter.instances.api]
limit-for-period = 10
limit-refresh-period = "1h"

[resilience4j.bulkhead.instances.db]
max-concurrent-calls = 4
"#;

fn file(text: &str) -> FileConfig {
    FileConfig::from_toml_str(text).unwrap()
}

fn loaded() -> Registry {
    let registry = Registry::new();
    registry.register_error_class::<InventoryError>();
    registry.reload(file(FILE)).unwrap();
    registry
}

#[test]
fn precedence_runs_default_base_named_instance_then_code_and_the_snapshot_says_where_from() {
    let registry = loaded();
    registry
        .configure_circuit_breaker("inventory", |b| {
            b.permitted_number_of_calls_in_half_open_state(7)
        })
        .unwrap();
    let cb = registry.circuit_breaker("inventory");
    let c = cb.config();
    assert_eq!(c.sliding_window_size(), 50, "default config");
    assert_eq!(c.minimum_number_of_calls(), 22, "base over default");
    assert_eq!(c.failure_rate_threshold(), 30.0, "named over base");
    assert_eq!(c.slow_call_rate_threshold(), 45.0, "instance over named");
    assert_eq!(
        c.permitted_number_of_calls_in_half_open_state(),
        7,
        "code last"
    );
    assert_eq!(
        c.classify_error(&InventoryError::Connection),
        Outcome::Failure
    );
    assert_eq!(
        c.classify_error(&InventoryError::Business),
        Outcome::Success
    );
    // A name the file does not know gets the default config.
    assert_eq!(
        registry
            .circuit_breaker("other")
            .config()
            .sliding_window_size(),
        50
    );

    let snap = registry.snapshot();
    let i = snap.instance(Kind::CircuitBreaker, "inventory").unwrap();
    let source = |key: &str| i.config_value(key).unwrap().source.clone();
    assert_eq!(source("sliding-window-size"), "config `default`");
    assert_eq!(source("minimum-number-of-calls"), "config `base`");
    assert_eq!(source("failure-rate-threshold"), "config `named`");
    assert_eq!(source("slow-call-rate-threshold"), "instance");
    assert_eq!(
        source("permitted-number-of-calls-in-half-open-state"),
        "code"
    );
    assert_eq!(source("wait-duration-in-open-state"), "default");
    assert_eq!(i.tags.get("team").map(String::as_str), Some("stock"));
}

#[test]
fn an_unknown_error_class_in_the_file_lists_the_registered_names_and_changes_nothing() {
    let registry = loaded();
    let cb = registry.circuit_breaker("inventory");
    let bad = FILE.replace(
        "record-errors = [\"inventory_connection\"]",
        "record-errors = [\"inventory_conection\"]",
    );
    let err = registry.reload(file(&bad)).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ReloadError::File(_)));
    assert!(
        text.contains("unknown error class `inventory_conection` at `resilience4j.circuitbreaker.instances.inventory.record-errors[0]`"),
        "{text}"
    );
    assert!(
        text.contains("did you mean `inventory_connection`?"),
        "{text}"
    );
    assert!(
        text.contains("`timeout`"),
        "resil::Error kinds are names too: {text}"
    );
    assert_eq!(cb.retired_instances(), 0, "nothing replaced");
    assert_eq!(
        cb.config().classify_error(&InventoryError::Connection),
        Outcome::Failure
    );
    // Without the class registered, even the original file is refused.
    let err = Registry::from_toml_str(FILE).err().unwrap();
    assert!(err.to_string().contains("inventory_connection"), "{err}");
}

#[test]
fn a_bad_file_is_refused_before_it_reaches_the_registry() {
    let broken = FILE.replace("max-concurrent-calls = 4", "max-concurrent-calls = 0");
    let err = FileConfig::from_toml_str(&broken).unwrap_err();
    assert!(
        err.to_string()
            .contains("resilience4j.bulkhead.instances.db.max-concurrent-calls"),
        "{err}"
    );
}

#[test]
fn a_reload_that_clashes_with_an_instance_s_code_settings_applies_nothing() {
    let registry = loaded();
    // Code times the open state with a function; a file that then also sets a
    // fixed wait for this instance is valid on its own, but not together.
    registry
        .configure_circuit_breaker("inventory", |b| {
            b.wait_interval_function_in_open_state(resil::IntervalFunction::custom(|n| {
                Duration::from_secs(u64::from(n))
            }))
        })
        .unwrap();
    let cb = registry.circuit_breaker("inventory");
    let limiter = registry.rate_limiter("api");
    let mut events = registry.subscribe();
    let clash = FILE
        .replace("limit-for-period = 10", "limit-for-period = 99")
        .replace(
            "slow-call-rate-threshold = 45",
            "slow-call-rate-threshold = 46\nwait-duration-in-open-state = \"5s\"",
        );
    match registry.reload(file(&clash)) {
        Err(ReloadError::Instances(errors)) => {
            assert_eq!(errors.len(), 1, "{errors:?}");
            assert!(
                matches!(&errors[0], RegistryError::InvalidConfig { kind: Kind::CircuitBreaker, name, source }
                    if name == "inventory" && source.field() == "wait_duration_in_open_state"),
                "{errors:?}"
            );
        }
        other => panic!("expected the instance error, got {other:?}"),
    }
    assert_eq!(
        limiter.config().limit_for_period(),
        10,
        "the valid part was not applied either"
    );
    assert_eq!(cb.config().slow_call_rate_threshold(), 45.0);
    assert_eq!(cb.retired_instances(), 0);
    assert!(events.drain().is_empty(), "no event for a refused reload");
    // The running instances keep working.
    assert!(cb.call(|| Ok::<_, ()>(())).is_ok());
}

#[test]
fn a_valid_reload_replaces_changed_instances_updates_limits_in_place_and_leaves_the_rest_alone() {
    let registry = loaded();
    let inventory = registry.circuit_breaker("inventory");
    let other = registry.circuit_breaker("other");
    let limiter = registry.rate_limiter("api");
    let bulkhead = registry.bulkhead("db");
    let _ = other.call(|| Err::<(), _>("boom"));
    registry
        .transition_circuit_breaker("other", Transition::MetricsOnly)
        .unwrap();
    let mut events = registry.subscribe();

    let next = FILE
        .replace(
            "slow-call-rate-threshold = 45",
            "slow-call-rate-threshold = 55",
        )
        .replace("limit-for-period = 10", "limit-for-period = 3")
        .replace("max-concurrent-calls = 4", "max-concurrent-calls = 2");
    let report = registry.reload(file(&next)).unwrap();
    assert_eq!(report.replaced, ["circuit_breaker inventory"]);
    assert_eq!(report.updated_in_place, ["bulkhead db", "rate_limiter api"]);
    assert_eq!(report.unchanged, 1);

    assert_eq!(
        inventory.config().slow_call_rate_threshold(),
        55.0,
        "the held handle sees it"
    );
    assert_eq!(inventory.retired_instances(), 1);
    assert_eq!(
        inventory
            .config()
            .classify_error(&InventoryError::Connection),
        Outcome::Failure,
        "error lists survive"
    );
    assert_eq!(other.retired_instances(), 0, "unchanged: untouched");
    assert_eq!(other.state(), State::MetricsOnly);
    assert_eq!(limiter.retired_instances(), 0, "same limiter");
    assert_eq!(limiter.config().limit_for_period(), 3);
    assert_eq!(bulkhead.retired_instances(), 0, "same bulkhead");
    assert_eq!(bulkhead.available_concurrent_calls(), 2);

    let got = events.drain();
    let kinds: Vec<(String, &'static str)> = got
        .iter()
        .map(|e| {
            (
                format!("{} {}", e.kind, e.name),
                match e.what {
                    RegistryEventKind::Replaced {
                        state_carried_over: true,
                        ..
                    } => "replaced",
                    RegistryEventKind::Reconfigured { .. } => "reconfigured",
                    _ => "other",
                },
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("circuit_breaker inventory".to_owned(), "replaced"),
            ("bulkhead db".to_owned(), "reconfigured"),
            ("rate_limiter api".to_owned(), "reconfigured"),
        ]
    );
    // Reloading the same file again changes nothing.
    let report = registry.reload(file(&next)).unwrap();
    assert!(report.replaced.is_empty() && report.updated_in_place.is_empty());
    assert_eq!(report.unchanged, 4);
}

#[test]
fn a_replaced_breaker_keeps_its_manual_mode() {
    let registry = loaded();
    let cb = registry.circuit_breaker("inventory");
    registry.force_open("inventory", None, "INC-3").unwrap();
    let next = FILE.replace(
        "slow-call-rate-threshold = 45",
        "slow-call-rate-threshold = 55",
    );
    registry.reload(file(&next)).unwrap();
    assert_eq!(cb.config().slow_call_rate_threshold(), 55.0);
    assert_eq!(cb.state(), State::ForcedOpen);
}

#[test]
fn circuit_breaker_for_uses_a_file_group_and_the_seed_example_loads_with_its_classes() {
    let registry = loaded();
    let amex = registry.circuit_breaker_for("amex", "named");
    assert_eq!(amex.config().failure_rate_threshold(), 30.0);
    let visa = registry.circuit_breaker_for("inventory", "named");
    assert_eq!(
        visa.config().slow_call_rate_threshold(),
        45.0,
        "the id's own entry wins"
    );
    let jcb: Handle<CircuitBreaker> = registry.circuit_breaker_for("jcb", "nope");
    assert_eq!(jcb.config().failure_rate_threshold(), 50.0);

    let seed = Registry::new();
    seed.register_error_class::<InventoryError>();
    seed.reload(
        FileConfig::from_file(concat!(env!("CARGO_MANIFEST_DIR"), "/examples/resil.toml")).unwrap(),
    )
    .unwrap();
    let retry = seed.retry("inventory-query");
    assert_eq!(retry.config().max_attempts(), 2);
    assert_eq!(retry.config().wait_duration(), Duration::from_millis(100));
    assert_eq!(
        seed.bulkhead("inventory-query")
            .config()
            .max_concurrent_calls(),
        20
    );
    assert_eq!(
        seed.circuit_breaker("inventory-query")
            .config()
            .sliding_window_size(),
        20
    );
    let _: Option<Handle<RateLimiter>> = seed.find::<RateLimiter>("none");
}

#[test]
fn reloads_snapshots_health_configure_and_new_names_running_together_never_deadlock() {
    let registry = std::sync::Arc::new(loaded());
    let next = FILE.replace(
        "slow-call-rate-threshold = 45",
        "slow-call-rate-threshold = 55",
    );
    let files = [file(FILE), file(&next)];
    std::thread::scope(|s| {
        let r = &registry;
        s.spawn(move || {
            for i in 0..100 {
                r.reload(files[i % 2].clone()).unwrap();
            }
        });
        s.spawn(move || {
            for _ in 0..100 {
                let _ = r.snapshot();
                let _ = r.health();
            }
        });
        s.spawn(move || {
            for i in 0..100 {
                let _ = r.circuit_breaker(&format!("new-{i}"));
                r.configure_circuit_breaker("inventory", move |b| {
                    b.permitted_number_of_calls_in_half_open_state(1 + i % 5)
                })
                .unwrap();
            }
        });
        s.spawn(move || {
            for i in 0..100 {
                let _ = r.circuit_breaker("inventory").call(|| Ok::<_, ()>(i));
                let _ = r.tags::<CircuitBreaker>("inventory");
            }
        });
    });
    assert_eq!(registry.len(Kind::CircuitBreaker), 101);
}

const WINDOW: &str = r#"
[resilience4j.circuitbreaker.instances.x]
sliding-window-size = 4
minimum-number-of-calls = 4
failure-rate-threshold = 50
wait-duration-in-open-state = "10s"
"#;

#[test]
fn a_reload_keeping_the_window_shape_carries_the_window_and_the_open_wait_over() {
    use resil::clock::ManualClock;
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    registry.reload(file(WINDOW)).unwrap();
    let cb = registry.circuit_breaker("x");
    let _ = cb.call(|| Err::<(), _>("boom"));
    let _ = cb.call(|| Ok::<_, &str>(()));
    let mut events = registry.subscribe();

    // Same window shape: the two outcomes stay in the window.
    registry
        .reload(file(&WINDOW.replace(
            "failure-rate-threshold = 50",
            "failure-rate-threshold = 75",
        )))
        .unwrap();
    assert_eq!(cb.config().failure_rate_threshold(), 75.0);
    assert_eq!(cb.metrics().buffered_calls(), 2);
    assert_eq!(cb.metrics().failed_calls(), 1);
    assert!(matches!(
        events.drain()[0].what,
        RegistryEventKind::Replaced {
            state_carried_over: true,
            ..
        }
    ));
    let _ = cb.call(|| Err::<(), _>("boom"));
    let _ = cb.call(|| Err::<(), _>("boom"));
    assert_eq!(cb.state(), State::Open, "3 of 4 failed: 75 % >= 75 %");

    // OPEN carries over with the rest of its wait.
    clock.advance(Duration::from_secs(6));
    registry
        .reload(file(&WINDOW.replace(
            "failure-rate-threshold = 50",
            "failure-rate-threshold = 80",
        )))
        .unwrap();
    assert_eq!(cb.state(), State::Open);
    assert!(cb.call(|| Ok::<_, &str>(())).is_err(), "still waiting");
    clock.advance(Duration::from_secs(4) + Duration::from_millis(1));
    assert!(
        cb.call(|| Ok::<_, &str>(())).is_ok(),
        "the 10 s wait ended on time"
    );

    // Another window shape: a fresh breaker, and the event says so.
    let _ = events.drain();
    registry
        .reload(file(
            &WINDOW.replace("sliding-window-size = 4", "sliding-window-size = 8"),
        ))
        .unwrap();
    assert_eq!(cb.state(), State::Closed);
    assert_eq!(cb.metrics().buffered_calls(), 0);
    assert!(matches!(
        events.drain()[0].what,
        RegistryEventKind::Replaced {
            state_carried_over: false,
            ..
        }
    ));
}

/// What a breaker counted since it was created is cumulative for a
/// monitoring system: a reload that rebuilds the breaker — carrying its
/// window or not — never sends the published totals back.
#[test]
fn a_rebuilt_breaker_keeps_counting_its_cumulative_totals() {
    use resil::circuit_breaker::CallKind;
    let registry = Registry::from_yaml_str(
        "resilience4j.circuitbreaker.instances.totals:\n  sliding-window-size: 10\n",
    )
    .unwrap();
    let breaker = registry.circuit_breaker("totals");
    let _ = breaker.call(|| Ok::<_, &str>(()));
    let _ = breaker.call(|| Err::<(), _>("down"));
    // Same window shape: state and window carried over.
    registry
        .reload(file(
            "[resilience4j.circuitbreaker.instances.totals]\nsliding-window-size = 10\nfailure-rate-threshold = 20\n",
        ))
        .unwrap();
    let _ = breaker.call(|| Ok::<_, &str>(()));
    // Another window size: a fresh window, the same totals.
    registry
        .reload(file(
            "[resilience4j.circuitbreaker.instances.totals]\nsliding-window-size = 20\n",
        ))
        .unwrap();
    let _ = breaker.call(|| Err::<(), _>("down"));
    assert_eq!(
        breaker.metrics().buffered_calls(),
        1,
        "the window started over"
    );
    let totals = breaker.call_totals();
    assert_eq!(totals.timer(CallKind::Successful).count(), 2);
    assert_eq!(totals.timer(CallKind::Failed).count(), 2);
    assert!(registry.prometheus_text().contains(
        "resilience4j_circuitbreaker_calls_seconds_count{kind=\"failed\",name=\"totals\"} 2\n"
    ));
}

#[test]
fn a_failing_first_load_says_cannot_load_and_a_failing_reload_says_refused() {
    let bad = FILE.replace(
        "record-errors = [\"inventory_connection\"]",
        "record-errors = [\"inventory_conection\"]",
    );
    let registry = Registry::new();
    registry.register_error_class::<InventoryError>();
    let first = registry.reload(file(&bad)).unwrap_err();
    let text = first.to_string();
    assert!(
        text.starts_with("cannot load the configuration, nothing installed: 1 problem"),
        "{text}"
    );
    assert!(!text.contains("reload refused"), "{text}");
    assert!(matches!(&first, ReloadError::File(e) if e.is_first_load()));

    registry.reload(file(FILE)).unwrap();
    let later = registry.reload(file(&bad)).unwrap_err();
    assert!(
        later
            .to_string()
            .starts_with("reload refused, nothing changed: 1 problem"),
        "{later}"
    );
}
