//! The registry's costs: looking up an existing name, a protected call through
//! a held handle, and creating many instances.
//!
//! What is measured:
//! - `lookup`: `registry.circuit_breaker(name)` for an existing name (hash, one
//!   shard read lock, an `Arc` clone) side by side with the same look-up done
//!   by hand on a bare `DashMap<Arc<str>, Arc<_>>` and on a
//!   `RwLock<HashMap<Arc<str>, Arc<_>>>` (std), on one thread and on two
//!   threads looking up the same name (the RwLock's reader count is one
//!   contended cache line). Macro call sites do this once per call site, not
//!   per call.
//! - `call`: a CLOSED breaker's `call` around a trivial function through a held
//!   `Handle` (one extra Acquire load to find the current instance) against
//!   the same call on a `CircuitBreaker` held directly. Target: no measurable
//!   difference.
//! - `create`: 100 000 breakers with distinct names in a fresh registry
//!   (get-or-create through the slow path), against 100 000 bare
//!   `CircuitBreaker::new` pushed into a `Vec` and into a growing `DashMap`
//!   (the floor any name-keyed map sets); plus net heap bytes per instance,
//!   printed as `bytes per instance: …`, and the ratios of 15 interleaved
//!   rounds, printed as `create 100 000, 15 interleaved rounds: …` (the
//!   figures to quote on a busy machine). Both only under `cargo bench`:
//!   `cargo test --benches` checks that the bench runs, in seconds.
//!
//! What distorts it: the byte-counting global allocator adds two relaxed
//! atomics per allocation (look-ups and calls do not allocate, creation does,
//! equally for both contenders); name strings are built before timing; the
//! two-thread figures depend on both cores being free.

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use criterion::{criterion_group, BenchmarkId, Criterion};
use dashmap::DashMap;
use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use resil::Registry;

mod support;

/// Net heap bytes in use, through this bench's allocator.
static LIVE_BYTES: AtomicI64 = AtomicI64::new(0);

struct ByteCounter;

unsafe impl GlobalAlloc for ByteCounter {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as i64, Ordering::Relaxed);
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOC: ByteCounter = ByteCounter;

const NAME: &str = "inventory-query";
const INSTANCES: usize = 100_000;

#[inline(never)]
fn trivial() -> Result<u64, u32> {
    Ok(black_box(42))
}

/// A registry, a bare dashmap and a RwLock'd HashMap, each holding the same
/// 1 000 names, so the looked-up name shares its shard with others.
type Dash = DashMap<Arc<str>, Arc<CircuitBreaker>>;
type StdMap = RwLock<HashMap<Arc<str>, Arc<CircuitBreaker>>>;

fn maps() -> (Registry, Dash, StdMap) {
    let registry = Registry::new();
    let dash = DashMap::new();
    let mut std_map = HashMap::new();
    for i in 0..1_000 {
        let name: Arc<str> = if i == 0 {
            NAME.into()
        } else {
            format!("service-{i}").into()
        };
        let cb = Arc::new(CircuitBreaker::new(
            Arc::clone(&name),
            CircuitBreakerConfig::default(),
        ));
        let _ = registry.circuit_breaker(&name);
        dash.insert(Arc::clone(&name), Arc::clone(&cb));
        std_map.insert(name, cb);
    }
    (registry, dash, RwLock::new(std_map))
}

fn lookup(c: &mut Criterion) {
    let (registry, dash, std_map) = maps();
    let mut g = c.benchmark_group("registry lookup (existing name)");
    g.bench_function("resil Registry::circuit_breaker", |b| {
        b.iter(|| black_box(registry.circuit_breaker(black_box(NAME))))
    });
    g.bench_function("dashmap get + Arc clone", |b| {
        b.iter(|| black_box(dash.get(black_box(NAME)).map(|e| Arc::clone(e.value()))))
    });
    g.bench_function("RwLock<HashMap> read + Arc clone", |b| {
        b.iter(|| black_box(std_map.read().unwrap().get(black_box(NAME)).map(Arc::clone)))
    });
    g.bench_function("resil Registry::circuit_breaker, 2 threads", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| {
                for _ in 0..n {
                    black_box(registry.circuit_breaker(black_box(NAME)));
                }
            })
        })
    });
    g.bench_function("dashmap get + Arc clone, 2 threads", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| {
                for _ in 0..n {
                    black_box(dash.get(black_box(NAME)).map(|e| Arc::clone(e.value())));
                }
            })
        })
    });
    g.bench_function("RwLock<HashMap> read + Arc clone, 2 threads", |b| {
        b.iter_custom(|iters| {
            support::on_threads(2, iters, |n| {
                for _ in 0..n {
                    black_box(std_map.read().unwrap().get(black_box(NAME)).map(Arc::clone));
                }
            })
        })
    });
    g.finish();
}

fn call(c: &mut Criterion) {
    let registry = Registry::new();
    let handle = registry.circuit_breaker(NAME);
    let direct = CircuitBreaker::new(NAME, CircuitBreakerConfig::default());
    for _ in 0..200 {
        let _ = handle.call(trivial);
        let _ = direct.call(trivial);
    }
    let mut g = c.benchmark_group("protected call (CLOSED breaker)");
    g.bench_function("through a held registry Handle", |b| {
        b.iter(|| black_box(handle.call(trivial)))
    });
    g.bench_function("CircuitBreaker held directly", |b| {
        b.iter(|| black_box(direct.call(trivial)))
    });
    g.finish();
}

