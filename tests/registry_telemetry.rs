//! The registry's optional telemetry through the facade: the snapshot as JSON
//! (feature `serde`) and Resilience4j's metric names (feature `metrics`).

#[path = "support/recorder.rs"]
mod recorder;

use recorder::Remember;
use resil::registry_crate::{Kind, Status};
use resil::Registry;

#[test]
fn the_snapshot_and_the_health_serialize_to_json() {
    let registry = Registry::new();
    let cb = registry.circuit_breaker("inventory");
    let _ = cb.call(|| Err::<(), _>("boom"));
    registry.force_open("inventory", None, "INC-1").unwrap();
    let json = serde_json::to_value(registry.snapshot()).unwrap();
    let i = &json["instances"][0];
    assert_eq!(i["kind"], "circuit_breaker");
    assert_eq!(i["name"], "inventory");
    assert_eq!(i["state"], "FORCED_OPEN");
    assert_eq!(i["manual_override"]["reason"], "INC-1");
    assert_eq!(i["health"], "DOWN");
    assert!(i["config"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["key"] == "failure-rate-threshold" && c["source"] == "default"));
    let health = serde_json::to_value(registry.health()).unwrap();
    assert_eq!(
        health["status"], "DEGRADED",
        "not allowed to fail by default"
    );
    registry.allow_health_indicator_to_fail::<resil::circuit_breaker::CircuitBreaker>(
        "inventory",
        true,
    );
    let health = serde_json::to_value(registry.health()).unwrap();
    assert_eq!(health["status"], "DOWN");
    assert_eq!(registry.health().status, Status::Down);
}

#[test]
fn publish_metrics_uses_resilience4j_names_labelled_by_name_and_tags() {
    let registry = Registry::builder().max_instances_per_kind(2).build();
    registry
        .set_tags::<resil::circuit_breaker::CircuitBreaker, _, _>("inventory", [("team", "stock")]);
    let cb = registry.circuit_breaker("inventory");
    let _ = cb.call(|| Err::<(), _>("boom"));
    let _ = cb.call(|| Ok::<_, &str>(()));
    let _ = registry.bulkhead("db");
    registry
        .configure_rate_limiter("api", |b| {
            b.limit_refresh_period(std::time::Duration::from_secs(3600))
        })
        .unwrap();
    let rl = registry.rate_limiter("api");
    assert!(rl.try_acquire_permission(1));
    let retry = registry.retry("payments");
    let _ = retry.call(|| Ok::<_, ()>(()));
    let _ = registry.try_retry("a");
    assert!(
        registry.try_retry("b").is_err(),
        "the cap of 2 refuses a third"
    );

    let recorder = Remember::default();
    metrics::with_local_recorder(&recorder, || registry.publish_metrics());

    let cb_labels = "name=inventory,team=stock";
    assert_eq!(
        recorder.get(&format!(
            "resilience4j_circuitbreaker_calls_seconds_count{{kind=failed,{cb_labels}}}"
        )),
        Some(1.0)
    );
    assert_eq!(
        recorder.get(&format!(
            "resilience4j_circuitbreaker_calls_seconds_count{{kind=successful,{cb_labels}}}"
        )),
        Some(1.0)
    );
    assert_eq!(
        recorder.get("resilience4j_circuitbreaker_state{name=inventory,state=closed,team=stock}"),
        Some(1.0)
    );
    assert_eq!(
        recorder.get("resilience4j_circuitbreaker_state{name=inventory,state=open,team=stock}"),
        Some(0.0)
    );
    assert_eq!(
        recorder.get(&format!(
            "resilience4j_circuitbreaker_failure_rate{{{cb_labels}}}"
        )),
        Some(-1.0)
    );
    // The window's calls by kind, as Resilience4j tags the gauge.
    for kind in ["failed", "successful"] {
        assert_eq!(
            recorder.get(&format!(
                "resilience4j_circuitbreaker_buffered_calls{{kind={kind},{cb_labels}}}"
            )),
            Some(1.0),
            "{kind}"
        );
    }
    assert_eq!(
        recorder.get("resilience4j_bulkhead_available_concurrent_calls{name=db}"),
        Some(25.0)
    );
    assert_eq!(
        recorder.get("resilience4j_bulkhead_max_allowed_concurrent_calls{name=db}"),
        Some(25.0)
    );
    assert_eq!(
        recorder.get("resilience4j_ratelimiter_available_permissions{name=api}"),
        Some(49.0)
    );
    assert_eq!(
        recorder.get("resilience4j_ratelimiter_waiting_threads{name=api}"),
        Some(0.0)
    );
    assert_eq!(
        recorder.get("resilience4j_retry_calls{kind=successful_without_retry,name=payments}"),
        Some(1.0)
    );
    assert_eq!(
        recorder.get("resil_registry_refused_instances{kind=retry}"),
        Some(1.0)
    );
    assert_eq!(registry.refused_by_cap(Kind::Retry), 1);
}
