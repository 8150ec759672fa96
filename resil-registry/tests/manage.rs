//! Management by name: transitions, manual overrides with TTL and reason,
//! limits and sizes, `circuit_breaker_for`, tags.

use std::time::Duration;

use resil_core::circuit_breaker::{CircuitBreaker, State};
use resil_core::clock::ManualClock;
use resil_registry::{Registry, RegistryError, RegistryEventKind, Transition};

fn registry() -> (Registry, ManualClock) {
    let clock = ManualClock::new();
    (Registry::builder().clock(clock.clone()).build(), clock)
}

#[test]
fn forced_open_with_a_ttl_reverts_by_itself_on_the_registry_clock_and_reports_its_reason() {
    let (registry, clock) = registry();
    let cb = registry.circuit_breaker("inventory");
    let mut events = registry.subscribe();
    registry
        .force_open(
            "inventory",
            Some(Duration::from_secs(60)),
            "INC-42 database failover",
        )
        .unwrap();
    assert_eq!(cb.state(), State::ForcedOpen);
    let o = registry.manual_override("inventory").unwrap();
    assert_eq!(&*o.reason, "INC-42 database failover");
    assert_eq!(o.previous, State::Closed);
    assert_eq!(o.until, Some(Duration::from_secs(60)));
    assert!(cb.call(|| Ok::<_, ()>(())).is_err(), "forced open refuses");

    clock.advance(Duration::from_secs(59));
    assert_eq!(registry.run_due_overrides(), 0);
    assert_eq!(cb.state(), State::ForcedOpen, "not yet");
    clock.advance(Duration::from_secs(1));
    assert_eq!(registry.run_due_overrides(), 1);
    assert_eq!(cb.state(), State::Closed, "back to its previous mode");
    assert!(registry.manual_override("inventory").is_none());
    assert!(cb.call(|| Ok::<_, ()>(())).is_ok());

    let (transitions, got): (Vec<_>, Vec<_>) = events
        .drain()
        .into_iter()
        .partition(|e| matches!(e.what, RegistryEventKind::Instance(_)));
    // The breaker's own transitions, as they happened.
    let seen: Vec<String> = transitions
        .iter()
        .map(|e| match &e.what {
            RegistryEventKind::Instance(r) => r.description.clone(),
            _ => unreachable!(),
        })
        .collect();
    assert_eq!(
        seen,
        [
            "circuit breaker 'inventory': STATE_TRANSITION CLOSED -> FORCED_OPEN",
            "circuit breaker 'inventory': STATE_TRANSITION FORCED_OPEN -> CLOSED"
        ]
    );
    assert_eq!(got.len(), 2);
    match &got[0].what {
        RegistryEventKind::ManualTransition { to, reason, ttl } => {
            assert_eq!(*to, Transition::ForcedOpen);
            assert_eq!(reason.as_deref(), Some("INC-42 database failover"));
            assert_eq!(*ttl, Some(Duration::from_secs(60)));
        }
        other => panic!("unexpected {other:?}"),
    }
    match &got[1].what {
        RegistryEventKind::OverrideExpired { to, reason } => {
            assert_eq!(*to, Transition::Closed);
            assert_eq!(&**reason, "INC-42 database failover");
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn disabled_over_metrics_only_returns_to_metrics_only_and_an_override_without_ttl_stays() {
    let (registry, clock) = registry();
    let cb = registry.circuit_breaker("x");
    registry
        .transition_circuit_breaker("x", Transition::MetricsOnly)
        .unwrap();
    registry
        .disable("x", Some(Duration::from_secs(5)), "load test")
        .unwrap();
    // A second override keeps the mode the first one interrupted.
    registry
        .force_open("x", Some(Duration::from_secs(10)), "escalated")
        .unwrap();
    assert_eq!(
        registry.manual_override("x").unwrap().previous,
        State::MetricsOnly
    );
    clock.advance(Duration::from_secs(10));
    // Any management read runs due overrides first.
    assert!(registry.manual_override("x").is_none());
    assert_eq!(cb.state(), State::MetricsOnly);

    registry
        .force_open("x", None, "until further notice")
        .unwrap();
    clock.advance(Duration::from_secs(100_000));
    assert_eq!(registry.run_due_overrides(), 0);
    assert_eq!(cb.state(), State::ForcedOpen);
    registry
        .transition_circuit_breaker("x", Transition::Closed)
        .unwrap();
    assert!(
        registry.manual_override("x").is_none(),
        "a transition ends the override"
    );
    assert_eq!(cb.state(), State::Closed);
}

#[test]
fn an_override_survives_a_reconfiguration_of_the_breaker() {
    let (registry, _clock) = registry();
    let cb = registry.circuit_breaker("x");
    registry.force_open("x", None, "maintenance").unwrap();
    registry
        .configure_circuit_breaker("x", |b| b.failure_rate_threshold(70.0))
        .unwrap();
    assert_eq!(cb.config().failure_rate_threshold(), 70.0);
    assert_eq!(cb.state(), State::ForcedOpen);
}

#[test]
fn unknown_names_are_not_found_and_invalid_sizes_name_the_field() {
    let (registry, _clock) = registry();
    let err = registry.force_open("nope", None, "").unwrap_err();
    assert_eq!(
        err.to_string(),
        "no circuit_breaker called `nope` in the registry"
    );
    assert!(matches!(
        registry.set_rate_limit("nope", 3),
        Err(RegistryError::NotFound { .. })
    ));
    let rl = registry.rate_limiter("api");
    registry.set_rate_limit("api", 7).unwrap();
    assert_eq!(rl.config().limit_for_period(), 7);
    registry
        .set_rate_limiter_timeout("api", Duration::from_millis(5))
        .unwrap();
    assert_eq!(rl.config().timeout_duration(), Duration::from_millis(5));
    let err = registry.set_rate_limit("api", 0).unwrap_err();
    assert!(err.to_string().contains("limit_for_period"), "{err}");
    let bh = registry.bulkhead("db");
    registry.set_bulkhead_size("db", 2).unwrap();
    assert_eq!(bh.available_concurrent_calls(), 2);
    let err = registry.set_bulkhead_size("db", 0).unwrap_err();
    assert!(err.to_string().contains("max_concurrent_calls"), "{err}");
}

#[test]
fn circuit_breaker_for_takes_id_then_group_then_default() {
    let (registry, _clock) = registry();
    registry
        .add_config::<CircuitBreaker>("payments", None, |b| b.failure_rate_threshold(30.0))
        .unwrap();
    registry
        .configure_circuit_breaker("visa", |b| b.failure_rate_threshold(40.0))
        .unwrap();
    assert_eq!(
        registry
            .circuit_breaker_for("visa", "payments")
            .config()
            .failure_rate_threshold(),
        40.0,
        "id first"
    );
    assert_eq!(
        registry
            .circuit_breaker_for("amex", "payments")
            .config()
            .failure_rate_threshold(),
        30.0,
        "then group"
    );
    assert_eq!(
        registry
            .circuit_breaker_for("jcb", "unknown-group")
            .config()
            .failure_rate_threshold(),
        50.0,
        "then default"
    );
    // Same id, same instance.
    let a = registry.circuit_breaker_for("amex", "payments");
    let b = registry.circuit_breaker("amex");
    assert!(resil_registry::Handle::same_entry(&a, &b));
    // A group that is an instance with settings lends them.
    registry
        .configure_circuit_breaker("shipping", |b| b.failure_rate_threshold(20.0))
        .unwrap();
    assert_eq!(
        registry
            .circuit_breaker_for("dhl", "shipping")
            .config()
            .failure_rate_threshold(),
        20.0
    );
}

#[test]
fn tags_are_kept_per_instance() {
    let registry = Registry::new();
    registry.set_tags::<CircuitBreaker, _, _>("inventory", [("team", "stock"), ("tier", "1")]);
    let tags = registry.tags::<CircuitBreaker>("inventory");
    assert_eq!(tags.get("team").map(String::as_str), Some("stock"));
    assert_eq!(tags.len(), 2);
    assert!(registry.tags::<CircuitBreaker>("other").is_empty());
}

#[test]
fn an_illegal_transition_is_an_error_naming_both_states_and_changes_nothing() {
    let (registry, _clock) = registry();
    let cb = registry.circuit_breaker("x");
    let mut events = registry.subscribe();
    let err = registry
        .transition_circuit_breaker("x", Transition::HalfOpen)
        .unwrap_err();
    assert!(
        matches!(err, RegistryError::IllegalOperation { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("CLOSED to HALF_OPEN"), "{err}");
    assert_eq!(cb.state(), State::Closed);
    assert!(
        events.drain().is_empty(),
        "no event for a refused transition"
    );
}
