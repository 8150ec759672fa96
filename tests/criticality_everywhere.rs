//! Admission by class in the primitives that joined the adaptive bulkhead
//! and the cycle rate limiter: the fixed (semaphore) bulkhead and the
//! refilling token bucket. Lower classes are refused first, never wait, and
//! are counted per class; a program that sets no class (`CRITICAL`) sees
//! every slot and permit as before. Manual clock and paused tokio time.

use std::time::Duration;

use resil::bulkhead::{Bulkhead, BulkheadConfig};
use resil::clock::{ManualClock, TokioClock};
use resil::config::FileConfig;
use resil::rate_limiter::{RefillRateLimiter, RefillRateLimiterConfig};
use resil::{Criticality, Registry};

use Criticality::{Critical, CriticalPlus, Sheddable, SheddablePlus};

fn bulkhead(max: u32) -> Bulkhead {
    Bulkhead::new(
        "inventory",
        BulkheadConfig::builder()
            .max_concurrent_calls(max)
            .build()
            .unwrap(),
    )
}

#[test]
fn the_fixed_bulkhead_refuses_lower_classes_first_and_counts_them_per_class() {
    // 8 slots, the default thresholds: SHEDDABLE gets 4 (50 %),
    // SHEDDABLE_PLUS 6 (75 %), CRITICAL and CRITICAL_PLUS all 8.
    let b = bulkhead(8);
    let take = |class: Criticality| class.sync_scope(|| b.try_acquire_permission().ok());
    let mut held = Vec::new();
    for _ in 0..4 {
        held.push(take(Sheddable).expect("below half the slots"));
    }
    assert!(take(Sheddable).is_none(), "the 5th would pass 50 %");
    for _ in 0..2 {
        held.push(take(SheddablePlus).expect("below 75 %"));
    }
    assert!(take(SheddablePlus).is_none());
    held.push(take(Critical).unwrap());
    held.push(take(CriticalPlus).unwrap());
    assert!(take(Critical).is_none(), "all 8 taken");
    let m = b.metrics();
    assert_eq!(m.rejected_calls_of(Sheddable), 1);
    assert_eq!(m.rejected_calls_of(SheddablePlus), 1);
    assert_eq!(m.rejected_calls_of(Critical), 1);
    assert_eq!(m.rejected_calls_of(CriticalPlus), 0);
    assert_eq!(m.rejected_calls(), 3);
    // A released slot is anyone's below their threshold again.
    held.truncate(3);
    assert!(take(Sheddable).is_some());
}

#[test]
fn without_a_class_every_slot_is_used_as_before() {
    let b = bulkhead(4);
    let held: Vec<_> = (0..4)
        .map(|_| b.try_acquire_permission().unwrap())
        .collect();
    assert!(b.try_acquire_permission().is_err());
    assert_eq!(b.metrics().rejected_calls_of(Critical), 1);
    drop(held);
}

#[tokio::test(start_paused = true)]
async fn a_lower_class_never_waits_for_a_slot_while_critical_work_does() {
    let b = Bulkhead::with_clock(
        "inventory",
        BulkheadConfig::builder()
            .max_concurrent_calls(2)
            .max_wait_duration(Duration::from_secs(1))
            .build()
            .unwrap(),
        TokioClock::new(),
    );
    let held = b.try_acquire_permission().unwrap();
    // One slot of two is taken: SHEDDABLE (50 % = 1 slot) is refused at
    // once, without waiting its second.
    let start = tokio::time::Instant::now();
    let refused = Sheddable
        .scope(b.call_async(async { Ok::<_, ()>(()) }))
        .await;
    assert!(matches!(refused, Err(resil::Error::BulkheadFull(_))));
    assert_eq!(start.elapsed(), Duration::ZERO);
    // CRITICAL takes the second slot, and a third CRITICAL call waits for
    // the first to be released.
    let second = b.try_acquire_permission().unwrap();
    let waiting = b.call_async(async { Ok::<_, ()>(7) });
    let release = async {
        tokio::time::sleep(Duration::from_millis(300)).await;
        drop(held);
    };
    let (answer, ()) = tokio::join!(waiting, release);
    assert_eq!(answer, Ok(7));
    assert_eq!(start.elapsed(), Duration::from_millis(300));
    drop(second);
    assert_eq!(b.metrics().rejected_calls_of(Sheddable), 1);
}

