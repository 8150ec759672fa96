//! Shadow trials in the registry (issue 32, item 3): a config staged beside
//! the one in force reports exactly the transitions its settings make once
//! promoted (recorded call sequence, manual clock); staging is validated
//! like a reload and recorded as a version; one trial at a time; a reload
//! ends it, a `configure_*` rebuild keeps it; promotion and discarding.

use std::time::Duration;

use resil::circuit_breaker::{CircuitBreakerEventKind, State};
use resil::clock::ManualClock;
use resil::config::FileConfig;
use resil::registry_crate::{Kind, ShadowError, VersionStatus};
use resil::Registry;

const LIVE: &str = "
resilience4j.circuitbreaker.instances.inventory:
  sliding-window-size: 6
  minimum-number-of-calls: 4
  failure-rate-threshold: 90
  wait-duration-in-open-state: 1s
  permitted-number-of-calls-in-half-open-state: 2
resilience4j.retry.instances.inventory:
  max-attempts: 3
";

/// The trial: the same breaker opening at 50 %, and a retry change (which
/// has no shadow).
const STAGED: &str = "
resilience4j.circuitbreaker.instances.inventory:
  sliding-window-size: 6
  minimum-number-of-calls: 4
  failure-rate-threshold: 50
  wait-duration-in-open-state: 1s
  permitted-number-of-calls-in-half-open-state: 2
resilience4j.retry.instances.inventory:
  max-attempts: 2
";

#[derive(Debug, Clone, Copy)]
enum Step {
    Ok,
    Fail,
    Wait(u64),
}

/// A recorded day of the inventory dependency: an outage, a recovery, a
/// relapse and a recovery.
const RECORDED: &[Step] = &[
    Step::Ok,
    Step::Fail,
    Step::Ok,
    Step::Fail,
    Step::Fail,
    Step::Ok,
    Step::Fail,
    Step::Ok,
    Step::Wait(1200),
    Step::Ok,
    Step::Ok,
    Step::Ok,
    Step::Fail,
    Step::Fail,
    Step::Fail,
    Step::Ok,
    Step::Wait(1500),
    Step::Ok,
    Step::Fail,
    Step::Wait(1001),
    Step::Ok,
    Step::Ok,
    Step::Ok,
];

#[derive(Debug)]
struct Down;

fn registry(clock: &ManualClock) -> Registry {
    let registry = Registry::builder().clock(clock.clone()).build();
    registry
        .reload(FileConfig::from_yaml_str(LIVE).unwrap())
        .unwrap();
    registry.circuit_breaker("inventory");
    registry.retry("inventory");
    registry
}

/// Plays the recorded sequence through the registry's breaker; how many
/// calls it refused.
fn play(registry: &Registry, clock: &ManualClock) -> usize {
    let breaker = registry.circuit_breaker("inventory");
    let mut refused = 0;
    for step in RECORDED {
        let out = match step {
            Step::Wait(ms) => {
                clock.advance(Duration::from_millis(*ms));
                continue;
            }
            Step::Ok => breaker.call(|| Ok::<_, Down>(())),
            Step::Fail => breaker.call(|| Err(Down)),
        };
        if matches!(out, Err(resil::Error::CallNotPermitted(_))) {
            refused += 1;
        }
    }
    refused
}

