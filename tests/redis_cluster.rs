//! The distributed rate limiter on a real Redis Cluster: three primaries and
//! three replicas the test starts once for the whole binary (see
//! `support/redis_cluster.rs`), shared by three processes, while the
//! limiter's slot moves to another primary, and while its primary is killed
//! and its replica takes over.
//!
//! Time is real (the servers' clocks decide): the test asserts counts and
//! bounds over the grants' server timestamps, never durations.
#![cfg(feature = "redis-cluster")]

#[path = "support/limiter.rs"]
mod limiter_support;
#[path = "support/windows.rs"]
mod windows;
use limiter_support::acquire_for_one_second_and_print;
use windows::{max_in_any_window, micros_now};
#[path = "support/children.rs"]
mod children;
#[path = "support/redis_cluster.rs"]
mod redis_cluster;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis_cluster::RedisCluster;
use resil::distributed_rate_limiter::{
    DecidedBy, DistributedRateLimiter, DistributedRateLimiterConfig, FailurePolicy,
    KeyedDistributedRateLimiter, Topology,
};
use resil::keyed::KeyedConfig;

const CHILD_URLS: &str = "RESIL_REDIS_CLUSTER_CHILD_URLS";
const LIMIT: usize = 10;
const PERIOD_MICROS: u64 = 200_000;

fn config(urls: &str) -> DistributedRateLimiterConfig {
    DistributedRateLimiterConfig::builder()
        .redis_url(urls)
        .topology(Topology::Cluster)
        .key_prefix("cluster:")
        .limit_for_period(LIMIT as u32)
        .limit_refresh_period(Duration::from_micros(PERIOD_MICROS))
        .buckets(4)
        .timeout_duration(Duration::from_millis(400))
        .redis_timeout(Duration::from_secs(2))
        .failure_policy(FailurePolicy::FailClosed)
        .build()
        .unwrap()
}

#[test]
#[ignore = "a child process of the cluster test, started by it with the node URLs in the environment"]
fn child_process_acquires_on_the_cluster_for_one_second() {
    let urls = std::env::var(CHILD_URLS).expect("started by the cluster test");
    let limiter = DistributedRateLimiter::new("shared", config(&urls)).unwrap();
    acquire_for_one_second_and_print(&limiter);
}

fn three_processes_share_one_quota(cluster: &RedisCluster) {
    let urls = cluster.urls();
    let outputs = children::run_copies(
        "child_process_acquires_on_the_cluster_for_one_second",
        3,
        &[(CHILD_URLS, &urls)],
    );
    let mut grants = Vec::new();
    for stdout in outputs {
        assert!(
            stdout.contains("FALLBACK 0"),
            "Redis decided all:\n{stdout}"
        );
        grants.extend(
            stdout
                .lines()
                .filter_map(|l| l.strip_prefix("GRANT "))
                .map(|t| t.parse::<u64>().unwrap()),
        );
    }
    grants.sort_unstable();
    assert!(grants.len() >= 30, "the quota was used: {}", grants.len());
    assert_eq!(
        max_in_any_window(&grants, PERIOD_MICROS, false),
        LIMIT,
        "3 processes on a cluster: at most N in any window, and N reached"
    );
}

