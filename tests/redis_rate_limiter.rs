//! The distributed rate limiter against a real `redis-server`.
//!
//! Every test starts its own server on a free 127.0.0.1 port (see
//! `support/redis_server.rs`) and fails, never skips, when it cannot. These
//! tests use real time against a real server: they assert counts and
//! invariants (checked against the server's own timestamps), never durations.
#![cfg(feature = "redis")]

#[path = "support/limiter.rs"]
mod limiter_support;
#[path = "support/redis_server.rs"]
mod redis_server;
#[path = "support/windows.rs"]
mod windows;
use windows::max_in_any_window;

use std::collections::HashSet;
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use limiter_support::{acquire_for_one_second_and_print, limiter, run};
use redis_server::{command_calls, RedisServer};
use resil::clock::{Clock, SystemClock};
use resil::distributed_rate_limiter::{
    Algorithm, BackendFailure, DecidedBy, DistributedRateLimiter, DistributedRateLimiterConfig,
    DistributedRateLimiterConfigBuilder, DistributedRateLimiterEventKind, FailurePolicy, Grant,
};
use resil::rate_limiter::AcquireError;
use resil::{Error, ErrorKind};

fn config(server: &RedisServer) -> DistributedRateLimiterConfigBuilder {
    DistributedRateLimiterConfig::builder()
        .redis_url(server.url())
        .key_prefix("test:")
        .timeout_duration(Duration::ZERO)
        // Generous: on a busy machine a round trip may take long, and these
        // tests expect Redis's verdict unless they say otherwise.
        .redis_timeout(Duration::from_secs(2))
}

/// Acquires until Redis itself grants (a slow machine may time a call out).
async fn from_redis(limiter: &DistributedRateLimiter) -> Grant {
    for _ in 0..100 {
        match limiter.acquire_async().await {
            Ok(grant) if grant.decided_by() == DecidedBy::Redis => return grant,
            _ => tokio::time::sleep(Duration::from_millis(20)).await,
        }
    }
    panic!(
        "{}: Redis never granted in 100 attempts: {:?}",
        limiter.name(),
        limiter.metrics()
    )
}

// ---------------------------------------------------------------------------
// Several OS processes, one quota.

const CHILD_URL: &str = "RESIL_REDIS_CHILD_URL";
const CHILD_ALGORITHM: &str = "RESIL_REDIS_CHILD_ALGORITHM";

/// Shared by the parent tests and the child processes.
fn shared_config(url: &str, algorithm: &str) -> DistributedRateLimiterConfig {
    let builder = DistributedRateLimiterConfig::builder()
        .redis_url(url)
        .key_prefix("processes:")
        .limit_for_period(10)
        .limit_refresh_period(Duration::from_millis(200))
        .buckets(4)
        .timeout_duration(Duration::from_millis(400))
        .redis_timeout(Duration::from_secs(2));
    match algorithm {
        "gcra" => builder.algorithm(Algorithm::Gcra).burst(3),
        _ => builder,
    }
    .build()
    .unwrap()
}

#[test]
#[ignore = "a child process of the multi-process tests, started by them with its settings in the environment"]
fn child_process_acquires_for_one_second() {
    let url =
        std::env::var(CHILD_URL).expect("started by a multi-process test, which sets the URL");
    let algorithm = std::env::var(CHILD_ALGORITHM).unwrap();
    let limiter = DistributedRateLimiter::new("shared", shared_config(&url, &algorithm)).unwrap();
    acquire_for_one_second_and_print(&limiter);
}

/// Starts `n` copies of this test binary, each acquiring for a second, and
/// returns every grant's server timestamp, sorted.
fn grants_of_processes(server: &RedisServer, algorithm: &str, n: usize) -> Vec<u64> {
    let exe = std::env::current_exe().unwrap();
    let children: Vec<_> = (0..n)
        .map(|_| {
            Command::new(&exe)
                .args([
                    "child_process_acquires_for_one_second",
                    "--exact",
                    "--ignored",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_URL, server.url())
                .env(CHILD_ALGORITHM, algorithm)
                .stdout(std::process::Stdio::piped())
                .spawn()
                .expect("start a child process")
        })
        .collect();
    let mut grants = Vec::new();
    for child in children {
        let out = child.wait_with_output().unwrap();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success(), "a child process failed:\n{stdout}");
        let mut fallbacks = None;
        for line in stdout.lines() {
            if let Some(t) = line.strip_prefix("GRANT ") {
                grants.push(t.parse::<u64>().unwrap());
            } else if let Some(n) = line.strip_prefix("FALLBACK ") {
                fallbacks = Some(n.parse::<u64>().unwrap());
            }
        }
        assert_eq!(fallbacks, Some(0), "every grant came from Redis:\n{stdout}");
    }
    grants.sort_unstable();
    grants
}

