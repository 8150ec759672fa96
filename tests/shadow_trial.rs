//! Shadow trials in the registry (issue 32, item 3): a config staged beside
//! the one in force reports exactly the transitions its settings make once
//! promoted (recorded call sequence, manual clock); staging is validated
//! like a reload and recorded as a version; one trial at a time; a reload
//! ends it, a `configure_*` rebuild keeps it; promotion and discarding.
//! The rate limiter's, bulkhead's and retry's shadows report exactly the
//! refusals and retries their settings make once promoted on a recorded
//! sequence, and match a reference instance over random ones; a shadowed
//! bulkhead leaks no slot to panics, cancellation or threads.

use std::future::Future;
use std::time::Duration;

use resil::circuit_breaker::{CircuitBreakerEventKind, State};
use resil::clock::ManualClock;
use resil::config::FileConfig;
use resil::registry_crate::{Kind, ShadowError, VersionStatus};
use resil::shadow::Shadowed;
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

/// The trial: the same breaker opening at 50 %, and a retry change.
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
    assert!(staged.not_trialled.is_empty(), "{staged:#?}");
    assert!(staged.instance(Kind::Retry, "inventory").is_some());
    assert_eq!(
        registry.config_versions()[1].status,
        VersionStatus::Shadow,
        "the staged config is a version, never applied itself"
    );
    assert_eq!(registry.active_config_version(), Some(1));

    assert_eq!(play(&registry, &clock), 0, "the trial decides nothing");
    let trial = registry.shadow_trial().unwrap();
    let shadow = trial.instance(Kind::CircuitBreaker, "inventory").unwrap();
    assert_eq!(shadow.live_state, Some("CLOSED"), "90 % was never reached");
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
    registry.time_limiter("inventory");
    let only_timeout =
        format!("{LIVE}resilience4j.timelimiter.instances.inventory.timeout-duration: 2s\n");
    let err = registry
        .stage_shadow(FileConfig::from_yaml_str(&only_timeout).unwrap(), "alice")
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "the staged config changes no circuit breaker's, rate limiter's, bulkhead's or retry's \
         settings, only time_limiter inventory (no shadows for those kinds): nothing to trial"
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
            "shadow trial of config version 2: discarded by alice: would have made 0 \
             transitions and refused 0 calls"
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
    // So does a rebuilt retry (a retry is always rebuilt).
    registry
        .configure_retry("inventory", |b| b.wait_duration(Duration::ZERO))
        .unwrap();
    let retry = registry.retry("inventory");
    assert!(retry.shadow().is_some(), "moved to the rebuilt retry");
    let _ = retry.call(|| Err::<(), _>(Down));
    let trial = registry.shadow_trial().unwrap();
    let retried = trial.instance(Kind::Retry, "inventory").unwrap();
    assert_eq!(
        (retried.would_have_retried, retried.would_have_given_up),
        (1, 1)
    );

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
    assert_eq!(trial.instances[0].live_state, Some("FORCED_OPEN"));
    assert_eq!(trial.instances[0].shadow_state, Some("CLOSED"));
}

/// The live limiter (20 a second) and the trial (3 per 500 ms: a new
/// period, so promotion builds a new limiter whose periods start then).
const LIMITS_LIVE: &str = "
resilience4j.ratelimiter.instances.search:
  limit-for-period: 20
  limit-refresh-period: 1s
  timeout-duration: 0s
";
const LIMITS_STAGED: &str = "
resilience4j.ratelimiter.instances.search:
  limit-for-period: 3
  limit-refresh-period: 500ms
  timeout-duration: 0s
";

/// A recorded burst pattern: `Ok(n)` acquires `n` permits, `Err(ms)` waits.
const SEARCHES: &[Result<u32, u64>] = &[
    Ok(1),
    Ok(1),
    Ok(2),
    Ok(1),
    Err(200),
    Ok(1),
    Err(300),
    Ok(2),
    Ok(1),
    Ok(1),
    Err(250),
    Ok(1),
    Err(250),
    Ok(3),
    Ok(1),
    Err(600),
    Ok(1),
    Ok(1),
];

/// Plays the searches through the registry's limiter; how many it refused.
fn search(registry: &Registry, clock: &ManualClock) -> u64 {
    let limiter = registry.rate_limiter("search");
    let mut refused = 0;
    for step in SEARCHES {
        match step {
            Err(ms) => clock.advance(Duration::from_millis(*ms)),
            Ok(n) => {
                if limiter.call_n(*n, || Ok::<_, Down>(())).is_err() {
                    refused += 1;
                }
            }
        }
    }
    refused
}

