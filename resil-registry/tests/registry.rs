//! The registry's contract: same name → same instance, code settings and
//! their precedence, events in order, handles that follow replacements.

use std::sync::{Arc, Barrier};

use resil_core::circuit_breaker::{CircuitBreaker, Outcome, State};
use resil_core::clock::ManualClock;
use resil_core::retry::Retry;
use resil_registry::{
    ErrorClass, ErrorList, Handle, Kind, Registry, RegistryError, RegistryEventKind,
};

#[test]
fn the_same_name_gives_the_same_instance_and_different_names_different_ones() {
    let registry = Registry::new();
    let a = registry.circuit_breaker("inventory");
    let b = registry.circuit_breaker("inventory");
    let c = registry.circuit_breaker("payments");
    assert!(Handle::same_entry(&a, &b));
    assert!(!Handle::same_entry(&a, &c));
    let _ = a.call(|| Err::<(), _>("boom"));
    assert_eq!(
        b.metrics().failed_calls(),
        1,
        "b is a handle to a's breaker"
    );
    assert_eq!(c.metrics().failed_calls(), 0);
    // Kinds are separate namespaces.
    let r = registry.retry("inventory");
    assert_eq!(r.name(), "inventory");
    assert_eq!(registry.len(Kind::CircuitBreaker), 2);
    assert_eq!(registry.len(Kind::Retry), 1);
    assert_eq!(registry.len(Kind::Bulkhead), 0);
}

#[test]
fn every_kind_has_an_accessor_built_from_the_defaults() {
    let registry = Registry::new();
    assert_eq!(
        registry
            .circuit_breaker("x")
            .config()
            .failure_rate_threshold(),
        50.0
    );
    assert_eq!(registry.retry("x").config().max_attempts(), 3);
    assert_eq!(registry.bulkhead("x").config().max_concurrent_calls(), 25);
    assert_eq!(
        registry.thread_pool_bulkhead("x").config().queue_capacity(),
        100
    );
    assert_eq!(registry.rate_limiter("x").config().limit_for_period(), 50);
    assert_eq!(
        registry.time_limiter("x").config().timeout_duration(),
        std::time::Duration::from_secs(1)
    );
    assert_eq!(
        registry.hedging("x").config().delay(),
        std::time::Duration::from_secs(2)
    );
    assert_eq!(registry.adaptive_bulkhead("x").config().max_limit(), 1000);
    assert!(!registry.chaos("x").config().enabled());
    assert_eq!(registry.throttler("x").config().accepts_multiplier(), 2.0);
    for kind in Kind::ALL {
        assert_eq!(registry.len(kind), 1, "{kind}");
    }
}

#[test]
fn eight_threads_racing_on_a_new_name_create_one_instance_and_one_added_event() {
    for round in 0..20 {
        let registry = Arc::new(Registry::new());
        let mut events = registry.subscribe();
        let threads = 8;
        let barrier = Arc::new(Barrier::new(threads));
        let handles: Vec<Handle<CircuitBreaker>> = std::thread::scope(|s| {
            let joins: Vec<_> = (0..threads)
                .map(|_| {
                    let registry = Arc::clone(&registry);
                    let barrier = Arc::clone(&barrier);
                    s.spawn(move || {
                        barrier.wait();
                        registry.circuit_breaker("race")
                    })
                })
                .collect();
            joins.into_iter().map(|j| j.join().unwrap()).collect()
        });
        for h in &handles[1..] {
            assert!(Handle::same_entry(&handles[0], h), "round {round}");
        }
        let added: Vec<_> = events
            .drain()
            .into_iter()
            .filter(|e| e.what == RegistryEventKind::Added)
            .collect();
        assert_eq!(added.len(), 1, "round {round}: one Added event");
        assert_eq!(registry.len(Kind::CircuitBreaker), 1);
        // One instance: a failure through any handle is seen by all.
        let _ = handles[3].call(|| Err::<(), _>("x"));
        assert_eq!(handles[7].metrics().failed_calls(), 1);
    }
}