#[test]
fn processes_sharing_a_sliding_quota_never_exceed_it_in_any_window_of_server_time() {
    let server = RedisServer::start();
    let grants = grants_of_processes(&server, "sliding", 3);
    // 3 processes × 3 tasks asked far more than 10 per 200 ms for a second.
    assert!(
        grants.len() >= 30,
        "the quota was used: {} grants",
        grants.len()
    );
    assert_eq!(
        max_in_any_window(&grants, 200_000, true),
        10,
        "at most N in any closed window of T, and the quota is reached"
    );
}

#[test]
fn processes_sharing_a_gcra_quota_stay_within_burst_plus_n_minus_one_per_window() {
    let server = RedisServer::start();
    let grants = grants_of_processes(&server, "gcra", 3);
    assert!(
        grants.len() >= 30,
        "the quota was used: {} grants",
        grants.len()
    );
    let most = max_in_any_window(&grants, 200_000, false);
    assert!(most < 3 + 10, "burst + N - 1 per window of T, got {most}");
    // Paced: GCRA with emission I = 20 ms and tolerance L = (burst - 1) I
    // admits at most floor((w - 1 µs + L) / I) + 1 in any window [t, t + w):
    // 7 in 100 ms, where a sliding window may put all 10.
    let most = max_in_any_window(&grants, 100_000, false);
    assert!(most <= 7, "paced: {most} grants in 100 ms");
}

// ---------------------------------------------------------------------------
// Client clocks.

/// A monotonic clock reading `offset` ahead of (or behind) the system's.
#[derive(Debug)]
struct SkewedClock {
    ahead: bool,
    offset: Duration,
}

impl Clock for SkewedClock {
    fn now_nanos(&self) -> u64 {
        let now = SystemClock.now_nanos();
        let offset = self.offset.as_nanos() as u64;
        if self.ahead {
            now + offset
        } else {
            now.saturating_sub(offset)
        }
    }
}