#[test]
fn a_rate_limiter_shadow_reports_exactly_the_refusals_its_settings_make_when_promoted() {
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    registry
        .reload(FileConfig::from_yaml_str(LIMITS_LIVE).unwrap())
        .unwrap();
    let live = registry.rate_limiter("search");
    let staged = registry
        .stage_shadow(FileConfig::from_yaml_str(LIMITS_STAGED).unwrap(), "alice")
        .unwrap();
    assert!(staged.not_trialled.is_empty(), "{staged:#?}");

    assert_eq!(search(&registry, &clock), 0, "the trial decides nothing");
    let trial = registry.shadow_trial().unwrap();
    let shadow = trial.instance(Kind::RateLimiter, "search").unwrap().clone();
    assert_eq!(shadow.unobserved, 0, "the live limiter refused nothing");
    assert_eq!(shadow.would_have_waited, 0, "no wait is allowed");
    assert_eq!(shadow.live_state, None, "a limiter has no state");
    let would = shadow.would_have_refused;
    assert!(would > 0, "{shadow:#?}");
    let text = registry.prometheus_text();
    assert!(
        text.contains(&format!(
            "resil_shadow_ratelimiter_not_permitted_calls_total{{name=\"search\"}} {would}"
        )),
        "{text}"
    );

    // Promoted: a new limiter whose periods start now; the same searches
    // are refused exactly as often as the trial said.
    registry.promote_shadow("bob").unwrap();
    let promoted = registry.rate_limiter("search");
    assert_eq!(promoted.config().limit_for_period(), 3);
    assert!(live.shadow().is_none() && promoted.shadow().is_none());
    assert_eq!(search(&registry, &clock), would);
    let history = registry.snapshot();
    let told: Vec<&str> = history
        .instance(Kind::RateLimiter, "search")
        .unwrap()
        .history
        .iter()
        .filter(|e| e.event_type == "SHADOW")
        .map(|e| e.description.as_str())
        .collect();
    assert_eq!(
        told,
        [
            "shadow trial of config version 2: staged by alice".to_owned(),
            "shadow trial of config version 2: would have refused a call for the first time"
                .to_owned(),
            format!(
                "shadow trial of config version 2: promoted by bob: would have refused {would} \
                 calls; 0 would have waited"
            ),
        ]
    );
}

#[test]
fn a_rate_limiter_shadow_of_a_new_limit_keeps_the_live_periods_and_is_exact_when_promoted_in_place()
{
    let clock = ManualClock::new();
    let registry = Registry::builder().clock(clock.clone()).build();
    registry
        .reload(FileConfig::from_yaml_str(LIMITS_LIVE).unwrap())
        .unwrap();
    let live = registry.rate_limiter("search");
    // Staged 700 ms into a period: the shadow counts the live periods.
    clock.advance(Duration::from_millis(700));
    let same_period = LIMITS_LIVE.replace("limit-for-period: 20", "limit-for-period: 3");
    registry
        .stage_shadow(FileConfig::from_yaml_str(&same_period).unwrap(), "alice")
        .unwrap();
    clock.advance(Duration::from_millis(300));
    assert_eq!(search(&registry, &clock), 0, "the trial decides nothing");
    let would = registry.shadow_trial().unwrap().instances[0].would_have_refused;
    assert!(would > 0);

    // Promoted in place (the same instance, a new limit from the next
    // period on); replayed from a period's start, the same refusals.
    registry.promote_shadow("bob").unwrap();
    let promoted = registry.rate_limiter("search");
    assert_eq!(promoted.config().limit_for_period(), 3);
    assert_eq!(
        live.metrics().successful_acquisitions(),
        13,
        "the same instance, its counts kept"
    );
    clock.advance(Duration::from_millis(400));
    assert_eq!(search(&registry, &clock), would);
}

/// Calls entering (`Ok(id)`) and leaving (`Err(id)`) a bulkhead.
const REPORTS: &[Result<usize, usize>] = &[
    Ok(0),
    Ok(1),
    Ok(2),
    Err(1),
    Ok(3),
    Ok(4),
    Err(0),
    Err(2),
    Ok(5),
    Ok(6),
    Ok(7),
    Err(3),
    Err(4),
    Err(5),
    Ok(8),
    Err(6),
    Err(7),
    Err(8),
];