#[test]
fn a_panicking_or_cancelled_lower_class_call_gives_its_slot_back() {
    let b = bulkhead(2);
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Sheddable.sync_scope(|| b.call(|| -> Result<(), ()> { panic!("handler panicked") }))
    }));
    assert!(caught.is_err());
    assert_eq!(b.available_concurrent_calls(), 2);
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut pending =
            Box::pin(Sheddable.scope(b.call_async(std::future::pending::<Result<(), ()>>())));
        assert!(futures::poll!(pending.as_mut()).is_pending());
        assert_eq!(b.available_concurrent_calls(), 1);
        drop(pending);
    });
    assert_eq!(b.available_concurrent_calls(), 2);
}

#[test]
fn the_refilling_bucket_keeps_its_bottom_for_the_classes_above() {
    // Capacity 10, one permit per 100 ms. SHEDDABLE (50 %) takes from the
    // top half only; CRITICAL takes the rest; neither reserves.
    let clock = ManualClock::new();
    let config = RefillRateLimiterConfig::builder()
        .limit_for_period(10)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout_duration(Duration::ZERO)
        .build()
        .unwrap();
    assert_eq!(config.threshold(Sheddable), 50.0);
    let limiter = RefillRateLimiter::with_clock("partner", config, clock.clone());
    let take = |class: Criticality| class.sync_scope(|| limiter.try_acquire_permission(1));
    for _ in 0..5 {
        assert!(take(Sheddable));
    }
    assert!(!take(Sheddable), "the bucket is half empty");
    for _ in 0..3 {
        assert!(take(SheddablePlus), "75 %: ceil(7.5) = 8 may be missing");
    }
    assert!(!take(SheddablePlus));
    for _ in 0..2 {
        assert!(take(Critical));
    }
    assert!(!take(Critical), "empty");
    // 600 ms later 6 permits came back: 4 are missing, so SHEDDABLE may
    // take one (5 missing), not two.
    clock.advance(Duration::from_millis(600));
    assert!(take(Sheddable));
    assert!(!take(Sheddable));
    let m = limiter.metrics();
    assert_eq!(m.failed_acquisitions_of(Sheddable), 2);
    assert_eq!(m.failed_acquisitions_of(SheddablePlus), 1);
    assert_eq!(m.failed_acquisitions_of(Critical), 1);
    assert_eq!(m.failed_acquisitions(), 4);
}

#[test]
fn thresholds_are_checked_with_their_field_names() {
    let err = BulkheadConfig::builder()
        .sheddable_threshold(0.0)
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "sheddable_threshold");
    let err = BulkheadConfig::builder()
        .critical_threshold(120.0)
        .build()
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid `critical_threshold`: got 120, expected a percentage in (0, 100]"
    );
    let err = BulkheadConfig::builder()
        .sheddable_threshold(80.0)
        .sheddable_plus_threshold(60.0)
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "sheddable_plus_threshold");
    let err = RefillRateLimiterConfig::builder()
        .threshold(SheddablePlus, 101.0)
        .build()
        .unwrap_err();
    assert_eq!(err.field(), "sheddable_plus_threshold");
}

#[test]
fn the_bulkhead_s_thresholds_come_from_the_file_with_key_paths() {
    let registry = Registry::from_yaml_str(
        "resilience4j.bulkhead.instances.inventory:\n  max-concurrent-calls: 4\n  sheddable-threshold: 25\n",
    )
    .unwrap();
    let b = registry.bulkhead("inventory");
    assert_eq!(b.config().sheddable_threshold(), 25.0);
    let held = Sheddable.sync_scope(|| b.try_acquire_permission().unwrap());
    assert!(Sheddable.sync_scope(|| b.try_acquire_permission()).is_err());
    drop(held);
    assert!(registry
        .prometheus_text()
        .contains("resilience4j_bulkhead_rejected_calls_total{criticality=\"SHEDDABLE\",name=\"inventory\"} 1"));
    let typo = FileConfig::from_yaml_str(
        "resilience4j.bulkhead.instances.inventory.sheddable-treshold: 25\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        typo.contains("unknown key `resilience4j.bulkhead.instances.inventory.sheddable-treshold`; did you mean `sheddable-threshold`?"),
        "{typo}"
    );
    let bad = Registry::from_yaml_str(
        "resilience4j.bulkhead.instances.inventory.critical-threshold: 120\n",
    )
    .unwrap_err()
    .to_string();
    assert!(
        bad.contains("resilience4j.bulkhead.instances.inventory.critical-threshold"),
        "{bad}"
    );
}