#[test]
fn clients_with_clocks_five_seconds_apart_still_share_one_quota() {
    let server = RedisServer::start();
    run(async {
        let quota = || {
            config(&server)
                .limit_for_period(10)
                .limit_refresh_period(Duration::from_secs(5))
        };
        let skewed = |ahead| {
            let clock = SkewedClock {
                ahead,
                offset: Duration::from_secs(5),
            };
            DistributedRateLimiter::with_clock("skew", quota().build().unwrap(), clock).unwrap()
        };
        let (fast, slow) = (skewed(true), skewed(false));
        let mut granted = 0;
        for i in 0..40 {
            let limiter = if i % 2 == 0 { &fast } else { &slow };
            granted += usize::from(limiter.acquire_async().await.is_ok());
        }
        assert_eq!(granted, 10, "one quota of 10 for both clients");

        // The same skew breaks a script that takes the client's clock: the
        // client 5 s ahead sees the other's grants as expired.
        let script = redis::Script::new(include_str!("../benches/redisson_like.lua"));
        let mut conn = redis::Client::open(server.url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let wall_ms = || {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap()
                .as_millis() as i64
        };
        let mut baseline = 0;
        for i in 0..40 {
            let skew = if i % 2 == 0 { 5_000 } else { -5_000 };
            let (ok, _): (i64, i64) = script
                .key("baseline:value")
                .key("baseline:grants")
                .arg(10)
                .arg(5_000)
                .arg(wall_ms() + skew)
                .arg(1)
                .arg(i)
                .invoke_async(&mut conn)
                .await
                .unwrap();
            baseline += ok as usize;
        }
        assert!(
            baseline > 10,
            "a client-clock script over-grants under skew: {baseline}"
        );
    });
}

// ---------------------------------------------------------------------------
// Redis down, slow, flushed.

#[test]
fn redis_killed_and_restarted_applies_each_policy_then_service_resumes() {
    let mut server = RedisServer::start();
    run(async {
        let with = |name: &str, policy| {
            limiter(
                name,
                config(&server)
                    .limit_for_period(4)
                    .limit_refresh_period(Duration::from_secs(10))
                    .redis_timeout(Duration::from_secs(1))
                    .failure_policy(policy),
            )
        };
        let closed = with("closed", FailurePolicy::FailClosed);
        let open = with("open", FailurePolicy::FailOpen);
        let local = with(
            "local",
            FailurePolicy::LocalFallback {
                expected_instances: 2,
            },
        );
        assert_eq!(local.local_fallback_limit(), Some(2));
        for l in [&closed, &open, &local] {
            let _ = from_redis(l).await;
        }
        let before = [&closed, &open, &local].map(|l| l.metrics());
        let mut events = closed.subscribe();

        server.kill();

        let refused = closed.acquire_async().await.unwrap_err();
        assert!(
            matches!(refused, AcquireError::NotPermitted(_)),
            "{refused:?}"
        );
        let m = closed.metrics();
        assert_eq!(m.fallback_refusals() - before[0].fallback_refusals(), 1);
        let failures = m.redis_unavailable() + m.redis_timeouts();
        let failures_before = before[0].redis_unavailable() + before[0].redis_timeouts();
        assert_eq!(failures - failures_before, 1, "{m:?}");
        let kinds: Vec<_> = events.drain().into_iter().map(|e| e.kind()).collect();
        assert_eq!(kinds.len(), 2, "{kinds:?}");
        assert!(
            matches!(kinds[0], DistributedRateLimiterEventKind::BackendFailure(_)),
            "{kinds:?}"
        );
        assert_eq!(
            kinds[1],
            DistributedRateLimiterEventKind::FallbackAcquire {
                policy: FailurePolicy::FailClosed,
                granted: false
            }
        );

        for _ in 0..3 {
            assert_eq!(
                open.acquire_async().await.unwrap().decided_by(),
                DecidedBy::FailOpen
            );
        }
        assert_eq!(
            open.metrics().fallback_grants() - before[1].fallback_grants(),
            3
        );

        // The local share is ceil(4 / 2) = 2 per period.
        assert_eq!(
            local.acquire_async().await.unwrap().decided_by(),
            DecidedBy::LocalFallback
        );
        assert_eq!(
            local.acquire_async().await.unwrap().decided_by(),
            DecidedBy::LocalFallback
        );
        assert!(local.acquire_async().await.is_err());
        assert_eq!(
            (
                local.metrics().fallback_grants() - before[2].fallback_grants(),
                local.metrics().fallback_refusals() - before[2].fallback_refusals()
            ),
            (2, 1)
        );

        server.restart();

        for l in [&closed, &open, &local] {
            let mut attempts = 0;
            loop {
                attempts += 1;
                match l.acquire_async().await {
                    Ok(g) if g.decided_by() == DecidedBy::Redis => break,
                    _ => assert!(attempts < 200, "{} never got back to Redis", l.name()),
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    });
}

#[test]
fn client_pause_times_out_into_the_policy_without_hanging_or_resending() {
    let server = RedisServer::start();
    let mut control = server.control();
    run(async {
        let limiter = limiter(
            "paused",
            config(&server)
                .limit_for_period(10)
                .limit_refresh_period(Duration::from_secs(30))
                .redis_timeout(Duration::from_millis(100)),
        );
        let _ = from_redis(&limiter).await;
        let calls_before = command_calls(&mut control, "evalsha");
        let before = limiter.metrics();

        let _: () = redis::cmd("CLIENT")
            .arg("PAUSE")
            .arg(800)
            .query(&mut control)
            .unwrap();
        let refused = limiter.acquire_async().await.unwrap_err();
        assert!(matches!(refused, AcquireError::NotPermitted(_)));
        let m = limiter.metrics();
        assert_eq!(
            (
                m.redis_timeouts() - before.redis_timeouts(),
                m.fallback_refusals() - before.fallback_refusals()
            ),
            (1, 1),
            "{m:?}"
        );

        // Service resumes once the pause ends. No timed-out acquire was sent
        // again, but Redis ran each one when it could: each took a permit.
        let grant = from_redis(&limiter).await;
        let m = limiter.metrics();
        let taken = m.successful_acquires() + m.redis_timeouts();
        assert_eq!(
            grant.remaining(),
            Some(10 - taken as i64),
            "every call ran exactly once, answered in time or not: {m:?}"
        );
        assert_eq!(
            command_calls(&mut control, "evalsha") - calls_before,
            m.script_calls() - before.script_calls(),
            "one EVALSHA per acquire: nothing resent"
        );
    });
}

/// A TCP proxy in front of Redis whose existing connections can be made to
/// swallow everything (a peer gone without closing, a black-holed route),
/// while new connections still go through.
struct BlackholeProxy {
    port: u16,
    blackholed: Arc<AtomicBool>,
}

impl BlackholeProxy {
    async fn start(target: u16) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let blackholed = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&blackholed);
        tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                // Connections opened after the switch are not affected.
                let opened_after_switch = flag.load(Ordering::SeqCst);
                let server = tokio::net::TcpStream::connect(("127.0.0.1", target))
                    .await
                    .unwrap();
                tokio::spawn(pump(client, server, Arc::clone(&flag), opened_after_switch));
            }
        });
        BlackholeProxy { port, blackholed }
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }
}

