//! Local permit leases (`lease_size`, `lease_ttl`) against a real
//! `redis-server`: the over-admission bound across OS processes (copies of
//! this test binary), give-back and expiry, cancellation and panics, waiting
//! acquires, and each failure policy with a lease in hand.
//!
//! One server serves the binary's tests (each uses its own key): started by
//! the first test that needs it and killed when the last one holding it ends
//! (one test, the failure policies', kills a server of its own). Time is real
//! where the server decides (counts and bounds over timestamps are asserted,
//! never durations); the local lease expiry runs on a manual clock.
#![cfg(feature = "redis")]

#[path = "support/limiter.rs"]
mod limiter_support;
#[path = "support/redis_server.rs"]
mod redis_server;
#[path = "support/windows.rs"]
mod windows;

use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use limiter_support::{limiter, run};
use redis_server::{command_calls, info_field, RedisServer};
use resil::clock::ManualClock;
use resil::distributed_rate_limiter::{
    Algorithm, DecidedBy, DistributedRateLimiter, DistributedRateLimiterConfig,
    DistributedRateLimiterConfigBuilder, FailurePolicy,
};
use resil::rate_limiter::AcquireError;
use windows::{max_in_any_window, micros_now};

/// The binary's one server: started by the first test that asks, killed when
/// the last test holding it ends (tests of this binary run concurrently).
fn server() -> Arc<RedisServer> {
    static SERVER: OnceLock<Mutex<Weak<RedisServer>>> = OnceLock::new();
    let slot = SERVER.get_or_init(|| Mutex::new(Weak::new()));
    let mut slot = slot.lock().unwrap();
    if let Some(server) = slot.upgrade() {
        return server;
    }
    let server = Arc::new(RedisServer::start());
    *slot = Arc::downgrade(&server);
    server
}

fn config(url: &str) -> DistributedRateLimiterConfigBuilder {
    DistributedRateLimiterConfig::builder()
        .redis_url(url)
        .key_prefix("lease:")
        .timeout_duration(Duration::ZERO)
        .redis_timeout(Duration::from_secs(2))
}

// ---------------------------------------------------------------------------
// The bound, across OS processes.

const CHILD_URL: &str = "RESIL_LEASE_CHILD_URL";
const CHILD_ALGORITHM: &str = "RESIL_LEASE_CHILD_ALGORITHM";
const CHILD_LEASE: &str = "RESIL_LEASE_CHILD_LEASE";
const CHILD_KEY: &str = "RESIL_LEASE_CHILD_KEY";
const LIMIT: u32 = 10;
const PERIOD_MICROS: u64 = 200_000;

fn shared_config(url: &str, algorithm: &str, lease: u32) -> DistributedRateLimiterConfig {
    let b = config(url)
        .limit_for_period(LIMIT)
        .limit_refresh_period(Duration::from_micros(PERIOD_MICROS))
        .buckets(4)
        .lease_size(lease);
    let b = match algorithm {
        "gcra" => b.algorithm(Algorithm::Gcra).burst(4),
        _ => b,
    };
    b.build().unwrap()
}

#[test]
#[ignore = "a child process of the multi-process lease tests, started by them with its settings in the environment"]
fn child_process_acquires_with_leases_for_one_second() {
    let env = |k: &str| std::env::var(k).expect("started by a lease test");
    let lease: u32 = env(CHILD_LEASE).parse().unwrap();
    let config = shared_config(&env(CHILD_URL), &env(CHILD_ALGORITHM), lease);
    let limiter = DistributedRateLimiter::new(env(CHILD_KEY), config).unwrap();
    // The harness's "test … ..." has no line end yet.
    println!();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let stop = Instant::now() + Duration::from_millis(1000);
        let mut tasks = Vec::new();
        for _ in 0..3 {
            let limiter = limiter.clone();
            tasks.push(tokio::spawn(async move {
                let mut grants = Vec::new();
                while Instant::now() < stop {
                    if let Ok(grant) = limiter.acquire_async().await {
                        // A lease's permit is admitted now, here (the wall
                        // clock of this host, which the local server shares);
                        // Redis's own grants carry its clock.
                        grants.push(match grant.decided_by() {
                            DecidedBy::Lease => micros_now(),
                            DecidedBy::Redis => grant.server_time_micros().unwrap(),
                            other => panic!("only Redis and the lease grant here: {other:?}"),
                        });
                    }
                    tokio::task::yield_now().await;
                }
                grants
            }));
        }
        for task in tasks {
            for t in task.await.unwrap() {
                println!("GRANT {t}");
            }
        }
    });
    let m = limiter.metrics();
    println!("LEASES {}", m.leases());
    println!("FALLBACK {}", m.fallback_decisions());
}