#[test]
fn under_four_threads_the_classes_never_hold_more_than_their_thresholds() {
    // 8 slots: SHEDDABLE may hold 4. Two threads of each class take and
    // release slots as fast as they can; the slots held, counted by the
    // callers themselves, never pass a class's ceiling or the limit, and
    // every attempt is either permitted or rejected (counted per class).
    use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
    let b = bulkhead(8);
    let sheddable_held = AtomicU32::new(0);
    let total_held = AtomicU32::new(0);
    let peaks = [AtomicU32::new(0), AtomicU32::new(0)];
    let attempts = AtomicU64::new(0);
    const ROUNDS: u32 = 20_000;
    std::thread::scope(|s| {
        for t in 0..4 {
            let class = if t % 2 == 0 { Sheddable } else { Critical };
            let (b, sheddable_held, total_held, peaks, attempts) =
                (&b, &sheddable_held, &total_held, &peaks, &attempts);
            s.spawn(move || {
                class.sync_scope(|| {
                    for _ in 0..ROUNDS {
                        attempts.fetch_add(1, Ordering::Relaxed);
                        let Ok(permit) = b.try_acquire_permission() else {
                            continue;
                        };
                        let total = total_held.fetch_add(1, Ordering::SeqCst) + 1;
                        peaks[1].fetch_max(total, Ordering::Relaxed);
                        if class == Sheddable {
                            let mine = sheddable_held.fetch_add(1, Ordering::SeqCst) + 1;
                            peaks[0].fetch_max(mine, Ordering::Relaxed);
                            sheddable_held.fetch_sub(1, Ordering::SeqCst);
                        }
                        total_held.fetch_sub(1, Ordering::SeqCst);
                        drop(permit);
                    }
                })
            });
        }
    });
    assert!(
        peaks[0].load(Ordering::Relaxed) <= 4,
        "SHEDDABLE held at most half"
    );
    assert!(
        peaks[1].load(Ordering::Relaxed) <= 8,
        "never past the limit"
    );
    let m = b.metrics();
    assert_eq!(
        m.permitted_calls() + m.rejected_calls(),
        attempts.load(Ordering::Relaxed)
    );
    assert_eq!(
        m.rejected_calls_of(SheddablePlus) + m.rejected_calls_of(CriticalPlus),
        0
    );
    assert_eq!(b.available_concurrent_calls(), 8, "every slot came back");
}

#[test]
fn racing_threads_take_exactly_a_class_s_share_of_a_full_bucket() {
    // A frozen clock and a full bucket of 1000: four SHEDDABLE threads
    // racing until refused take exactly 500 permits between them, then
    // four CRITICAL threads exactly the other 500.
    use std::sync::atomic::{AtomicU32, Ordering};
    let clock = ManualClock::new();
    let config = RefillRateLimiterConfig::builder()
        .limit_for_period(1000)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout_duration(Duration::ZERO)
        .build()
        .unwrap();
    let limiter = RefillRateLimiter::with_clock("partner", config, clock);
    for class in [Sheddable, Critical] {
        let granted = AtomicU32::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                let (limiter, granted) = (&limiter, &granted);
                s.spawn(move || {
                    class.sync_scope(|| {
                        while limiter.try_acquire_permission(1) {
                            granted.fetch_add(1, Ordering::Relaxed);
                        }
                    })
                });
            }
        });
        assert_eq!(granted.load(Ordering::Relaxed), 500, "{class}");
    }
    assert_eq!(limiter.metrics().failed_acquisitions_of(Sheddable), 4);
    assert_eq!(limiter.metrics().failed_acquisitions_of(Critical), 4);
}