/// Plays the reports through the registry's bulkhead; how many it refused.
fn report(registry: &Registry) -> u64 {
    let bulkhead = registry.bulkhead("reports");
    let mut held: Vec<Option<resil::bulkhead::BulkheadPermit<'_>>> =
        (0..REPORTS.len()).map(|_| None).collect();
    let mut refused = 0;
    for step in REPORTS {
        match *step {
            Ok(id) => match bulkhead.try_acquire_permission() {
                Ok(permit) => held[id] = Some(permit),
                Err(_) => refused += 1,
            },
            Err(id) => held[id] = None,
        }
    }
    refused
}

#[test]
fn a_bulkhead_shadow_reports_exactly_the_refusals_its_limit_makes_when_promoted_and_a_panic_leaves_no_slot_taken(
) {
    let registry = Registry::new();
    let yaml = |max| {
        format!(
            "resilience4j.bulkhead.instances.reports:\n  max-concurrent-calls: {max}\n  \
             max-wait-duration: 0s\n"
        )
    };
    registry
        .reload(FileConfig::from_yaml_str(&yaml(5)).unwrap())
        .unwrap();
    let bulkhead = registry.bulkhead("reports");
    registry
        .stage_shadow(FileConfig::from_yaml_str(&yaml(2)).unwrap(), "alice")
        .unwrap();
    let shadow = bulkhead.shadow().unwrap();

    assert_eq!(report(&registry), 0, "the trial decides nothing");
    // User code that panics inside a shadowed call gives both slots back.
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        bulkhead.call(|| -> Result<(), Down> { panic!("report generator bug") })
    }));
    assert!(panicked.is_err());
    assert_eq!(bulkhead.available_concurrent_calls(), 5);
    assert_eq!(
        shadow.available_concurrent_calls(),
        2,
        "no shadow slot leaked"
    );
    // So does a call cancelled while it runs (its future dropped).
    {
        let mut call =
            std::pin::pin!(bulkhead.call_async(std::future::pending::<Result<(), Down>>()));
        let waker = std::task::Waker::noop();
        let polled = call
            .as_mut()
            .poll(&mut std::task::Context::from_waker(waker));
        assert!(polled.is_pending());
        assert_eq!(
            shadow.available_concurrent_calls(),
            1,
            "running, in a shadow slot"
        );
    }
    assert_eq!(
        shadow.available_concurrent_calls(),
        2,
        "cancelled, slot back"
    );
    let trial = registry.shadow_trial().unwrap();
    let would = trial.instance(Kind::Bulkhead, "reports").unwrap().clone();
    assert_eq!((would.unobserved, would.would_have_waited), (0, 0));
    assert!(would.would_have_refused > 0, "{would:#?}");

    // Promoted: the bulkhead changes in place and refuses the same calls.
    registry.promote_shadow("bob").unwrap();
    assert_eq!(bulkhead.config().max_concurrent_calls(), 2);
    assert_eq!(report(&registry), would.would_have_refused);
    assert_eq!(bulkhead.available_concurrent_calls(), 2);
}

/// Each call's attempts, in order: `true` succeeds.
const QUOTES: &[&[bool]] = &[
    &[false, false, true],
    &[true],
    &[false, false, false, false],
    &[false, true],
    &[false, false, false, true],
];

/// Plays the quotes through the registry's retry, each call taking its
/// attempts' outcomes in order. Panics if the retry asks for an attempt the
/// recording does not have.
fn quote(registry: &Registry) {
    let retry = registry.retry("quote");
    for attempts in QUOTES {
        let mut next = attempts.iter();
        let _ = retry.call(|| match next.next() {
            Some(true) => Ok(()),
            Some(false) => Err(Down),
            None => panic!("an attempt the recording does not have"),
        });
    }
}