/// Every grant's time from `n` processes sharing one key, sorted, and the
/// leases they took.
fn grants_of_processes(algorithm: &str, lease: u32, n: usize) -> (Vec<u64>, u64) {
    let server = server();
    let key = format!("bound-{algorithm}-{lease}");
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..n)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "child_process_acquires_with_leases_for_one_second",
                    "--exact",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_URL, server.url())
                .env(CHILD_ALGORITHM, algorithm)
                .env(CHILD_LEASE, lease.to_string())
                .env(CHILD_KEY, &key)
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("start a child process")
        })
        .collect();
    let (mut grants, mut calls) = (Vec::new(), 0);
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "a child process failed:\n{stdout}");
        for line in stdout.lines() {
            if let Some(t) = line.strip_prefix("GRANT ") {
                grants.push(t.parse::<u64>().unwrap());
            } else if let Some(c) = line.strip_prefix("LEASES ") {
                calls += c.parse::<u64>().unwrap();
            } else if let Some(f) = line.strip_prefix("FALLBACK ") {
                assert_eq!(f, "0", "every grant came from Redis or a lease:\n{stdout}");
            }
        }
    }
    grants.sort_unstable();
    (grants, calls)
}

#[test]
fn three_processes_with_leases_stay_within_limit_plus_processes_times_lease_size() {
    const PROCESSES: usize = 3;
    // Leases off: exactly the limit, as without this feature.
    let (grants, _) = grants_of_processes("sliding", 0, PROCESSES);
    assert_eq!(
        max_in_any_window(&grants, PERIOD_MICROS, true),
        LIMIT as usize,
        "leases off: at most N in any window, and N is reached"
    );
    for (algorithm, lease, base) in [("sliding", 3u32, LIMIT), ("gcra", 3, 4 + LIMIT - 1)] {
        let (grants, leases) = grants_of_processes(algorithm, lease, PROCESSES);
        let bound = base as usize + PROCESSES * lease as usize;
        let most = max_in_any_window(&grants, PERIOD_MICROS, true);
        eprintln!(
            "{algorithm}, lease {lease}: at most {most} in a window (bound {bound}), \
             {} grants from {leases} leases",
            grants.len()
        );
        assert!(
            grants.len() >= 30,
            "{algorithm}: the quota was used: {}",
            grants.len()
        );
        assert!(
            most <= bound,
            "{algorithm}, lease {lease}: {most} in one window, over the bound {bound}"
        );
        // A lease takes what is free now, up to its size: a saturated
        // sliding window frees a bucket's worth at a time, a saturated GCRA
        // one emission (one permit) at a time, so there leases hold one.
        assert!(leases > 0, "{algorithm}: leases were taken");
        if algorithm == "sliding" {
            assert!(
                grants.len() as u64 > leases,
                "{algorithm}: {leases} leases served more acquires ({})",
                grants.len()
            );
        }
    }
}

// ---------------------------------------------------------------------------
// One process.

