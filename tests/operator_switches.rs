//! An operator's switch survives every reload: force-open, disable,
//! metrics-only, chaos on and off, a rate limiter's limit and timeout and a
//! bulkhead's size stay in force whatever a reload changes, until their TTL
//! or an explicit release (issue 32, item 0). Time comes from the manual
//! clock.
#![cfg(feature = "toml")]

use std::time::Duration;

use proptest::prelude::*;
use resil::circuit_breaker::{CircuitBreaker, State};
use resil::clock::ManualClock;
use resil::config::FileConfig;
use resil::registry_crate::{Kind, Switch, SwitchAction};
use resil::Registry;

/// One config file, by the settings a reload may change.
#[derive(Debug, Clone, Copy, PartialEq)]
struct Settings {
    window: u32,
    time_based: bool,
    failure_rate: u32,
    chaos_enabled: bool,
    latency_rate: f64,
    limit: u32,
    refresh_secs: u64,
    bulkhead: u32,
}

impl Settings {
    const FIRST: Settings = Settings {
        window: 10,
        time_based: false,
        failure_rate: 50,
        chaos_enabled: true,
        latency_rate: 0.0,
        limit: 10,
        refresh_secs: 1,
        bulkhead: 4,
    };

    fn toml(&self) -> String {
        let window_type = if self.time_based {
            "TIME_BASED"
        } else {
            "COUNT_BASED"
        };
        format!(
            r#"
[resilience4j.circuitbreaker.instances.b]
sliding-window-size = {}
sliding-window-type = "{window_type}"
failure-rate-threshold = {}

[resilience4j.chaos.instances.c]
enabled = {}
latency-rate = {:?}
latency = "10ms"

[resilience4j.ratelimiter.instances.r]
limit-for-period = {}
limit-refresh-period = "{}s"

[resilience4j.bulkhead.instances.k]
max-concurrent-calls = {}
"#,
            self.window,
            self.failure_rate,
            self.chaos_enabled,
            self.latency_rate,
            self.limit,
            self.refresh_secs,
            self.bulkhead
        )
    }

    fn file(&self) -> FileConfig {
        FileConfig::from_toml_str(&self.toml()).unwrap()
    }
}

fn registry(clock: &ManualClock, settings: Settings) -> Registry {
    let registry = Registry::builder().clock(clock.clone()).build();
    registry.reload(settings.file()).unwrap();
    // The instances exist: management acts only on existing ones.
    registry.circuit_breaker("b");
    registry.chaos("c");
    registry.rate_limiter("r");
    registry.bulkhead("k");
    registry
}

// Reproduces the outside check of issue 32: with chaos enabled in the file,
// an operator's `disable_chaos` was undone by the next reload that changed
// any of that instance's settings.
#[test]
fn an_operators_disable_chaos_survives_a_reload_that_changes_the_chaos_instance() {
    let clock = ManualClock::new();
    let registry = registry(&clock, Settings::FIRST);
    assert!(registry.chaos_status("c").unwrap().enabled(), "the file's");
    registry.disable_chaos("c", "drill over").unwrap();

    let changed = Settings {
        latency_rate: 0.5,
        ..Settings::FIRST
    };
    let report = registry.reload(changed.file()).unwrap();
    assert!(
        report.replaced.contains(&"chaos c".to_owned()),
        "{report:?}"
    );
    let status = registry.chaos_status("c").unwrap();
    assert!(!status.enabled(), "the operator's switch off holds");
    assert_eq!(status.reason(), Some("drill over"), "and its reason");
    assert_eq!(
        registry.chaos("c").config().latency_rate(),
        0.5,
        "the reload's own change is in"
    );

    // Released, the instance does what its settings say.
    assert!(registry.release(Kind::Chaos, "c").unwrap());
    assert!(registry.chaos_status("c").unwrap().enabled());
    assert!(!registry.release(Kind::Chaos, "c").unwrap(), "nothing left");
}

#[test]
fn metrics_only_with_a_ttl_survives_a_reload_that_changes_the_window_and_ends_with_its_ttl() {
    let clock = ManualClock::new();
    let registry = registry(&clock, Settings::FIRST);
    let breaker = registry.circuit_breaker("b");
    registry
        .metrics_only("b", Some(Duration::from_secs(60)), "trial")
        .unwrap();
    let changed = Settings {
        window: 5,
        time_based: true,
        ..Settings::FIRST
    };
    registry.reload(changed.file()).unwrap();
    assert_eq!(breaker.state(), State::MetricsOnly);
    assert_eq!(breaker.config().sliding_window_size(), 5);
    clock.advance(Duration::from_secs(60));
    registry.run_due_overrides();
    assert_eq!(breaker.state(), State::Closed, "the TTL ended it");
    assert!(registry.switches().is_empty());
}

