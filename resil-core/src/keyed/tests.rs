//! The keyed families' bounds and what eviction keeps.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::*;
use crate::bulkhead::BulkheadConfig;
use crate::circuit_breaker::{CircuitBreakerConfig, State};
use crate::clock::ManualClock;
use crate::rate_limiter::RateLimiterConfig;

fn limiter_config(limit: u32) -> RateLimiterConfig {
    RateLimiterConfig::builder()
        .limit_for_period(limit)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout_duration(Duration::ZERO)
        .build()
        .unwrap()
}

fn bounds(max_keys: usize, idle_ttl: Duration) -> KeyedConfig {
    KeyedConfig::new(max_keys, idle_ttl).unwrap()
}

#[test]
fn keyed_config_rejects_zero_keys_and_a_zero_ttl() {
    let e = KeyedConfig::new(0, Duration::from_secs(1)).unwrap_err();
    assert_eq!((e.field(), e.expected()), ("max_keys", "1..=100000000"));
    let e = KeyedConfig::new(1, Duration::ZERO).unwrap_err();
    assert_eq!(e.field(), "idle_ttl");
}

#[test]
fn each_key_has_its_own_permits_and_str_and_string_are_one_key() {
    let clock = ManualClock::new();
    let f = KeyedRateLimiter::with_clock(
        "api",
        limiter_config(2),
        KeyedConfig::default(),
        clock.clone(),
    );
    assert!(f.get("a").try_acquire(2).is_ok());
    assert!(f.get(&"a".to_string()).try_acquire(1).is_err());
    assert!(f.get("b").try_acquire(1).is_ok());
    assert!(f.get(&7u64).try_acquire(2).is_ok());
    assert_eq!(f.counts().in_use, 3);
    let err = f.get("a").try_acquire(1).unwrap_err();
    assert_eq!(err.name(), "api");
    clock.advance(Duration::from_secs(1));
    assert_eq!(f.get("a").available_permissions(), 2);
}

#[test]
fn reservations_wait_for_the_keys_next_cycle_within_the_timeout() {
    let clock = ManualClock::new();
    let config = RateLimiterConfig::builder()
        .limit_for_period(1)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout_duration(Duration::from_millis(1500))
        .build()
        .unwrap();
    let f = KeyedRateLimiter::with_clock("api", config, KeyedConfig::default(), clock.clone());
    let h = f.get("t");
    assert_eq!(h.reserve(1), Ok(Duration::ZERO));
    assert_eq!(h.reserve(1), Ok(Duration::from_secs(1)));
    assert!(h.reserve(1).is_err(), "2 s away is past the 1.5 s timeout");
    assert_eq!(h.available_permissions(), -1);
    assert!(
        h.reserve(2).is_err(),
        "more than the limit is never granted"
    );
}

#[test]
fn idle_keys_are_evicted_after_idle_ttl_on_the_manual_clock() {
    let clock = ManualClock::new();
    let f = KeyedRateLimiter::with_clock(
        "api",
        limiter_config(5),
        bounds(100, Duration::from_secs(60)),
        clock.clone(),
    );
    f.get("old").try_acquire(1).unwrap();
    clock.advance(Duration::from_secs(30));
    f.get("young").try_acquire(1).unwrap();
    clock.advance(Duration::from_secs(31));
    assert_eq!(f.evict_idle(), 1, "only `old` was idle for 60 s");
    let counts = f.counts();
    assert_eq!((counts.in_use, counts.evicted_idle), (1, 1));
    let mut keys = Vec::new();
    f.for_each_key(|k, _| keys.push(k.as_str().unwrap().to_owned()));
    assert_eq!(keys, ["young"]);
    // A new key runs the idle pass by itself once `idle_ttl / 4` has passed.
    clock.advance(Duration::from_secs(60));
    f.get("new").try_acquire(1).unwrap();
    assert_eq!(f.counts().in_use, 1);
    assert_eq!(f.counts().evicted_idle, 2);
}

#[test]
fn a_full_family_replaces_its_least_recently_used_key() {
    let clock = ManualClock::new();
    let f = KeyedBulkhead::with_clock(
        "per-host",
        BulkheadConfig::default(),
        bounds(3, Duration::from_secs(3600)),
        clock.clone(),
    );
    for key in ["a", "b", "c"] {
        f.get(key).call(|| Ok::<_, ()>(())).unwrap();
    }
    f.get("a").call(|| Ok::<_, ()>(())).unwrap(); // `a` is used again
    f.get("d").call(|| Ok::<_, ()>(())).unwrap();
    let mut keys = Vec::new();
    f.for_each_key(|k, _| keys.push(k.as_str().unwrap().to_owned()));
    keys.sort();
    assert_eq!(keys, ["a", "c", "d"], "`b` was the least recently used");
    assert_eq!(f.counts().evicted_full, 1);
    assert_eq!(f.counts().in_use, 3);
}

