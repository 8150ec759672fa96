//! Keyed families under a key flood: heap counted by a global allocator.
//!
//! One test function on purpose: the live-byte count is process-wide (keys
//! are created on one thread and freed on another), so nothing else may run
//! in this binary meanwhile.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use resil::bulkhead::BulkheadConfig;
use resil::circuit_breaker::CircuitBreakerConfig;
use resil::clock::ManualClock;
use resil::keyed::{
    KeyedBulkhead, KeyedCircuitBreaker, KeyedConfig, KeyedRateLimiter, KeyedRetryBudget,
};
use resil::rate_limiter::RateLimiterConfig;
use resil::retry::{Retry, RetryBudgetConfig, RetryConfig};

#[path = "support/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::{allocations, process_live_bytes as live};

#[global_allocator]
static ALLOC: counting_alloc::Counting = counting_alloc::Counting;

fn limiter(clock: &ManualClock, max_keys: usize, period: Duration) -> KeyedRateLimiter {
    let config = RateLimiterConfig::builder()
        .limit_for_period(1_000_000)
        .limit_refresh_period(period)
        .timeout_duration(Duration::ZERO)
        .build()
        .unwrap();
    let bounds = KeyedConfig::new(max_keys, Duration::from_secs(3600)).unwrap();
    KeyedRateLimiter::with_clock("api", config, bounds, clock.clone())
}

/// Bytes per idle key of a limiter family holding `keys` `u64` keys: its
/// entry, the key, the table slot and the queue slot, as allocated.
fn bytes_per_idle_key(keys: u64) -> f64 {
    let clock = ManualClock::new();
    let before = live();
    let f = limiter(&clock, keys as usize, Duration::from_secs(1));
    for key in 0..keys {
        drop(f.get(&key));
    }
    let bytes = live() - before;
    drop(f);
    bytes as f64 / keys as f64
}

fn no_allocation_per_call_on_an_existing_key() {
    let clock = ManualClock::new();
    let f = limiter(&clock, 100, Duration::from_secs(1));
    let breakers = KeyedCircuitBreaker::with_clock(
        "hosts",
        CircuitBreakerConfig::default(),
        KeyedConfig::default(),
        clock.clone(),
    );
    let bulkheads = KeyedBulkhead::with_clock(
        "per-host",
        BulkheadConfig::default(),
        KeyedConfig::default(),
        clock.clone(),
    );
    let budgets = KeyedRetryBudget::with_clock(
        "api",
        RetryBudgetConfig::default(),
        KeyedConfig::default(),
        clock.clone(),
    );
    let retry = Retry::with_clock("api", RetryConfig::default(), clock.clone());
    let tenant = String::from("tenant-1");
    f.get(tenant.as_str()).call(|| Ok::<_, ()>(())).unwrap();
    retry
        .with_budget(&budgets.get(tenant.as_str()))
        .call(|| Ok::<_, ()>(()))
        .unwrap();
    breakers.get(&42u64).call(|| Ok::<_, ()>(())).unwrap();
    bulkheads.get("host-a").call(|| Ok::<_, ()>(())).unwrap();
    let before = allocations();
    for _ in 0..1000 {
        f.get(tenant.as_str()).call(|| Ok::<_, ()>(())).unwrap();
        f.get(&tenant).try_acquire(3).unwrap();
        f.try_acquire(tenant.as_str(), 1).unwrap();
        f.reserve(&tenant, 1).unwrap();
        breakers.get(&42u64).call(|| Ok::<_, ()>(())).unwrap();
        bulkheads.get("host-a").call(|| Ok::<_, ()>(())).unwrap();
        retry
            .with_budget(&budgets.get(tenant.as_str()))
            .call(|| Ok::<_, ()>(()))
            .unwrap();
    }
    assert_eq!(
        allocations() - before,
        0,
        "calls on existing keys allocate nothing"
    );
}

/// 10⁷ distinct random keys from 2 threads: the family's heap stays under
/// max-keys × the per-key size + 10 %, and a key that calls every
/// simulated millisecond is never evicted (its instance keeps its creation
/// time and its permits).
fn a_key_flood_stays_in_its_memory_bound_and_keeps_the_hot_key() {
    const MAX_KEYS: usize = 10_000;
    // 10⁷ keys in all when optimized; a tenth in a debug build (`scripts/test`),
    // where the same flood would take minutes.
    const PER_THREAD: u64 = if cfg!(debug_assertions) {
        500_000
    } else {
        5_000_000
    };
    let per_key = bytes_per_idle_key(MAX_KEYS as u64);
    println!("bytes per idle keyed limiter (u64 key, at {MAX_KEYS} keys): {per_key:.1}");
    assert!(per_key <= 256.0, "{per_key} bytes per idle key");

    let clock = ManualClock::new();
    let baseline = live();
    // Cycles of 1 ms: a flooding key's permit is back after one, so keys can
    // be replaced; the hot key takes a permit every 1024 calls (each
    // simulated millisecond), so it always holds the current cycle's.
    let f = limiter(&clock, MAX_KEYS, Duration::from_millis(1));
    let hot = f.get("hot");
    hot.try_acquire(1).unwrap();
    let created = hot.created_at();
    drop(hot);
    counting_alloc::reset_peak();
    let hot_evicted = AtomicBool::new(false);
    std::thread::scope(|s| {
        for t in 0..2u64 {
            let (f, clock, hot_evicted) = (&f, &clock, &hot_evicted);
            s.spawn(move || {
                let mut rng = fastrand_like(t + 1);
                for i in 0..PER_THREAD {
                    let key = rng() | 1 << 63 >> t; // distinct per thread
                    let _ = f.get(&key).try_acquire(1);
                    if t == 0 && i % 1024 == 0 {
                        // Every 1024 calls: half a simulated millisecond.
                        clock.advance(Duration::from_micros(500));
                        let h = f.get("hot");
                        if h.created_at() != created {
                            hot_evicted.store(true, Ordering::Relaxed);
                        }
                        let _ = h.try_acquire(1);
                    }
                }
            });
        }
    });
    let peak = counting_alloc::process_peak_bytes() - baseline;
    let bound = MAX_KEYS as f64 * per_key * 1.1;
    let counts = f.counts();
    println!(
        "flood: peak {peak} bytes, after {} (bound {bound:.0}), {counts:?}",
        live() - baseline
    );
    assert!(
        !hot_evicted.load(Ordering::Relaxed),
        "the hot key was evicted"
    );
    assert!((peak as f64) <= bound, "peak {peak} bytes over {bound:.0}");
    assert!(counts.in_use <= MAX_KEYS);
    assert_eq!(counts.created, counts.in_use as u64 + counts.evicted());
    assert!(
        counts.evicted_full > PER_THREAD,
        "the flood replaced keys: {counts:?}"
    );
}

/// xorshift64*: the flood's keys, without a dependency.
fn fastrand_like(seed: u64) -> impl FnMut() -> u64 {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    move || {
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
}

#[test]
fn keyed_families_in_bounded_memory() {
    no_allocation_per_call_on_an_existing_key();
    a_key_flood_stays_in_its_memory_bound_and_keeps_the_hot_key();
}