#[test]
fn configure_applies_code_settings_and_rebuilds_an_existing_instance_seen_by_held_handles() {
    let registry = Registry::new();
    let held = registry.circuit_breaker("inventory");
    let before: &CircuitBreaker = &held;
    assert_eq!(before.config().minimum_number_of_calls(), 100);
    let mut events = registry.subscribe();
    registry
        .configure_circuit_breaker("inventory", |b| {
            b.minimum_number_of_calls(4)
                .sliding_window_size(4)
                .ignore_error(|e: &&str| *e == "not found")
        })
        .unwrap();
    assert_eq!(
        held.config().minimum_number_of_calls(),
        4,
        "the held handle sees the rebuild"
    );
    assert_eq!(held.config().classify_error(&"not found"), Outcome::Ignored);
    // The instance a reference was taken from is retired, not freed.
    assert_eq!(before.config().minimum_number_of_calls(), 100);
    assert_eq!(held.retired_instances(), 1);
    let replaced = events.drain();
    assert_eq!(replaced.len(), 1);
    assert!(matches!(
        replaced[0].what,
        RegistryEventKind::Replaced { .. }
    ));
    // Settings configured before the first look-up apply at creation.
    registry
        .configure_retry("payments", |b| b.max_attempts(7))
        .unwrap();
    assert_eq!(registry.retry("payments").config().max_attempts(), 7);
}

#[test]
fn a_rebuild_in_code_keeps_the_mode_an_operator_set_when_the_window_cannot_carry_over() {
    let registry = Registry::new();
    for (name, mode) in [
        ("forced", State::ForcedOpen),
        ("disabled", State::Disabled),
        ("metrics", State::MetricsOnly),
    ] {
        let breaker = registry.circuit_breaker(name);
        match mode {
            State::ForcedOpen => breaker.transition_to_forced_open(),
            State::Disabled => breaker.transition_to_disabled(),
            _ => breaker.transition_to_metrics_only(),
        }
        .unwrap();
        // A new window size: the state cannot be carried over, the mode is.
        registry
            .configure_circuit_breaker(name, |b| b.sliding_window_size(7))
            .unwrap();
        let breaker = registry.circuit_breaker(name);
        assert_eq!(breaker.config().sliding_window_size(), 7);
        assert_eq!(breaker.state(), mode, "{name}");
    }
    // An ordinary state is not a mode: OPEN starts over CLOSED.
    let open = registry.circuit_breaker("open");
    open.transition_to_open().unwrap();
    registry
        .configure_circuit_breaker("open", |b| b.sliding_window_size(7))
        .unwrap();
    assert_eq!(registry.circuit_breaker("open").state(), State::Closed);
}

