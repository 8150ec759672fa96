//! Hedging, the adaptive bulkhead and chaos as registry kinds, as a user
//! meets them: configured by a file, built with its values, refused with the
//! key path when a value is bad, chaos switched on by management with a TTL
//! that ends on the manual clock, and every new kind in the snapshot, the
//! health summary and the published metrics.
#![cfg(feature = "yaml")]

#[path = "support/recorder.rs"]
mod recorder;

use std::time::Duration;

use recorder::Remember;
use resil::clock::ManualClock;
use resil::config::FileConfig;
use resil::registry_crate::{Kind, RegistryEventKind, Status};
use resil::Registry;

const FILE: &str = "
resilience4j:
  hedging:
    instances:
      inventory-query:
        delay: 150ms
        max-hedged-attempts: 3
  adaptive-bulkhead:
    instances:
      inventory-query:
        initial-limit: 8
        min-limit: 2
        max-limit: 64
        smoothing: 0.5
        probe-multiplier: 10
        min-window-time: 200ms
        max-window-time: 2s
        window-size: 20
        min-rtt-threshold: 50us
  chaos:
    instances:
      inventory-query:
        latency-rate: 1.0
        latency: 2s
        error-rate: 1.0
        errors: [unavailable]
";

#[derive(Debug, Clone, PartialEq)]
enum InventoryError {
    Unavailable,
}

fn registry(clock: &ManualClock) -> Registry {
    // Instance events recorded: the chaos instance's own `Expired` shows in
    // its recent events.
    let registry = Registry::builder()
        .clock(clock.clone())
        .record_instance_events(true)
        .build();
    registry.register_chaos_error("unavailable", || InventoryError::Unavailable);
    registry
        .reload(FileConfig::from_yaml_str(FILE).unwrap())
        .unwrap();
    registry
}

#[test]
fn a_file_configures_each_new_kind_and_the_registry_builds_it_with_those_values() {
    let registry = registry(&ManualClock::new());

    let hedging = registry.hedging("inventory-query");
    assert_eq!(hedging.config().delay(), Duration::from_millis(150));
    assert_eq!(hedging.config().max_hedged_attempts(), 3);

    let c = registry.adaptive_bulkhead("inventory-query").config();
    assert_eq!(
        (c.initial_limit(), c.min_limit(), c.max_limit()),
        (8, 2, 64)
    );
    assert_eq!((c.smoothing(), c.probe_multiplier()), (0.5, 10));
    assert_eq!(c.min_window_time(), Duration::from_millis(200));
    assert_eq!(c.max_window_time(), Duration::from_secs(2));
    assert_eq!(c.window_size(), 20);
    assert_eq!(c.min_rtt_threshold(), Duration::from_micros(50));
    assert_eq!(registry.adaptive_bulkhead("inventory-query").limit(), 8);

    let chaos = registry.chaos("inventory-query");
    assert!(!chaos.config().enabled(), "off unless the file says so");
    assert_eq!(chaos.config().latency_rate(), 1.0);
    assert_eq!(chaos.config().latency(), Duration::from_secs(2));
    // Off: the call reaches the downstream.
    assert_eq!(chaos.call(|| Ok::<u32, InventoryError>(7)).unwrap(), 7);

    // Where the snapshot says each value came from.
    let snapshot = registry.snapshot();
    let i = snapshot
        .instance(Kind::AdaptiveBulkhead, "inventory-query")
        .unwrap();
    let max = i.config_value("max-limit").unwrap();
    assert_eq!(max.value, "64");
    assert!(
        max.location
            .contains("resilience4j.adaptive-bulkhead.instances.inventory-query.max-limit"),
        "{}",
        max.location
    );
    assert_eq!(i.config_value("window-size").unwrap().value, "20");
}

