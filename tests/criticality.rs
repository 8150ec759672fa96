//! Criticality: the adaptive bulkhead and the rate limiter admit by class —
//! `SHEDDABLE` refused first, `CRITICAL_PLUS` last — with thresholds,
//! guaranteed shares and borrowing of idle share; refusals are counted per
//! class; the class comes from the task's context. All on the manual clock.

use std::time::Duration;

use futures::FutureExt;
use resil::bulkhead::{AdaptiveBulkhead, AdaptiveBulkheadConfig};
use resil::clock::ManualClock;
use resil::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil::{Criticality, Error};

use Criticality::{Critical, CriticalPlus, Sheddable, SheddablePlus};

fn bulkhead(limit: u32) -> AdaptiveBulkhead {
    bulkhead_with(AdaptiveBulkheadConfig::builder().initial_limit(limit))
}

fn bulkhead_with(b: resil::bulkhead::AdaptiveBulkheadConfigBuilder) -> AdaptiveBulkhead {
    AdaptiveBulkhead::with_clock("checkout", b.build().unwrap(), ManualClock::new())
}

#[test]
fn as_utilisation_rises_sheddable_is_refused_first_and_critical_plus_last() {
    let b = bulkhead(20);
    let mut held = Vec::new();
    // Sheddable: up to half the limit (10 of 20).
    while let Ok(p) = b.try_acquire_permission_as(Sheddable) {
        held.push(p);
    }
    assert_eq!(held.len(), 10);
    // SheddablePlus: up to 75 % (15).
    while let Ok(p) = b.try_acquire_permission_as(SheddablePlus) {
        held.push(p);
    }
    assert_eq!(held.len(), 15);
    // Sheddable is still refused, SheddablePlus too; Critical fills the limit.
    assert!(b.try_acquire_permission_as(Sheddable).is_err());
    while let Ok(p) = b.try_acquire_permission_as(Critical) {
        held.push(p);
    }
    assert_eq!(held.len(), 20);
    // CriticalPlus still has its guaranteed 10 % (2 slots) past the limit.
    while let Ok(p) = b.try_acquire_permission_as(CriticalPlus) {
        held.push(p);
    }
    assert_eq!(held.len(), 22);
    let m = b.metrics();
    assert_eq!(
        Criticality::ALL.map(|c| m.rejected_calls_of(c)),
        [2, 1, 1, 1]
    );
    assert_eq!(m.rejected_calls(), 5);
    drop(held);
    assert_eq!(b.metrics().concurrent_calls(), 0);
}

#[test]
fn an_idle_guaranteed_share_is_borrowed_and_the_guarantee_holds_when_the_limit_is_full() {
    // Sheddable is guaranteed 20 % (2 of 10) and may borrow up to 50 %.
    let b = bulkhead_with(
        AdaptiveBulkheadConfig::builder()
            .initial_limit(10)
            .sheddable_guaranteed_share(20.0)
            .critical_plus_guaranteed_share(0.0),
    );
    // Critical fills the whole limit, borrowing Sheddable's idle share.
    let critical: Vec<_> = (0..10)
        .map(|_| b.try_acquire_permission_as(Critical).unwrap())
        .collect();
    assert!(b.try_acquire_permission_as(Critical).is_err());
    // Sheddable still gets its guaranteed 2, past the limit, and no more.
    let s1 = b.try_acquire_permission_as(Sheddable).unwrap();
    let s2 = b.try_acquire_permission_as(Sheddable).unwrap();
    assert!(b.try_acquire_permission_as(Sheddable).is_err());
    assert_eq!(b.metrics().concurrent_calls(), 12);
    // One guaranteed slot back: exactly one more Sheddable call gets in.
    drop(s1);
    let s3 = b.try_acquire_permission_as(Sheddable).unwrap();
    assert!(b.try_acquire_permission_as(Sheddable).is_err());
    drop((critical, s2, s3));
    assert_eq!(b.metrics().concurrent_calls(), 0);
    // With the bulkhead idle again, Sheddable borrows up to its threshold (5).
    let borrowed: Vec<_> = std::iter::from_fn(|| b.try_acquire_permission_as(Sheddable).ok())
        .take(20)
        .collect();
    assert_eq!(borrowed.len(), 5);
}