#[test]
fn a_shadow_trial_on_a_recorded_call_sequence_reports_exactly_the_transitions_its_settings_make_when_promoted(
) {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let staged = registry
        .stage_shadow(FileConfig::from_yaml_str(STAGED).unwrap(), "alice")
        .unwrap();
    assert_eq!(staged.version, 2);
    assert_eq!(staged.by, "alice");
    assert_eq!(staged.not_trialled, ["retry inventory"]);
    assert_eq!(
        registry.config_versions()[1].status,
        VersionStatus::Shadow,
        "the staged config is a version, never applied itself"
    );
    assert_eq!(registry.active_config_version(), Some(1));

    assert_eq!(play(&registry, &clock), 0, "the trial decides nothing");
    let trial = registry.shadow_trial().unwrap();
    let shadow = trial.instance(Kind::CircuitBreaker, "inventory").unwrap();
    assert_eq!(shadow.live_state, "CLOSED", "90 % was never reached");
    assert_eq!(
        shadow.unobserved, 0,
        "every call reached the shadow: the trial is exact"
    );
    let would: Vec<(&str, &str)> = shadow.transitions.iter().map(|t| (t.from, t.to)).collect();
    assert_eq!(
        would,
        [
            ("CLOSED", "OPEN"),
            ("OPEN", "HALF_OPEN"),
            ("HALF_OPEN", "CLOSED"),
            ("CLOSED", "OPEN"),
            ("OPEN", "HALF_OPEN"),
            ("HALF_OPEN", "OPEN"),
            ("OPEN", "HALF_OPEN"),
            ("HALF_OPEN", "CLOSED"),
        ],
        "{trial:#?}"
    );
    assert_eq!(shadow.transition_count, 8);
    let history = registry.snapshot();
    let told: Vec<&str> = history
        .instance(Kind::CircuitBreaker, "inventory")
        .unwrap()
        .history
        .iter()
        .filter(|e| e.event_type == "SHADOW")
        .map(|e| e.description.as_str())
        .collect();
    assert_eq!(told.len(), 9, "staged, then each transition: {told:#?}");
    assert_eq!(
        told[1],
        "shadow trial of config version 2: would have moved CLOSED -> OPEN"
    );
    assert!(shadow.would_have_refused > 0);

    // Promoted: the staged settings decide, as a new version.
    let report = registry.promote_shadow("bob").unwrap();
    assert_eq!(
        report.replaced,
        ["circuit_breaker inventory", "retry inventory"]
    );
    let promoted = registry.config_versions().pop().unwrap();
    assert_eq!(
        (promoted.id, promoted.status, promoted.promoted_from),
        (3, VersionStatus::Applied, Some(2))
    );
    assert_eq!(
        registry.config_diff(2, 3).unwrap(),
        [],
        "what was trialled is what applies"
    );
    assert!(registry.shadow_trial().is_none());
    let breaker = registry.circuit_breaker("inventory");
    assert_eq!(breaker.config().failure_rate_threshold(), 50.0);
    assert!(breaker.shadow().is_none(), "the shadow is gone");

    // The same recorded sequence, decided by the promoted settings from a
    // fresh start, makes exactly the transitions the trial reported.
    breaker.reset();
    let mut events = breaker.subscribe();
    let refused = play(&registry, &clock);
    let made: Vec<(&str, &str)> = events
        .drain()
        .into_iter()
        .filter_map(|e| match e.kind() {
            CircuitBreakerEventKind::StateTransition { from, to } => {
                Some((from.as_str(), to.as_str()))
            }
            _ => None,
        })
        .collect();
    assert_eq!(made, would);
    assert_eq!(refused as u64, shadow.would_have_refused);
}

#[test]
fn staging_is_validated_like_a_reload_and_refused_with_every_problem() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let typo = FileConfig::from_yaml_str(
        "resilience4j.circuitbreaker.instances.inventory.failure-rate-threshold: 150\n",
    )
    .unwrap_err();
    assert!(
        typo.to_string().contains("failure-rate-threshold"),
        "{typo}"
    );
    let err = registry
        .stage_shadow(
            FileConfig::from_yaml_str(
                "resilience4j.circuitbreaker.instances.inventory.record-errors: [NoSuchError]\n",
            )
            .unwrap(),
            "alice",
        )
        .unwrap_err();
    assert!(matches!(err, ShadowError::Invalid(_)), "{err}");
    assert!(err.to_string().contains("NoSuchError"), "{err}");
    assert_eq!(
        registry.config_versions().len(),
        1,
        "nothing staged, nothing recorded"
    );
    assert!(registry.shadow_trial().is_none());

    let err = registry
        .stage_shadow(FileConfig::from_yaml_str(LIVE).unwrap(), "alice")
        .unwrap_err();
    assert!(
        matches!(err, ShadowError::NothingToTrial(ref o) if o.is_empty()),
        "{err}"
    );
    let only_retry = LIVE.replace("max-attempts: 3", "max-attempts: 5");
    let err = registry
        .stage_shadow(FileConfig::from_yaml_str(&only_retry).unwrap(), "alice")
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the staged config changes no circuit breaker's settings, only retry inventory \
         (no shadows for those kinds): nothing to trial"
    );
}