#[test]
fn a_managed_rate_limit_and_bulkhead_size_outlive_reloads_until_released() {
    let clock = ManualClock::new();
    let registry = registry(&clock, Settings::FIRST);
    registry.set_rate_limit("r", 3).unwrap();
    registry
        .set_rate_limiter_timeout("r", Duration::from_millis(250))
        .unwrap();
    registry.set_bulkhead_size("k", 2).unwrap();
    let changed = Settings {
        limit: 7,
        refresh_secs: 2,
        bulkhead: 9,
        ..Settings::FIRST
    };
    registry.reload(changed.file()).unwrap();
    let limiter = registry.rate_limiter("r");
    assert_eq!(limiter.config().limit_for_period(), 3);
    assert_eq!(
        limiter.config().timeout_duration(),
        Duration::from_millis(250)
    );
    assert_eq!(
        limiter.config().limit_refresh_period(),
        Duration::from_secs(2),
        "rebuilt for the new period, the operator's limit on top"
    );
    assert_eq!(registry.bulkhead("k").config().max_concurrent_calls(), 2);
    assert_eq!(
        registry
            .switches()
            .into_iter()
            .map(|s| s.action)
            .collect::<Vec<_>>(),
        [
            SwitchAction::BulkheadSize(2),
            SwitchAction::RateLimit(3),
            SwitchAction::RateTimeout(Duration::from_millis(250)),
        ]
    );

    assert!(registry.release(Kind::RateLimiter, "r").unwrap());
    assert!(registry.release(Kind::Bulkhead, "k").unwrap());
    assert_eq!(limiter.config().limit_for_period(), 7);
    assert_eq!(
        limiter.config().timeout_duration(),
        Duration::from_secs(5),
        "resil-core's default"
    );
    assert_eq!(registry.bulkhead("k").config().max_concurrent_calls(), 9);
}

#[test]
fn a_switch_with_a_ttl_on_an_action_that_takes_none_is_refused() {
    let clock = ManualClock::new();
    let registry = registry(&clock, Settings::FIRST);
    let err = registry
        .apply_switch(&Switch {
            name: "k".into(),
            action: SwitchAction::BulkheadSize(2),
            reason: String::new(),
            ttl: Some(Duration::from_secs(1)),
        })
        .unwrap_err();
    assert!(err.to_string().contains("takes no TTL"), "{err}");
}

/// One step of an operator's session.
#[derive(Debug, Clone)]
enum Step {
    Breaker(State, Option<u64>),
    ReleaseBreaker,
    ChaosOn(Option<u64>),
    ChaosOff,
    ReleaseChaos,
    RateLimit(u32),
    ReleaseRate,
    BulkheadSize(u32),
    ReleaseBulkhead,
    Reload(Settings),
    Advance(u64),
}

fn settings() -> impl Strategy<Value = Settings> {
    (
        prop_oneof![Just(5u32), Just(10)],
        any::<bool>(),
        prop_oneof![Just(40u32), Just(50)],
        any::<bool>(),
        prop_oneof![Just(0.0f64), Just(0.5)],
        prop_oneof![Just(5u32), Just(10)],
        prop_oneof![Just(1u64), Just(2)],
        prop_oneof![Just(3u32), Just(4)],
    )
        .prop_map(
            |(
                window,
                time_based,
                failure_rate,
                chaos_enabled,
                latency_rate,
                limit,
                refresh_secs,
                bulkhead,
            )| {
                Settings {
                    window,
                    time_based,
                    failure_rate,
                    chaos_enabled,
                    latency_rate,
                    limit,
                    refresh_secs,
                    bulkhead,
                }
            },
        )
}

fn ttl() -> impl Strategy<Value = Option<u64>> {
    prop_oneof![Just(None), (1u64..30).prop_map(Some)]
}

fn step() -> impl Strategy<Value = Step> {
    let mode = prop_oneof![
        Just(State::ForcedOpen),
        Just(State::Disabled),
        Just(State::MetricsOnly)
    ];
    prop_oneof![
        (mode, ttl()).prop_map(|(m, t)| Step::Breaker(m, t)),
        Just(Step::ReleaseBreaker),
        ttl().prop_map(Step::ChaosOn),
        Just(Step::ChaosOff),
        Just(Step::ReleaseChaos),
        (1u32..20).prop_map(Step::RateLimit),
        Just(Step::ReleaseRate),
        (1u32..20).prop_map(Step::BulkheadSize),
        Just(Step::ReleaseBulkhead),
        settings().prop_map(Step::Reload),
        settings().prop_map(Step::Reload),
        (1u64..20).prop_map(Step::Advance),
    ]
}

/// What the operator set and when it ends (seconds on the manual clock).
#[derive(Debug, Default)]
struct Model {
    now: u64,
    breaker: Option<(State, Option<u64>)>,
    chaos: Option<(bool, Option<u64>)>,
    limit: Option<u32>,
    size: Option<u32>,
}

impl Model {
    fn in_force<T: Copy>(&self, switch: Option<(T, Option<u64>)>) -> Option<T> {
        switch
            .filter(|(_, until)| until.is_none_or(|u| self.now < u))
            .map(|(v, _)| v)
    }
}