#[test]
fn an_open_breaker_is_not_evicted_into_a_closed_one_until_its_wait_has_passed() {
    let clock = ManualClock::new();
    let config = CircuitBreakerConfig::builder()
        .wait_duration_in_open_state(Duration::from_secs(30))
        .build()
        .unwrap();
    let f = KeyedCircuitBreaker::with_clock(
        "hosts",
        config,
        bounds(2, Duration::from_secs(1)),
        clock.clone(),
    );
    f.get("failing").transition_to_open().unwrap();
    f.get("ok").call(|| Ok::<_, ()>(())).unwrap();
    clock.advance(Duration::from_secs(10));
    // Both idle past the TTL: only the closed one goes.
    assert_eq!(f.evict_idle(), 1);
    assert_eq!(f.get("failing").state(), State::Open);
    // Full of OPEN breakers within their wait: a new key is refused, never
    // the open one dropped.
    f.get("other").transition_to_open().unwrap();
    clock.advance(Duration::from_secs(5));
    let refused = f.get("new");
    assert!(refused.is_refused());
    assert_eq!(refused.state(), State::ForcedOpen);
    assert!(refused.call(|| Ok::<_, ()>(())).is_err());
    drop(refused);
    assert_eq!(f.counts().refused, 1);
    assert_eq!(f.get("failing").state(), State::Open);
    // Once the wait has passed, an OPEN breaker may make room.
    clock.advance(Duration::from_secs(30));
    assert!(!f.get("new").is_refused());
    // Both OPEN waits have passed and both were idle: the idle pass took them.
    assert_eq!(f.counts().in_use, 1);
    assert_eq!(f.counts().evicted_idle, 3);
}

#[test]
fn a_limiter_with_permits_out_and_a_bulkhead_with_calls_in_flight_are_kept() {
    let clock = ManualClock::new();
    let f = KeyedRateLimiter::with_clock(
        "api",
        limiter_config(5),
        bounds(1, Duration::from_millis(1)),
        clock.clone(),
    );
    f.get("spent").try_acquire(5).unwrap();
    clock.advance(Duration::from_millis(10));
    assert_eq!(f.evict_idle(), 0, "its cycle's permits are out");
    assert!(f.get("new").is_refused());
    assert_eq!(
        f.get("spent").available_permissions(),
        0,
        "not reset by an eviction"
    );
    clock.advance(Duration::from_secs(1));
    assert!(
        !f.get("new").is_refused(),
        "all back in the next cycle: it may go"
    );

    let b = KeyedBulkhead::with_clock(
        "b",
        BulkheadConfig::default(),
        bounds(1, Duration::from_millis(1)),
        clock.clone(),
    );
    let permit = b.get("busy").try_acquire().unwrap();
    clock.advance(Duration::from_secs(1));
    assert_eq!(b.evict_idle(), 0);
    assert!(b.get("new").is_refused());
    drop(permit);
    assert!(!b.get("new").is_refused());
}

#[test]
fn a_held_handle_pins_its_key() {
    let clock = ManualClock::new();
    let f = KeyedRateLimiter::with_clock(
        "api",
        limiter_config(5),
        bounds(1, Duration::from_millis(1)),
        clock.clone(),
    );
    let held = f.get("held");
    clock.advance(Duration::from_secs(5));
    assert!(f.get("new").is_refused());
    drop(held);
    assert!(!f.get("new").is_refused());
}

#[test]
fn new_tiers_apply_to_existing_keys() {
    let clock = ManualClock::new();
    let f = KeyedRateLimiter::with_clock(
        "api",
        limiter_config(2),
        KeyedConfig::default(),
        clock.clone(),
    );
    f.get("gold-1").try_acquire(2).unwrap();
    f.get("tenant-42").try_acquire(1).unwrap();
    f.set_tiers(
        Tiers::new(2)
            .with_override("gold-*", 10)
            .with_override("tenant-42", 1),
    )
    .unwrap();
    assert_eq!(f.get("gold-1").limit_for_period(), Some(10));
    assert_eq!(
        f.get("gold-1").available_permissions(),
        8,
        "the 2 taken stay taken"
    );
    assert_eq!(f.get("tenant-42").available_permissions(), 0);
    assert_eq!(f.get("gold-2").limit_for_period(), Some(10));
    clock.advance(Duration::from_secs(1));
    assert_eq!(f.get("gold-1").available_permissions(), 10);
    let e = f
        .set_tiers(Tiers::new(2).with_override("gold-*", 0))
        .unwrap_err();
    assert_eq!(e.field(), "overrides.gold-*.limit_for_period");
}