/// Copies both ways until `dead` is set (then reads and drops everything).
async fn pump(
    client: tokio::net::TcpStream,
    server: tokio::net::TcpStream,
    dead: Arc<AtomicBool>,
    opened_after_switch: bool,
) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let dead = if opened_after_switch {
        Arc::new(AtomicBool::new(false))
    } else {
        dead
    };
    let (mut cr, mut cw) = client.into_split();
    let (mut sr, mut sw) = server.into_split();
    let d = Arc::clone(&dead);
    let up = async move {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = cr.read(&mut buf).await {
            if !d.load(Ordering::SeqCst) && sw.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    };
    let down = async move {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = sr.read(&mut buf).await {
            if !dead.load(Ordering::SeqCst) && cw.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
    };
    tokio::join!(up, down);
}

#[test]
fn a_connection_that_silently_stops_answering_is_replaced_and_service_resumes() {
    let server = RedisServer::start();
    run(async {
        let proxy = BlackholeProxy::start(server.port()).await;
        let limiter = limiter(
            "blackholed",
            DistributedRateLimiterConfig::builder()
                .redis_url(proxy.url())
                .key_prefix("test:")
                .timeout_duration(Duration::ZERO)
                .limit_for_period(1000)
                .redis_timeout(Duration::from_millis(100)),
        );
        let _ = from_redis(&limiter).await;
        proxy.blackholed.store(true, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(50)).await;
        let mut attempts = 0;
        loop {
            attempts += 1;
            if let Ok(g) = limiter.acquire_async().await {
                if g.decided_by() == DecidedBy::Redis {
                    break;
                }
            }
            assert!(attempts < 200, "never reconnected: {:?}", limiter.metrics());
        }
        let m = limiter.metrics();
        assert!(
            m.redis_timeouts() >= 2,
            "the old connection timed out first: {m:?}"
        );
        assert_eq!(
            m.fallback_refusals(),
            m.redis_timeouts() + m.redis_unavailable()
        );
    });
}

#[test]
fn script_flush_mid_run_reloads_the_script_and_keeps_the_quota() {
    let server = RedisServer::start();
    let mut control = server.control();
    run(async {
        for algorithm in [Algorithm::SlidingWindow, Algorithm::Gcra] {
            let limiter = limiter(
                "flushed",
                config(&server)
                    .algorithm(algorithm)
                    .limit_for_period(10)
                    .limit_refresh_period(Duration::from_secs(30)),
            );
            for expected in [9, 8, 7] {
                assert_eq!(
                    limiter.acquire_async().await.unwrap().remaining(),
                    Some(expected)
                );
            }
            let loads = command_calls(&mut control, "script|load");
            let _: () = redis::cmd("SCRIPT")
                .arg("FLUSH")
                .query(&mut control)
                .unwrap();
            for expected in [6, 5, 4] {
                let grant = limiter.acquire_async().await.unwrap();
                assert_eq!(grant.decided_by(), DecidedBy::Redis);
                assert_eq!(
                    grant.remaining(),
                    Some(expected),
                    "{algorithm}: the quota survived"
                );
            }
            assert_eq!(
                command_calls(&mut control, "script|load"),
                loads + 1,
                "loaded again once"
            );
            assert_eq!(limiter.metrics().fallback_decisions(), 0);
        }
    });
}

#[test]
fn idle_keys_disappear_after_their_ttl_and_an_expired_limiter_needs_no_initialisation() {
    let server = RedisServer::start();
    let mut control = server.control();
    run(async {
        let limiters = [Algorithm::SlidingWindow, Algorithm::Gcra].map(|algorithm| {
            limiter(
                "idle",
                config(&server)
                    .algorithm(algorithm)
                    .limit_for_period(5)
                    .limit_refresh_period(Duration::from_millis(300))
                    .buckets(3),
            )
        });
        for limiter in &limiters {
            let _ = limiter.acquire_async().await.unwrap();
            let ttl: i64 = redis::cmd("PTTL")
                .arg(limiter.key())
                .query(&mut control)
                .unwrap();
            // Sliding: up to T + T/3 (+1 ms); GCRA: one emission interval (60 ms).
            assert!(ttl > 0 && ttl <= 402, "{}: TTL {ttl} ms", limiter.key());
        }
        let give_up = Instant::now() + Duration::from_secs(3);
        loop {
            let keys: Vec<String> = redis::cmd("KEYS")
                .arg("test:*")
                .query(&mut control)
                .unwrap();
            if keys.is_empty() {
                break;
            }
            assert!(
                Instant::now() < give_up,
                "still there after 3 s idle: {keys:?}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for limiter in &limiters {
            let again = limiter.acquire_async().await.unwrap();
            assert_eq!(
                (again.decided_by(), again.remaining()),
                (DecidedBy::Redis, Some(4))
            );
        }
    });
}

// ---------------------------------------------------------------------------
// The quota itself.

#[test]
fn grants_landing_in_the_same_millisecond_are_each_counted() {
    // Reproduces the permit leak of Redisson issue #3804 (same-millisecond
    // members overwriting each other), which counts in buckets cannot have.
    let server = RedisServer::start();
    run(async {
        for algorithm in [Algorithm::SlidingWindow, Algorithm::Gcra] {
            let limiter = limiter(
                "same-ms",
                config(&server)
                    .algorithm(algorithm)
                    .limit_for_period(20)
                    .limit_refresh_period(Duration::from_secs(30)),
            );
            let attempts =
                futures::future::join_all((0..60).map(|_| limiter.acquire_async())).await;
            let grants: Vec<_> = attempts.into_iter().filter_map(Result::ok).collect();
            assert_eq!(grants.len(), 20, "{algorithm}");
            let times: HashSet<_> = grants
                .iter()
                .map(|g| g.server_time_micros().unwrap() / 1000)
                .collect();
            assert!(
                times.len() < grants.len(),
                "{algorithm}: several grants shared a millisecond"
            );
        }
    });
}

#[test]
fn several_permits_at_once_count_as_many_and_more_than_one_acquire_may_take_is_refused() {
    let server = RedisServer::start();
    run(async {
        let limiter = limiter(
            "bulk",
            config(&server)
                .limit_for_period(10)
                .limit_refresh_period(Duration::from_secs(30)),
        );
        assert_eq!(
            limiter.acquire_n_async(4).await.unwrap().remaining(),
            Some(6)
        );
        assert!(matches!(
            limiter.acquire_n_async(7).await,
            Err(AcquireError::NotPermitted(_))
        ));
        assert_eq!(
            limiter.acquire_n_async(6).await.unwrap().remaining(),
            Some(0)
        );
        let too_many = limiter.acquire_n_async(11).await.unwrap_err();
        assert!(
            matches!(too_many, AcquireError::ExceedsLimit(_)),
            "{too_many:?}"
        );
        assert_eq!(
            too_many.to_string(),
            "rate limiter 'bulk' cannot grant 11 permits at once: its limit_for_period is 10"
        );
        assert_eq!(
            limiter.metrics().script_calls(),
            3,
            "ExceedsLimit never reaches Redis"
        );

        let gcra = limiter_gcra(&server);
        let too_many = gcra.acquire_n_async(3).await.unwrap_err();
        assert!(matches!(too_many, AcquireError::ExceedsLimit(_)));
        assert_eq!(
            too_many.to_string(),
            "rate limiter 'bulk-gcra' cannot grant 3 permits at once: its burst is 2",
            "GCRA is bounded by its burst"
        );
        assert_eq!(gcra.acquire_n_async(2).await.unwrap().remaining(), Some(0));
    });
}

fn limiter_gcra(server: &RedisServer) -> DistributedRateLimiter {
    limiter(
        "bulk-gcra",
        config(server)
            .algorithm(Algorithm::Gcra)
            .limit_for_period(10)
            .limit_refresh_period(Duration::from_secs(30))
            .burst(2),
    )
}

#[test]
fn changing_the_rate_keeps_the_permits_already_taken() {
    let server = RedisServer::start();
    run(async {
        let at = |limit| {
            limiter(
                "resized",
                config(&server)
                    .limit_for_period(limit)
                    .limit_refresh_period(Duration::from_secs(30)),
            )
        };
        let five = at(5);
        for _ in 0..5 {
            let _ = five.acquire_async().await.unwrap();
        }
        let eight = at(8);
        let mut granted = 0;
        for _ in 0..6 {
            granted += usize::from(eight.acquire_async().await.is_ok());
        }
        assert_eq!(granted, 3, "raising 5 to 8 adds 3, it does not refill");
        assert!(
            at(2).acquire_async().await.is_err(),
            "lowering below the taken refuses"
        );
    });
}

#[test]
fn a_waiting_acquire_sleeps_until_its_permit_comes_back_and_a_hopeless_one_is_refused_at_once() {
    let server = RedisServer::start();
    run(async {
        let quota = || {
            config(&server)
                .limit_for_period(2)
                .limit_refresh_period(Duration::from_millis(300))
                .buckets(3)
        };
        let patient = limiter("wait", quota().timeout_duration(Duration::from_secs(3)));
        let first = patient.acquire_async().await.unwrap();
        let _ = patient.acquire_async().await.unwrap();
        let third = patient.acquire_async().await.unwrap();
        assert_eq!(third.decided_by(), DecidedBy::Redis);
        let gap = third.server_time_micros().unwrap() - first.server_time_micros().unwrap();
        assert!(
            gap >= 300_000,
            "the permit came back one period after it was taken (server time): {gap} µs"
        );

        let hasty = limiter("wait", quota().timeout_duration(Duration::from_millis(50)));
        let _ = hasty.acquire_async().await; // the third may have landed in the window
        let calls = hasty.metrics().script_calls();
        assert!(matches!(
            hasty.acquire_async().await,
            Err(AcquireError::NotPermitted(_))
        ));
        assert_eq!(
            hasty.metrics().script_calls(),
            calls + 1,
            "refused on the first answer"
        );
    });
}

#[test]
fn waiters_in_one_process_never_poll_redis_together() {
    let server = RedisServer::start();
    run(async {
        let limiter = limiter(
            "turns",
            config(&server)
                .limit_for_period(1)
                .limit_refresh_period(Duration::from_millis(100))
                .buckets(10)
                .timeout_duration(Duration::from_secs(5)),
        );
        let _ = limiter.acquire_async().await.unwrap();
        let waiters = 10;
        let tasks: Vec<_> = (0..waiters)
            .map(|_| {
                let limiter = limiter.clone();
                tokio::spawn(async move { limiter.acquire_async().await })
            })
            .collect();
        for t in tasks {
            assert_eq!(t.await.unwrap().unwrap().decided_by(), DecidedBy::Redis);
        }
        let m = limiter.metrics();
        assert_eq!(m.number_of_waiting_tasks(), 0);
        // Each waiter reserves its permit in its one script call and sleeps
        // until it (tests/redis_attack.rs counts exactly one); polling all
        // together would cost about waiters² / 2 more.
        assert!(
            m.script_calls() <= 1 + 4 * waiters,
            "{} script calls",
            m.script_calls()
        );

        // A waiter dropped mid-wait leaves nothing waiting behind it.
        let _ = limiter.acquire_async().await;
        let dropped = tokio::spawn({
            let limiter = limiter.clone();
            async move { limiter.acquire_async().await }
        });
        tokio::time::sleep(Duration::from_millis(10)).await;
        dropped.abort();
        assert!(limiter.acquire_async().await.is_ok());
        assert_eq!(limiter.metrics().number_of_waiting_tasks(), 0);
    });
}

// ---------------------------------------------------------------------------
// The call API and blocking use.

#[test]
fn call_and_call_async_refuse_with_the_local_limiters_error() {
    let server = RedisServer::start();
    let limiter = limiter(
        "calls",
        config(&server)
            .limit_for_period(1)
            .limit_refresh_period(Duration::from_secs(30)),
    );
    // Outside any runtime: blocks on the limiter's own runtime.
    assert_eq!(limiter.call(|| Ok::<_, &str>(1)), Ok(1));
    let refused = limiter.call(|| Ok::<_, &str>(2)).unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::RequestNotPermitted);
    assert_eq!(refused.name(), Some("calls"));
    run(async {
        let refused = limiter
            .call_async(async { Ok::<_, &str>(3) })
            .await
            .unwrap_err();
        assert!(matches!(refused, Error::RequestNotPermitted(_)));
        // On a multi-thread runtime the blocking call uses block_in_place.
        assert!(limiter.call(|| Ok::<_, &str>(4)).is_err());
    });
    assert_eq!(limiter.metrics().successful_acquires(), 1);
    assert_eq!(limiter.metrics().failed_acquires(), 3);
}

#[test]
fn a_blocking_acquire_on_a_current_thread_runtime_lets_the_policy_decide_instead_of_deadlocking() {
    let server = RedisServer::start();
    let limiter = limiter(
        "no-block",
        config(&server).failure_policy(FailurePolicy::FailOpen),
    );
    let mut events = limiter.subscribe();
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let grant = limiter.acquire().unwrap();
            assert_eq!(grant.decided_by(), DecidedBy::FailOpen);
            assert_eq!(limiter.metrics().cannot_block(), 1);
            assert_eq!(
                events.try_recv().map(|e| e.kind()),
                Some(DistributedRateLimiterEventKind::BackendFailure(
                    BackendFailure::CannotBlock
                ))
            );
            let grant = limiter.acquire_async().await.unwrap();
            assert_eq!(grant.decided_by(), DecidedBy::Redis);
        });
}

