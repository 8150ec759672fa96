//! A keyed rate limiter on a hot key: resil's `KeyedRateLimiter` vs
//! governor 0.10's keyed limiter (`check_key`, its default DashMap store)
//! vs resil's unkeyed `RateLimiter`, in one run; the report is the ratios.
//!
//! The traffic it stands for: a multi-tenant API whose busiest tenant calls
//! well under its quota, so every call pays the look-up of its key and one
//! acquire, and is never refused. Measured: one successful acquire for a key
//! the family already holds (a `String` key looked up by `&str`, as a
//! header's value is), among 1 000 keys held, with 10⁹ permits per second so
//! nobody refuses. Targets (issue 29): resil keyed ≤ governor keyed, and ≤
//! 1.5 × resil unkeyed.
//!
//! Two resil forms: `get(&str).try_acquire(1)` takes a handle (an `Arc`
//! count, what a call that holds the key across an await needs), and
//! `try_acquire(&str, 1)` decides inside an announced look-up with no count (the
//! form the keyed tower layer uses).
//!
//! Under `cargo bench` the ratios are also taken in interleaved rounds
//! (`keyed/hot key: … / …, interleaved: …`): keyed / unkeyed and keyed /
//! governor, each pair alternating, so both see the same load on a shared
//! machine. Report those, not criterion's sequential figures.
//!
//! What distorts it: governor hashes the key with SipHash (std's
//! `RandomState`, its DashMap default), resil with foldhash's quality hasher
//! (a per-family random seed); resil also marks the key used for the
//! replacement clock and counts its calls, governor does neither (its map
//! never evicts). The
//! counting global allocator adds nothing here: no contender allocates on
//! this path.
//!
//! A second group puts a retry on a hot key's budget
//! (`retry.with_budget(&budgets.get(&str)).call(..)`, a call that succeeds
//! at once: it deposits into the key's budget) beside the same retry on one
//! shared budget and on none: what a retry budget per key adds to a call.

use std::hint::black_box;
use std::num::NonZeroU32;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use governor::{Quota, RateLimiter as Governor};
use resil::keyed::{KeyedConfig, KeyedRateLimiter};
use resil::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil::retry::{Retry, RetryBudget, RetryBudgetConfig, RetryConfig};

mod support;

#[global_allocator]
static ALLOC: support::CountingAllocator = support::CountingAllocator;

const PER_SECOND: u32 = 1_000_000_000;
const KEYS: usize = 1_000;

fn config() -> RateLimiterConfig {
    RateLimiterConfig::builder()
        .limit_for_period(PER_SECOND)
        .limit_refresh_period(Duration::from_secs(1))
        .timeout_duration(Duration::ZERO)
        .build()
        .expect("a valid config")
}

fn hot_key(c: &mut Criterion) {
    let keys: Vec<String> = (0..KEYS).map(|i| format!("tenant-{i}")).collect();
    let hot = keys[KEYS / 2].clone();

    let keyed = KeyedRateLimiter::new("bench", config(), KeyedConfig::default());
    let governor = Governor::keyed(Quota::per_second(
        NonZeroU32::new(PER_SECOND).expect("non-zero"),
    ));
    for key in &keys {
        keyed.get(key.as_str()).try_acquire(1).expect("under quota");
        governor.check_key(key).expect("under quota");
    }
    let unkeyed = RateLimiter::new("bench", config());

    let mut group = c.benchmark_group("keyed/hot key/1 thread");
    group.bench_function("resil keyed get(&str).try_acquire(1)", |b| {
        b.iter(|| black_box(keyed.get(black_box(hot.as_str())).try_acquire(1)).is_ok())
    });
    group.bench_function("resil keyed try_acquire(&str, 1)", |b| {
        b.iter(|| black_box(keyed.try_acquire(black_box(hot.as_str()), 1)).is_ok())
    });
    group.bench_function("governor keyed check_key", |b| {
        b.iter(|| black_box(governor.check_key(black_box(&hot))).is_ok())
    });
    group.bench_function("resil unkeyed try_acquire_permission(1)", |b| {
        b.iter(|| black_box(unkeyed.try_acquire_permission(black_box(1))))
    });
    group.finish();

    let unkeyed_call = || unkeyed.try_acquire_permission(black_box(1));
    let keyed_call = || keyed.try_acquire(black_box(hot.as_str()), 1).is_ok();
    let handle_call = || keyed.get(black_box(hot.as_str())).try_acquire(1).is_ok();
    let governor_call = || governor.check_key(black_box(&hot)).is_ok();
    let report = "keyed/hot key";
    support::interleaved_ratio(
        report,
        ("unkeyed", unkeyed_call),
        ("keyed try_acquire", keyed_call),
    );
    support::interleaved_ratio(
        report,
        ("unkeyed", unkeyed_call),
        ("keyed get().try_acquire", handle_call),
    );
    support::interleaved_ratio(
        report,
        ("governor", governor_call),
        ("keyed try_acquire", keyed_call),
    );
    support::interleaved_ratio(
        report,
        ("governor", governor_call),
        ("keyed get().try_acquire", handle_call),
    );
}

fn retry_budget(c: &mut Criterion) {
    let keys: Vec<String> = (0..KEYS).map(|i| format!("tenant-{i}")).collect();
    let hot = keys[KEYS / 2].clone();
    let budgets = resil::keyed::KeyedRetryBudget::new(
        "bench",
        RetryBudgetConfig::default(),
        KeyedConfig::default(),
    );
    for key in &keys {
        budgets.get(key.as_str()).deposit();
    }
    let retry = Retry::new("bench", RetryConfig::default());
    let shared = Retry::new(
        "bench",
        RetryConfig::builder()
            .budget(RetryBudget::new(RetryBudgetConfig::default()))
            .build()
            .expect("a valid config"),
    );
    let ok = || Ok::<u64, ()>(black_box(1));

    let mut group = c.benchmark_group("keyed/retry budget/1 thread");
    group.bench_function("retry on the key's budget", |b| {
        b.iter(|| {
            retry
                .with_budget(&budgets.get(black_box(hot.as_str())))
                .call(ok)
        })
    });
    group.bench_function("retry on one shared budget", |b| b.iter(|| shared.call(ok)));
    group.bench_function("retry without a budget", |b| b.iter(|| retry.call(ok)));
    group.finish();
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = hot_key, retry_budget
}
criterion_main!(benches);