#[test]
fn a_bad_value_is_refused_with_its_key_path_and_the_allowed_values() {
    for (text, path, allowed) in [
        (
            "resilience4j.hedging.instances.a.max-hedged-attempts: 11",
            "resilience4j.hedging.instances.a.max-hedged-attempts",
            "1..=10",
        ),
        (
            "resilience4j.adaptive-bulkhead.instances.a:\n  min-limit: 10\n  max-limit: 5\n",
            "resilience4j.adaptive-bulkhead.instances.a.min-limit",
            "max-limit",
        ),
        (
            "resilience4j.adaptive-bulkhead.instances.a.smoothing: 0",
            "resilience4j.adaptive-bulkhead.instances.a.smoothing",
            "(0, 1]",
        ),
        (
            "resilience4j.chaos.instances.a.error-rate: 1.5",
            "resilience4j.chaos.instances.a.error-rate",
            "[0, 1]",
        ),
        (
            "resilience4j.chaos.instances.a.latency-rate: -0.1",
            "resilience4j.chaos.instances.a.latency-rate",
            "[0, 1]",
        ),
        (
            "resilience4j.chaos.instances.a.enabled: sometimes",
            "resilience4j.chaos.instances.a.enabled",
            "`true` or `false`",
        ),
    ] {
        let err = FileConfig::from_yaml_str(text).unwrap_err();
        let text_of = err.to_string();
        assert!(
            err.problems().iter().any(|p| p.path() == Some(path)),
            "{path} in {text_of}"
        );
        assert!(text_of.contains(allowed), "{allowed} in {text_of}");
    }

    // A key of another kind is named as such.
    let err = FileConfig::from_yaml_str("resilience4j.hedging.instances.a.max-limit: 3")
        .unwrap_err()
        .to_string();
    assert!(err.contains("max-limit"), "{err}");
    assert!(err.contains("adaptive bulkhead"), "{err}");

    // An injection nothing registered: the list's path and how to register.
    let registry = Registry::new();
    let err = registry
        .reload(
            FileConfig::from_yaml_str("resilience4j.chaos.instances.a.errors: [unavailable]")
                .unwrap(),
        )
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("resilience4j.chaos.instances.a.errors"),
        "{err}"
    );
    assert!(err.contains("register_chaos_error"), "{err}");
}

#[test]
fn management_switches_chaos_on_with_a_ttl_and_it_turns_off_at_expiry_on_the_manual_clock() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    assert!(
        registry
            .enable_chaos("nobody", Some(Duration::from_secs(60)), "drill")
            .is_err(),
        "management never creates an instance"
    );
    let chaos = registry.chaos("inventory-query");
    let mut events = registry.subscribe();
    assert_eq!(registry.health().status, Status::Up);

    registry
        .enable_chaos(
            "inventory-query",
            Some(Duration::from_secs(60)),
            "drill 3: inventory down",
        )
        .unwrap();
    let status = registry.chaos_status("inventory-query").unwrap();
    assert!(status.enabled());
    assert_eq!(status.reason(), Some("drill 3: inventory down"));
    assert_eq!(status.expires_in(), Some(Duration::from_secs(60)));
    // The chaos instance's own ENABLED event comes first (its history).
    let switched = std::iter::from_fn(|| events.try_recv())
        .find(|e| !matches!(e.what, RegistryEventKind::Instance(_)))
        .unwrap();
    match &switched.what {
        RegistryEventKind::ChaosSwitched {
            enabled: true,
            reason,
            ttl: Some(ttl),
        } => {
            assert_eq!(&**reason, "drill 3: inventory down");
            assert_eq!(*ttl, Duration::from_secs(60));
        }
        other => panic!("{other:?}"),
    }

    // On: every call waits the injected 2 s (on the manual clock, which
    // the wait advances) and fails with the registered error (both rates
    // 1.0), without reaching the downstream.
    let mut reached = 0;
    let out = chaos.call(|| {
        reached += 1;
        Ok::<u32, InventoryError>(7)
    });
    assert_eq!(
        out.unwrap_err().into_call(),
        Some(InventoryError::Unavailable)
    );
    assert_eq!(reached, 0);
    assert_eq!(chaos.metrics().latencies_injected(), 1);

    // A visible note in the health summary and the snapshot, never DOWN.
    let health = registry.health();
    assert_eq!(health.status, Status::Degraded);
    let reason = health.reason.unwrap();
    assert!(
        reason.contains("chaos `inventory-query`: chaos injection ENABLED `drill 3: inventory down`, for 58s more"),
        "{reason}"
    );
    let snapshot = registry.snapshot();
    let i = snapshot.instance(Kind::Chaos, "inventory-query").unwrap();
    assert_eq!(i.state, Some("ENABLED"));
    assert_eq!(i.metric("resil_chaos_injections", Some("error")), Some(1.0));

    // A reload keeps the operator's switch and its TTL.
    clock.advance(Duration::from_secs(20));
    registry
        .reload(FileConfig::from_yaml_str(&FILE.replace("latency: 2s", "latency: 3s")).unwrap())
        .unwrap();
    let chaos = registry.chaos("inventory-query");
    assert_eq!(chaos.config().latency(), Duration::from_secs(3));
    let status = chaos.status();
    assert!(status.enabled());
    assert_eq!(status.expires_in(), Some(Duration::from_secs(38)));

    // At expiry it is off, on the manual clock alone.
    clock.advance(Duration::from_secs(38));
    assert!(!registry.chaos_status("inventory-query").unwrap().enabled());
    assert_eq!(chaos.call(|| Ok::<u32, InventoryError>(7)).unwrap(), 7);
    assert_eq!(registry.health().status, Status::Up);
    let snapshot = registry.snapshot();
    let i = snapshot.instance(Kind::Chaos, "inventory-query").unwrap();
    assert_eq!(i.state, Some("DISABLED"));
    assert!(
        i.history.iter().any(|e| e.event_type == "EXPIRED"),
        "{:?}",
        i.history
    );

    // Without a TTL it stays on until switched off.
    registry
        .enable_chaos("inventory-query", None, "game day")
        .unwrap();
    clock.advance(Duration::from_secs(86_400));
    assert!(registry.chaos_status("inventory-query").unwrap().enabled());
    registry
        .disable_chaos("inventory-query", "game day over")
        .unwrap();
    assert!(!registry.chaos_status("inventory-query").unwrap().enabled());
}