#[test]
fn a_lease_serves_its_permits_locally_and_each_refill_is_one_script_call() {
    let server = server();
    let limiter = limiter(
        "serves",
        config(&server.url())
            .limit_for_period(20)
            .limit_refresh_period(Duration::from_secs(30))
            .lease_size(5),
    );
    run(async {
        for i in 0..20 {
            let grant = limiter.acquire_async().await.unwrap();
            assert_eq!(grant.decided_by(), DecidedBy::Lease, "acquire {i}");
        }
        assert!(
            matches!(
                limiter.acquire_async().await,
                Err(AcquireError::NotPermitted(_))
            ),
            "the quota is spent: the 21st is refused"
        );
    });
    let m = limiter.metrics();
    assert_eq!(
        (m.leases(), m.leased_permits(), m.lease_grants()),
        (4, 20, 20)
    );
    assert_eq!(m.script_calls(), 5, "4 leases and the refused refill");
    // Redis said when a permit comes back: until then, acquires that cannot
    // wait so long are refused here, without a round trip.
    run(async {
        assert!(limiter.acquire_async().await.is_err());
    });
    assert_eq!(limiter.metrics().script_calls(), 5);
    assert_eq!(limiter.metrics().failed_acquires(), 2);
    // Zero permits ask whether one is left (none is), and several at once
    // beyond the lease size go to Redis as without leases.
    run(async {
        assert!(limiter.acquire_n_async(0).await.is_err());
        assert!(limiter.acquire_n_async(6).await.is_err());
    });
}

#[test]
fn unused_permits_go_back_with_return_lease_or_expire_into_the_next_refill() {
    let server = server();
    run(async {
        // Sliding window: what was never handed out leaves the bucket.
        let quota = || {
            config(&server.url())
                .limit_for_period(10)
                .limit_refresh_period(Duration::from_secs(30))
        };
        let leasing = limiter("give-back", quota().lease_size(4));
        let plain = limiter("give-back", quota());
        leasing.acquire_async().await.unwrap();
        assert_eq!(leasing.leased_permits(), 3);
        assert_eq!(leasing.return_lease().await, 3);
        assert_eq!(leasing.leased_permits(), 0);
        assert_eq!(leasing.return_lease().await, 0, "nothing left to give");
        for i in 0..9 {
            assert!(plain.acquire_async().await.is_ok(), "the 9 left: {i}");
        }
        assert!(plain.acquire_async().await.is_err(), "1 + 9 = the limit");
        assert_eq!(leasing.metrics().returned_permits(), 3);

        // GCRA: taken back while nothing was granted after the lease…
        let quota = || {
            config(&server.url())
                .algorithm(Algorithm::Gcra)
                .limit_for_period(10)
                .limit_refresh_period(Duration::from_secs(30))
        };
        let leasing = limiter("gcra-back", quota().lease_size(4));
        let plain = limiter("gcra-back", quota());
        leasing.acquire_async().await.unwrap();
        assert_eq!(leasing.return_lease().await, 3);
        for i in 0..9 {
            assert!(plain.acquire_async().await.is_ok(), "the 9 left: {i}");
        }
        assert!(plain.acquire_async().await.is_err());
        // …and kept spent once something was (moving the TAT back could
        // then admit more than the bound).
        let leasing = limiter("gcra-kept", quota().lease_size(4));
        let plain = limiter("gcra-kept", quota());
        leasing.acquire_async().await.unwrap();
        plain.acquire_async().await.unwrap();
        assert_eq!(leasing.return_lease().await, 0);
        for i in 0..5 {
            assert!(plain.acquire_async().await.is_ok(), "{i}");
        }
        assert!(plain.acquire_async().await.is_err(), "1 + 4 + 1 + 5 > 10");
    });

    // Expiry, on a manual clock: after lease_ttl the rest is not handed out
    // but given back with the next refill, in the same script call.
    let clock = ManualClock::new();
    let expiring = DistributedRateLimiter::with_clock(
        "expiry",
        config(&server.url())
            .limit_for_period(10)
            .limit_refresh_period(Duration::from_secs(30))
            .lease_size(4)
            .lease_ttl(Duration::from_secs(1))
            .build()
            .unwrap(),
        clock.clone(),
    )
    .unwrap();
    run(async {
        expiring.acquire_async().await.unwrap();
        clock.advance(Duration::from_millis(999));
        expiring.acquire_async().await.unwrap();
        assert_eq!(expiring.metrics().script_calls(), 1, "still within the ttl");
        clock.advance(Duration::from_millis(1));
        expiring.acquire_async().await.unwrap();
        let m = expiring.metrics();
        assert_eq!(m.script_calls(), 2, "expired: one refill");
        assert_eq!(m.returned_permits(), 2, "the 2 never handed out went back");
        assert_eq!(m.leased_permits(), 8);
    });
}