#[test]
fn a_retry_shadow_reports_exactly_the_retries_its_settings_make_when_promoted() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let yaml = |n| format!("resilience4j.retry.instances.quote.max-attempts: {n}\n");
    registry
        .reload(FileConfig::from_yaml_str(&yaml(4)).unwrap())
        .unwrap();
    let live = registry.retry("quote");
    registry
        .stage_shadow(FileConfig::from_yaml_str(&yaml(2)).unwrap(), "alice")
        .unwrap();
    let shadow = live.shadow().unwrap();
    quote(&registry);
    assert_eq!(live.metrics().retry_attempts(), 2 + 3 + 1 + 3);
    let trial = registry.shadow_trial().unwrap();
    let would = trial.instance(Kind::Retry, "quote").unwrap().clone();
    assert_eq!(would.unobserved, 0, "the live retry always went on longer");
    assert_eq!(
        (would.would_have_retried, would.would_have_given_up),
        (4, 3),
        "{would:#?}"
    );
    let text = registry.prometheus_text();
    assert!(
        text.contains("resil_shadow_retry_retries_total{name=\"quote\"} 4"),
        "{text}"
    );
    let snapshot = registry.snapshot();
    let told: Vec<&str> = snapshot
        .instance(Kind::Retry, "quote")
        .unwrap()
        .history
        .iter()
        .filter(|e| e.event_type == "SHADOW")
        .map(|e| e.description.as_str())
        .collect();
    assert_eq!(
        told,
        [
            "shadow trial of config version 2: staged by alice",
            "shadow trial of config version 2: would have retried for the first time",
            "shadow trial of config version 2: would have given up on a call for the first time",
        ],
        "the first of each, then only counts"
    );

    // Promoted: a new retry with two attempts, on the same outcomes,
    // counts exactly what the shadow counted.
    registry.promote_shadow("bob").unwrap();
    let promoted = registry.retry("quote");
    quote(&registry);
    assert_eq!(promoted.metrics(), shadow.metrics());
    assert_eq!(
        promoted.metrics().retry_attempts(),
        would.would_have_retried
    );
    assert_eq!(
        promoted.metrics().failed_calls_with_retry(),
        would.would_have_given_up
    );
}

#[test]
fn a_retry_shadow_that_would_try_again_where_the_live_one_stopped_reports_the_call_unobserved() {
    let registry = Registry::builder().clock(ManualClock::new()).build();
    let yaml = |n| format!("resilience4j.retry.instances.quote.max-attempts: {n}\n");
    registry
        .reload(FileConfig::from_yaml_str(&yaml(2)).unwrap())
        .unwrap();
    let retry = registry.retry("quote");
    registry
        .stage_shadow(FileConfig::from_yaml_str(&yaml(5)).unwrap(), "alice")
        .unwrap();
    let _ = retry.call(|| Err::<(), _>(Down));
    let _ = retry.call(|| Ok::<_, Down>(()));
    let trial = registry.shadow_trial().unwrap();
    let would = trial.instance(Kind::Retry, "quote").unwrap();
    assert_eq!(
        (
            would.unobserved,
            would.would_have_retried,
            would.would_have_given_up
        ),
        (1, 2, 0),
        "the third attempt's outcome is unknown: {would:#?}"
    );
}

#[test]
fn a_rate_limiter_shadow_counts_the_waits_its_settings_would_make_and_never_sleeps() {
    use resil::rate_limiter::{RateLimiter, RateLimiterConfig};

    let clock = ManualClock::new();
    let limits = |n, timeout| {
        RateLimiterConfig::builder()
            .limit_for_period(n)
            .limit_refresh_period(Duration::from_secs(1))
            .timeout_duration(timeout)
            .build()
            .unwrap()
    };
    let live = RateLimiter::with_clock("search", limits(2, Duration::ZERO), clock.clone());
    let shadow = live.start_shadow(limits(1, Duration::from_millis(1500)));
    let outcomes: Vec<bool> = (0..4)
        .map(|_| live.call(|| Ok::<_, Down>(())).is_ok())
        .collect();
    assert_eq!(
        outcomes,
        [true, true, false, false],
        "the live limiter decides"
    );
    assert_eq!(
        clock.elapsed(),
        Duration::ZERO,
        "nobody slept, the shadow least"
    );
    // The shadow: the first now, the second after 1 s, the third would
    // wait 2 s (over its 1.5 s timeout): refused, as is the fourth.
    assert_eq!(shadow.shadow_waited_acquisitions(), 1);
    assert_eq!(shadow.metrics().successful_acquisitions(), 2);
    assert_eq!(shadow.metrics().failed_acquisitions(), 2);
    assert_eq!(
        shadow.unobserved_calls(),
        0,
        "it refused what the live one refused"
    );
    // `try_acquire_permission` never waits: neither does its shadow.
    clock.advance(Duration::from_secs(3));
    assert!(live.try_acquire_permission(1));
    assert!(live.try_acquire_permission(1));
    assert_eq!(shadow.metrics().failed_acquisitions(), 3);
    assert_eq!(shadow.shadow_waited_acquisitions(), 1);
    // At 4 s: the shadow grants one now and one after a wait, and refuses
    // the third with the live limiter.
    clock.advance(Duration::from_secs(1));
    let _ = live.call(|| Ok::<_, Down>(()));
    let _ = live.call(|| Ok::<_, Down>(()));
    assert!(live.call(|| Ok::<_, Down>(())).is_err());
    assert_eq!(shadow.shadow_waited_acquisitions(), 2);
    assert_eq!(shadow.metrics().failed_acquisitions(), 4);
    // A call the live limiter refuses (drained by hand) and the shadow
    // would grant never ran.
    clock.advance(Duration::from_secs(2));
    live.drain_permissions();
    assert!(live.call(|| Ok::<_, Down>(())).is_err());
    assert_eq!(shadow.unobserved_calls(), 1);
    assert_eq!(shadow.metrics().failed_acquisitions(), 4);
}

