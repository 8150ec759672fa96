//! The adaptive client-side throttler (Google SRE book): its rejection
//! probability against the formula, with an injected random source; the
//! window sliding on the manual clock; what counts as accepted; and that a
//! cancelled or panicking call holds nothing back.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use resil::clock::ManualClock;
use resil::throttler::{Throttler, ThrottlerConfig, ThrottlerEventKind};
use resil::{Error, ErrorKind};

/// `max(0, (requests − K·accepts) / (requests + 1))`, the SRE book's formula.
fn formula(requests: u64, accepts: u64, k: f64) -> f64 {
    ((requests as f64 - k * accepts as f64) / (requests as f64 + 1.0)).max(0.0)
}

/// A random source that always draws `value` (stored as f64 bits).
fn fixed(value: f64) -> (Arc<AtomicU64>, impl Fn() -> f64 + Send + Sync + 'static) {
    let cell = Arc::new(AtomicU64::new(value.to_bits()));
    let read = Arc::clone(&cell);
    (cell, move || f64::from_bits(read.load(Ordering::Relaxed)))
}

fn accept(t: &Throttler) -> Result<u32, Error<&'static str>> {
    t.call(|| Ok::<_, &str>(1))
}

fn refuse(t: &Throttler) -> Result<u32, Error<&'static str>> {
    t.call(|| Err::<u32, _>("503"))
}

#[test]
fn a_healthy_downstream_is_never_throttled() {
    let clock = ManualClock::new();
    // A draw of 0 rejects whenever the probability is above 0.
    let (_, zero) = fixed(0.0);
    let t = Throttler::with_random_source("search", ThrottlerConfig::default(), clock, zero);
    for _ in 0..1_000 {
        assert_eq!(accept(&t), Ok(1));
    }
    let m = t.metrics();
    assert_eq!((m.requests(), m.accepts()), (1_000, 1_000));
    assert_eq!(m.rejection_probability(), 0.0);
}

#[test]
fn the_rejection_probability_follows_the_formula_and_the_draw_decides() {
    let clock = ManualClock::new();
    let (draw, source) = fixed(0.999);
    let t = Throttler::with_random_source("search", ThrottlerConfig::default(), clock, source);
    // 10 accepted, then refusals: with K = 2, nothing is rejected until
    // requests exceed 2 × accepts = 20.
    for _ in 0..10 {
        accept(&t).unwrap();
    }
    for i in 0..30u64 {
        let requests = 10 + i;
        let expected = formula(requests, 10, 2.0);
        let p = t.metrics().rejection_probability();
        assert!(
            (p - expected).abs() < 1e-12,
            "{requests} requests: {p} vs {expected}"
        );
        if requests <= 20 {
            assert_eq!(p, 0.0);
        }
        // A draw of 0.999 is above every p here: the call goes through and
        // the downstream refuses it.
        assert!(matches!(refuse(&t), Err(Error::Call("503"))));
    }
    // p = (40 − 20) / 41 ≈ 0.488. A draw just below it rejects locally, a
    // draw at it does not.
    let p = formula(40, 10, 2.0);
    assert!((t.metrics().rejection_probability() - p).abs() < 1e-12);
    draw.store((p - 1e-9).to_bits(), Ordering::Relaxed);
    let rejected = accept(&t).unwrap_err();
    // Its own kind, not a rate limiter's: a fallback or an HTTP layer can
    // tell an overloaded downstream from a spent quota.
    assert_eq!(rejected.kind(), ErrorKind::Throttled);
    assert_eq!(rejected.name(), Some("search"));
    match &rejected {
        // p ≈ 0.488: the refusal carries it to the nearest percent.
        Error::Throttled(refusal) => assert_eq!(refusal.probability(), 0.49),
        other => panic!("expected Throttled, got {other:?}"),
    }
    // The local rejection counts as a request.
    let m = t.metrics();
    assert_eq!(
        (m.requests(), m.accepts(), m.not_permitted_calls()),
        (41, 10, 1)
    );
    draw.store(formula(41, 10, 2.0).to_bits(), Ordering::Relaxed);
    assert_eq!(accept(&t), Ok(1), "a draw equal to p is not below it");
}

#[test]
fn k_and_the_cap_shape_the_probability() {
    let clock = ManualClock::new();
    let (_, never) = fixed(0.999_999);
    let config = ThrottlerConfig::builder()
        .accepts_multiplier(1.5)
        .max_rejection_probability(0.5)
        .build()
        .unwrap();
    let t = Throttler::with_random_source("search", config, clock, never);
    for _ in 0..4 {
        accept(&t).unwrap();
    }
    for _ in 0..3 {
        let _ = refuse(&t);
    }
    // (7 − 1.5·4) / 8 = 0.125
    assert!((t.metrics().rejection_probability() - 0.125).abs() < 1e-12);
    for _ in 0..100 {
        let _ = refuse(&t);
    }
    assert_eq!(t.metrics().rejection_probability(), 0.5, "capped");
}

