//! The distributed rate limiter per key, against a real `redis-server`: each
//! key its own quota in Redis (the key hash-tagged inside the Redis key),
//! shared by three processes, and each key its own conservative local quota
//! while the server is down.
//!
//! Time is real (the server's clock decides): the tests assert counts and
//! who decided, never durations.
#![cfg(feature = "redis")]

#[path = "support/children.rs"]
mod children;
#[path = "support/redis_server.rs"]
mod redis_server;

use std::time::{Duration, Instant};

use redis_server::RedisServer;
use resil::distributed_rate_limiter::{
    DecidedBy, DistributedRateLimiterConfig, FailurePolicy, KeyedDistributedRateLimiter,
};
use resil::keyed::KeyedConfig;

const CHILD_URL: &str = "RESIL_REDIS_KEYED_CHILD_URL";

fn config(url: &str, policy: FailurePolicy) -> DistributedRateLimiterConfig {
    DistributedRateLimiterConfig::builder()
        .redis_url(url)
        .key_prefix("keyed:")
        .limit_for_period(10)
        // Longer than any child runs: every grant falls in one window.
        .limit_refresh_period(Duration::from_secs(30))
        .timeout_duration(Duration::ZERO)
        .redis_timeout(Duration::from_secs(2))
        .failure_policy(policy)
        .build()
        .unwrap()
}

fn family(url: &str, policy: FailurePolicy) -> KeyedDistributedRateLimiter {
    KeyedDistributedRateLimiter::new("api", config(url, policy), KeyedConfig::default()).unwrap()
}

#[test]
#[ignore = "a child process of the keyed test, started by it with the URL in the environment"]
fn child_process_hammers_the_noisy_key_and_asks_three_times_for_the_quiet_one() {
    let url = std::env::var(CHILD_URL).expect("started by the keyed test");
    let api = family(&url, FailurePolicy::FailClosed);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let stop = Instant::now() + Duration::from_millis(500);
        let (mut noisy, mut quiet) = (0, 0);
        while Instant::now() < stop {
            if let Ok(g) = api.get("noisy").acquire_async().await {
                assert_eq!(g.decided_by(), DecidedBy::Redis);
                noisy += 1;
            }
        }
        for _ in 0..3 {
            let g = api.get("quiet").acquire_async().await.unwrap();
            assert_eq!(g.decided_by(), DecidedBy::Redis);
            quiet += 1;
        }
        println!("NOISY {noisy} QUIET {quiet}");
    });
}

#[test]
fn three_processes_share_each_key_s_quota_and_one_key_never_spends_another_s() {
    let server = RedisServer::start();
    let url = server.url();
    let outputs = children::run_copies(
        "child_process_hammers_the_noisy_key_and_asks_three_times_for_the_quiet_one",
        3,
        &[(CHILD_URL, &url)],
    );
    let (mut noisy, mut quiet) = (0, 0);
    for stdout in outputs {
        let line = stdout
            .lines()
            .find_map(|l| l.split_once("NOISY ").map(|(_, rest)| rest.to_owned()))
            .unwrap_or_else(|| panic!("a NOISY line:\n{stdout}"));
        let (n, q) = line.split_once(" QUIET ").unwrap();
        noisy += n.parse::<u32>().unwrap();
        quiet += q.trim().parse::<u32>().unwrap();
    }
    // Three processes hammering one key get its quota, exactly, between
    // them; the quiet key's 9 requests all pass.
    assert_eq!(noisy, 10);
    assert_eq!(quiet, 9);
    // Each key's state is its own Redis key, the key inside as a hash tag.
    let api = family(&server.url(), FailurePolicy::FailClosed);
    assert_eq!(api.redis_key("noisy"), "keyed:api:{noisy}:sliding_window");
    let mut conn = server.control();
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("keyed:*").query(&mut conn).unwrap();
    keys.sort();
    assert_eq!(
        keys,
        [
            "keyed:api:{noisy}:sliding_window",
            "keyed:api:{quiet}:sliding_window"
        ]
    );
    // With a TTL, as the unkeyed limiter's: an idle key leaves nothing.
    let ttl: i64 = redis::cmd("PTTL")
        .arg("keyed:api:{quiet}:sliding_window")
        .query(&mut conn)
        .unwrap();
    assert!(ttl > 0, "{ttl}");
}