#[test]
fn a_dropped_acquire_loses_no_leased_permit_and_a_panic_wedges_nothing() {
    let server = server();
    let limiter = limiter(
        "cancel",
        config(&server.url())
            .limit_for_period(5)
            .limit_refresh_period(Duration::from_secs(30))
            .lease_size(5),
    );
    run(async {
        // Dropped after its first poll: the refill is in flight in its own
        // task, and its lease lands for the next acquire.
        let mut dropped = Box::pin(limiter.acquire_async());
        assert!(
            futures::poll!(dropped.as_mut()).is_pending(),
            "its refill is a round trip"
        );
        drop(dropped);
        for i in 0..5 {
            let grant = limiter.acquire_async().await.unwrap();
            assert_eq!(grant.decided_by(), DecidedBy::Lease, "{i}");
        }
        assert!(limiter.acquire_async().await.is_err(), "exactly 5");
        let m = limiter.metrics();
        assert_eq!(
            (m.leases(), m.leased_permits(), m.lease_grants()),
            (1, 5, 5)
        );
        assert_eq!(m.script_calls(), 2, "the lease and the refused refill");
    });

    // Panics in user code, after a leased grant, in tasks and on threads.
    let panicking = limiter_with_room(&server.url(), "panics");
    run(async {
        for _ in 0..3 {
            let l = panicking.clone();
            let joined = tokio::spawn(async move {
                l.call_async(async {
                    panic!("user code");
                    #[allow(unreachable_code)]
                    Ok::<(), std::io::Error>(())
                })
                .await
            })
            .await;
            assert!(joined.unwrap_err().is_panic());
        }
        let l = panicking.clone();
        let joined = std::thread::spawn(move || l.call(|| -> Result<(), ()> { panic!("sync") }));
        assert!(joined.join().is_err());
        for _ in 0..6 {
            assert_eq!(
                panicking.acquire_async().await.unwrap().decided_by(),
                DecidedBy::Lease
            );
        }
        let m = panicking.metrics();
        assert_eq!(m.lease_grants(), 10, "4 spent by panicking calls, 6 after");
        assert_eq!(
            m.leased_permits() - m.lease_grants(),
            u64::from(panicking.leased_permits())
        );
    });
}

fn limiter_with_room(url: &str, name: &str) -> DistributedRateLimiter {
    limiter(
        name,
        config(url)
            .limit_for_period(100)
            .limit_refresh_period(Duration::from_secs(30))
            .lease_size(5),
    )
}

/// Waiting acquires with leases on take turns in the order they asked: the
/// lease's permits first, then each waiter reserves (nothing is free), and
/// every one whose wait fits its timeout is served, none before an earlier
/// one.
#[test]
fn waiting_acquires_with_leases_are_served_in_the_order_they_asked() {
    let server = server();
    let limiter = limiter(
        "waiters",
        config(&server.url())
            .limit_for_period(2)
            .limit_refresh_period(Duration::from_millis(200))
            .buckets(2)
            .lease_size(2)
            .timeout_duration(Duration::from_secs(3)),
    );
    // One thread: the tasks first run, and so ask, in the order spawned.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut tasks = Vec::new();
        for i in 0..8u32 {
            let l = limiter.clone();
            tasks.push(tokio::spawn(async move { (i, l.acquire_async().await) }));
        }
        let mut times = Vec::new();
        for task in tasks {
            let (i, grant) = task.await.unwrap();
            let grant = grant.unwrap_or_else(|e| panic!("waiter {i} refused: {e}"));
            times.push(grant.server_time_micros().unwrap());
        }
        assert!(
            times.windows(2).all(|w| w[0] <= w[1]),
            "granted in the order asked: {times:?}"
        );
    });
    let m = limiter.metrics();
    assert_eq!(m.successful_acquires(), 8);
    assert!(m.lease_grants() >= 2, "the first lease served two: {m:?}");
}