#[test]
fn invalid_or_panicking_code_settings_are_refused_and_change_nothing() {
    let registry = Registry::new();
    registry
        .configure_circuit_breaker("inventory", |b| b.failure_rate_threshold(60.0))
        .unwrap();
    let held = registry.circuit_breaker("inventory");
    let err = registry
        .configure_circuit_breaker("inventory", |b| b.failure_rate_threshold(0.0))
        .unwrap_err();
    match &err {
        RegistryError::InvalidConfig { kind, name, source } => {
            assert_eq!(*kind, Kind::CircuitBreaker);
            assert_eq!(name, "inventory");
            assert_eq!(source.field(), "failure_rate_threshold");
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(
        err.to_string().contains("circuit_breaker `inventory`"),
        "{err}"
    );
    let err = registry
        .configure_circuit_breaker("inventory", |_| panic!("user bug"))
        .unwrap_err();
    assert!(
        matches!(err, RegistryError::SettingsPanicked { .. }),
        "{err:?}"
    );
    assert_eq!(
        held.config().failure_rate_threshold(),
        60.0,
        "the earlier settings stay"
    );
    assert_eq!(held.retired_instances(), 0, "nothing was replaced");
    // A fresh look-up still builds from the last valid settings.
    registry.remove::<CircuitBreaker>("inventory").unwrap();
    assert_eq!(
        registry
            .circuit_breaker("inventory")
            .config()
            .failure_rate_threshold(),
        60.0
    );
}

#[test]
fn precedence_is_defaults_then_default_config_then_base_chain_then_named_then_instance_code() {
    let registry = Registry::new();
    registry
        .add_config::<CircuitBreaker>("default", None, |b| {
            b.failure_rate_threshold(10.0)
                .minimum_number_of_calls(11)
                .sliding_window_size(30)
        })
        .unwrap();
    registry
        .add_config::<CircuitBreaker>("base", None, |b| {
            b.failure_rate_threshold(20.0).minimum_number_of_calls(22)
        })
        .unwrap();
    registry
        .add_config::<CircuitBreaker>("named", Some("base"), |b| b.failure_rate_threshold(30.0))
        .unwrap();
    registry
        .use_config::<CircuitBreaker>("inventory", "named")
        .unwrap();
    registry
        .configure_circuit_breaker("inventory", |b| b.slow_call_rate_threshold(40.0))
        .unwrap();
    let cb = registry.circuit_breaker("inventory");
    let c = cb.config();
    assert_eq!(c.failure_rate_threshold(), 30.0, "named over base");
    assert_eq!(c.minimum_number_of_calls(), 22, "base over default");
    assert_eq!(c.sliding_window_size(), 30, "default over built-in");
    assert_eq!(c.slow_call_rate_threshold(), 40.0, "instance code last");
    assert_eq!(
        c.permitted_number_of_calls_in_half_open_state(),
        10,
        "built-in default"
    );
    // An instance naming no config inherits from `default`.
    assert_eq!(
        registry
            .circuit_breaker("other")
            .config()
            .failure_rate_threshold(),
        10.0
    );
    // Changing a config rebuilds the instances built from it.
    registry
        .add_config::<CircuitBreaker>("base", None, |b| b.minimum_number_of_calls(25))
        .unwrap();
    assert_eq!(cb.config().minimum_number_of_calls(), 25);
}

#[test]
fn unknown_and_cyclic_base_configs_are_refused_with_the_whole_chain() {
    let registry = Registry::new();
    registry
        .add_config::<Retry>("a", Some("b"), |b| b)
        .unwrap_err();
    registry.add_config::<Retry>("b", None, |b| b).unwrap();
    registry.add_config::<Retry>("a", Some("b"), |b| b).unwrap();
    let err = registry
        .add_config::<Retry>("b", Some("a"), |b| b)
        .unwrap_err();
    assert_eq!(
        err,
        RegistryError::CyclicConfig {
            kind: Kind::Retry,
            chain: vec!["b".into(), "a".into(), "b".into()]
        }
    );
    assert_eq!(
        err.to_string(),
        "retry base-config chain is a cycle: b -> a -> b"
    );
    let err = registry.use_config::<Retry>("x", "c").unwrap_err();
    assert!(
        err.to_string().starts_with(
            "unknown retry config `c` (base-config chain: c); known configs: `a`, `b`"
        ),
        "{err}"
    );
    let err = registry
        .add_config::<Retry>("d", Some("missing"), |b| b)
        .unwrap_err();
    assert!(err.to_string().contains("chain: d -> missing"), "{err}");
    // The refused cycle left `b` as it was: `a` still resolves.
    registry.use_config::<Retry>("x", "a").unwrap();
}

#[test]
fn events_about_one_name_arrive_in_order_added_replaced_removed_added() {
    let registry = Registry::new();
    let mut events = registry.subscribe();
    let _ = registry.bulkhead("db");
    registry
        .configure_bulkhead("db", |b| b.max_concurrent_calls(3))
        .unwrap();
    registry
        .remove::<resil_core::bulkhead::Bulkhead>("db")
        .unwrap();
    let _ = registry.bulkhead("db");
    let got: Vec<_> = events.drain();
    let kinds: Vec<&str> = got
        .iter()
        .map(|e| match e.what {
            RegistryEventKind::Added => "added",
            RegistryEventKind::Removed => "removed",
            RegistryEventKind::Replaced { .. } => "replaced",
            _ => "other",
        })
        .collect();
    assert_eq!(kinds, ["added", "replaced", "removed", "added"]);
    assert!(got.windows(2).all(|w| w[0].seq < w[1].seq));
    assert!(got
        .iter()
        .all(|e| e.kind == Kind::Bulkhead && &*e.name == "db"));
    assert_eq!(
        registry.bulkhead("db").config().max_concurrent_calls(),
        3,
        "code settings outlive the instance"
    );
}

#[test]
fn a_removed_instance_keeps_working_for_its_handles_and_removing_twice_is_not_found() {
    let registry = Registry::new();
    let old = registry.circuit_breaker("x");
    registry.remove::<CircuitBreaker>("x").unwrap();
    assert!(old.call(|| Ok::<_, ()>(1)).is_ok());
    let new = registry.circuit_breaker("x");
    assert!(!Handle::same_entry(&old, &new));
    registry.remove::<CircuitBreaker>("x").unwrap();
    let err = registry.remove::<CircuitBreaker>("x").unwrap_err();
    assert_eq!(
        err.to_string(),
        "no circuit_breaker called `x` in the registry"
    );
}

#[test]
fn the_cardinality_guard_refuses_past_the_cap_counts_and_still_protects_the_call() {
    let registry = Registry::builder().max_instances_per_kind(3).build();
    for i in 0..3 {
        registry
            .try_circuit_breaker(&format!("customer-{i}"))
            .unwrap();
    }
    // An existing name is never refused.
    registry.try_circuit_breaker("customer-0").unwrap();
    let err = registry.try_circuit_breaker("customer-3").unwrap_err();
    assert_eq!(
        err,
        RegistryError::CardinalityExceeded {
            kind: Kind::CircuitBreaker,
            name: "customer-3".into(),
            limit: 3
        }
    );
    assert!(
        err.to_string().contains("already holds 3 instances"),
        "{err}"
    );
    let detached = registry.circuit_breaker("customer-4");
    assert!(detached.call(|| Ok::<_, ()>(())).is_ok());
    assert_eq!(registry.len(Kind::CircuitBreaker), 3);
    assert_eq!(registry.refused_by_cap(Kind::CircuitBreaker), 2);
    // Other kinds have their own cap.
    registry.try_retry("customer-3").unwrap();
    // Removing frees a place.
    registry.remove::<CircuitBreaker>("customer-1").unwrap();
    registry.try_circuit_breaker("customer-3").unwrap();
}

#[test]
fn the_registry_clock_times_its_instances() {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    registry
        .configure_circuit_breaker("x", |b| {
            b.sliding_window_size(2)
                .minimum_number_of_calls(2)
                .wait_duration_in_open_state(std::time::Duration::from_secs(5))
        })
        .unwrap();
    let cb = registry.circuit_breaker("x");
    let _ = cb.call(|| Err::<(), _>(1));
    let _ = cb.call(|| Err::<(), _>(1));
    assert_eq!(cb.state(), State::Open);
    // OPEN is left strictly after its wait.
    clock.advance(std::time::Duration::from_secs(5) + std::time::Duration::from_nanos(1));
    assert!(
        cb.call(|| Ok::<_, ()>(())).is_ok(),
        "half-open after the manual wait"
    );
}

#[derive(Debug, PartialEq)]
enum Db {
    Timeout,
    Constraint,
}

impl ErrorClass for Db {
    fn error_class(&self) -> &'static str {
        match self {
            Db::Timeout => "db_timeout",
            Db::Constraint => "db_constraint",
        }
    }
    fn error_classes() -> &'static [&'static str] {
        &["db_timeout", "db_constraint"]
    }
}