const OUTAGE: FailurePolicy = FailurePolicy::LocalFallback {
    expected_instances: 3,
};

#[test]
#[ignore = "a child process of the outage test, started by it with the killed server's URL in the environment"]
fn child_process_asks_each_key_five_times_while_redis_is_down() {
    let url = std::env::var(CHILD_URL).expect("started by the outage test");
    let api = family(&url, OUTAGE);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        for key in ["a", "b"] {
            let mut granted = 0;
            for _ in 0..5 {
                match api.get(key).acquire_async().await {
                    Ok(g) => {
                        assert_eq!(g.decided_by(), DecidedBy::LocalFallback);
                        granted += 1;
                    }
                    Err(e) => assert!(e.to_string().contains("api"), "{e}"),
                }
            }
            println!("KEY {key} {granted}");
        }
        println!("FALLBACK {}", api.metrics().fallback_decisions());
        // Each key's local state is held in the family's bounded memory.
        println!("IN_USE {}", api.counts().in_use);
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_redis_is_down_each_process_admits_its_share_of_each_key() {
    let mut server = RedisServer::start();
    let url = server.url();
    // N = 10 per key among three expected instances: each admits
    // floor(10 / 3) = 3 per key, and the three together stay within 10.
    let api = family(&url, OUTAGE);
    assert_eq!(api.local_fallback_limit(), Some(3));
    // Redis decides while it is up.
    let g = api.get("a").acquire_async().await.unwrap();
    assert_eq!(g.decided_by(), DecidedBy::Redis);
    server.kill();
    // Three processes of the service, each with its own family, ask each
    // key five times while the server is down.
    let outputs = children::run_copies(
        "child_process_asks_each_key_five_times_while_redis_is_down",
        3,
        &[(CHILD_URL, &url)],
    );
    let mut granted = [0u32; 2];
    for stdout in &outputs {
        let field = |prefix: &str| -> u32 {
            stdout
                .lines()
                .find_map(|l| l.split_once(prefix).map(|(_, n)| n.trim().parse().unwrap()))
                .unwrap_or_else(|| panic!("a `{prefix}` line:\n{stdout}"))
        };
        granted[0] += field("KEY a ");
        granted[1] += field("KEY b ");
        assert_eq!(field("FALLBACK "), 10, "{stdout}");
        assert_eq!(field("IN_USE "), 2, "{stdout}");
    }
    // Per key, per process, 3: 9 of each key's 10, never more.
    assert_eq!(granted, [9, 9]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_family_with_no_room_for_a_new_key_refuses_it_and_keeps_the_keys_whose_fallback_counts() {
    let mut server = RedisServer::start();
    let policy = FailurePolicy::LocalFallback {
        expected_instances: 1,
    };
    let api = KeyedDistributedRateLimiter::new(
        "small",
        config(&server.url(), policy),
        KeyedConfig::new(2, Duration::from_secs(600)).unwrap(),
    )
    .unwrap();
    server.kill();
    api.get("a").acquire_async().await.unwrap();
    api.get("b").acquire_async().await.unwrap();
    // `a` and `b` counted local grants of the current window: forgetting
    // them would let this outage grant their share twice.
    let c = api.get("c");
    assert!(c.is_refused());
    assert!(c.acquire_async().await.is_err());
    assert_eq!(api.counts().refused, 1);
    assert_eq!(api.counts().in_use, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_registry_serves_a_keyed_family_from_the_file_by_name() {
    let server = RedisServer::start();
    let file = format!(
        r#"
[resilience4j.ratelimiter.instances.tenants]
backend = "redis"
redis-url = "{}"
key-prefix = "reg:"
limit-for-period = 2
limit-refresh-period = "30s"
timeout-duration = "0ms"
keyed = {{ max-keys = 50, idle-ttl = "1m" }}
"#,
        server.url()
    );
    let registry = resil::Registry::builder().build();
    registry
        .reload(resil::config::FileConfig::from_toml_str(&file).unwrap())
        .unwrap();
    let family = registry.keyed_distributed_rate_limiter("tenants").unwrap();
    assert_eq!(family.keyed_config().max_keys(), 50);
    assert_eq!(family.redis_key("t1"), "reg:tenants:{t1}:sliding_window");
    // Same name, same family: the second handle sees the first's keys.
    let again = registry.keyed_distributed_rate_limiter("tenants").unwrap();
    for _ in 0..2 {
        family.get("t1").acquire_async().await.unwrap();
    }
    assert!(again.get("t1").acquire_async().await.is_err());
    assert_eq!(again.counts().in_use, 1);
    again.get("t2").acquire_async().await.unwrap();
    // A name that is not redis-backed is refused, naming what to set.
    let err = registry
        .keyed_distributed_rate_limiter("local")
        .unwrap_err()
        .to_string();
    assert!(err.contains("backend = \"redis\""), "{err}");
}

const TIERED: &str = r#"
resilience4j:
  ratelimiter:
    instances:
      tiered:
        backend: redis
        redis-url: "URL"
        key-prefix: "tier:"
        limit-for-period: 2
        limit-refresh-period: 30s
        timeout-duration: 0ms
        failure-policy: local-fallback
        expected-instances: 1
        keyed:
          max-keys: 50
          overrides:
            "gold-*": { limit-for-period: 5 }
            "tenant-42": { limit-for-period: 1 }
"#;

/// How many of `n` acquires of `key` are granted, each decided by `by`.
async fn granted_by(family: &KeyedDistributedRateLimiter, key: &str, n: u32, by: DecidedBy) -> u32 {
    let mut granted = 0;
    for _ in 0..n {
        if let Ok(g) = family.get(key).acquire_async().await {
            assert_eq!(g.decided_by(), by);
            granted += 1;
        }
    }
    granted
}

/// How many of `n` acquires of `key` Redis grants.
async fn granted(family: &KeyedDistributedRateLimiter, key: &str, n: u32) -> u32 {
    granted_by(family, key, n, DecidedBy::Redis).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_files_tiers_give_each_redis_key_its_limit_and_a_reload_changes_the_keys_held() {
    let server = RedisServer::start();
    let yaml = TIERED.replace("URL", &server.url());
    let registry = resil::Registry::builder().build();
    registry
        .reload(resil::config::FileConfig::from_yaml_str(&yaml).unwrap())
        .unwrap();
    let family = registry.keyed_distributed_rate_limiter("tiered").unwrap();
    assert_eq!(granted(&family, "gold-1", 8).await, 5, "the gold tier");
    assert_eq!(
        granted(&family, "tenant-42", 3).await,
        1,
        "the exact key wins"
    );
    assert_eq!(granted(&family, "tenant-7", 3).await, 2, "the default");

    // The snapshot and the metrics show the family, never a key as a label.
    let snapshot = registry.keyed_snapshot(2);
    let f = snapshot
        .iter()
        .find(|f| f.aspect == "distributed_rate_limiter")
        .unwrap();
    assert_eq!((f.name.as_str(), f.max_keys), ("tiered", 50));
    assert_eq!(f.default, "limit-for-period=2");
    assert_eq!(
        f.overrides,
        [
            ("gold-*".to_string(), "limit-for-period=5".to_string()),
            ("tenant-42".to_string(), "limit-for-period=1".to_string())
        ]
    );
    assert_eq!(f.keys_in_use, 3);
    assert_eq!(
        f.top_by_refusals,
        [("gold-1".to_string(), 3), ("tenant-42".to_string(), 2)]
    );
    let text = registry.prometheus_text();
    let keys_line = text
        .lines()
        .find(|l| l.starts_with("resil_keyed_keys{") && l.contains("distributed_rate_limiter"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(keys_line.ends_with(" 3"), "{keys_line}");
    assert!(!text.contains("gold-1"), "no key in a label");

    // A reload raises the default and the gold tier: the keys held get
    // their new limit (what Redis counted stays counted).
    let reloaded = yaml
        .replace("limit-for-period: 2", "limit-for-period: 4")
        .replace("{ limit-for-period: 5 }", "{ limit-for-period: 7 }")
        .replace("max-keys: 50", "max-keys: 40");
    registry
        .reload(resil::config::FileConfig::from_yaml_str(&reloaded).unwrap())
        .unwrap();
    assert_eq!(family.keyed_config().max_keys(), 40);
    assert_eq!(granted(&family, "tenant-7", 5).await, 2, "4 - the 2 taken");
    assert_eq!(granted(&family, "gold-1", 5).await, 2, "7 - the 5 taken");
    assert_eq!(
        granted(&family, "tenant-42", 2).await,
        0,
        "its override stays 1"
    );
    let mut shares = Vec::new();
    family.for_each_key(|key, limit| shares.push((key.as_str().unwrap().to_owned(), limit)));
    shares.sort();
    assert_eq!(
        shares,
        [
            ("gold-1".to_string(), 7),
            ("tenant-42".to_string(), 1),
            ("tenant-7".to_string(), 4)
        ]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tier_changes_the_local_share_of_a_key_held_while_redis_is_down() {
    let mut server = RedisServer::start();
    let policy = FailurePolicy::LocalFallback {
        expected_instances: 2,
    };
    let api = family(&server.url(), policy);
    api.set_tiers(resil::keyed::Tiers::new(10).with_override("big", 20))
        .unwrap();
    assert_eq!(
        granted(&api, "big", 1).await,
        1,
        "created while Redis is up"
    );
    server.kill();
    // floor(20 / 2) = 10 for `big` while Redis is down, 5 for a default key.
    assert_eq!(
        granted_by(&api, "big", 12, DecidedBy::LocalFallback).await,
        10
    );
    assert_eq!(
        granted_by(&api, "small", 12, DecidedBy::LocalFallback).await,
        5
    );
    // Lowered to 14 (a share of 7) while held: the 10 it counted stay counted.
    api.set_tiers(resil::keyed::Tiers::new(10).with_override("big", 14))
        .unwrap();
    assert_eq!(
        granted_by(&api, "big", 3, DecidedBy::LocalFallback).await,
        0
    );
    // A tier the family's other settings refuse names its pattern, and
    // changes nothing.
    let err = api
        .set_tiers(resil::keyed::Tiers::new(10).with_override("tiny", 1))
        .unwrap_err()
        .to_string();
    assert!(err.contains("overrides.tiny"), "{err}");
    assert_eq!(api.tiers().overrides().count(), 1);
}

/// How many of `n` acquires of `key` as `class` are granted, each by `by`.
async fn granted_as(
    family: &KeyedDistributedRateLimiter,
    key: &str,
    class: resil::Criticality,
    n: u32,
    by: DecidedBy,
) -> u32 {
    let mut granted = 0;
    for _ in 0..n {
        if let Ok(g) = class.scope(family.get(key).acquire_async()).await {
            assert_eq!(g.decided_by(), by, "{key} as {class}");
            granted += 1;
        }
    }
    granted
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_class_takes_its_share_of_its_keys_own_limit_from_redis_and_from_the_fallback() {
    use resil::Criticality::Sheddable;
    let mut server = RedisServer::start();
    let policy = FailurePolicy::LocalFallback {
        expected_instances: 2,
    };
    let api = family(&server.url(), policy);
    api.set_tiers(resil::keyed::Tiers::new(10).with_override("big", 20))
        .unwrap();
    // SHEDDABLE (50 %) fills half of each key's own limit in Redis: 10 of
    // `big`'s 20, 5 of the default 10.
    assert_eq!(
        granted_as(&api, "big", Sheddable, 12, DecidedBy::Redis).await,
        10
    );
    assert_eq!(
        granted_as(&api, "small", Sheddable, 12, DecidedBy::Redis).await,
        5
    );
    // Raised while held: the share follows the new limit (15 of 30).
    api.set_tiers(resil::keyed::Tiers::new(10).with_override("big", 30))
        .unwrap();
    assert_eq!(
        granted_as(&api, "big", Sheddable, 12, DecidedBy::Redis).await,
        5
    );
    // While Redis is down the local share (⌊30 / 2⌋ = 15 for `big`) is
    // halved the same way, as a tier left it: 8 (rounded up) of it.
    server.kill();
    assert_eq!(
        granted_as(&api, "big", Sheddable, 12, DecidedBy::LocalFallback).await,
        8
    );
}