#[test]
fn calls_take_the_class_of_their_task_and_release_it_on_panic_and_cancel() {
    let b = bulkhead_with(
        AdaptiveBulkheadConfig::builder()
            .initial_limit(4)
            .sheddable_guaranteed_share(25.0),
    );
    let held: Vec<_> = (0..2)
        .map(|_| b.try_acquire_permission_as(Critical).unwrap())
        .collect();
    // Half of 4 busy: a Sheddable call is admitted only by its guarantee (1).
    let ok = Sheddable.sync_scope(|| b.call(|| Ok::<_, ()>(Criticality::current())));
    assert_eq!(ok, Ok(Sheddable));
    // A panicking call gives its slot and its class count back.
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Sheddable.sync_scope(|| b.call(|| -> Result<(), ()> { panic!("user code") }))
    }));
    assert!(panicked.is_err());
    // A cancelled async call too.
    let mut fut =
        Box::pin(Sheddable.scope(b.call_async(futures::future::pending::<Result<(), ()>>())));
    assert!(fut.as_mut().now_or_never().is_none());
    assert_eq!(b.metrics().concurrent_calls(), 3);
    // The guarantee is in use: another Sheddable call is refused.
    let refused = Sheddable.sync_scope(|| b.call(|| Ok::<_, ()>(())));
    assert!(matches!(refused, Err(Error::BulkheadFull(_))));
    drop(fut);
    assert_eq!(b.metrics().concurrent_calls(), 2);
    let again = Sheddable.sync_scope(|| b.call(|| Ok::<_, ()>(())));
    assert_eq!(again, Ok(()));
    assert_eq!(b.metrics().rejected_calls_of(Sheddable), 1);
    drop(held);
}

#[test]
fn without_a_class_every_call_is_critical_and_sees_the_plain_limit() {
    let b = bulkhead(8);
    let held: Vec<_> = (0..8)
        .map(|_| b.try_acquire_permission().unwrap())
        .collect();
    assert!(b.try_acquire_permission().is_err());
    assert!(held.iter().all(|p| p.criticality() == Critical));
    assert_eq!(b.metrics().rejected_calls_of(Critical), 1);
}

#[test]
fn thresholds_scale_with_the_limit_and_round_up() {
    // A limit of 3: Sheddable gets ceil(1.5) = 2, SheddablePlus ceil(2.25) = 3.
    let b = bulkhead(3);
    let a = b.try_acquire_permission_as(Sheddable).unwrap();
    let c = b.try_acquire_permission_as(Sheddable).unwrap();
    assert!(b.try_acquire_permission_as(Sheddable).is_err());
    let d = b.try_acquire_permission_as(SheddablePlus).unwrap();
    assert!(b.try_acquire_permission_as(SheddablePlus).is_err());
    drop((a, c, d));
}

#[test]
fn concurrent_classes_never_exceed_the_limit_plus_the_guarantees() {
    let b = bulkhead_with(
        AdaptiveBulkheadConfig::builder()
            .initial_limit(16)
            .sheddable_guaranteed_share(25.0)
            .critical_plus_guaranteed_share(25.0),
    );
    let peak = std::sync::atomic::AtomicU32::new(0);
    std::thread::scope(|s| {
        for t in 0..4 {
            let (b, peak) = (&b, &peak);
            s.spawn(move || {
                for i in 0..20_000u32 {
                    let class = Criticality::ALL[((i + t) % 4) as usize];
                    if let Ok(p) = b.try_acquire_permission_as(class) {
                        let now = b.metrics().concurrent_calls();
                        peak.fetch_max(now, std::sync::atomic::Ordering::Relaxed);
                        drop(p);
                    }
                }
            });
        }
    });
    // 16 under the limit, plus at most 4 + 4 guaranteed past it, plus the
    // instant a refused caller undoes its add (one per thread).
    assert!(peak.into_inner() <= 16 + 8 + 4);
    let m = b.metrics();
    assert_eq!(m.concurrent_calls(), 0);
    assert_eq!(
        Criticality::ALL
            .map(|c| m.rejected_calls_of(c))
            .iter()
            .sum::<u64>(),
        m.rejected_calls()
    );
}

fn limiter(clock: &ManualClock) -> RateLimiter {
    RateLimiter::with_clock(
        "partner",
        RateLimiterConfig::builder()
            .limit_for_period(10)
            .limit_refresh_period(Duration::from_secs(1))
            .timeout_duration(Duration::from_secs(5))
            .build()
            .unwrap(),
        clock.clone(),
    )
}