#[test]
fn error_names_become_predicates_and_an_unknown_name_lists_the_registered_ones() {
    let registry = Registry::new();
    registry.register_error_class::<Db>();
    let b = registry
        .breaker_error_names(
            resil_core::circuit_breaker::CircuitBreakerConfig::builder(),
            ErrorList::BreakerIgnore,
            &["db_constraint".into()],
            "circuit_breaker.instances.db.ignore-errors",
        )
        .unwrap();
    let config = b.build().unwrap();
    assert_eq!(config.classify_error(&Db::Constraint), Outcome::Ignored);
    assert_eq!(config.classify_error(&Db::Timeout), Outcome::Failure);
    let err = registry
        .retry_error_names(
            resil_core::retry::RetryConfig::builder(),
            ErrorList::RetryOn,
            &["db_timeout".into(), "db_timout".into()],
            "retry.instances.db.retry-errors",
        )
        .unwrap_err();
    let text = err.to_string();
    assert!(
        text.starts_with("unknown error class `db_timout` in `retry.instances.db.retry-errors`; registered names: "),
        "{text}"
    );
    assert!(
        text.contains("`db_constraint`") && text.contains("`timeout`"),
        "{text}"
    );
    // A retry-errors list of error kinds retries those refusals.
    let retry = registry
        .retry_error_names(
            // No real waits between attempts in a test.
            resil_core::retry::RetryConfig::builder().wait_duration(std::time::Duration::ZERO),
            ErrorList::RetryOn,
            &["db_timeout".into()],
            "retry",
        )
        .unwrap()
        .build()
        .unwrap();
    let r = Retry::new("db", retry);
    let mut calls = 0;
    let _ = r.call(|| {
        calls += 1;
        Err::<(), _>(Db::Constraint)
    });
    assert_eq!(calls, 1, "db_constraint is not retried");
    let mut calls = 0;
    let _ = r.call(|| {
        calls += 1;
        Err::<(), _>(Db::Timeout)
    });
    assert_eq!(calls, 3, "db_timeout is retried");
    // The list is the whole list (Resilience4j's `retryExceptions`): an inner
    // refusal it does not name is not retried, one it names is.
    let mut calls = 0;
    let _ = r.call_nested(|| -> Result<(), resil_core::Error<Db>> {
        calls += 1;
        Err(resil_core::Error::Timeout(resil_core::error::Timeout::new(
            "db",
            std::time::Duration::from_secs(1),
        )))
    });
    assert_eq!(calls, 1, "a timeout the list does not name is not retried");
    let named = registry
        .retry_error_names(
            resil_core::retry::RetryConfig::builder().wait_duration(std::time::Duration::ZERO),
            ErrorList::RetryOn,
            &["db_timeout".into(), "timeout".into()],
            "retry",
        )
        .unwrap()
        .build()
        .unwrap();
    let r = Retry::new("db", named);
    let mut calls = 0;
    let _ = r.call_nested(|| -> Result<(), resil_core::Error<Db>> {
        calls += 1;
        Err(resil_core::Error::Timeout(resil_core::error::Timeout::new(
            "db",
            std::time::Duration::from_secs(1),
        )))
    });
    assert_eq!(calls, 3, "a timeout the list names is retried");
}

#[test]
fn replace_installs_a_hand_built_instance_that_held_handles_see() {
    let registry = Registry::new();
    let held = registry.circuit_breaker("inventory");
    let mut events = registry.subscribe();
    let mine = CircuitBreaker::new(
        "inventory",
        resil_core::circuit_breaker::CircuitBreakerConfig::builder()
            .failure_rate_threshold(75.0)
            .build()
            .unwrap(),
    );
    registry.replace("inventory", mine.clone()).unwrap();
    assert_eq!(held.config().failure_rate_threshold(), 75.0);
    let _ = mine.call(|| Err::<(), _>("x"));
    assert_eq!(
        held.metrics().failed_calls(),
        1,
        "the handle now reaches the same breaker"
    );
    assert!(matches!(
        events.drain()[0].what,
        RegistryEventKind::Replaced { ref cause, .. } if &**cause == "replace"
    ));
    let err = registry
        .replace("nope", CircuitBreaker::new("nope", Default::default()))
        .unwrap_err();
    assert!(matches!(err, RegistryError::NotFound { .. }));
}
