//! Fault injection through the facade: off by default and free when off;
//! switched on and off by management with a TTL and a reason; latency, errors
//! and results injected at their rates (reproducibly with a seed); and seen by
//! the primitives around it exactly as real faults. Manual clock and paused
//! tokio time: nothing sleeps for real.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use resil::chaos::{Chaos, ChaosConfig, ChaosEventKind};
use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
use resil::clock::{ManualClock, TokioClock};
use resil::time_limiter::{TimeLimiter, TimeLimiterConfig};
use resil::{Error, ErrorKind};
use tokio::time::{sleep, Instant};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

fn failing(clock: &ManualClock, rate: f64) -> Chaos {
    Chaos::with_clock(
        "inventory-query",
        ChaosConfig::builder()
            .inject_error(rate, || "injected: 503")
            .seed(42)
            .build()
            .unwrap(),
        clock.clone(),
    )
}

#[test]
fn a_drill_is_off_until_management_switches_it_on() {
    let clock = ManualClock::new();
    let chaos = failing(&clock, 1.0);
    let ran = AtomicU64::new(0);
    for _ in 0..100 {
        let out = chaos.call(|| {
            ran.fetch_add(1, Ordering::Relaxed);
            Ok::<_, &str>(1)
        });
        assert_eq!(out, Ok(1));
    }
    assert_eq!(ran.load(Ordering::Relaxed), 100);
    assert_eq!(
        chaos.metrics().calls_while_enabled(),
        0,
        "the off path counts nothing"
    );
    let status = chaos.status();
    assert!(!status.enabled());
    assert_eq!(status.reason(), None);
}

#[test]
fn while_enabled_an_injected_error_replaces_the_call_and_disabling_restores_it() {
    let clock = ManualClock::new();
    let chaos = failing(&clock, 1.0);
    let mut events = chaos.subscribe();
    chaos.enable("drill 2: inventory fails");
    let ran = AtomicU64::new(0);
    let out = chaos.call(|| {
        ran.fetch_add(1, Ordering::Relaxed);
        Ok::<_, &str>(1)
    });
    assert_eq!(out, Err(Error::Call("injected: 503")));
    assert_eq!(
        ran.load(Ordering::Relaxed),
        0,
        "the downstream was not called"
    );
    let status = chaos.status();
    assert!(status.enabled());
    assert_eq!(status.reason(), Some("drill 2: inventory fails"));
    assert_eq!(status.expires_in(), None, "no TTL");

    chaos.disable("drill 2 over");
    assert_eq!(chaos.call(|| Ok::<_, &str>(1)), Ok(1));
    assert_eq!(chaos.status().reason(), Some("drill 2 over"));
    let kinds: Vec<_> = events.drain().into_iter().map(|e| e.kind()).collect();
    assert_eq!(
        kinds,
        [
            ChaosEventKind::Enabled { ttl: None },
            ChaosEventKind::ErrorInjected,
            ChaosEventKind::Disabled
        ]
    );
}

#[test]
fn a_ttl_switches_the_drill_off_by_itself() {
    let clock = ManualClock::new();
    let chaos = failing(&clock, 1.0);
    let mut events = chaos.subscribe();
    chaos.enable_for(Duration::from_secs(600), "drill 2, ten minutes");
    clock.advance(Duration::from_secs(200));
    assert_eq!(chaos.status().expires_in(), Some(Duration::from_secs(400)));
    assert!(chaos.call(|| Ok::<_, &str>(1)).is_err());
    clock.advance(Duration::from_secs(400));
    assert_eq!(
        chaos.call(|| Ok::<_, &str>(1)),
        Ok(1),
        "expired exactly at the TTL"
    );
    assert!(!chaos.status().enabled());
    let last = events.drain().pop().unwrap();
    assert_eq!(last.kind(), ChaosEventKind::Expired);
    // Switching on again replaces the TTL.
    chaos.enable_for(Duration::from_secs(1), "again");
    assert!(chaos.status().enabled());
}

#[test]
fn faults_are_injected_at_their_rate_and_a_seed_makes_a_drill_reproducible() {
    let clock = ManualClock::new();
    let run = || {
        let chaos = failing(&clock, 0.3);
        chaos.enable("rate");
        (0..10_000)
            .map(|_| chaos.call(|| Ok::<_, &str>(())).is_err())
            .collect::<Vec<_>>()
    };
    let first = run();
    let injected = first.iter().filter(|&&e| e).count();
    assert!(
        (2800..=3200).contains(&injected),
        "{injected} of 10000 at a rate of 0.3"
    );
    assert_eq!(first, run(), "the same seed injects into the same calls");
}