fn run(steps: Vec<Step>) -> Result<(), TestCaseError> {
    let clock = ManualClock::new();
    let mut file = Settings::FIRST;
    let registry = registry(&clock, file);
    let breaker = registry.circuit_breaker("b");
    let mut model = Model::default();
    let secs = Duration::from_secs;
    for step in steps {
        match step.clone() {
            Step::Breaker(mode, ttl) => {
                let ttl_d = ttl.map(secs);
                match mode {
                    State::ForcedOpen => registry.force_open("b", ttl_d, "op"),
                    State::Disabled => registry.disable("b", ttl_d, "op"),
                    _ => registry.metrics_only("b", ttl_d, "op"),
                }
                .unwrap();
                model.breaker = Some((mode, ttl.map(|t| model.now + t)));
            }
            Step::ReleaseBreaker => {
                let had = model.in_force(model.breaker).is_some();
                prop_assert_eq!(registry.release(Kind::CircuitBreaker, "b").unwrap(), had);
                model.breaker = None;
                prop_assert_eq!(breaker.state(), State::Closed);
            }
            Step::ChaosOn(ttl) => {
                registry.enable_chaos("c", ttl.map(secs), "drill").unwrap();
                model.chaos = Some((true, ttl.map(|t| model.now + t)));
            }
            Step::ChaosOff => {
                registry.disable_chaos("c", "stop").unwrap();
                model.chaos = Some((false, None));
            }
            Step::ReleaseChaos => {
                let had = model.in_force(model.chaos).is_some();
                prop_assert_eq!(registry.release(Kind::Chaos, "c").unwrap(), had);
                if had {
                    prop_assert_eq!(
                        registry.chaos_status("c").unwrap().enabled(),
                        file.chaos_enabled,
                        "released, chaos follows its settings"
                    );
                }
                model.chaos = None;
            }
            Step::RateLimit(n) => {
                registry.set_rate_limit("r", n).unwrap();
                model.limit = Some(n);
            }
            Step::ReleaseRate => {
                let had = model.limit.take().is_some();
                prop_assert_eq!(registry.release(Kind::RateLimiter, "r").unwrap(), had);
            }
            Step::BulkheadSize(n) => {
                registry.set_bulkhead_size("k", n).unwrap();
                model.size = Some(n);
            }
            Step::ReleaseBulkhead => {
                let had = model.size.take().is_some();
                prop_assert_eq!(registry.release(Kind::Bulkhead, "k").unwrap(), had);
            }
            Step::Reload(next) => {
                registry.reload(next.file()).unwrap();
                file = next;
            }
            Step::Advance(s) => {
                clock.advance(secs(s));
                model.now += s;
                registry.run_due_overrides();
            }
        }
        // The invariant, after every step.
        let expected_mode = model.in_force(model.breaker).unwrap_or(State::Closed);
        prop_assert_eq!(breaker.state(), expected_mode, "after {:?}", step);
        if model.in_force(model.breaker).is_none() {
            model.breaker = None;
        }
        if let Some(enabled) = model.in_force(model.chaos) {
            let status = registry.chaos_status("c").unwrap();
            prop_assert_eq!(status.enabled(), enabled, "chaos after {:?}", step);
        } else if model.chaos.is_some() {
            model.chaos = None;
            prop_assert!(
                !registry.chaos_status("c").unwrap().enabled(),
                "a switch on whose TTL ran out leaves injection off"
            );
        }
        let limiter = registry.rate_limiter("r").config();
        prop_assert_eq!(
            limiter.limit_for_period(),
            model.limit.unwrap_or(file.limit),
            "limit after {:?}",
            step
        );
        prop_assert_eq!(limiter.limit_refresh_period(), secs(file.refresh_secs));
        prop_assert_eq!(
            registry.bulkhead("k").config().max_concurrent_calls(),
            model.size.unwrap_or(file.bulkhead),
            "size after {:?}",
            step
        );
        prop_assert_eq!(
            breaker.config().sliding_window_size(),
            file.window,
            "the reload's own changes are in"
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn every_operator_switch_holds_through_random_reloads_until_its_ttl_or_release(
        steps in proptest::collection::vec(step(), 1..40)
    ) {
        run(steps)?;
    }
}

#[test]
fn the_breaker_handle_of_the_property_sees_replacements() {
    // The property reads one handle across reloads that replace the
    // breaker: a handle follows its slot (a guard on the test itself).
    let clock = ManualClock::new();
    let registry = registry(&clock, Settings::FIRST);
    let handle = registry.circuit_breaker("b");
    registry.force_open("b", None, "x").unwrap();
    let changed = Settings {
        window: 5,
        ..Settings::FIRST
    };
    registry.reload(changed.file()).unwrap();
    assert_eq!(handle.config().sliding_window_size(), 5);
    assert_eq!(handle.state(), State::ForcedOpen);
    let _: &CircuitBreaker = &handle;
}