#[test]
fn a_shadowed_bulkhead_s_counts_add_up_exactly_under_concurrent_calls() {
    use resil::bulkhead::{Bulkhead, BulkheadConfig};

    let sizes = |n| {
        BulkheadConfig::builder()
            .max_concurrent_calls(n)
            .build()
            .unwrap()
    };
    let live = Bulkhead::new("reports", sizes(8));
    let shadow = live.start_shadow(sizes(2));
    std::thread::scope(|s| {
        for t in 0..4 {
            let live = &live;
            s.spawn(move || {
                for i in 0..2_000 {
                    let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        live.call(|| {
                            if (i + t) % 97 == 0 {
                                panic!("user code");
                            }
                            Ok::<_, Down>(std::hint::black_box(i))
                        })
                    }));
                }
            });
        }
    });
    let (m, s) = (live.metrics(), shadow.metrics());
    assert_eq!(m.permitted_calls() + m.rejected_calls(), 8_000);
    assert_eq!(m.rejected_calls(), 0, "4 threads never fill 8 slots");
    assert_eq!(
        s.permitted_calls() + s.rejected_calls() + shadow.unobserved_calls(),
        8_000,
        "every call was offered to the shadow once"
    );
    assert_eq!(s.concurrent_calls(), 0, "every shadow slot came back");
    assert_eq!(shadow.available_concurrent_calls(), 2);
    assert_eq!(live.available_concurrent_calls(), 8);
}

mod properties {
    //! The shadows of a rate limiter, a bulkhead and a retry against a
    //! reference: an instance with the staged settings deciding the same
    //! calls (manual clock, random sequences).

    use std::time::Duration;

    use proptest::prelude::*;
    use resil::bulkhead::{Bulkhead, BulkheadConfig};
    use resil::clock::ManualClock;
    use resil::rate_limiter::{RateLimiter, RateLimiterConfig};
    use resil::retry::{Retry, RetryConfig};
    use resil::shadow::Shadowed;

    use super::Down;

    fn limits(limit: u32, period_ms: u64, timeout_ms: u64) -> RateLimiterConfig {
        RateLimiterConfig::builder()
            .limit_for_period(limit)
            .limit_refresh_period(Duration::from_millis(period_ms))
            .timeout_duration(Duration::from_millis(timeout_ms))
            .build()
            .unwrap()
    }

    fn sizes(max: u32) -> BulkheadConfig {
        BulkheadConfig::builder()
            .max_concurrent_calls(max)
            .max_wait_duration(Duration::ZERO)
            .build()
            .unwrap()
    }

    fn attempts(max: u32) -> RetryConfig {
        RetryConfig::builder()
            .max_attempts(max)
            .wait_duration(Duration::from_millis(10))
            .build()
            .unwrap()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]