#[test]
fn calls_of_types_without_a_factory_are_never_failed_but_can_be_answered() {
    let clock = ManualClock::new();
    let chaos = Chaos::with_clock(
        "inventory-query",
        ChaosConfig::builder()
            .inject_error(1.0, || 503u16)
            .inject_result(1.0, || vec!["cached-sku".to_string()])
            .build()
            .unwrap(),
        clock,
    );
    chaos.enable("types");
    assert_eq!(
        chaos.call(|| Ok::<_, &str>(5)),
        Ok(5),
        "no factory for &str errors"
    );
    assert_eq!(chaos.call(|| Ok::<u8, u16>(5)), Err(Error::Call(503)));
    assert_eq!(
        chaos.call(|| Ok::<Vec<String>, &str>(vec![])),
        Ok(vec!["cached-sku".to_string()]),
        "an injected value"
    );
    let m = chaos.metrics();
    assert_eq!(
        (
            m.calls_while_enabled(),
            m.errors_injected(),
            m.results_injected()
        ),
        (3, 1, 1)
    );
}

#[tokio::test(start_paused = true)]
async fn injected_latency_delays_the_call_on_the_clock_and_then_runs_it() {
    let chaos = Chaos::with_clock(
        "inventory-query",
        ChaosConfig::builder()
            .inject_latency(1.0, ms(800))
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let start = Instant::now();
    assert_eq!(chaos.call_async(async { Ok::<_, ()>(1) }).await, Ok(1));
    assert_eq!(start.elapsed(), Duration::ZERO, "off: no delay");
    chaos.enable("drill 3: slow downstream");
    let out = chaos
        .call_async(async {
            sleep(ms(10)).await;
            Ok::<_, ()>(2)
        })
        .await;
    assert_eq!(out, Ok(2));
    assert_eq!(start.elapsed(), ms(810));
    assert_eq!(chaos.metrics().latencies_injected(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_time_limiter_around_chaos_times_out_an_injected_latency() {
    let chaos = Chaos::with_clock(
        "inventory-query",
        ChaosConfig::builder()
            .inject_latency(1.0, Duration::from_secs(5))
            .enabled(true)
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let limiter = TimeLimiter::new(
        "inventory-query",
        TimeLimiterConfig::builder()
            .timeout_duration(ms(800))
            .build()
            .unwrap(),
    );
    let start = Instant::now();
    let out = limiter
        .call_async_nested(chaos.call_async(async { Ok::<_, ()>(1) }))
        .await;
    assert_eq!(out.unwrap_err().kind(), ErrorKind::Timeout);
    assert_eq!(start.elapsed(), ms(800));
}

#[test]
fn a_breaker_around_chaos_counts_injected_errors_and_opens() {
    let clock = ManualClock::new();
    let chaos = failing(&clock, 1.0);
    let breaker = CircuitBreaker::new(
        "inventory-query",
        CircuitBreakerConfig::builder()
            .sliding_window_size(10)
            .minimum_number_of_calls(10)
            .build()
            .unwrap(),
    );
    chaos.enable_for(Duration::from_secs(60), "drill 1: the breaker opens");
    for _ in 0..10 {
        let _ = breaker.call_nested(|| chaos.call(|| Ok::<_, &str>(())));
    }
    assert_eq!(breaker.state(), State::Open);
    assert_eq!(breaker.metrics().failed_calls(), 10);
    assert_eq!(chaos.metrics().errors_injected(), 10);
}

#[test]
fn a_panicking_factory_unwinds_the_call_and_the_instance_keeps_working() {
    let clock = ManualClock::new();
    let chaos = Chaos::with_clock(
        "inventory-query",
        ChaosConfig::builder()
            .inject_error(1.0, || -> u16 { panic!("the factory panics") })
            .build()
            .unwrap(),
        clock,
    );
    chaos.enable("panics");
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        chaos.call(|| Ok::<u8, u16>(1))
    }));
    assert!(out.is_err());
    chaos.disable("done");
    assert_eq!(chaos.call(|| Ok::<u8, u16>(1)), Ok(1));
}

#[test]
fn under_many_threads_every_call_is_either_injected_or_run() {
    let clock = ManualClock::new();
    let chaos = failing(&clock, 0.25);
    chaos.enable("stress");
    let ran = AtomicU64::new(0);
    let failed = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..4 {
            s.spawn(|| {
                for _ in 0..5000 {
                    let out = chaos.call(|| {
                        ran.fetch_add(1, Ordering::Relaxed);
                        Ok::<_, &str>(())
                    });
                    if out.is_err() {
                        failed.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    let m = chaos.metrics();
    assert_eq!(m.calls_while_enabled(), 20_000);
    assert_eq!(m.errors_injected(), failed.load(Ordering::Relaxed));
    assert_eq!(ran.load(Ordering::Relaxed) + m.errors_injected(), 20_000);
}
