//! The inbound guard as an operator sees it: the registry's guard is built
//! from `resil.inbound-guard`, re-tuned in place by a reload, and published
//! in the Prometheus exposition; and a process-wide guard keeps the
//! semantics of any guard. Time is a manual clock; the CPU reading is
//! injected.

use std::time::Duration;

use resil::clock::ManualClock;
use resil::config::FileConfig;
use resil::inbound::{InboundGuard, InboundGuardConfig, Overload};
use resil::registry_crate::Status;
use resil::Registry;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn registry(yaml: &str, clock: &ManualClock) -> Registry {
    let registry = Registry::builder().clock(clock.clone()).build();
    registry
        .reload(FileConfig::from_yaml_str(yaml).unwrap())
        .unwrap();
    registry
}

/// The value of the exposition's series `series` (name and labels as
/// written), if present.
fn value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn the_registry_s_guard_comes_from_the_file_section_and_is_one_guard() {
    let clock = ManualClock::new();
    let registry = registry(
        "resil.inbound-guard:\n  max-in-flight: 2\n  retry-after: 3s\n",
        &clock,
    );
    let guard = registry.inbound_guard();
    assert_eq!(guard.config().max_in_flight(), Some(2));
    let _a = guard.try_enter().unwrap();
    // A second call is the same guard: it sees the first one's request.
    let _b = registry.inbound_guard().try_enter().unwrap();
    let refused = registry.inbound_guard().try_enter().unwrap_err();
    assert_eq!(refused.reason, Overload::InFlight);
    assert_eq!(refused.retry_after, Duration::from_secs(3));
    // Without the section: resil-core's defaults.
    let plain = Registry::new().inbound_guard();
    assert_eq!(plain.config(), InboundGuardConfig::default());
}

#[test]
fn a_reload_retunes_the_running_guard_in_place_and_keeps_its_counts() {
    let clock = ManualClock::new();
    let registry = registry("resil.inbound-guard.max-in-flight: 1\n", &clock);
    let guard = registry.inbound_guard();
    let held = guard.try_enter().unwrap();
    assert_eq!(guard.try_enter().unwrap_err().reason, Overload::InFlight);
    registry
        .reload(FileConfig::from_yaml_str("resil.inbound-guard.max-in-flight: 2\n").unwrap())
        .unwrap();
    // The same guard (a layer's clone sees it), its request still in flight.
    assert_eq!(guard.config().max_in_flight(), Some(2));
    assert_eq!(guard.metrics().in_flight, 1);
    let second = guard.try_enter().unwrap();
    assert_eq!(guard.try_enter().unwrap_err().reason, Overload::InFlight);
    assert_eq!(guard.metrics().refused_for(Overload::InFlight), 2);
    // Removing the section puts the defaults back: no in-flight limit.
    registry
        .reload(
            FileConfig::from_yaml_str("resilience4j.retry.instances.a.max-attempts: 2\n").unwrap(),
        )
        .unwrap();
    assert_eq!(guard.config(), InboundGuardConfig::default());
    let third = guard.try_enter().unwrap();
    // A new window shape cannot apply in place: the running guard keeps
    // its window and thresholds (the reload itself succeeds).
    registry
        .reload(
            FileConfig::from_yaml_str("resil.inbound-guard:\n  window: 2s\n  max-in-flight: 1\n")
                .unwrap(),
        )
        .unwrap();
    assert_eq!(guard.config(), InboundGuardConfig::default());
    drop((held, second, third));
    assert_eq!(guard.metrics().in_flight, 0);
}

#[test]
fn reconfigure_changes_thresholds_and_refuses_a_new_window_shape() {
    let clock = ManualClock::new();
    let guard = InboundGuard::with_clock(InboundGuardConfig::default(), clock.clone());
    let held = guard.try_enter().unwrap();
    let strict = InboundGuardConfig::builder()
        .max_in_flight(1)
        .build()
        .unwrap();
    assert!(guard.reconfigure(strict));
    assert_eq!(guard.try_enter().unwrap_err().reason, Overload::InFlight);
    let reshaped = InboundGuardConfig::builder()
        .window_buckets(5)
        .build()
        .unwrap();
    assert!(!guard.reconfigure(reshaped));
    assert_eq!(guard.config(), strict);
    // max-rps and max-average-rt switch the window rules on in place.
    let rps = InboundGuardConfig::builder().max_rps(2.0).build().unwrap();
    assert!(guard.reconfigure(rps));
    drop(held);
    // Two admitted in this second already: a third would be 3 per second.
    let _one = guard.try_enter().unwrap();
    assert_eq!(guard.try_enter().unwrap_err().reason, Overload::Rps);
    let rt = InboundGuardConfig::builder()
        .max_average_rt(ms(10))
        .build()
        .unwrap();
    assert!(guard.reconfigure(rt));
    let slow = guard.try_enter().unwrap();
    clock.advance(ms(50));
    drop(slow);
    assert_eq!(guard.try_enter().unwrap_err().reason, Overload::AverageRt);
}