        /// A limiter's shadow takes every acquisition as a limiter with
        /// its settings, made when the shadow was attached, takes it.
        #[test]
        fn a_limiter_shadow_grants_waits_and_refuses_as_the_staged_limiter_does(
            live in (1u32..6, prop_oneof![Just(500u64), Just(1000)], prop_oneof![Just(0u64), Just(1500)]),
            staged in (1u32..6, prop_oneof![Just(500u64), Just(1000)], prop_oneof![Just(0u64), Just(1200)]),
            ops in proptest::collection::vec(prop_oneof![
                3 => (1u32..4).prop_map(Ok),
                1 => (0u64..700).prop_map(Err),
            ], 0..60),
        ) {
            let clock = ManualClock::new();
            clock.advance(Duration::from_millis(123));
            let limiter = RateLimiter::with_clock("p", limits(live.0, live.1, live.2), clock.clone());
            let shadow = limiter.start_shadow(limits(staged.0, staged.1, staged.2));
            let reference = RateLimiter::with_clock("r", limits(staged.0, staged.1, staged.2), clock.clone());
            let (mut waited, mut unobserved) = (0, 0);
            for op in ops {
                match op {
                    Err(ms) => clock.advance(Duration::from_millis(ms)),
                    Ok(n) => {
                        let live_granted = limiter.reserve_permission(n).is_ok();
                        if let Ok(wait) = reference.reserve_permission(n) {
                            waited += u64::from(!wait.is_zero());
                            unobserved += u64::from(!live_granted);
                        }
                    }
                }
            }
            let (s, r) = (shadow.metrics(), reference.metrics());
            prop_assert_eq!(s.successful_acquisitions(), r.successful_acquisitions());
            prop_assert_eq!(s.failed_acquisitions(), r.failed_acquisitions());
            prop_assert_eq!(shadow.shadow_waited_acquisitions(), waited);
            prop_assert_eq!(shadow.unobserved_calls(), unobserved);
        }

        /// A bulkhead's shadow refuses what a bulkhead with its limit
        /// refuses, while no call is unobserved; every slot comes back.
        #[test]
        fn a_bulkhead_shadow_refuses_as_the_staged_bulkhead_does(
            live in 1u32..8,
            staged in 1u32..8,
            ops in proptest::collection::vec(prop_oneof![
                Just(None),
                (0usize..8).prop_map(Some),
            ], 0..80),
        ) {
            let bulkhead = Bulkhead::new("p", sizes(live));
            let shadow = bulkhead.start_shadow(sizes(staged));
            let reference = Bulkhead::new("r", sizes(staged));
            let mut held = Vec::new();
            let mut calls = 0u64;
            for op in ops {
                match op {
                    None => {
                        calls += 1;
                        let theirs = reference.try_acquire_permission().ok();
                        if let Ok(ours) = bulkhead.try_acquire_permission() {
                            held.push((ours, theirs));
                        }
                    }
                    Some(k) if !held.is_empty() => {
                        let k = k % held.len();
                        drop(held.swap_remove(k));
                    }
                    Some(_) => {}
                }
            }
            let s = shadow.metrics();
            prop_assert_eq!(s.permitted_calls() + s.rejected_calls() + shadow.unobserved_calls(), calls);
            if shadow.unobserved_calls() == 0 {
                prop_assert_eq!(s.rejected_calls(), reference.metrics().rejected_calls());
                prop_assert_eq!(s.concurrent_calls(), reference.metrics().concurrent_calls());
            }
            drop(held);
            prop_assert_eq!(shadow.available_concurrent_calls(), staged);
        }

        /// A retry's shadow counts what a retry with its settings counts on
        /// the same attempt outcomes, while no call is unobserved (always,
        /// when it makes no more attempts than the live retry).
        #[test]
        fn a_retry_shadow_counts_as_the_staged_retry_does(
            live in 1u32..6,
            staged in 1u32..6,
            scripts in proptest::collection::vec(
                proptest::collection::vec(any::<bool>(), 6), 0..30),
        ) {
            let clock = ManualClock::new();
            let retry = Retry::with_clock("p", attempts(live), clock.clone());
            let shadow = retry.start_shadow(attempts(staged));
            let reference = Retry::with_clock("r", attempts(staged), clock.clone());
            for script in &scripts {
                for instance in [&retry, &reference] {
                    let mut next = script.iter();
                    let _ = instance.call(|| match next.next() {
                        Some(true) => Ok(()),
                        _ => Err(Down),
                    });
                }
            }
            if staged <= live {
                prop_assert_eq!(shadow.unobserved_calls(), 0);
            }
            if shadow.unobserved_calls() == 0 {
                prop_assert_eq!(shadow.metrics(), reference.metrics());
                prop_assert_eq!(shadow.shadow_retries(), reference.metrics().retry_attempts());
                // Every error is retried: every failed call ran out of attempts.
                let m = reference.metrics();
                prop_assert_eq!(
                    shadow.shadow_give_ups(),
                    m.failed_calls_with_retry() + m.failed_calls_without_retry()
                );
            }
        }
    }
}