#[test]
fn a_panicking_call_spends_its_permit_and_leaves_the_limiter_working() {
    let server = RedisServer::start();
    let limiter = limiter(
        "panics",
        config(&server)
            .limit_for_period(3)
            .limit_refresh_period(Duration::from_secs(30)),
    );
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        limiter.call(|| -> Result<(), ()> { panic!("user code panics") })
    }));
    assert!(caught.is_err());
    run(async {
        let task = tokio::spawn({
            let limiter = limiter.clone();
            async move {
                let out: Result<(), Error<()>> = limiter
                    .call_async(async { panic!("user future panics") })
                    .await;
                out
            }
        });
        assert!(task.await.unwrap_err().is_panic());
        let grant = limiter.acquire_async().await.unwrap();
        assert_eq!(
            grant.remaining(),
            Some(0),
            "both panicking calls had their permit"
        );
        assert_eq!(limiter.metrics().number_of_waiting_tasks(), 0);
        assert!(limiter.acquire_async().await.is_err());
    });
}

#[test]
fn a_wait_that_cannot_end_before_the_tasks_deadline_is_refused_as_deadline_exceeded() {
    let server = RedisServer::start();
    run(async {
        let limiter = limiter(
            "deadline",
            config(&server)
                .limit_for_period(1)
                .limit_refresh_period(Duration::from_secs(1))
                .timeout_duration(Duration::from_secs(5)),
        );
        let _ = limiter.acquire_async().await.unwrap();
        let inside = resil::deadline::within(Duration::from_millis(200), limiter.acquire_async())
            .await
            .expect("refused at once, long before the deadline");
        assert!(
            matches!(inside, Err(AcquireError::DeadlineExceeded(_))),
            "{inside:?}"
        );
        assert_eq!(
            limiter.metrics().script_calls(),
            2,
            "refused on the first answer"
        );
        let err: Error<()> = inside.unwrap_err().into();
        assert_eq!(err.kind(), ErrorKind::DeadlineExceeded);
    });
}

