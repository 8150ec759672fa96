//! The snapshot and its JSON say what is in force besides the instances
//! (issue 32): the operators' switches with their TTL left, the config
//! version in force and where it came from, the followed sources'
//! reachability, and a running shadow trial.

use std::sync::mpsc;
use std::time::Duration;

use resil::clock::ManualClock;
use resil::config::FileConfig;
use resil::registry_crate::source::{ConfigSource, Feed};
use resil::Registry;
use serde_json::json;

/// A pushed config source that loses its server after the first push.
struct Flaky {
    done: mpsc::Receiver<()>,
}

impl ConfigSource for Flaky {
    fn name(&self) -> String {
        "etcd http://10.0.0.7:2379 /inventory/".into()
    }

    fn run(self: Box<Self>, feed: Feed) {
        feed.push(FileConfig::from_yaml_str(
            "resilience4j.circuitbreaker.instances.inventory.failure-rate-threshold: 60\n",
        ));
        feed.unreachable("connection refused");
        // Until the test is over.
        let _ = self.done.recv();
    }
}

#[test]
fn the_snapshot_shows_the_switches_the_config_version_its_sources_and_the_trial() {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    let (stop, done) = mpsc::channel();
    registry.follow_source(Flaky { done }).unwrap();
    let source = "etcd http://10.0.0.7:2379 /inventory/";
    assert!(registry.wait_for_config_version(1, Duration::from_secs(60)));
    assert!(registry.wait_for_source(source, false, Duration::from_secs(60)));

    registry.circuit_breaker("inventory");
    registry
        .force_open(
            "inventory",
            Some(Duration::from_secs(30)),
            "INC-7 payments down",
        )
        .unwrap();
    clock.advance(Duration::from_secs(10));
    registry
        .stage_shadow(
            FileConfig::from_yaml_str(
                "resilience4j.circuitbreaker.instances.inventory.failure-rate-threshold: 40\n",
            )
            .unwrap(),
            "alice",
        )
        .unwrap();

    let snapshot = registry.snapshot();
    assert_eq!(snapshot.config.version, Some(1));
    assert_eq!(snapshot.shadow.as_ref().map(|t| t.version), Some(2));

    let json = serde_json::to_value(&snapshot).unwrap();
    assert_eq!(
        json["switches"],
        json!([{
            "kind": "circuit_breaker",
            "name": "inventory",
            "action": "force_open",
            "reason": "INC-7 payments down",
            "ttl_left_ms": 20000,
        }])
    );
    let config = &json["config"];
    assert_eq!(config["version"], 1);
    assert_eq!(config["source"], format!("push from {source}"));
    assert_eq!(config["reloads_applied"], 1);
    assert_eq!(config["reloads_refused"], 0);
    assert_eq!(config["promoted_from"], json!(null));
    assert_eq!(config["hash"].as_str().map(str::len), Some(16));
    assert_eq!(
        (
            &config["sources"][0]["name"],
            &config["sources"][0]["reachable"],
            &config["sources"][0]["error"]
        ),
        (&json!(source), &json!(false), &json!("connection refused"))
    );
    let shadow = &json["shadow"];
    assert_eq!(shadow["version"], 2);
    assert_eq!(shadow["by"], "alice");
    assert_eq!(shadow["instances"][0]["name"], "inventory");
    assert_eq!(shadow["instances"][0]["live_state"], "FORCED_OPEN");
    assert_eq!(shadow["instances"][0]["shadow_state"], "CLOSED");

    // Promoted: the snapshot names the version in force and its origin.
    registry.promote_shadow("bob").unwrap();
    let json = serde_json::to_value(registry.snapshot()).unwrap();
    assert_eq!(json["config"]["version"], 3);
    assert_eq!(json["config"]["promoted_from"], 2);
    assert_eq!(json["config"]["source"], "management by bob");
    assert_eq!(json["shadow"], json!(null));
    assert_eq!(
        json["switches"][0]["action"], "force_open",
        "the operator's switch survives the promotion"
    );
    drop(stop);
}
