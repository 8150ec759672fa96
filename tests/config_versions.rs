//! Config versions: every reload is a version with a hash, a time and a
//! source; two versions diff as key-level changes; a rollback applies an
//! earlier version again as a new one; a refused reload is listed with its
//! problems (issue 32, item 2).
#![cfg(feature = "toml")]

use resil::circuit_breaker::State;
use resil::config::FileConfig;
use resil::registry_crate::{KeyChange, VersionError, VersionSource, VersionStatus};
use resil::Registry;

fn file(window: u32, threshold: u32) -> FileConfig {
    FileConfig::from_toml_str(&format!(
        r#"
[resilience4j.circuitbreaker.instances.inventory]
sliding-window-size = {window}
failure-rate-threshold = {threshold}
"#
    ))
    .unwrap()
}

const KEY: &str = "resilience4j.circuitbreaker.instances.inventory";

#[test]
fn a_rollback_across_a_reload_that_changed_the_window_restores_it_as_a_new_version() {
    let registry = Registry::new();
    registry.reload(file(10, 50)).unwrap();
    let breaker = registry.circuit_breaker("inventory");
    registry.force_open("inventory", None, "incident").unwrap();
    registry.reload(file(100, 5)).unwrap();
    assert_eq!(breaker.config().sliding_window_size(), 100);

    let report = registry.rollback(1, "alice").unwrap();
    assert_eq!(report.replaced, ["circuit_breaker inventory"]);
    assert_eq!(breaker.config().sliding_window_size(), 10);
    assert_eq!(breaker.config().failure_rate_threshold(), 50.0);
    assert_eq!(
        breaker.state(),
        State::ForcedOpen,
        "the operator's switch holds"
    );

    let versions = registry.config_versions();
    assert_eq!(versions.len(), 3);
    let (v1, v3) = (&versions[0], &versions[2]);
    assert_eq!(v3.source, VersionSource::Management("alice".into()));
    assert_eq!(v3.rollback_of, Some(1));
    assert_eq!(v3.hash, v1.hash, "the same settings, the same hash");
    assert_ne!(versions[1].hash, v1.hash);
    assert_eq!(registry.active_config_version(), Some(3));
    assert_eq!(versions[0].source, VersionSource::Code);
}

#[test]
fn two_versions_diff_as_key_level_changes() {
    let registry = Registry::new();
    registry.reload(file(10, 50)).unwrap();
    registry.reload(file(100, 50)).unwrap();
    let changes = registry.config_diff(1, 2).unwrap();
    assert_eq!(
        changes,
        [KeyChange {
            key: format!("{KEY}.sliding-window-size"),
            before: Some("10".into()),
            after: Some("100".into()),
        }]
    );
    assert!(registry.config_diff(2, 2).unwrap().is_empty());
    assert!(matches!(
        registry.config_diff(1, 9),
        Err(VersionError::Unknown(9))
    ));
}

#[test]
fn a_refused_reload_is_listed_with_its_problems_and_cannot_be_rolled_back_to() {
    let registry = Registry::new();
    registry.reload(file(10, 50)).unwrap();
    let bad = FileConfig::from_toml_str(
        "[resilience4j.circuitbreaker.instances.inventory]\nrecord-errors = [\"nobody_registered_this\"]\n",
    )
    .unwrap();
    registry.reload(bad).unwrap_err();
    let versions = registry.config_versions();
    match &versions[1].status {
        VersionStatus::Refused(problems) => {
            assert!(
                problems
                    .iter()
                    .any(|p| p.contains("nobody_registered_this")),
                "{problems:?}"
            )
        }
        other => panic!("expected refused, got {other:?}"),
    }
    assert_eq!(registry.active_config_version(), Some(1));
    let err = registry.rollback(2, "bob").unwrap_err();
    assert!(matches!(err, VersionError::Refused(2)), "{err}");
    assert_eq!(
        err.to_string(),
        "config version 2 was refused: it cannot be applied"
    );
    let reloads = registry.config_reloads();
    assert_eq!((reloads.applied, reloads.refused), (1, 1));
}

#[test]
fn the_history_is_bounded_and_never_drops_the_version_in_force() {
    let registry = Registry::builder().config_history(3).build();
    registry.reload(file(10, 50)).unwrap();
    for threshold in [40, 41, 42, 43] {
        registry.reload(file(10, threshold)).unwrap();
    }
    let ids: Vec<u64> = registry.config_versions().iter().map(|v| v.id).collect();
    assert_eq!(ids, [3, 4, 5]);
    assert!(matches!(
        registry.rollback(1, "carol"),
        Err(VersionError::Unknown(1))
    ));
    registry.rollback(3, "carol").unwrap();
    let ids: Vec<u64> = registry.config_versions().iter().map(|v| v.id).collect();
    assert_eq!(ids, [4, 5, 6]);
    assert_eq!(
        registry
            .circuit_breaker("inventory")
            .config()
            .failure_rate_threshold(),
        41.0
    );
}