#[test]
fn the_window_slides_on_the_clock_and_old_refusals_are_forgotten() {
    let clock = ManualClock::new();
    let config = ThrottlerConfig::builder()
        .sliding_window_duration(Duration::from_secs(10))
        .build()
        .unwrap();
    let (_, never) = fixed(0.999_999);
    let t = Throttler::with_random_source("search", config, clock.clone(), never);
    for _ in 0..20 {
        let _ = refuse(&t);
    }
    assert!((t.metrics().rejection_probability() - formula(20, 0, 2.0)).abs() < 1e-12);
    clock.advance(Duration::from_secs(5));
    for _ in 0..5 {
        accept(&t).unwrap();
    }
    let m = t.metrics();
    assert_eq!((m.requests(), m.accepts()), (25, 5));
    // Second 0 leaves the window at second 10: only the accepts remain.
    clock.advance(Duration::from_secs(4));
    assert_eq!(t.metrics().requests(), 25);
    clock.advance(Duration::from_secs(1));
    let m = t.metrics();
    assert_eq!((m.requests(), m.accepts()), (5, 5));
    assert_eq!(m.rejection_probability(), 0.0);
    // And after a long silence the window is empty.
    clock.advance(Duration::from_secs(3_600));
    assert_eq!(t.metrics().requests(), 0);
}

#[test]
fn classification_decides_what_was_accepted() {
    #[derive(Debug)]
    enum Api {
        NotFound,
        Unavailable,
    }
    let config = ThrottlerConfig::builder()
        .accept_error(|e: &Api| matches!(e, Api::NotFound))
        .refuse_result(|status: &u16| matches!(status, 429 | 503))
        .build()
        .unwrap();
    let t = Throttler::with_clock("api", config, ManualClock::new());
    let _ = t.call(|| Err::<u16, _>(Api::NotFound));
    let _ = t.call(|| Err::<u16, _>(Api::Unavailable));
    let _ = t.call(|| Ok::<u16, Api>(200));
    let _ = t.call(|| Ok::<u16, Api>(429));
    let _ = t.call(|| Ok::<u16, Api>(503));
    let m = t.metrics();
    assert_eq!((m.requests(), m.accepts()), (5, 2));
}

#[test]
fn events_report_each_outcome_and_each_local_rejection() {
    let (_, zero) = fixed(0.0);
    let t = Throttler::with_random_source(
        "search",
        ThrottlerConfig::default(),
        ManualClock::new(),
        zero,
    );
    let mut events = t.subscribe();
    accept(&t).unwrap();
    let _ = refuse(&t);
    let _ = refuse(&t);
    let _ = refuse(&t); // p = (3 − 2) / 4 > 0: rejected by the draw of 0
    let kinds: Vec<_> = events.drain().iter().map(|e| e.kind()).collect();
    assert_eq!(
        kinds,
        [
            ThrottlerEventKind::Accepted,
            ThrottlerEventKind::Refused,
            ThrottlerEventKind::Refused,
            ThrottlerEventKind::NotPermitted { probability: 0.25 },
        ]
    );
}

#[test]
fn a_panicking_call_or_predicate_records_nothing() {
    let config = ThrottlerConfig::builder()
        .refuse_result(|_: &u8| panic!("predicate"))
        .build()
        .unwrap();
    let t = Throttler::with_clock("search", config, ManualClock::new());
    let r = catch_unwind(AssertUnwindSafe(|| {
        t.call(|| -> Result<u32, &str> { panic!("call") })
    }));
    assert!(r.is_err());
    let r = catch_unwind(AssertUnwindSafe(|| t.call(|| Ok::<u8, &str>(1))));
    assert!(r.is_err());
    assert_eq!(t.metrics().requests(), 0);
    assert_eq!(accept(&t), Ok(1));
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_call_counts_nothing() {
    let t = Throttler::with_clock("search", ThrottlerConfig::default(), ManualClock::new());
    let slow = t.call_async(async {
        tokio::time::sleep(Duration::from_secs(10)).await;
        Ok::<_, &str>(1)
    });
    let out = tokio::time::timeout(Duration::from_secs(1), slow).await;
    assert!(out.is_err());
    assert_eq!(t.metrics().requests(), 0);
    assert_eq!(t.call_async(async { Ok::<_, &str>(2) }).await, Ok(2));
    assert_eq!(t.metrics().accepts(), 1);
}

proptest! {
    /// Whatever the traffic, the probability the throttler reports is the
    /// formula over the counts it reports, and a draw decides exactly by it.
    #[test]
    fn the_probability_is_the_formula_over_the_window(
        outcomes in proptest::collection::vec((any::<bool>(), 0.0f64..1.0), 0..200),
        k in 1.0f64..4.0,
    ) {
        let clock = ManualClock::new();
        let (draw, source) = fixed(0.5);
        let config = ThrottlerConfig::builder().accepts_multiplier(k).build().unwrap();
        let t = Throttler::with_random_source("p", config, clock, source);
        let (mut requests, mut accepts) = (0u64, 0u64);
        for (ok, d) in outcomes {
            let p = formula(requests, accepts, k);
            let m = t.metrics();
            prop_assert_eq!((m.requests(), m.accepts()), (requests, accepts));
            prop_assert!((m.rejection_probability() - p).abs() < 1e-9);
            draw.store(d.to_bits(), Ordering::Relaxed);
            let out = if ok { accept(&t) } else { refuse(&t) };
            requests += 1;
            if d < p {
                match out {
                    Err(Error::Throttled(refusal)) => {
                        prop_assert_eq!(refusal.probability(), (p * 100.0).round() / 100.0);
                    }
                    other => prop_assert!(false, "expected Throttled, got {:?}", other),
                }
            } else if ok {
                prop_assert_eq!(out, Ok(1));
                accepts += 1;
            } else {
                prop_assert!(matches!(out, Err(Error::Call(_))));
            }
        }
    }
}
