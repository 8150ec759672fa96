//! etcd v3 as a config source, against a real `etcd` the tests start
//! (Debian's `etcd-server`, installed by scripts/test): the prefix holds
//! the file's tree, a put, a watch and a delete apply as versions, a bad
//! key is refused with the config in force kept, and an outage keeps the
//! last good config and says so (issue 32, item 4). Waits are on the
//! registry's versions and source status with generous bounds.

#[path = "support/etcd_server.rs"]
mod etcd_server;

use std::time::Duration;

use etcd_server::EtcdServer;
use resil::registry_crate::source::EtcdSource;
use resil::registry_crate::{VersionSource, VersionStatus};
use resil::Registry;

/// A generous bound on a busy machine (not a timing claim).
const PATIENCE: Duration = Duration::from_secs(60);

const WINDOW: &str = "/resil/resilience4j.circuitbreaker.instances.inventory.sliding-window-size";

fn statuses(registry: &Registry) -> Vec<(u64, bool)> {
    registry
        .config_versions()
        .iter()
        .map(|v| (v.id, v.status == VersionStatus::Applied))
        .collect()
}

#[test]
fn puts_watches_and_deletes_under_the_prefix_apply_as_versions() {
    let etcd = EtcdServer::start();
    etcd.put(WINDOW, "10");
    etcd.put("/other-app/key", "not ours");
    let registry = Registry::new();
    let source = EtcdSource::new([etcd.endpoint()], "/resil/");
    let name = {
        use resil::registry_crate::source::ConfigSource;
        source.name()
    };
    registry.follow_source(source).unwrap();
    assert!(
        registry.wait_for_config_version(1, PATIENCE),
        "{:?}",
        statuses(&registry)
    );
    let breaker = registry.circuit_breaker("inventory");
    assert_eq!(breaker.config().sliding_window_size(), 10);
    let v1 = registry.config_versions().pop().unwrap();
    assert_eq!(v1.source, VersionSource::Push(name.clone()));

    // A change through the watch.
    etcd.put(WINDOW, "20");
    assert!(
        registry.wait_for_config_version(2, PATIENCE),
        "{:?}",
        statuses(&registry)
    );
    assert_eq!(breaker.config().sliding_window_size(), 20);

    // A misspelt key: refused, the config in force stays.
    etcd.put(
        "/resil/resilience4j.circuitbreaker.instances.inventory.sliding-window-sise",
        "5",
    );
    assert!(
        registry.wait_for_config_version(3, PATIENCE),
        "{:?}",
        statuses(&registry)
    );
    match &registry.config_versions()[2].status {
        VersionStatus::Refused(problems) => assert!(
            problems
                .iter()
                .any(|p| p.contains("did you mean `sliding-window-size`")),
            "{problems:?}"
        ),
        other => panic!("expected refused, got {other:?}"),
    }
    assert_eq!(breaker.config().sliding_window_size(), 20);
    assert_eq!(registry.active_config_version(), Some(2));

    // Deleting the bad key applies again; deleting the setting goes back to
    // the default.
    etcd.delete("/resil/resilience4j.circuitbreaker.instances.inventory.sliding-window-sise");
    assert!(
        registry.wait_for_config_version(4, PATIENCE),
        "{:?}",
        statuses(&registry)
    );
    etcd.delete(WINDOW);
    assert!(
        registry.wait_for_config_version(5, PATIENCE),
        "{:?}",
        statuses(&registry)
    );
    assert_eq!(
        breaker.config().sliding_window_size(),
        100,
        "resil-core's default"
    );
    assert_eq!(
        statuses(&registry),
        [(1, true), (2, true), (3, false), (4, true), (5, true)]
    );
    let diff = registry.config_diff(2, 5).unwrap();
    assert_eq!(diff.len(), 1);
    assert_eq!(diff[0].before.as_deref(), Some("20"));
    assert_eq!(diff[0].after, None);
}

#[test]
fn an_unreachable_etcd_keeps_the_last_good_config_and_says_so() {
    let mut etcd = EtcdServer::start();
    etcd.put(WINDOW, "30");
    let registry = Registry::new();
    let source =
        EtcdSource::new([etcd.endpoint()], "/resil/").retry_every(Duration::from_millis(100));
    let name = {
        use resil::registry_crate::source::ConfigSource;
        source.name()
    };
    registry.follow_source(source).unwrap();
    assert!(registry.wait_for_config_version(1, PATIENCE));
    let breaker = registry.circuit_breaker("inventory");
    assert_eq!(breaker.config().sliding_window_size(), 30);

    etcd.kill();
    assert!(
        registry.wait_for_source(&name, false, PATIENCE),
        "{:?}",
        registry.config_sources()
    );
    let status = registry
        .config_sources()
        .into_iter()
        .find(|s| s.name == name)
        .unwrap();
    assert!(!status.reachable);
    assert!(status.error.is_some());
    assert_eq!(
        breaker.config().sliding_window_size(),
        30,
        "the last good config stays"
    );
    assert_eq!(registry.active_config_version(), Some(1));
    assert_eq!(
        registry.config_versions().len(),
        1,
        "an outage is no version"
    );

    // Back: nothing changed meanwhile, so no new version; a change applies.
    etcd.restart();
    assert!(
        registry.wait_for_source(&name, true, PATIENCE),
        "{:?}",
        registry.config_sources()
    );
    etcd.put(WINDOW, "40");
    assert!(
        registry.wait_for_config_version(2, PATIENCE),
        "{:?}",
        statuses(&registry)
    );
    assert_eq!(breaker.config().sliding_window_size(), 40);
    assert_eq!(registry.config_versions().len(), 2);
}