#[test]
fn a_panicking_call_gives_its_bulkhead_slot_back() {
    let f = KeyedBulkhead::new(
        "b",
        BulkheadConfig::builder()
            .max_concurrent_calls(1)
            .build()
            .unwrap(),
        KeyedConfig::default(),
    );
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = f
            .get("k")
            .call(|| -> Result<(), ()> { panic!("user code") });
    }));
    assert!(out.is_err());
    assert_eq!(f.get("k").in_flight(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_call_gives_its_bulkhead_slot_back() {
    let f = KeyedBulkhead::new(
        "b",
        BulkheadConfig::builder()
            .max_concurrent_calls(1)
            .build()
            .unwrap(),
        KeyedConfig::default(),
    );
    let h = f.get("k");
    let call = h.call_async(async {
        tokio::time::sleep(Duration::from_secs(10)).await;
        Ok::<_, ()>(())
    });
    let timed_out = tokio::time::timeout(Duration::from_secs(1), call).await;
    assert!(timed_out.is_err());
    assert_eq!(f.get("k").in_flight(), 0);
}

/// Two threads hammer 8 keys of a family that holds 4 on a clock that
/// moves: per key and cycle, never more permits than the limit; every key
/// created is either held or was evicted; the keys held never exceed 4.
#[test]
fn concurrent_keys_never_exceed_their_limit_or_the_family_bound() {
    const LIMIT: u32 = 3;
    const CYCLES: u64 = 200;
    let clock = ManualClock::new();
    let f = KeyedRateLimiter::with_clock(
        "api",
        limiter_config(LIMIT),
        bounds(4, Duration::from_secs(3600)),
        clock.clone(),
    );
    // granted[key][cycle]
    let granted: Arc<Vec<AtomicU64>> =
        Arc::new((0..8 * CYCLES).map(|_| AtomicU64::new(0)).collect());
    for cycle in 0..CYCLES {
        std::thread::scope(|s| {
            for t in 0..2u64 {
                let (f, granted) = (&f, &granted);
                s.spawn(move || {
                    for i in 0..40u64 {
                        let key = (i * 7 + t * 3) % 8;
                        let h = f.get(&key);
                        if h.try_acquire(1).is_ok() {
                            granted[(key * CYCLES + cycle) as usize]
                                .fetch_add(1, Ordering::Relaxed);
                        }
                        assert!(f.counts().in_use <= 4);
                    }
                });
            }
        });
        clock.advance(Duration::from_secs(1));
    }
    for n in granted.iter() {
        assert!(n.load(Ordering::Relaxed) <= u64::from(LIMIT));
    }
    let c = f.counts();
    assert!(c.in_use <= 4);
    assert_eq!(c.created, c.in_use as u64 + c.evicted());
    let total: u64 = granted.iter().map(|n| n.load(Ordering::Relaxed)).sum();
    assert!(total > 0);
}

#[test]
fn handle_less_acquires_racing_evictions_never_exceed_a_keys_limit() {
    // `try_acquire(&key, n)` holds no reference, so an eviction may pick
    // the key while the acquire runs: the eviction retires the cursor in
    // one CAS, and an acquire that finds it retired looks the key up again,
    // so no permit is taken from an evicted key's state.
    const LIMIT: u32 = 2;
    const CYCLES: u64 = 2_000;
    let clock = ManualClock::new();
    let f = KeyedRateLimiter::with_clock(
        "api",
        limiter_config(LIMIT),
        bounds(3, Duration::from_secs(3600)),
        clock.clone(),
    );
    let granted: Vec<AtomicU64> = (0..6 * CYCLES).map(|_| AtomicU64::new(0)).collect();
    for cycle in 0..CYCLES {
        std::thread::scope(|s| {
            for t in 0..2u64 {
                let (f, granted) = (&f, &granted);
                s.spawn(move || {
                    for i in 0..12u64 {
                        let key = (i * 5 + t) % 6;
                        let ok = if i % 3 == 0 {
                            f.get(&key).try_acquire(1).is_ok()
                        } else {
                            f.try_acquire(&key, 1).is_ok()
                        };
                        if ok {
                            granted[(key * CYCLES + cycle) as usize]
                                .fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        clock.advance(Duration::from_secs(1));
    }
    for n in &granted {
        assert!(n.load(Ordering::Relaxed) <= u64::from(LIMIT));
    }
    let c = f.counts();
    assert!(c.in_use <= 3);
    assert_eq!(c.created, c.in_use as u64 + c.evicted());
    assert!(c.evicted_full > 0, "keys were replaced: {c:?}");
}

#[test]
fn the_noisy_tenant_tops_the_report() {
    let clock = ManualClock::new();
    let f = KeyedRateLimiter::with_clock(
        "api",
        limiter_config(2),
        KeyedConfig::default(),
        clock.clone(),
    );
    for _ in 0..10 {
        let _ = f.get("noisy").try_acquire(1);
    }
    f.get("quiet").try_acquire(1).unwrap();
    let top = f.top_keys(1);
    assert_eq!(
        top.by_calls,
        [KeyCount {
            key: "noisy".into(),
            count: 10
        }]
    );
    assert_eq!(
        top.by_refusals,
        [KeyCount {
            key: "noisy".into(),
            count: 8
        }]
    );
    let b = KeyedBulkhead::new(
        "b",
        BulkheadConfig::builder()
            .max_concurrent_calls(1)
            .build()
            .unwrap(),
        KeyedConfig::default(),
    );
    let _held = b.get("busy").try_acquire().unwrap();
    assert!(b.get("busy").try_acquire().is_err());
    assert_eq!(
        b.top_keys(5).by_refusals,
        [KeyCount {
            key: "busy".into(),
            count: 1
        }]
    );
}

#[test]
fn an_evicted_noisy_tenant_still_tops_the_report() {
    // Room for 4 keys: the noisy tenant is pushed out by a flood of
    // one-shot keys, comes back, and is pushed out again, three times.
    let f = KeyedBulkhead::new(
        "per-tenant",
        BulkheadConfig::builder()
            .max_concurrent_calls(1)
            .build()
            .unwrap(),
        bounds(4, Duration::from_secs(3600)),
    );
    for round in 0..3 {
        let held = f.get("noisy").try_acquire().unwrap();
        for _ in 0..9 {
            assert!(f.get("noisy").try_acquire().is_err());
        }
        drop(held);
        for i in 0..20 {
            f.get(&format!("one-shot-{round}-{i}"))
                .call(|| Ok::<_, ()>(()))
                .unwrap();
        }
    }
    assert_eq!(f.counts().evicted_full, 60 + 3 - 4);
    let mut held = Vec::new();
    f.for_each_key(|k, _| held.push(k.as_str().unwrap().to_owned()));
    assert!(!held.contains(&"noisy".to_owned()), "evicted: {held:?}");
    // 30 look-ups and 27 refusals, every one of them folded in at an
    // eviction: at most N / 64 over, for the N look-ups folded in (90).
    let top = f.top_keys(1);
    assert_eq!(top.by_calls[0].key, "noisy");
    assert!(
        (30..=30 + 90 / 64).contains(&top.by_calls[0].count),
        "{top:?}"
    );
    assert_eq!(
        top.by_refusals,
        [KeyCount {
            key: "noisy".into(),
            count: 27
        }]
    );
}

#[test]
fn acquiring_by_key_without_a_handle_is_the_handle_s_acquire() {
    let clock = ManualClock::new();
    let config = RateLimiterConfig::builder()
        .limit_for_period(2)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout_duration(Duration::from_secs(1))
        .build()
        .unwrap();
    let f = KeyedRateLimiter::with_clock(
        "api",
        config,
        bounds(2, Duration::from_secs(60)),
        clock.clone(),
    );
    // A new key is created on the way, an existing one found.
    assert!(f.try_acquire("a", 1).is_ok());
    assert!(f.try_acquire(&"a".to_string(), 1).is_ok());
    assert!(f.try_acquire("a", 1).is_err());
    assert_eq!(f.get("a").available_permissions(), 0);
    // The next cycle's permits are reserved within the timeout.
    assert_eq!(f.reserve("a", 2), Ok(Duration::from_secs(1)));
    assert!(f.reserve("a", 1).is_err(), "two cycles ahead");
    // Refusals are counted on the key; both keys share the family's bound.
    assert_eq!(f.top_keys(1).by_refusals[0].count, 2);
    assert!(f.try_acquire("b", 2).is_ok());
    assert!(
        f.try_acquire("c", 1).is_err(),
        "no room: a and b hold permits"
    );
    assert_eq!(f.counts().refused, 1);
    clock.advance(Duration::from_secs(2));
    assert!(f.try_acquire("c", 1).is_ok(), "their permits are back");
    assert_eq!(f.counts().evicted_full, 1);
}

#[test]
fn by_key_and_by_handle_together_grant_each_key_exactly_its_limit_per_cycle() {
    const LIMIT: u32 = 5;
    const CYCLES: u64 = 100;
    let clock = ManualClock::new();
    let f = KeyedRateLimiter::with_clock(
        "api",
        limiter_config(LIMIT),
        bounds(8, Duration::from_secs(3600)),
        clock.clone(),
    );
    for _ in 0..CYCLES {
        let granted = [AtomicU64::new(0), AtomicU64::new(0)];
        std::thread::scope(|s| {
            for t in 0..2u64 {
                let (f, granted) = (&f, &granted);
                s.spawn(move || {
                    for i in 0..40u64 {
                        let key = (i + t) % 2;
                        // One thread through handles, one by key.
                        let ok = if t == 0 {
                            f.get(&key).try_acquire(1).is_ok()
                        } else {
                            f.try_acquire(&key, 1).is_ok()
                        };
                        if ok {
                            granted[key as usize].fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        // 40 asks per key for 5 permits: exactly the limit, never more.
        for n in &granted {
            assert_eq!(n.load(Ordering::Relaxed), u64::from(LIMIT));
        }
        clock.advance(Duration::from_secs(1));
    }
    assert_eq!(f.counts().in_use, 2);
    assert_eq!(
        f.top_keys(2)
            .by_refusals
            .iter()
            .map(|k| k.count)
            .sum::<u64>(),
        2 * CYCLES * 35
    );
}

/// The lock-free map against a model: whatever the sequence of look-ups,
/// inserts, replacements when full and idle passes, a key is held at most
/// once (a look-up finds the entry it was given, never a second copy), an
/// entry that may not go is never evicted, the family never holds more
/// than `max_keys`, and every key the map says it holds is found.
mod map_model {
    use std::collections::HashMap;

    use proptest::prelude::*;

    use super::super::map::Map;
    use super::*;

    #[derive(Debug, Clone)]
    enum Op {
        /// `get_or_insert` of key `k`.
        Get(u8),
        /// The clock moves `ms` on, then an idle pass runs.
        Idle(u16),
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            6 => (0u8..40).prop_map(Op::Get),
            1 => (0u16..3_000).prop_map(Op::Idle),
        ]
    }

    /// An entry made for the `n`th insert holds `n`; one whose `n` is a
    /// multiple of 7 may never go (as an OPEN breaker in its wait).
    fn can_go(id: &u64, _now: u64) -> bool {
        id % 7 != 0
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        #[test]
        fn the_map_holds_each_key_once_and_keeps_what_may_not_go(
            max_keys in 1usize..12,
            ops in prop::collection::vec(op(), 1..200),
        ) {
            let ms = 1_000_000u64;
            let map: Map<u64> = Map::new(bounds(max_keys, Duration::from_secs(1)));
            // The model: the entry each key was given, while the map holds it.
            let mut model: HashMap<u64, u64> = HashMap::new();
            let mut made = 0u64;
            let mut now = 0u64;
            for op in ops {
                match op {
                    Op::Get(k) => {
                        let k = u64::from(k);
                        let got = map.get_or_insert(&k, now, |_| { made += 1; made }, can_go);
                        match (got.map(|e| e.state), model.get(&k)) {
                            (Some(id), Some(&held)) => prop_assert_eq!(id, held, "key {} held twice", k),
                            (Some(id), None) => { model.insert(k, id); }
                            (None, held) => {
                                // Refused only while every key held may not go.
                                prop_assert!(held.is_none());
                                prop_assert!(model.values().all(|id| !can_go(id, now)));
                            }
                        }
                    }
                    Op::Idle(step) => {
                        now += u64::from(step) * ms;
                        map.evict_idle(now, can_go);
                    }
                }
                // What the map still holds: the model's entries, or gone.
                let before = model.clone();
                model.retain(|k, id| match map.find(k, now) {
                    Some(entry) => entry.state == *id,
                    None => false,
                });
                for (k, id) in &before {
                    if !can_go(id, now) {
                        prop_assert!(model.contains_key(k), "key {} (may not go) was evicted", k);
                    }
                }
                prop_assert!(model.len() <= max_keys.max(before.values().filter(|id| !can_go(id, now)).count()));
                prop_assert_eq!(map.len(), model.len(), "every key held is found");
            }
        }
    }
}
