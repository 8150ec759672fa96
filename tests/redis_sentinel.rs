//! The distributed rate limiter behind Redis Sentinel: a real primary, a
//! replica and a sentinel the test starts (see `support/redis_sentinel.rs`);
//! the limiter finds the primary through the sentinel, and follows it when
//! the primary is killed and the sentinel promotes the replica.
//!
//! Time is real: the test asserts counts and bounds over the grants' server
//! timestamps, never durations.
#![cfg(feature = "redis-sentinel")]

#[path = "support/windows.rs"]
mod windows;
use windows::{max_in_any_window, micros_now};
#[path = "support/redis_sentinel.rs"]
mod redis_sentinel;
#[path = "support/redis_server.rs"]
mod redis_server;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use redis_sentinel::{RedisSentinel, MASTER_NAME};
use resil::distributed_rate_limiter::{
    DecidedBy, DistributedRateLimiter, DistributedRateLimiterConfig, FailurePolicy, Topology,
};

const LIMIT: usize = 10;
const PERIOD_MICROS: u64 = 200_000;

#[test]
fn the_limiter_finds_the_primary_through_the_sentinel_and_follows_a_failover() {
    let mut setup = RedisSentinel::start();
    let limiter = DistributedRateLimiter::new(
        "sentinel",
        DistributedRateLimiterConfig::builder()
            .redis_url(setup.sentinel_url())
            .topology(Topology::Sentinel)
            .sentinel_master_name(MASTER_NAME)
            .key_prefix("sentinel:")
            .limit_for_period(LIMIT as u32)
            .limit_refresh_period(Duration::from_micros(PERIOD_MICROS))
            .buckets(4)
            .timeout_duration(Duration::from_millis(400))
            .redis_timeout(Duration::from_secs(1))
            .failure_policy(FailurePolicy::FailClosed)
            .build()
            .unwrap(),
    )
    .unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let replica_port = setup.replica.port();
    let (grants, killed) = rt.block_on(async {
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
        tokio::time::sleep(Duration::from_millis(400)).await;
        let before = limiter.metrics().successful_acquires();
        assert!(
            before >= LIMIT as u64,
            "granted through the sentinel: {before}"
        );
        setup.primary.kill();
        let killed = micros_now();
        let give_up = Instant::now() + Duration::from_secs(30);
        while setup.master_port() != Some(replica_port) {
            assert!(
                Instant::now() < give_up,
                "the sentinel promoted the replica"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let promoted = limiter.metrics().successful_acquires();
        let give_up = Instant::now() + Duration::from_secs(10);
        while limiter.metrics().successful_acquires() < promoted + LIMIT as u64 {
            assert!(
                Instant::now() < give_up,
                "grants resume on the promoted replica: {:?}",
                limiter.metrics()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        stop.store(true, Ordering::Relaxed);
        let mut all = Vec::new();
        for t in tasks {
            all.extend(t.await.unwrap());
        }
        all.sort_unstable();
        (all, killed)
    });
    let times: Vec<u64> = grants.iter().map(|(t, _)| *t).collect();
    let before: Vec<u64> = grants
        .iter()
        .filter(|(_, at)| *at < killed)
        .map(|(t, _)| *t)
        .collect();
    assert_eq!(max_in_any_window(&before, PERIOD_MICROS, false), LIMIT);
    // Replication is asynchronous: a window spanning the failover may hold
    // up to 2N (docs/distributed-rate-limiter.md, "Where the bound ends"), never more.
    assert!(max_in_any_window(&times, PERIOD_MICROS, false) <= 2 * LIMIT);
    assert!(
        limiter.metrics().fallback_refusals() > 0,
        "fail-closed meanwhile"
    );
}
