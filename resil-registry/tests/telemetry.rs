//! Snapshot (state, metrics, effective config with provenance, override,
//! recent events) and health summary.

use std::time::Duration;

use resil_core::circuit_breaker::CircuitBreaker;
use resil_core::clock::ManualClock;
use resil_registry::{Kind, Registry, Status};

fn registry() -> (Registry, ManualClock) {
    let clock = ManualClock::new();
    (
        Registry::builder()
            .clock(clock.clone())
            .event_buffer_size(3)
            .build(),
        clock,
    )
}

#[test]
fn the_snapshot_shows_state_metrics_config_with_provenance_tags_and_the_override_reason() {
    let (registry, clock) = registry();
    registry
        .configure_circuit_breaker("inventory", |b| {
            b.failure_rate_threshold(60.0)
                .sliding_window_size(4)
                .minimum_number_of_calls(4)
        })
        .unwrap();
    registry.set_tags::<CircuitBreaker, _, _>("inventory", [("team", "stock")]);
    let cb = registry.circuit_breaker("inventory");
    let _ = cb.call(|| Err::<(), _>("boom"));
    let _ = cb.call(|| Ok::<_, &str>(()));
    let before = registry.snapshot();
    let i = before.instance(Kind::CircuitBreaker, "inventory").unwrap();
    assert_eq!(i.state, Some("CLOSED"));
    assert_eq!(i.metric("circuitbreaker_calls", Some("failed")), Some(1.0));
    assert_eq!(
        i.metric("circuitbreaker_calls", Some("successful")),
        Some(1.0)
    );
    assert_eq!(
        i.metric("circuitbreaker_buffered_calls", Some("failed")),
        Some(1.0)
    );
    assert_eq!(
        i.metric("circuitbreaker_buffered_calls", Some("successful")),
        Some(1.0)
    );
    assert_eq!(
        i.metric("circuitbreaker_failure_rate", None),
        Some(-1.0),
        "below minimum calls"
    );
    clock.advance(Duration::from_secs(7));
    registry
        .force_open("inventory", Some(Duration::from_secs(60)), "INC-7")
        .unwrap();
    let _ = registry.retry("payments");

    let snap = registry.snapshot();
    assert_eq!(snap.instances.len(), 2);
    let i = snap.instance(Kind::CircuitBreaker, "inventory").unwrap();
    assert_eq!(i.kind, "circuit_breaker");
    assert_eq!(i.state, Some("FORCED_OPEN"));
    let threshold = i.config_value("failure-rate-threshold").unwrap();
    assert_eq!(
        (threshold.value.as_str(), threshold.source.as_str()),
        ("60", "code")
    );
    let wait = i.config_value("wait-duration-in-open-state").unwrap();
    assert_eq!(
        (wait.value.as_str(), wait.source.as_str()),
        ("1m", "default")
    );
    assert_eq!(i.tags.get("team").map(String::as_str), Some("stock"));
    let o = i.manual_override.as_ref().unwrap();
    assert_eq!(
        (o.mode, o.previous, o.reason.as_str()),
        ("FORCED_OPEN", "CLOSED", "INC-7")
    );
    assert_eq!(o.since, Duration::from_secs(7));
    assert_eq!(o.until, Some(Duration::from_secs(67)));
    // Not allowed to fail the summary (the default): DEGRADED, as health says.
    assert_eq!(i.health, Status::Degraded);
    assert_eq!(
        i.health_reason.as_deref(),
        Some("FORCED_OPEN by an operator: INC-7")
    );
    let events: Vec<(&str, &str)> = i
        .history
        .iter()
        .map(|e| (e.event_type, e.description.as_str()))
        .collect();
    assert_eq!(
        events,
        [
            (
                "STATE_TRANSITION",
                "circuit breaker 'inventory': STATE_TRANSITION CLOSED -> FORCED_OPEN"
            ),
            (
                "MANUAL_TRANSITION",
                "manual transition to forced_open, reason: INC-7, ttl: 1m"
            )
        ]
    );
    assert_eq!(i.history[1].at, Duration::from_secs(7));
    assert!(
        i.recent_events.is_empty(),
        "per-call events are not recorded"
    );
    let r = snap.instance(Kind::Retry, "payments").unwrap();
    assert_eq!(r.state, None);
    assert_eq!(r.config_value("max-attempts").unwrap().source, "default");

    // The ring is bounded: the oldest events go.
    for _ in 0..3 {
        registry
            .configure_circuit_breaker("inventory", |b| b.failure_rate_threshold(61.0))
            .unwrap();
    }
    let snap = registry.snapshot();
    let i = snap.instance(Kind::CircuitBreaker, "inventory").unwrap();
    assert_eq!(i.history.len(), 3);
    assert!(i
        .history
        .iter()
        .all(|e| e.description.starts_with("replaced by configure")));
}