fn names() -> Vec<String> {
    (0..INSTANCES).map(|i| format!("customer-{i}")).collect()
}

/// 100 000 distinct names through a fresh registry's get-or-create (the
/// registry is built before and dropped after the timed part).
fn create_registry(names: &[String]) -> Duration {
    let registry = Registry::builder()
        .max_instances_per_kind(INSTANCES)
        .build();
    let start = Instant::now();
    for name in names {
        black_box(registry.circuit_breaker(name));
    }
    let took = start.elapsed();
    drop(registry);
    took
}

/// The same breakers, bare, pushed into a pre-sized `Vec`.
fn create_bare(names: &[String]) -> Duration {
    let mut all = Vec::with_capacity(INSTANCES);
    let start = Instant::now();
    for name in names {
        all.push(CircuitBreaker::new(
            name.as_str(),
            CircuitBreakerConfig::default(),
        ));
    }
    let took = start.elapsed();
    drop(all);
    took
}

/// The same breakers into a growing `DashMap` by `Arc<str>` (hashed as the
/// registry hashes names): what any name-keyed concurrent map costs.
fn create_floor(names: &[String]) -> Duration {
    let map: DashMap<Arc<str>, CircuitBreaker, foldhash::fast::RandomState> =
        DashMap::with_hasher(Default::default());
    let start = Instant::now();
    for name in names {
        let name: Arc<str> = Arc::from(name.as_str());
        map.insert(
            Arc::clone(&name),
            CircuitBreaker::new(name, CircuitBreakerConfig::default()),
        );
    }
    let took = start.elapsed();
    drop(map);
    took
}

fn create(c: &mut Criterion) {
    let names = names();
    let mut g = c.benchmark_group("create 100 000 breakers");
    g.sample_size(10);
    let timed = |f: fn(&[String]) -> Duration| {
        let names = &names;
        move |b: &mut criterion::Bencher<'_>| {
            b.iter_custom(|iters| (0..iters).map(|_| f(names)).sum())
        }
    };
    g.bench_function(
        BenchmarkId::new("resil Registry get-or-create", INSTANCES),
        timed(create_registry),
    );
    g.bench_function(
        BenchmarkId::new("bare CircuitBreaker::new into a Vec", INSTANCES),
        timed(create_bare),
    );
    g.bench_function(
        BenchmarkId::new(
            "floor: CircuitBreaker::new into a DashMap by Arc<str>",
            INSTANCES,
        ),
        timed(create_floor),
    );
    g.finish();
}

/// The creation ratios from interleaved rounds (bare, floor, registry, bare,
/// …): a compile on the other core slows the contenders of a round alike, so
/// the median of the per-round ratios and the ratio of the fastest rounds
/// hold where criterion's separate means drift apart.
fn report_create_ratios() {
    const ROUNDS: usize = 15;
    let names = names();
    let mut rounds: Vec<[f64; 3]> = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        let bare = create_bare(&names).as_secs_f64();
        let floor = create_floor(&names).as_secs_f64();
        let registry = create_registry(&names).as_secs_f64();
        rounds.push([bare, floor, registry]);
    }
    let median = |i: usize| {
        let mut r: Vec<f64> = rounds.iter().map(|t| t[i] / t[0]).collect();
        r.sort_by(f64::total_cmp);
        r[ROUNDS / 2]
    };
    let best = |i: usize| rounds.iter().map(|t| t[i]).fold(f64::INFINITY, f64::min);
    println!(
        "create 100 000, {ROUNDS} interleaved rounds: registry/bare median {:.2}x, fastest {:.2}x; \
         floor/bare median {:.2}x, fastest {:.2}x; registry/floor fastest {:.2}x",
        median(2),
        best(2) / best(0),
        median(1),
        best(1) / best(0),
        best(2) / best(1),
    );
}

/// Net heap bytes per instance: registry (entry, slot, name, ring, breaker)
/// against a bare breaker in a pre-sized `Vec` (its name and state only).
fn report_bytes_per_instance() {
    let names = names();
    let before = LIVE_BYTES.load(Ordering::Relaxed);
    let registry = Registry::builder()
        .max_instances_per_kind(INSTANCES)
        .build();
    for name in &names {
        let _ = registry.circuit_breaker(name);
    }
    let registry_bytes = LIVE_BYTES.load(Ordering::Relaxed) - before;
    drop(registry);

    let before = LIVE_BYTES.load(Ordering::Relaxed);
    let mut all = Vec::with_capacity(INSTANCES);
    for name in &names {
        all.push(CircuitBreaker::new(
            name.as_str(),
            CircuitBreakerConfig::default(),
        ));
    }
    let bare_bytes = LIVE_BYTES.load(Ordering::Relaxed) - before;
    drop(all);

    let per = |b: i64| b as f64 / INSTANCES as f64;
    println!(
        "bytes per instance: resil Registry circuit breaker: {:.0}",
        per(registry_bytes)
    );
    println!(
        "bytes per instance: bare CircuitBreaker in a Vec: {:.0}",
        per(bare_bytes)
    );
    println!(
        "bytes per instance: registry overhead ratio: {:.2}",
        registry_bytes as f64 / bare_bytes as f64
    );
}

criterion_group! {
    name = benches;
    config = support::criterion();
    targets = lookup, call, create
}

fn main() {
    if support::measuring() {
        report_bytes_per_instance();
        report_create_ratios();
    }
    benches();
    Criterion::default().configure_from_args().final_summary();
}