// ---------------------------------------------------------------------------
// Request classes: a class below its threshold is admitted only while the
// shared quota holds less than its share (50 % SHEDDABLE, 75 %
// SHEDDABLE_PLUS by default), checked by the same one script call.

use resil::Criticality::{self, Critical, CriticalPlus, Sheddable, SheddablePlus};

/// Asks once as `class`: granted by whom, or refused.
async fn as_class(limiter: &DistributedRateLimiter, class: Criticality) -> Option<DecidedBy> {
    match class.scope(limiter.acquire_async()).await {
        Ok(grant) => Some(grant.decided_by()),
        Err(AcquireError::NotPermitted(_)) => None,
        Err(other) => panic!("{}: {other:?}", limiter.name()),
    }
}

/// Asks `n` times as `class` and returns how many were granted, each by `by`.
async fn granted(
    limiter: &DistributedRateLimiter,
    class: Criticality,
    n: usize,
    by: DecidedBy,
) -> usize {
    let mut granted = 0;
    for _ in 0..n {
        if let Some(decided_by) = as_class(limiter, class).await {
            assert_eq!(decided_by, by, "{class}");
            granted += 1;
        }
    }
    granted
}

fn refusals_by_class(limiter: &DistributedRateLimiter) -> [u64; 4] {
    let m = limiter.metrics();
    Criticality::ALL.map(|c| m.failed_acquires_of(c))
}