/// Acquires from 4 tasks until `stop`, recording (server time, decided by
/// Redis) of every grant, and the client time when each was made.
async fn pump(limiter: &DistributedRateLimiter, stop: Arc<AtomicBool>) -> Vec<(u64, u64)> {
    let tasks: Vec<_> = (0..4)
        .map(|_| {
            let limiter = limiter.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                let mut grants = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    match limiter.acquire_async().await {
                        Ok(g) => {
                            assert_eq!(g.decided_by(), DecidedBy::Redis, "fail-closed");
                            grants.push((g.server_time_micros().unwrap(), micros_now()));
                        }
                        Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
                    }
                }
                grants
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    all.sort_unstable();
    all
}

fn resharding_the_limiters_slot(cluster: &RedisCluster, rt: &tokio::runtime::Runtime) {
    let limiter = DistributedRateLimiter::new("reshard", config(&cluster.urls())).unwrap();
    let slot = cluster.slot(limiter.key());
    let from = cluster.owner(slot);
    let to = (0..cluster.nodes.len())
        .find(|&i| i != from && cluster.is_primary(i))
        .expect("another primary");
    let stop = Arc::new(AtomicBool::new(false));
    let grants = rt.block_on(async {
        let pumping = tokio::spawn({
            let limiter = limiter.clone();
            let stop = stop.clone();
            async move { pump(&limiter, stop).await }
        });
        tokio::time::sleep(Duration::from_millis(400)).await;
        let moved = tokio::task::block_in_place(|| {
            cluster.move_slot(slot, from, to);
            micros_now()
        });
        tokio::time::sleep(Duration::from_millis(600)).await;
        stop.store(true, Ordering::Relaxed);
        let grants = pumping.await.unwrap();
        let after = grants.iter().filter(|(_, at)| *at > moved).count();
        assert!(after >= LIMIT, "grants resumed on the new owner: {after}");
        grants
    });
    assert_eq!(cluster.owner(slot), to, "the slot moved");
    let times: Vec<u64> = grants.iter().map(|(t, _)| *t).collect();
    assert!(
        max_in_any_window(&times, PERIOD_MICROS, false) <= LIMIT,
        "the state moved with the slot: the bound held through the move"
    );
    let m = limiter.metrics();
    assert_eq!(m.fallback_decisions(), 0, "MOVED/ASK were followed: {m:?}");
}

fn killing_the_limiters_primary(cluster: &mut RedisCluster, rt: &tokio::runtime::Runtime) {
    let limiter = DistributedRateLimiter::new("failover", config(&cluster.urls())).unwrap();
    let slot = cluster.slot(limiter.key());
    let primary = cluster.owner(slot);
    let stop = Arc::new(AtomicBool::new(false));
    let mut events = limiter.subscribe();
    let (grants, killed) = rt.block_on(async {
        let pumping = tokio::spawn({
            let limiter = limiter.clone();
            let stop = stop.clone();
            async move { pump(&limiter, stop).await }
        });
        tokio::time::sleep(Duration::from_millis(400)).await;
        cluster.nodes[primary].kill();
        let killed = micros_now();
        // The replica takes over after the node timeout; wait for grants.
        let give_up = Instant::now() + Duration::from_secs(20);
        while Instant::now() < give_up {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let m = limiter.metrics();
            if m.fallback_decisions() > 0 && !m.backend_failing() {
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(600)).await;
        stop.store(true, Ordering::Relaxed);
        (pumping.await.unwrap(), killed)
    });
    let after = grants.iter().filter(|(_, at)| *at > killed).count();
    let causes: std::collections::BTreeSet<String> = events
        .drain()
        .iter()
        .filter_map(|e| e.cause().map(str::to_owned))
        .collect();
    assert!(
        after >= LIMIT,
        "the promoted replica grants: {after} grants after the kill, {:?}, causes {causes:?}",
        limiter.metrics()
    );
    let times: Vec<u64> = grants.iter().map(|(t, _)| *t).collect();
    // A replica may not have received the last writes before the kill: a
    // window spanning the failover may hold up to 2N (docs/distributed-rate-limiter.md, "Where the
    // bound ends"), never more; fail-closed granted nothing meanwhile.
    let most = max_in_any_window(&times, PERIOD_MICROS, false);
    assert!(most <= 2 * LIMIT, "{most} in one window across a failover");
    let before: Vec<u64> = grants
        .iter()
        .filter(|(_, at)| *at < killed)
        .map(|(t, _)| *t)
        .collect();
    assert!(max_in_any_window(&before, PERIOD_MICROS, false) <= LIMIT);
    cluster.wait_until_ok();
}

/// The keyed family of the cluster tests: `LIMIT` per tenant, in a window
/// longer than any test runs.
fn keyed_config(urls: &str) -> DistributedRateLimiterConfig {
    config(urls)
        .to_builder()
        .key_prefix("cluster-keyed:")
        .limit_refresh_period(Duration::from_secs(30))
        .timeout_duration(Duration::ZERO)
        .build()
        .unwrap()
}

const TENANTS: [&str; 3] = ["acme", "globex", "initech"];

#[test]
#[ignore = "a child process of the cluster test, started by it with the node URLs in the environment"]
fn child_process_asks_each_tenant_eight_times_on_the_cluster() {
    let urls = std::env::var(CHILD_URLS).expect("started by the cluster test");
    let family =
        KeyedDistributedRateLimiter::new("api", keyed_config(&urls), KeyedConfig::default())
            .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut granted = [0usize; 3];
        for _ in 0..8 {
            for (i, t) in TENANTS.iter().enumerate() {
                if let Ok(g) = family.get(t).acquire_async().await {
                    assert_eq!(g.decided_by(), DecidedBy::Redis);
                    granted[i] += 1;
                }
            }
        }
        for (t, n) in TENANTS.iter().zip(granted) {
            println!("TENANT {t} {n}");
        }
        println!("FALLBACK {}", family.metrics().fallback_decisions());
    });
}

/// A keyed family on the cluster: each key's state in the slot of its hash
/// tag, each key its own quota, shared by three processes (three families,
/// three cluster connections).
fn keyed_quotas_on_the_cluster_across_three_processes(cluster: &RedisCluster) {
    let urls = cluster.urls();
    let family =
        KeyedDistributedRateLimiter::new("api", keyed_config(&urls), KeyedConfig::default())
            .unwrap();
    // Each key's Redis key hashes by its tag: the tenant's slot.
    for t in TENANTS {
        assert_eq!(cluster.slot(&family.redis_key(t)), cluster.slot(t));
    }
    let outputs = children::run_copies(
        "child_process_asks_each_tenant_eight_times_on_the_cluster",
        3,
        &[(CHILD_URLS, &urls)],
    );
    let mut granted = [0usize; 3];
    for stdout in &outputs {
        assert!(
            stdout.contains("FALLBACK 0"),
            "Redis decided all:\n{stdout}"
        );
        for (i, t) in TENANTS.iter().enumerate() {
            let n = stdout
                .lines()
                // The harness prints the test's name on the first line's start.
                .find_map(|l| l.split_once(&format!("TENANT {t} ")).map(|(_, n)| n))
                .unwrap_or_else(|| panic!("a line for {t}:\n{stdout}"));
            granted[i] += n.trim().parse::<usize>().unwrap();
        }
    }
    // 24 asks per tenant across the three processes: each tenant gets
    // exactly its own N, whichever primary holds its slot.
    assert_eq!(granted, [LIMIT; 3]);
}

#[test]
fn a_quota_on_a_three_primary_cluster_holds_across_processes_a_reshard_and_a_failover() {
    let mut cluster = RedisCluster::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    three_processes_share_one_quota(&cluster);
    keyed_quotas_on_the_cluster_across_three_processes(&cluster);
    resharding_the_limiters_slot(&cluster, &rt);
    killing_the_limiters_primary(&mut cluster, &rt);
}
