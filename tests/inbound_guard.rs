//! The server-wide inbound guard on the manual clock, with the CPU and load
//! readings injected: Sentinel's BBR check under CPU or load pressure, the
//! plain thresholds, refusals counted by reason, and no leaked in-flight
//! count whatever happens to a request.

use std::future::Future;
use std::time::Duration;

use resil::clock::ManualClock;
use resil::inbound::{InboundGuard, InboundGuardConfig, Overload};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// `rounds` rounds of `per_round` requests, each answered in `rt`.
fn warm(guard: &InboundGuard, clock: &ManualClock, rounds: u32, per_round: u32, rt: Duration) {
    for _ in 0..rounds {
        let permits: Vec<_> = (0..per_round).map(|_| guard.try_enter().unwrap()).collect();
        clock.advance(rt);
        drop(permits);
    }
}

#[test]
fn under_cpu_pressure_bbr_admits_what_the_service_completes_in_its_fastest_time() {
    let clock = ManualClock::new();
    let guard = InboundGuard::with_clock(InboundGuardConfig::default(), clock.clone());
    // 20 completions per 100 ms bucket (200 RPS at best), each in 50 ms:
    // BBR's estimate is 200 × 0.05 = 10 in flight.
    for _ in 0..5 {
        let permits: Vec<_> = (0..20).map(|_| guard.try_enter().unwrap()).collect();
        clock.advance(ms(50));
        drop(permits);
        clock.advance(ms(50));
    }
    let m = guard.metrics();
    assert_eq!(m.max_completed_rps, 200.0);
    assert_eq!(m.min_rt, Some(ms(50)));
    // CPU at 70 %: under its threshold, nothing is refused.
    guard.record_system(Some(70.0), None);
    let many: Vec<_> = (0..30).map(|_| guard.try_enter().unwrap()).collect();
    // CPU at 90 %: 30 in flight is more than 10, refused as overload.
    guard.record_system(Some(90.0), None);
    let refused = guard.try_enter().unwrap_err();
    assert_eq!(refused.reason, Overload::Cpu);
    assert_eq!(refused.kind(), "overloaded");
    assert_eq!(refused.retry_after, Duration::from_secs(1));
    assert_eq!(refused.to_string(), "service overloaded (cpu); retry later");
    // They complete in 50 ms: 30 in one bucket, so the estimate is now
    // 300 × 0.05 = 15. Sentinel's check refuses once *more* than that are
    // in flight: the 16th gets in, the 17th does not.
    clock.advance(ms(50));
    drop(many);
    let mut held: Vec<_> = (0..16).map(|_| guard.try_enter().unwrap()).collect();
    assert_eq!(guard.try_enter().unwrap_err().reason, Overload::Cpu);
    // One finishes (in 50 ms too): one more gets in.
    clock.advance(ms(50));
    drop(held.pop());
    let _again = guard.try_enter().unwrap();
    let m = guard.metrics();
    assert_eq!(m.refused_for(Overload::Cpu), 2);
    assert_eq!(m.in_flight, 16);
}

#[test]
fn load_over_its_threshold_runs_the_same_check_and_unset_thresholds_never_refuse() {
    let clock = ManualClock::new();
    let config = InboundGuardConfig::builder()
        .no_cpu_usage_threshold()
        .load_threshold(4.0)
        .build()
        .unwrap();
    let guard = InboundGuard::with_clock(config, clock.clone());
    warm(&guard, &clock, 3, 10, ms(100));
    // Load 6 > 4: BBR (100 RPS × 0.1 s = 10) applies.
    guard.record_system(None, Some(6.0));
    let mut held: Vec<_> = (0..11).map(|_| guard.try_enter().unwrap()).collect();
    assert_eq!(guard.try_enter().unwrap_err().reason, Overload::Load);
    // Load back to 2, CPU at 100 %: without a CPU threshold nothing refuses.
    guard.record_system(Some(100.0), Some(2.0));
    held.extend((0..40).map(|_| guard.try_enter().unwrap()));
    assert_eq!(guard.metrics().refused_for(Overload::Load), 1);
    assert_eq!(guard.metrics().refused_for(Overload::Cpu), 0);
}

#[test]
fn before_any_completion_or_reading_the_bbr_check_admits() {
    let clock = ManualClock::new();
    let guard = InboundGuard::with_clock(InboundGuardConfig::default(), clock.clone());
    let held: Vec<_> = (0..100).map(|_| guard.try_enter().unwrap()).collect();
    guard.record_system(Some(99.0), None);
    // Nothing completed in the window yet: no estimate, no refusal.
    let more: Vec<_> = (0..10).map(|_| guard.try_enter().unwrap()).collect();
    drop((held, more));
}

#[test]
fn plain_thresholds_refuse_in_flight_rps_and_average_rt() {
    let clock = ManualClock::new();
    let guard = InboundGuard::with_clock(
        InboundGuardConfig::builder()
            .max_in_flight(3)
            .build()
            .unwrap(),
        clock.clone(),
    );
    let held: Vec<_> = (0..3).map(|_| guard.try_enter().unwrap()).collect();
    assert_eq!(guard.try_enter().unwrap_err().reason, Overload::InFlight);
    drop(held);
    assert!(guard.try_enter().is_ok());

    let guard = InboundGuard::with_clock(
        InboundGuardConfig::builder().max_rps(50.0).build().unwrap(),
        clock.clone(),
    );
    // 50 per second over a 1 s window: the 51st within the window is refused.
    for _ in 0..50 {
        drop(guard.try_enter().unwrap());
    }
    assert_eq!(guard.try_enter().unwrap_err().reason, Overload::Rps);
    // The window slides: a second later they are admitted again.
    clock.advance(Duration::from_secs(1));
    assert!(guard.try_enter().is_ok());

    let guard = InboundGuard::with_clock(
        InboundGuardConfig::builder()
            .max_average_rt(ms(200))
            .build()
            .unwrap(),
        clock.clone(),
    );
    warm(&guard, &clock, 1, 4, ms(300));
    assert_eq!(guard.try_enter().unwrap_err().reason, Overload::AverageRt);
    clock.advance(Duration::from_secs(1));
    assert!(guard.try_enter().is_ok());
    let m = guard.metrics();
    assert_eq!(m.refused_for(Overload::AverageRt), 1);
}