#[test]
fn one_trial_at_a_time_and_discarding_detaches_every_shadow() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let staged = FileConfig::from_yaml_str(STAGED).unwrap();
    registry.stage_shadow(staged.clone(), "alice").unwrap();
    let err = registry.stage_shadow(staged, "bob").unwrap_err();
    assert_eq!(
        err.to_string(),
        "a shadow trial of config version 2 is running: promote or discard it first"
    );
    let breaker = registry.circuit_breaker("inventory");
    let _ = breaker.call(|| Err::<(), _>(Down));
    let last = registry.discard_shadow("alice").unwrap();
    assert_eq!(last.instances[0].buffered_calls, 1);
    assert!(breaker.shadow().is_none());
    assert!(registry.shadow_trial().is_none());
    assert!(matches!(
        registry.discard_shadow("alice"),
        Err(ShadowError::NoTrial)
    ));
    assert!(matches!(
        registry.promote_shadow("alice"),
        Err(ShadowError::NoTrial)
    ));
    assert_eq!(registry.active_config_version(), Some(1), "nothing applied");
    // The instance's history tells the story.
    let snapshot = registry.snapshot();
    let events = &snapshot
        .instance(Kind::CircuitBreaker, "inventory")
        .unwrap()
        .history;
    let shadow_events: Vec<&str> = events
        .iter()
        .filter(|e| e.event_type == "SHADOW")
        .map(|e| e.description.as_str())
        .collect();
    assert_eq!(
        shadow_events,
        [
            "shadow trial of config version 2: staged by alice",
            "shadow trial of config version 2: discarded by alice"
        ]
    );
}

#[test]
fn a_reload_ends_the_trial_and_a_configure_rebuild_keeps_it() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    registry
        .stage_shadow(FileConfig::from_yaml_str(STAGED).unwrap(), "alice")
        .unwrap();
    // A code setting rebuilds the breaker: the trial goes on beside it.
    registry
        .configure_circuit_breaker("inventory", |b| b.sliding_window_size(8))
        .unwrap();
    let breaker = registry.circuit_breaker("inventory");
    assert_eq!(breaker.config().sliding_window_size(), 8);
    assert!(breaker.shadow().is_some(), "moved to the rebuilt breaker");
    let _ = breaker.call(|| Err::<(), _>(Down));
    let trial = registry.shadow_trial().unwrap();
    assert_eq!(trial.instances[0].buffered_calls, 1);

    // A reload applies other settings: the trial compared against settings
    // no longer in force, so it ends.
    let other = LIVE.replace("failure-rate-threshold: 90", "failure-rate-threshold: 80");
    registry
        .reload(FileConfig::from_yaml_str(&other).unwrap())
        .unwrap();
    assert!(registry.shadow_trial().is_none());
    assert!(registry.circuit_breaker("inventory").shadow().is_none());
}

#[test]
fn an_earlier_version_can_be_trialled_before_a_rollback() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    registry
        .reload(FileConfig::from_yaml_str(STAGED).unwrap())
        .unwrap();
    let trial = registry.stage_shadow_version(1, "alice").unwrap();
    assert_eq!(trial.version, 3);
    assert_eq!(
        registry.config_diff(1, 3).unwrap(),
        [],
        "the staged version is version 1's config"
    );
    assert!(matches!(
        registry.stage_shadow_version(1, "bob"),
        Err(ShadowError::Running(3))
    ));
    registry.discard_shadow("alice").unwrap();
    assert!(matches!(
        registry.stage_shadow_version(99, "alice"),
        Err(ShadowError::Version(_))
    ));
    // A live breaker in FORCED_OPEN: the shadow cannot judge calls that never run.
    registry.stage_shadow_version(1, "alice").unwrap();
    registry
        .force_open("inventory", Some(Duration::from_secs(60)), "INC-7")
        .unwrap();
    let breaker = registry.circuit_breaker("inventory");
    assert_eq!(breaker.state(), State::ForcedOpen);
    let _ = breaker.call(|| Ok::<_, Down>(()));
    let trial = registry.shadow_trial().unwrap();
    assert_eq!(trial.instances[0].unobserved, 1);
    assert_eq!(trial.instances[0].live_state, "FORCED_OPEN");
    assert_eq!(trial.instances[0].shadow_state, "CLOSED");
}