/// With a lease in hand the lease serves first, whatever the policy: its
/// permits were counted by Redis. Once it is spent the policy decides, as
/// without leases.
#[test]
fn each_failure_policy_decides_once_the_lease_in_hand_is_spent() {
    let mut own = RedisServer::start();
    let policies = [
        FailurePolicy::FailClosed,
        FailurePolicy::FailOpen,
        FailurePolicy::LocalFallback {
            expected_instances: 2,
        },
    ];
    let limiters: Vec<_> = policies
        .iter()
        .map(|&policy| {
            limiter(
                &format!("policy-{}", policy.as_str()),
                config(&own.url())
                    .limit_for_period(10)
                    .limit_refresh_period(Duration::from_secs(30))
                    .lease_size(3)
                    .failure_policy(policy),
            )
        })
        .collect();
    run(async {
        for l in &limiters {
            assert_eq!(
                l.acquire_async().await.unwrap().decided_by(),
                DecidedBy::Lease
            );
        }
        own.kill();
        for l in &limiters {
            for _ in 0..2 {
                let grant = l.acquire_async().await.unwrap();
                assert_eq!(grant.decided_by(), DecidedBy::Lease, "{}", l.name());
            }
            assert_eq!(
                l.metrics().script_calls(),
                1,
                "no round trip while the lease lasts"
            );
        }
        assert!(matches!(
            limiters[0].acquire_async().await,
            Err(AcquireError::NotPermitted(_))
        ));
        assert_eq!(
            limiters[1].acquire_async().await.unwrap().decided_by(),
            DecidedBy::FailOpen
        );
        assert_eq!(
            limiters[2].acquire_async().await.unwrap().decided_by(),
            DecidedBy::LocalFallback
        );
        for l in &limiters {
            let m = l.metrics();
            assert!(m.backend_failing(), "{}: {m:?}", l.name());
            assert_eq!(m.fallback_decisions(), 1, "{}: {m:?}", l.name());
        }
    });
}

// ---------------------------------------------------------------------------
// The measurement (ignored by default; prints the table):
//
//   cargo test --release --features redis --test redis_lease -- --ignored \
//       measure_leases_beside_one_round_trip_per_acquire --nocapture

const MEASURE_RATE: &str = "RESIL_LEASE_MEASURE_RATE";
const MEASURE_SECS: u64 = 3;
const MEASURE_LIMIT: u32 = 3000;

#[test]
#[ignore = "a child process of the lease measurement"]
fn child_process_offers_a_fixed_load() {
    let env = |k: &str| std::env::var(k).expect("started by the measurement");
    let lease: u32 = env(CHILD_LEASE).parse().unwrap();
    let rate: u64 = env(MEASURE_RATE).parse().unwrap();
    let config = config(&env(CHILD_URL))
        .limit_for_period(MEASURE_LIMIT)
        .limit_refresh_period(Duration::from_secs(1))
        .lease_size(lease)
        .build()
        .unwrap();
    let limiter = DistributedRateLimiter::new(env(CHILD_KEY), config).unwrap();
    // The harness's "test … ..." has no line end yet.
    println!();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (lat, grants) = rt.block_on(async {
        // Open loop: one acquire every 1/rate s, whether the last answered.
        let mut tick = tokio::time::interval(Duration::from_nanos(1_000_000_000 / rate));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Burst);
        let stop = Instant::now() + Duration::from_secs(MEASURE_SECS);
        let mut tasks = Vec::new();
        while Instant::now() < stop {
            tick.tick().await;
            let l = limiter.clone();
            tasks.push(tokio::spawn(async move {
                let t = Instant::now();
                let granted = l.acquire_async().await;
                let lat = t.elapsed().as_nanos() as u64;
                let at = granted.ok().map(|g| match g.decided_by() {
                    DecidedBy::Lease => micros_now(),
                    _ => g.server_time_micros().unwrap_or_else(micros_now),
                });
                (lat, at)
            }));
        }
        let mut lat = Vec::new();
        let mut grants = Vec::new();
        for task in tasks {
            let (l, g) = task.await.unwrap();
            lat.push(l);
            grants.extend(g);
        }
        (lat, grants)
    });
    for l in lat {
        println!("LAT {l}");
    }
    for g in grants {
        println!("GRANT {g}");
    }
    println!("CALLS {}", limiter.metrics().script_calls());
}