#[test]
fn the_snapshot_and_the_metrics_show_the_new_kinds() {
    let registry = registry(&ManualClock::new());
    let hedging = registry.hedging("inventory-query");
    let bulkhead = registry.adaptive_bulkhead("inventory-query");
    let chaos = registry.chaos("inventory-query");
    futures_lite_block_on(async {
        hedging
            .call_async(|_| async { Ok::<u32, InventoryError>(1) })
            .await
            .unwrap();
    });
    bulkhead.call(|| Ok::<u32, InventoryError>(1)).unwrap();
    chaos.call(|| Ok::<u32, InventoryError>(1)).unwrap();

    let snapshot = registry.snapshot();
    let h = snapshot.instance(Kind::Hedging, "inventory-query").unwrap();
    assert_eq!(h.kind, "hedging");
    assert_eq!(
        h.metric("resil_hedging_calls", Some("won_by_primary")),
        Some(1.0)
    );
    assert_eq!(h.config_value("delay").unwrap().value, "150ms");
    let b = snapshot
        .instance(Kind::AdaptiveBulkhead, "inventory-query")
        .unwrap();
    assert_eq!(b.metric("bulkhead_adaptive_limit", None), Some(8.0));
    let c = snapshot.instance(Kind::Chaos, "inventory-query").unwrap();
    assert_eq!(c.state, Some("DISABLED"));
    assert_eq!(c.health, Status::Up);
    assert_eq!(c.metric("resil_chaos_enabled", None), Some(0.0));

    let recorder = Remember::default();
    metrics::with_local_recorder(&recorder, || registry.publish_metrics());
    assert_eq!(
        recorder.get("resil_hedging_calls{kind=won_by_primary,name=inventory-query}"),
        Some(1.0)
    );
    assert_eq!(
        recorder.get("resil_hedging_hedges{kind=started,name=inventory-query}"),
        Some(0.0)
    );
    assert_eq!(
        recorder.get("resilience4j_bulkhead_adaptive_limit{name=inventory-query}"),
        Some(8.0)
    );
    assert_eq!(
        recorder.get("resil_chaos_injections{kind=error,name=inventory-query}"),
        Some(0.0)
    );
    assert_eq!(
        recorder.get("resil_chaos_enabled{name=inventory-query}"),
        Some(0.0)
    );
    // The breaker's state gauge stays the breaker's.
    assert_eq!(
        recorder.get("resilience4j_circuitbreaker_state{name=inventory-query,state=closed}"),
        None
    );
    for kind in ["hedging", "adaptive_bulkhead", "chaos"] {
        assert_eq!(
            recorder.get(&format!("resil_registry_refused_instances{{kind={kind}}}")),
            Some(0.0),
            "{kind}"
        );
    }
}

/// Polls a future that is ready without waiting (no runtime needed).
fn futures_lite_block_on<F: std::future::Future>(fut: F) -> F::Output {
    use std::pin::pin;
    use std::task::{Context, Poll, Waker};
    match pin!(fut).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("the first attempt is ready"),
    }
}