#[test]
fn the_rate_limiter_refuses_lower_classes_as_the_period_fills_and_they_never_reserve() {
    let clock = ManualClock::new();
    let l = limiter(&clock);
    let call = |class: Criticality| class.sync_scope(|| l.try_acquire_permission(1));
    // Sheddable: the first half of the cycle's 10 permits.
    assert_eq!((0..10).filter(|_| call(Sheddable)).count(), 5);
    // SheddablePlus: up to 75 % (8 of 10, ceil(7.5)).
    assert_eq!((0..10).filter(|_| call(SheddablePlus)).count(), 3);
    // Critical: the rest.
    assert_eq!((0..10).filter(|_| call(Critical)).count(), 2);
    // A Sheddable call that would wait for the next cycle is refused at
    // once: it reserves nothing.
    let sheddable = Sheddable.sync_scope(|| l.reserve_permission(1));
    assert!(sheddable.is_err());
    assert_eq!(l.available_permissions(), 0);
    // A Critical one reserves the next cycle's first permit.
    let critical = Critical.sync_scope(|| l.reserve_permission(1)).unwrap();
    assert_eq!(critical, Duration::from_secs(1));
    let m = l.metrics();
    assert_eq!(m.failed_acquisitions_of(Sheddable), 6);
    assert_eq!(m.failed_acquisitions_of(SheddablePlus), 7);
    assert_eq!(m.failed_acquisitions_of(Critical), 8);
    assert_eq!(m.failed_acquisitions(), 21);
    // The next cycle: the reservation took one, Sheddable gets 4 of its 5.
    clock.advance(Duration::from_secs(1));
    assert_eq!((0..10).filter(|_| call(Sheddable)).count(), 4);
}

#[tokio::test(start_paused = true)]
async fn an_async_call_takes_its_class_from_the_scope_it_runs_in() {
    let clock = ManualClock::new();
    let l = limiter(&clock);
    for _ in 0..5 {
        Sheddable
            .scope(l.call_async(async { Ok::<_, ()>(()) }))
            .await
            .unwrap();
    }
    let refused = Sheddable
        .scope(l.call_async(async { Ok::<_, ()>(()) }))
        .await;
    assert!(matches!(refused, Err(Error::RequestNotPermitted(_))));
    let ok = CriticalPlus
        .scope(l.call_async(async { Ok::<_, ()>(()) }))
        .await;
    assert_eq!(ok, Ok(()));
}

#[test]
fn class_settings_are_checked_with_their_field_and_range() {
    let err = RateLimiterConfig::builder()
        .critical_threshold(40.0)
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "critical_threshold");
    let err = AdaptiveBulkheadConfig::builder()
        .sheddable_guaranteed_share(60.0)
        .critical_plus_guaranteed_share(50.0)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid `critical_plus_guaranteed_share`: got 50, expected a percentage in [0, 40]: the guaranteed shares of all classes add up to at most 100"
    );
}

#[test]
fn the_class_settings_come_from_a_file_and_a_typo_is_named_with_its_key_path() {
    let registry = resil::Registry::from_yaml_str(
        "
resilience4j:
  adaptive-bulkhead.instances.checkout:
    initial-limit: 10
    sheddable-threshold: 30
    critical-plus-guaranteed-share: 20
  rate-limiter.instances.partner:
    sheddable-plus-threshold: 60
",
    )
    .unwrap();
    let handle = registry.adaptive_bulkhead("checkout");
    let b = resil::Handle::get(&handle);
    assert_eq!(b.config().threshold(Sheddable), 30.0);
    assert_eq!(b.config().guaranteed_share(CriticalPlus), 20.0);
    let held: Vec<_> = std::iter::from_fn(|| b.try_acquire_permission_as(Sheddable).ok())
        .take(10)
        .collect();
    assert_eq!(held.len(), 3);
    let handle = registry.rate_limiter("partner");
    let l = resil::Handle::get(&handle);
    assert_eq!(l.config().threshold(SheddablePlus), 60.0);

    let err = resil::Registry::from_yaml_str(
        "resilience4j.adaptive-bulkhead.instances.checkout.sheddable-treshold: 30\n",
    )
    .unwrap_err();
    assert!(
        err.to_string().contains(
            "unknown key `resilience4j.adaptive-bulkhead.instances.checkout.sheddable-treshold`; did you mean `sheddable-threshold`?"
        ),
        "{err}"
    );
    let err = resil::Registry::from_yaml_str(
        "resilience4j.rate-limiter.instances.partner:\n  sheddable-threshold: 90\n  sheddable-plus-threshold: 80\n",
    )
    .unwrap_err();
    assert!(
        err.to_string().contains(
            "invalid `resilience4j.rate-limiter.instances.partner.sheddable-plus-threshold`: got 80, expected a percentage in [90, 100]"
        ),
        "{err}"
    );
}