#[test]
fn a_shared_quota_admits_by_class_with_either_script_in_one_round_trip_each() {
    let server = RedisServer::start();
    run(async {
        for algorithm in [Algorithm::SlidingWindow, Algorithm::Gcra] {
            // 8 permits an hour (GCRA: a burst of 8, one permit per 450 s):
            // nothing comes back while the test runs.
            let limiter = limiter(
                &format!("classes-{}", algorithm.as_str()),
                config(&server)
                    .algorithm(algorithm)
                    .limit_for_period(8)
                    .limit_refresh_period(Duration::from_secs(3_600)),
            );
            let redis = DecidedBy::Redis;
            // SHEDDABLE: while fewer than 4 (50 % of 8) are taken.
            assert_eq!(
                granted(&limiter, Sheddable, 6, redis).await,
                4,
                "{algorithm:?}"
            );
            // SHEDDABLE_PLUS: up to 6 (75 %).
            assert_eq!(granted(&limiter, SheddablePlus, 4, redis).await, 2);
            assert_eq!(granted(&limiter, Sheddable, 1, redis).await, 0);
            // CRITICAL takes the rest; then every class is refused.
            assert_eq!(granted(&limiter, Critical, 3, redis).await, 2);
            assert_eq!(granted(&limiter, CriticalPlus, 1, redis).await, 0);
            let m = limiter.metrics();
            assert_eq!(refusals_by_class(&limiter), [3, 2, 1, 1]);
            assert_eq!(m.failed_acquires(), 7);
            assert_eq!((m.successful_acquires(), m.script_calls()), (8, 15));
        }
    });
}