#[test]
fn the_guard_s_counts_and_readings_are_in_the_exposition() {
    let clock = ManualClock::new();
    let registry = registry("resil.inbound-guard.max-in-flight: 10\n", &clock);
    // Before anything asks for the guard, nothing is published.
    assert!(!registry.prometheus_text().contains("resil_inbound_guard"));
    let guard = registry.inbound_guard();
    // Two rounds of 5 requests answered in 20 ms, 100 ms apart.
    for _ in 0..2 {
        let permits: Vec<_> = (0..5).map(|_| guard.try_enter().unwrap()).collect();
        clock.advance(ms(20));
        drop(permits);
        clock.advance(ms(80));
    }
    let held: Vec<_> = (0..10).map(|_| guard.try_enter().unwrap()).collect();
    assert!(guard.try_enter().is_err());
    guard.record_system(Some(45.0), Some(1.5));
    let text = registry.prometheus_text();
    let v = |series: &str| value(&text, series).unwrap_or_else(|| panic!("{series} in\n{text}"));
    assert_eq!(
        v("resil_inbound_guard_requests_total{kind=\"admitted\"}"),
        20.0
    );
    assert_eq!(
        v("resil_inbound_guard_requests_total{kind=\"in_flight\"}"),
        1.0
    );
    assert_eq!(v("resil_inbound_guard_requests_total{kind=\"cpu\"}"), 0.0);
    assert_eq!(v("resil_inbound_guard_in_flight"), 10.0);
    // Over the 1 s window: 20 admitted, 10 completed, 5 in the best 100 ms
    // bucket (50 per second), each in 20 ms: BBR's estimate is 50 × 0.02.
    assert_eq!(v("resil_inbound_guard_rps{kind=\"admitted\"}"), 20.0);
    assert_eq!(v("resil_inbound_guard_rps{kind=\"completed\"}"), 10.0);
    assert_eq!(v("resil_inbound_guard_rps{kind=\"max_completed\"}"), 50.0);
    assert_eq!(
        v("resil_inbound_guard_response_time_seconds{kind=\"min\"}"),
        0.02
    );
    assert_eq!(
        v("resil_inbound_guard_response_time_seconds{kind=\"average\"}"),
        0.02
    );
    assert_eq!(v("resil_inbound_guard_estimated_in_flight"), 1.0);
    assert_eq!(v("resil_inbound_guard_cpu_usage_ratio"), 0.45);
    assert_eq!(v("resil_inbound_guard_load"), 1.5);
    assert!(text.contains("# TYPE resil_inbound_guard_requests_total counter"));
    assert!(text.contains("# TYPE resil_inbound_guard_in_flight gauge"));
    drop(held);
}

#[test]
fn a_process_wide_guard_admits_refuses_and_releases_like_any_guard() {
    let clock = ManualClock::new();
    let config = InboundGuardConfig::builder()
        .max_in_flight(2)
        .build()
        .unwrap();
    let guard = InboundGuard::process_wide(config, clock.clone());
    let a = guard.clone().try_enter().unwrap();
    let b = guard.try_enter().unwrap();
    assert_eq!(guard.try_enter().unwrap_err().reason, Overload::InFlight);
    clock.advance(ms(30));
    drop(a);
    // A panicking request leaves the count too.
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _b = b;
        panic!("handler panicked");
    }));
    assert!(caught.is_err());
    let m = guard.metrics();
    assert_eq!((m.in_flight, m.admitted), (0, 2));
    assert_eq!(m.min_rt, Some(ms(30)));
}

#[test]
fn the_health_summary_says_when_the_guard_sheds_and_never_goes_down_for_it() {
    let clock = ManualClock::new();
    let registry = registry("resil.inbound-guard.max-in-flight: 1\n", &clock);
    // No guard yet: not a component.
    assert!(registry
        .health()
        .components
        .iter()
        .all(|c| c.kind != "inbound-guard"));
    let guard = registry.inbound_guard();
    let component = |r: &Registry| {
        r.health()
            .components
            .into_iter()
            .find(|c| c.kind == "inbound-guard")
            .unwrap()
    };
    assert_eq!(component(&registry).status, Status::Up);
    let held = guard.try_enter().unwrap();
    let shedding = component(&registry);
    assert_eq!(shedding.status, Status::Degraded);
    assert_eq!(shedding.state, Some("SHEDDING"));
    assert_eq!(
        shedding.reason.as_deref(),
        Some("refusing inbound requests (in_flight), answered 503 with Retry-After")
    );
    assert_eq!(registry.health().status, Status::Degraded);
    // Asking counted nothing.
    assert_eq!(guard.metrics().refused_for(Overload::InFlight), 0);
    drop(held);
    assert_eq!(component(&registry).status, Status::Up);
}