#[test]
#[ignore = "a measurement: prints round trips, Redis CPU and p99 latency per acquire with and without leases"]
fn measure_leases_beside_one_round_trip_per_acquire() {
    const PROCESSES: usize = 3;
    let server = server();
    let mut control = server.control();
    let cpu = |c: &mut redis::Connection| -> f64 {
        ["used_cpu_sys", "used_cpu_user"]
            .iter()
            .map(|f| info_field(c, "cpu", f).unwrap().parse::<f64>().unwrap())
            .sum()
    };
    println!(
        "\n{PROCESSES} processes, each offering a fixed rate for {MEASURE_SECS}s, limit \
         {MEASURE_LIMIT}/s (sliding window, timeout 0)\n"
    );
    println!(
        "| offered | lease-size | acquires | granted | round trips/acquire | Redis CPU µs/acquire | \
         p99 latency | most in a 1 s window | bound |"
    );
    println!("|---|---|---|---|---|---|---|---|---|");
    // Below the limit (every acquire can be granted), and above it.
    for (rate, lease) in [
        (800u64, 0u32),
        (800, 10),
        (800, 50),
        (1200, 0),
        (1200, 10),
        (1200, 50),
    ] {
        let key = format!("measure-{lease}-{}", micros_now());
        let (cpu0, calls0) = (cpu(&mut control), command_calls(&mut control, "evalsha"));
        let exe = std::env::current_exe().unwrap();
        let children: Vec<_> = (0..PROCESSES)
            .map(|_| {
                Command::new(&exe)
                    .args([
                        "child_process_offers_a_fixed_load",
                        "--exact",
                        "--ignored",
                        "--nocapture",
                        "--test-threads=1",
                    ])
                    .env(CHILD_URL, server.url())
                    .env(CHILD_LEASE, lease.to_string())
                    .env(CHILD_KEY, &key)
                    .env(MEASURE_RATE, rate.to_string())
                    .stdout(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let (mut lat, mut grants, mut calls) = (Vec::new(), Vec::new(), 0u64);
        for child in children {
            let out = child.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(out.status.success(), "{stdout}");
            for line in stdout.lines() {
                if let Some(v) = line.strip_prefix("LAT ") {
                    lat.push(v.parse::<u64>().unwrap());
                } else if let Some(v) = line.strip_prefix("GRANT ") {
                    grants.push(v.parse::<u64>().unwrap());
                } else if let Some(v) = line.strip_prefix("CALLS ") {
                    calls += v.parse::<u64>().unwrap();
                }
            }
        }
        let (cpu1, calls1) = (cpu(&mut control), command_calls(&mut control, "evalsha"));
        lat.sort_unstable();
        grants.sort_unstable();
        let acquires = lat.len() as f64;
        let p99 = Duration::from_nanos(lat[lat.len() * 99 / 100]);
        let most = max_in_any_window(&grants, 1_000_000, true);
        let bound = MEASURE_LIMIT as usize + PROCESSES * lease as usize;
        // Redis's own count: the limiters' script calls, plus the second
        // EVALSHA of each call that found the script not loaded yet (the
        // first calls of each process, sent together before one loads it).
        let round_trips = calls1 - calls0;
        assert!(round_trips >= calls, "{round_trips} < {calls}");
        println!(
            "| {}/s | {lease} | {} | {} | {:.3} | {:.2} | {p99:?} | {most} | {bound} |",
            rate * PROCESSES as u64,
            lat.len(),
            grants.len(),
            round_trips as f64 / acquires,
            (cpu1 - cpu0) * 1e6 / acquires,
        );
        assert!(most <= bound, "lease {lease}: {most} > {bound}");
    }
}