#[test]
fn a_class_below_its_threshold_never_takes_nor_uses_a_local_lease() {
    let server = RedisServer::start();
    run(async {
        let limiter = limiter(
            "classes-leased",
            config(&server)
                .limit_for_period(8)
                .limit_refresh_period(Duration::from_secs(3_600))
                .lease_size(4),
        );
        // A CRITICAL acquire leases 4 from Redis (4 of 8 taken there).
        assert_eq!(as_class(&limiter, Critical).await, Some(DecidedBy::Lease));
        assert_eq!(limiter.leased_permits(), 3);
        // The quota holds 4: SHEDDABLE is refused although this process
        // still holds 3 leased permits; SHEDDABLE_PLUS asks Redis itself.
        assert_eq!(as_class(&limiter, Sheddable).await, None);
        assert_eq!(
            granted(&limiter, SheddablePlus, 3, DecidedBy::Redis).await,
            2
        );
        assert_eq!(limiter.leased_permits(), 3, "the lease is untouched");
        // CRITICAL spends the lease without a round trip.
        assert_eq!(granted(&limiter, Critical, 3, DecidedBy::Lease).await, 3);
        let m = limiter.metrics();
        assert_eq!((m.leases(), m.lease_grants()), (1, 4));
        assert_eq!(m.script_calls(), 1 + 1 + 3);
        assert_eq!(refusals_by_class(&limiter), [1, 1, 0, 0]);
    });
}

#[test]
fn the_local_fallback_applies_each_class_s_share_to_its_own_window() {
    let mut server = RedisServer::start();
    run(async {
        let limiter = limiter(
            "classes-fallback",
            config(&server)
                .limit_for_period(8)
                .limit_refresh_period(Duration::from_secs(3_600))
                .redis_timeout(Duration::from_secs(1))
                .failure_policy(FailurePolicy::LocalFallback {
                    expected_instances: 1,
                }),
        );
        assert_eq!(limiter.local_fallback_limit(), Some(8));
        let _ = from_redis(&limiter).await;
        server.kill();
        // The local window holds nothing yet: SHEDDABLE gets 4 of its 8.
        let local = DecidedBy::LocalFallback;
        assert_eq!(granted(&limiter, Sheddable, 5, local).await, 4);
        assert_eq!(granted(&limiter, SheddablePlus, 3, local).await, 2);
        assert_eq!(granted(&limiter, Critical, 3, local).await, 2);
        assert_eq!(granted(&limiter, CriticalPlus, 1, local).await, 0);
        let m = limiter.metrics();
        assert_eq!((m.fallback_grants(), m.fallback_refusals()), (8, 4));
        assert_eq!(refusals_by_class(&limiter), [1, 1, 1, 1]);
    });
}