/// The guide's example file (`docs/beyond-resilience4j.md`, *In the
/// registry and in files*) loads as
/// printed, once the program registered its error class and injection.
#[test]
fn the_readme_example_file_loads_as_printed() {
    #[derive(Debug, resil::ErrorClass)]
    enum InventoryError {
        Unavailable,
    }
    let readme = include_str!("../docs/beyond-resilience4j.md");
    let section = readme
        .split("**In the registry and in files.**")
        .nth(1)
        .expect("the guide's section");
    let yaml = section
        .split("```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("its yaml block");
    let registry = Registry::new();
    registry.register_error_class::<InventoryError>();
    registry.register_chaos_error("unavailable", || InventoryError::Unavailable);
    registry
        .reload(FileConfig::from_yaml_str(yaml).unwrap())
        .unwrap();
    assert_eq!(
        registry.hedging("inventory-query").config().delay(),
        Duration::from_millis(150)
    );
    assert_eq!(
        registry
            .adaptive_bulkhead("inventory-query")
            .config()
            .max_limit(),
        200
    );
    let chaos = registry.chaos("inventory-query");
    assert!(!chaos.status().enabled());
    assert_eq!(chaos.config().latency(), Duration::from_millis(800));
    // The hedge-errors list became a predicate: an `unavailable` error
    // starts the next hedge at once.
    let hedging = registry.hedging("inventory-query");
    let out = futures_lite_block_on(hedging.call_async(|attempt| async move {
        if attempt == 0 {
            Err(InventoryError::Unavailable)
        } else {
            Ok(attempt)
        }
    }));
    assert_eq!(out.unwrap(), 1);
    assert_eq!(hedging.metrics().won_by_hedge(), 1);
}

/// Environment overrides reach the new kinds as the others:
/// `RESIL_<KIND>_INSTANCES_<NAME>_<KEY>`.
#[test]
fn environment_overrides_set_the_new_kinds_keys() {
    let file = FileConfig::from_str_with_env(
        "resilience4j.hedging.instances.inventory-query.delay: 1s\n",
        resil::config::Format::Yaml,
        [
            ("RESIL_HEDGING_INSTANCES_INVENTORY_QUERY_DELAY", "75ms"),
            (
                "RESIL_ADAPTIVE_BULKHEAD_INSTANCES_INVENTORY_QUERY_MAX_LIMIT",
                "32",
            ),
            ("RESIL_CHAOS_INSTANCES_INVENTORY_QUERY_LATENCY_RATE", "0.5"),
        ],
    )
    .unwrap();
    let registry = Registry::new();
    registry.reload(file).unwrap();
    assert_eq!(
        registry.hedging("inventory-query").config().delay(),
        Duration::from_millis(75)
    );
    assert_eq!(
        registry
            .adaptive_bulkhead("inventory-query")
            .config()
            .max_limit(),
        32
    );
    assert_eq!(
        registry.chaos("inventory-query").config().latency_rate(),
        0.5
    );
}

/// An operator's switch is never lost to a reload running at the same time:
/// it lands on the old instance and is carried over, or on the new one.
#[test]
fn a_switch_is_never_lost_to_concurrent_reloads() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let registry = registry(&ManualClock::new());
    registry.chaos("inventory-query");
    let stop = AtomicBool::new(false);
    let files = [
        FileConfig::from_yaml_str(FILE).unwrap(),
        FileConfig::from_yaml_str(&FILE.replace("latency: 2s", "latency: 3s")).unwrap(),
    ];
    std::thread::scope(|s| {
        for t in 0..2 {
            let (registry, stop, files) = (&registry, &stop, &files);
            s.spawn(move || {
                let mut i = t;
                while !stop.load(Ordering::Relaxed) {
                    registry.reload(files[i % 2].clone()).unwrap();
                    i += 1;
                }
            });
        }
        for round in 0..300 {
            registry
                .enable_chaos("inventory-query", None, "drill")
                .unwrap();
            assert!(
                registry.chaos_status("inventory-query").unwrap().enabled(),
                "round {round}: on"
            );
            registry
                .disable_chaos("inventory-query", "drill over")
                .unwrap();
            assert!(
                !registry.chaos_status("inventory-query").unwrap().enabled(),
                "round {round}: off"
            );
        }
        stop.store(true, Ordering::Relaxed);
    });
}