#[test]
fn a_panicking_or_cancelled_request_leaves_the_in_flight_count() {
    let clock = ManualClock::new();
    let guard = InboundGuard::with_clock(
        InboundGuardConfig::builder()
            .max_in_flight(1)
            .build()
            .unwrap(),
        clock.clone(),
    );
    let g = guard.clone();
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(move || {
        let _permit = g.try_enter().unwrap();
        panic!("handler panicked");
    }));
    assert!(panicked.is_err());
    assert_eq!(guard.metrics().in_flight, 0);
    let fut = async {
        let _permit = guard.try_enter().unwrap();
        std::future::pending::<()>().await;
    };
    let mut fut = Box::pin(fut);
    let waker = futures::task::noop_waker();
    let _ = fut
        .as_mut()
        .poll(&mut std::task::Context::from_waker(&waker));
    assert_eq!(guard.metrics().in_flight, 1);
    drop(fut);
    assert_eq!(guard.metrics().in_flight, 0);
    assert!(guard.try_enter().is_ok());
}

#[test]
fn concurrent_requests_never_exceed_max_in_flight() {
    let guard = InboundGuard::new(
        InboundGuardConfig::builder()
            .max_in_flight(8)
            .build()
            .unwrap(),
    );
    let peak = std::sync::atomic::AtomicU32::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..20_000 {
                    if let Ok(p) = guard.try_enter() {
                        peak.fetch_max(
                            guard.metrics().in_flight,
                            std::sync::atomic::Ordering::Relaxed,
                        );
                        drop(p);
                    }
                }
            });
        }
    });
    // 8 admitted at most, plus the instant refused callers undo their add.
    assert!(peak.into_inner() <= 8 + 4);
    let m = guard.metrics();
    assert_eq!(m.in_flight, 0);
    assert_eq!(m.admitted + m.refused_for(Overload::InFlight), 80_000);
}

#[test]
fn bad_thresholds_are_named_with_their_range() {
    let b = InboundGuardConfig::builder;
    for (err, field) in [
        (b().max_in_flight(0).build(), "max_in_flight"),
        (b().max_rps(0.0).build(), "max_rps"),
        (b().max_average_rt(Duration::ZERO).build(), "max_average_rt"),
        (b().load_threshold(f64::NAN).build(), "load_threshold"),
        (b().window(ms(1)).build(), "window"),
        (
            b().window(ms(50)).window_buckets(100).build(),
            "window_buckets",
        ),
        (
            b().retry_after(Duration::from_secs(7200)).build(),
            "retry_after",
        ),
    ] {
        assert_eq!(err.unwrap_err().field(), field);
    }
}

#[cfg(feature = "yaml")]
#[test]
fn the_guard_s_section_in_a_file_is_checked_with_key_paths() {
    use resil::config::FileConfig;
    let file = FileConfig::from_yaml_str(
        "
resil:
  inbound-guard:
    cpu-usage-threshold: 70
    load-threshold: 6.5
    max-in-flight: 300
    max-rps: 1200
    max-average-rt: 400ms
    window: 2s
    window-buckets: 20
    retry-after: 3s
",
    )
    .unwrap();
    let c = *file.inbound_guard().unwrap();
    assert_eq!(c.cpu_usage_threshold(), Some(70.0));
    assert_eq!(c.load_threshold(), Some(6.5));
    assert_eq!(c.max_in_flight(), Some(300));
    assert_eq!(c.max_rps(), Some(1200.0));
    assert_eq!(c.max_average_rt(), Some(ms(400)));
    assert_eq!(
        (c.window(), c.window_buckets()),
        (Duration::from_secs(2), 20)
    );
    assert_eq!(c.retry_after(), Duration::from_secs(3));
    assert!(FileConfig::from_yaml_str("resilience4j: {}\n")
        .unwrap()
        .inbound_guard()
        .is_none());

    let err = |text: &str| FileConfig::from_yaml_str(text).unwrap_err().to_string();
    let e = err("resil.inbound-guard.cpu-usage-treshold: 70\n");
    assert!(
        e.contains("unknown key `resil.inbound-guard.cpu-usage-treshold`; did you mean `cpu-usage-threshold`?"),
        "{e}"
    );
    let e = err("resil.inbound-guard.cpu-usage-threshold: 170\n");
    assert!(
        e.contains("invalid `resil.inbound-guard.cpu-usage-threshold`: got 170, expected a percentage in (0, 100]"),
        "{e}"
    );
    let e = err("resil.inbound-guard.window: fast\n");
    assert!(
        e.contains("invalid `resil.inbound-guard.window`: got \"fast\""),
        "{e}"
    );
    let e = err("resil.inbound-gard.max-rps: 5\n");
    assert!(e.contains("did you mean `inbound-guard`?"), "{e}");
}