#[test]
fn instance_events_are_recorded_only_when_asked() {
    let registry = Registry::builder().record_instance_events(true).build();
    registry
        .configure_circuit_breaker("x", |b| b.sliding_window_size(2).minimum_number_of_calls(2))
        .unwrap();
    let cb = registry.circuit_breaker("x");
    let _ = cb.call(|| Err::<(), _>(1));
    let _ = cb.call(|| Err::<(), _>(1));
    let snap = registry.snapshot();
    let i = snap.instance(Kind::CircuitBreaker, "x").unwrap();
    let calls: Vec<&str> = i.recent_events.iter().map(|e| e.event_type).collect();
    assert_eq!(calls, ["ERROR", "ERROR"], "per-call events, when recorded");
    assert!(
        i.history
            .iter()
            .any(|e| e.source == "instance"
                && e.field("to").and_then(|v| v.as_str()) == Some("OPEN")),
        "{:?}",
        i.history
    );
    let quiet = Registry::new();
    let cb = quiet.circuit_breaker("x");
    let _ = cb.call(|| Err::<(), _>(1));
    let snap = quiet.snapshot();
    let i = snap.instance(Kind::CircuitBreaker, "x").unwrap();
    assert!(i.recent_events.is_empty());
}

#[test]
fn health_is_the_worst_component_with_reasons_opt_out_and_not_allowed_to_fail() {
    let (registry, _clock) = registry();
    let _ = registry.circuit_breaker("a");
    let _ = registry.circuit_breaker("b");
    let _ = registry.bulkhead("db");
    let h = registry.health();
    assert_eq!(h.status, Status::Up);
    assert_eq!(h.reason, None);
    assert_eq!(h.components.len(), 3);

    registry
        .transition_circuit_breaker("a", resil_registry::Transition::Open)
        .unwrap();
    registry
        .transition_circuit_breaker("a", resil_registry::Transition::HalfOpen)
        .unwrap();
    let h = registry.health();
    assert_eq!(h.status, Status::Degraded);
    assert!(
        h.reason
            .as_deref()
            .unwrap()
            .starts_with("circuit_breaker `a`: HALF_OPEN"),
        "{h:?}"
    );

    registry.force_open("b", None, "INC-9 failover").unwrap();
    // By default a breaker never makes the summary DOWN (a downstream's
    // outage must not take this service out of rotation): DEGRADED.
    assert_eq!(registry.health().status, Status::Degraded);
    registry.allow_health_indicator_to_fail::<CircuitBreaker>("b", true);
    let h = registry.health();
    assert_eq!(h.status, Status::Down);
    assert!(
        h.reason
            .as_deref()
            .unwrap()
            .contains("circuit_breaker `b`: FORCED_OPEN by an operator: INC-9 failover"),
        "{h:?}"
    );

    registry.allow_health_indicator_to_fail::<CircuitBreaker>("b", false);
    assert_eq!(registry.health().status, Status::Degraded);
    registry.set_health_indicator::<CircuitBreaker>("b", false);
    registry.set_health_indicator::<CircuitBreaker>("a", false);
    let h = registry.health();
    assert_eq!(h.status, Status::Up);
    assert_eq!(h.components.len(), 1, "only the bulkhead takes part");

    registry.set_bulkhead_size("db", 1).unwrap();
    let bh = registry.bulkhead("db");
    let _permit = bh.try_acquire_permission().unwrap();
    assert_eq!(registry.health().status, Status::Degraded);
}

/// Each value carries the layer that changed it last: code that puts a
/// file's value back to the default is code (not "default"), a code config
/// names itself, and a limit an operator changes in place is shown as set at
/// run time. A layer that writes the value already in force leaves it with
/// the earlier layer: a code setting is a closure, seen only by what it
/// changes.
#[cfg(feature = "toml")]
#[test]
fn each_value_is_labelled_by_the_layer_that_set_it_not_by_comparing_values() {
    use resil_core::rate_limiter::RateLimiter;
    use resil_core::retry::Retry;
    use resil_registry::FileConfig;

    let registry = Registry::new();
    registry
        .reload(
            FileConfig::from_toml_str(
                "[resilience4j.retry.instances.payments]\nmax-attempts = 5\n",
            )
            .unwrap(),
        )
        .unwrap();
    registry
        .add_config::<Retry>("backend", None, |b| b.wait_duration(Duration::from_secs(1)))
        .unwrap();
    registry.use_config::<Retry>("orders", "backend").unwrap();
    // 3 is Resilience4j's default, but code wrote it over the file's 5.
    registry
        .configure_retry("payments", |b| b.max_attempts(3))
        .unwrap();
    let _ = registry.retry("payments");
    let _ = registry.retry("orders");
    let limiter = registry.rate_limiter("api");
    limiter.change_limit_for_period(7).unwrap();

    let snap = registry.snapshot();
    let r = snap.instance(Kind::Retry, "payments").unwrap();
    let of = |key: &str| {
        let v = r.config_value(key).unwrap();
        (v.value.clone(), v.source.clone(), v.location.clone())
    };
    assert_eq!(
        of("max-attempts"),
        ("3".into(), "code".into(), "code".into())
    );
    let o = snap.instance(Kind::Retry, "orders").unwrap();
    let wait = o.config_value("wait-duration").unwrap();
    assert_eq!(
        (
            wait.value.as_str(),
            wait.source.as_str(),
            wait.location.as_str()
        ),
        ("1s", "code", "code config `backend`")
    );
    assert_eq!(
        of("fail-after-max-attempts"),
        ("false".into(), "default".into(), "default".into())
    );
    let l = snap.instance(Kind::RateLimiter, "api").unwrap();
    let limit = l.config_value("limit-for-period").unwrap();
    assert_eq!(
        (limit.value.as_str(), limit.location.as_str()),
        ("7", "set at run time")
    );
    let _ = registry.find::<RateLimiter>("api").unwrap();
}
