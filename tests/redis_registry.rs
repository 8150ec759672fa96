//! The distributed rate limiter from the registry: `backend = "redis"` in a
//! rate limiter's config. Building one does no I/O, so the configuration
//! tests need no server; the shared-quota test starts its own
//! `redis-server` (see `support/redis_server.rs`) and fails, never skips,
//! when it cannot.
#![cfg(feature = "redis")]

#[path = "support/recorder.rs"]
mod recorder;
#[path = "support/redis_server.rs"]
mod redis_server;

use std::sync::{Arc, Barrier};
use std::time::Duration;

use redis_server::RedisServer;
use resil::distributed_rate_limiter::{Algorithm, FailurePolicy};
use resil::rate_limiter::RateLimiter;
use resil::registry_crate::{
    FileConfig, Kind, RegistryError, RegistryEventKind, ReloadError, Status,
};
use resil::Registry;

const FILE: &str = r#"
[resilience4j.ratelimiter.configs.shared]
backend = "redis"
redis-url = "redis://127.0.0.1:1/"
key-prefix = "orders:"
limit-for-period = 100
limit-refresh-period = "10s"
timeout-duration = "0ms"

[resilience4j.ratelimiter.instances.checkout]
base-config = "shared"
algorithm = "gcra"
burst = 20
redis-timeout = "50ms"
failure-policy = "LOCAL_FALLBACK"
expected-instances = 4

[resilience4j.ratelimiter.instances.search]
limit-for-period = 5
"#;

/// The registry's error for instance `name` of a file holding `entry` under
/// `[resilience4j.ratelimiter.instances.x]`, as text.
fn distributed_error(entry: &str) -> RegistryError {
    let text = format!(
        "[resilience4j.ratelimiter.instances.x]\nbackend = \"redis\"\n\
         redis-url = \"redis://127.0.0.1:1/\"\nlimit-refresh-period = \"1s\"\n{entry}\n"
    );
    let registry = Registry::from_toml_str(&text).expect("the file itself is well-typed");
    registry
        .distributed_rate_limiter("x")
        .expect_err("the settings must be rejected")
}

#[test]
fn a_redis_backend_entry_builds_a_distributed_limiter_with_its_settings_and_inherited_quota() {
    let registry = Registry::from_toml_str(FILE).unwrap();
    assert!(registry.is_redis_backed("checkout"));
    assert!(
        registry.is_redis_backed("shared"),
        "a named config serves its own name"
    );
    assert!(!registry.is_redis_backed("search"));
    assert!(!registry.is_redis_backed("unknown"));

    let checkout = registry.distributed_rate_limiter("checkout").unwrap();
    let c = checkout.config();
    assert_eq!(c.redis_url(), "redis://127.0.0.1:1/");
    assert_eq!(c.key_prefix(), "orders:");
    assert_eq!(c.algorithm(), Algorithm::Gcra);
    assert_eq!(c.limit_for_period(), 100);
    assert_eq!(c.limit_refresh_period(), Duration::from_secs(10));
    assert_eq!(c.timeout_duration(), Duration::ZERO);
    assert_eq!(c.burst(), 20);
    assert_eq!(c.redis_timeout(), Duration::from_millis(50));
    assert_eq!(
        c.failure_policy(),
        FailurePolicy::LocalFallback {
            expected_instances: 4
        }
    );
    assert_eq!(checkout.local_fallback_limit(), Some(25));
    assert_eq!(checkout.name(), "checkout");

    // Same name → same instance.
    let again = registry.distributed_rate_limiter("checkout").unwrap();
    assert!(resil::Handle::same_entry(&checkout, &again));
}

#[test]
fn code_settings_for_the_rate_limiter_reach_the_distributed_quota() {
    let registry = Registry::from_toml_str(FILE).unwrap();
    registry
        .configure_rate_limiter("checkout", |b| b.limit_for_period(7))
        .unwrap();
    let checkout = registry.distributed_rate_limiter("checkout").unwrap();
    assert_eq!(checkout.config().limit_for_period(), 7);
    // Keys the file left unset keep the distributed limiter's defaults.
    let shared = registry.distributed_rate_limiter("shared").unwrap();
    assert_eq!(shared.config().algorithm(), Algorithm::SlidingWindow);
    assert_eq!(shared.config().failure_policy(), FailurePolicy::FailClosed);
}

#[test]
fn the_class_thresholds_of_a_redis_backed_entry_are_the_rate_limiter_s_keys() {
    use resil::Criticality::{Critical, Sheddable, SheddablePlus};
    let registry = Registry::from_toml_str(&format!(
        "{FILE}\n[resilience4j.ratelimiter.instances.prefetch]\nbase-config = \"shared\"\n\
         sheddable-threshold = 30\nsheddable-plus-threshold = 60\n"
    ))
    .unwrap();
    let c = registry
        .distributed_rate_limiter("prefetch")
        .unwrap()
        .config()
        .clone();
    assert_eq!(
        [Sheddable, SheddablePlus, Critical].map(|class| c.threshold(class)),
        [30.0, 60.0, 100.0]
    );
    // Unset: the local limiter's defaults, 50 and 75.
    let shared = registry.distributed_rate_limiter("shared").unwrap();
    assert_eq!(shared.config().threshold(Sheddable), 50.0);
    assert_eq!(shared.config().threshold(SheddablePlus), 75.0);
}

#[test]
fn a_local_backend_is_refused_naming_the_key_to_set() {
    let registry = Registry::from_toml_str(FILE).unwrap();
    let err = registry.distributed_rate_limiter("search").unwrap_err();
    assert!(
        matches!(err, RegistryError::IllegalOperation { .. }),
        "{err:?}"
    );
    assert_eq!(
        err.to_string(),
        "rate_limiter `search`: not redis-backed: set `backend = \"redis\"` (and `redis-url`) \
         under `resilience4j.ratelimiter.instances.search`"
    );
    // The local limiter of the same name is untouched by the Redis keys.
    assert_eq!(
        registry.rate_limiter("search").config().limit_for_period(),
        5
    );
    assert_eq!(
        registry
            .rate_limiter("checkout")
            .config()
            .limit_for_period(),
        100
    );
}

#[test]
fn invalid_redis_settings_name_their_key_path() {
    let cases = [
        ("burst = 0", "burst"),
        ("redis-timeout = \"0ms\"", "redis-timeout"),
        ("failure-policy = \"LOCAL_FALLBACK\"", "expected-instances"),
        (
            "failure-policy = \"LOCAL_FALLBACK\"\nexpected-instances = 0",
            "expected-instances",
        ),
    ];
    for (entry, key) in cases {
        match distributed_error(entry) {
            RegistryError::InvalidConfig { source, .. } => assert_eq!(
                source.field(),
                format!("resilience4j.ratelimiter.instances.x.{key}"),
                "{entry}"
            ),
            other => panic!("{entry}: {other:?}"),
        }
    }
    // Resilience4j's default refresh period (500 ns) is below the shared
    // quota's 1 ms floor: an entry that leaves it unset is told which key to set.
    let registry =
        Registry::from_toml_str("[resilience4j.ratelimiter.instances.x]\nbackend = \"redis\"\n")
            .unwrap();
    match registry.distributed_rate_limiter("x").unwrap_err() {
        RegistryError::InvalidConfig { source, .. } => assert_eq!(
            source.field(),
            "resilience4j.ratelimiter.instances.x.limit-refresh-period"
        ),
        other => panic!("{other:?}"),
    }
    // A URL the redis client cannot use, set in a named config, is blamed
    // where it was written.
    let registry = Registry::from_toml_str(
        "[resilience4j.ratelimiter.configs.base]\nredis-url = \"http://x\"\n\
         [resilience4j.ratelimiter.instances.x]\nbase-config = \"base\"\nbackend = \"redis\"\n",
    )
    .unwrap();
    match registry.distributed_rate_limiter("x").unwrap_err() {
        RegistryError::InvalidConfig { source, .. } => {
            assert_eq!(
                source.field(),
                "resilience4j.ratelimiter.configs.base.redis-url"
            )
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn ill_typed_redis_keys_fail_the_file_with_key_paths_and_allowed_values() {
    let err = FileConfig::from_toml_str(
        "[resilience4j.ratelimiter.instances.x]\nbackend = \"memcached\"\nredis-url = 6379\n\
         key-prefix = \"  \"\nalgorithm = \"leaky\"\nfailure-policy = \"panic\"\n",
    )
    .unwrap_err();
    let mut found: Vec<(String, String)> = err
        .problems()
        .iter()
        .map(|p| (p.path().unwrap_or("").to_owned(), p.to_string()))
        .collect();
    found.sort();
    let at = |key: &str| format!("resilience4j.ratelimiter.instances.x.{key}");
    let keys: Vec<&str> = found.iter().map(|(path, _)| path.as_str()).collect();
    assert_eq!(
        keys,
        [
            at("algorithm"),
            at("backend"),
            at("failure-policy"),
            at("key-prefix"),
            at("redis-url")
        ]
    );
    assert!(
        found[0].1.contains("one of `SLIDING_WINDOW`, `GCRA`"),
        "{}",
        found[0].1
    );
    assert!(
        found[1].1.contains("one of `local`, `redis`"),
        "{}",
        found[1].1
    );
    assert!(
        found[2]
            .1
            .contains("`FAIL_CLOSED`, `FAIL_OPEN`, `LOCAL_FALLBACK`"),
        "{}",
        found[2].1
    );
    assert!(found[3].1.contains("a non-empty string"), "{}", found[3].1);
    assert!(found[4].1.contains("a non-empty string"), "{}", found[4].1);
}

/// Two registries (two services' processes) configured from one file share
/// one quota through the server: 5 per minute in all, not 5 each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_registries_share_one_quota_through_redis() {
    let server = RedisServer::start();
    let file = format!(
        "[resilience4j.ratelimiter.instances.checkout]\nbackend = \"redis\"\n\
         redis-url = \"{}\"\nkey-prefix = \"registry-test:\"\nlimit-for-period = 5\n\
         limit-refresh-period = \"60s\"\ntimeout-duration = \"0ms\"\nredis-timeout = \"2s\"\n",
        server.url()
    );
    let a = Registry::from_toml_str(&file).unwrap();
    let b = Registry::from_toml_str(&file).unwrap();
    let la = a.distributed_rate_limiter("checkout").unwrap();
    let lb = b.distributed_rate_limiter("checkout").unwrap();
    let mut granted = [0, 0];
    for _ in 0..6 {
        for (i, limiter) in [&la, &lb].into_iter().enumerate() {
            if limiter.call_async(async { Ok::<_, ()>(()) }).await.is_ok() {
                granted[i] += 1;
            }
        }
    }
    assert_eq!(
        granted[0] + granted[1],
        5,
        "one quota of 5 for both: {granted:?}"
    );
    assert!(
        granted[0] >= 1 && granted[1] >= 1,
        "both drew from it: {granted:?}"
    );
    let (ma, mb) = (la.metrics(), lb.metrics());
    assert_eq!(
        ma.fallback_decisions() + mb.fallback_decisions(),
        0,
        "Redis decided every call: {ma:?} {mb:?}"
    );
}

fn file(text: &str) -> FileConfig {
    FileConfig::from_toml_str(text).unwrap()
}

#[test]
fn a_reload_rebuilds_a_running_distributed_limiter_whose_settings_changed() {
    let registry = Registry::from_toml_str(FILE).unwrap();
    let checkout = registry.distributed_rate_limiter("checkout").unwrap();
    let shared = registry.distributed_rate_limiter("shared").unwrap();
    let mut events = registry.subscribe();

    let unchanged = registry.reload(file(FILE)).unwrap();
    assert!(unchanged.replaced.is_empty(), "{unchanged:?}");
    assert_eq!(unchanged.unchanged, 2, "both distributed limiters counted");

    let report = registry
        .reload(file(&FILE.replace("burst = 20", "burst = 40")))
        .unwrap();
    assert_eq!(report.replaced, ["rate_limiter checkout (redis)"]);
    assert_eq!(report.unchanged, 1);
    assert_eq!(checkout.config().burst(), 40, "the held handle sees it");
    assert_eq!(checkout.config().limit_for_period(), 100);
    assert_eq!(shared.config().key_prefix(), "orders:");
    let replaced: Vec<_> = events
        .drain()
        .into_iter()
        .filter(|e| matches!(e.what, RegistryEventKind::Replaced { .. }))
        .map(|e| (e.kind, e.name.to_string()))
        .collect();
    assert_eq!(replaced, [(Kind::RateLimiter, "checkout".to_owned())]);

    // A quota change in a base config reaches every limiter inheriting it.
    registry
        .reload(file(
            &FILE.replace("limit-for-period = 100", "limit-for-period = 60"),
        ))
        .unwrap();
    assert_eq!(checkout.config().limit_for_period(), 60);
    assert_eq!(shared.config().limit_for_period(), 60);
}

#[test]
fn a_reload_that_moves_a_running_limiter_to_the_other_backend_is_refused() {
    let registry = Registry::from_toml_str(FILE).unwrap();
    let checkout = registry.distributed_rate_limiter("checkout").unwrap();
    let search = registry.rate_limiter("search");

    let to_local = FILE.replace(
        "algorithm = \"gcra\"",
        "algorithm = \"gcra\"\nbackend = \"local\"",
    );
    let err = registry.reload(file(&to_local)).unwrap_err();
    let ReloadError::Instances(errors) = &err else {
        panic!("{err}");
    };
    assert_eq!(errors.len(), 1, "{err}");
    assert_eq!(
        errors[0].to_string(),
        "rate_limiter `checkout`: runs on the redis backend and its call sites hold that \
         limiter: a reload cannot move it to the local backend (keep `backend` as it is, or \
         restart the process)"
    );

    let to_redis = FILE.replace(
        "limit-for-period = 5",
        "limit-for-period = 5\nbackend = \"redis\"\nredis-url = \"redis://127.0.0.1:1/\"",
    );
    let err = registry.reload(file(&to_redis)).unwrap_err().to_string();
    assert!(
        err.contains("rate_limiter `search`: runs on the local backend"),
        "{err}"
    );

    // Nothing was applied.
    assert!(!registry.is_redis_backed("search"));
    assert_eq!(search.config().limit_for_period(), 5);
    assert_eq!(checkout.config().algorithm(), Algorithm::Gcra);
}

#[test]
fn configure_rate_limiter_rebuilds_a_running_distributed_limiter() {
    let registry = Registry::from_toml_str(FILE).unwrap();
    let checkout = registry.distributed_rate_limiter("checkout").unwrap();
    assert_eq!(checkout.config().limit_for_period(), 100);
    registry
        .configure_rate_limiter("checkout", |b| b.limit_for_period(8))
        .unwrap();
    assert_eq!(checkout.config().limit_for_period(), 8);
    assert_eq!(
        checkout.local_fallback_limit(),
        Some(2),
        "8 over 4 instances"
    );
}

const ALL_REDIS: &str = r#"
[resilience4j.ratelimiter.configs.default]
backend = "redis"
redis-url = "redis://127.0.0.1:1/"
limit-refresh-period = "1s"
"#;

/// Runs `f(i)` on 8 threads released together.
fn race<T: Send + 'static>(f: impl Fn(usize) -> T + Send + Sync + 'static) -> Vec<T> {
    let f = Arc::new(f);
    let barrier = Arc::new(Barrier::new(8));
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let (f, barrier) = (Arc::clone(&f), Arc::clone(&barrier));
            std::thread::spawn(move || {
                barrier.wait();
                f(i)
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

#[test]
fn the_cap_holds_exactly_when_new_distributed_limiters_race() {
    for _ in 0..20 {
        let registry = Arc::new(Registry::builder().max_instances_per_kind(3).build());
        registry.reload(file(ALL_REDIS)).unwrap();
        let r = Arc::clone(&registry);
        let outcomes = race(move |i| r.distributed_rate_limiter(&format!("tenant-{i}")));
        let created = outcomes.iter().filter(|o| o.is_ok()).count();
        assert_eq!(created, 3, "the cap of 3, never more");
        assert!(outcomes
            .iter()
            .all(|o| o.is_ok()
                || matches!(o, Err(RegistryError::CardinalityExceeded { limit: 3, .. }))));
        assert_eq!(registry.distributed_rate_limiter_names().len(), 3);
        assert_eq!(registry.refused_by_cap(Kind::RateLimiter), 5);
    }
}

#[test]
fn racing_on_one_new_name_creates_one_distributed_limiter_and_one_added_event() {
    for _ in 0..20 {
        let registry = Arc::new(Registry::new());
        registry.reload(file(ALL_REDIS)).unwrap();
        let mut events = registry.subscribe();
        let r = Arc::clone(&registry);
        let handles = race(move |_| r.distributed_rate_limiter("payments").unwrap());
        assert!(handles
            .iter()
            .all(|h| resil::Handle::same_entry(h, &handles[0])));
        let added = events
            .drain()
            .into_iter()
            .filter(|e| e.what == RegistryEventKind::Added && &*e.name == "payments")
            .count();
        assert_eq!(added, 1);
    }
}

/// Nothing listens on port 1: each acquire finds Redis unavailable and the
/// failure policy decides, which the snapshot, the health and the metrics
/// must all show.
#[tokio::test]
async fn snapshot_health_and_metrics_show_distributed_limiters() {
    let registry = Registry::from_toml_str(FILE).unwrap();
    let checkout = registry.distributed_rate_limiter("checkout").unwrap();
    let _local = registry.rate_limiter("search");
    assert_eq!(registry.health().status, Status::Up, "no acquire yet");

    let grant = checkout.acquire_async().await.unwrap();
    assert_eq!(
        grant.decided_by(),
        resil::distributed_rate_limiter::DecidedBy::LocalFallback
    );

    let snapshot = registry.snapshot();
    let names: Vec<_> = snapshot
        .instances
        .iter()
        .filter(|i| i.kind == "rate_limiter")
        .map(|i| i.name.as_str())
        .collect();
    assert_eq!(
        names,
        ["checkout", "search"],
        "sorted by name across backends"
    );
    let i = snapshot.instance(Kind::RateLimiter, "checkout").unwrap();
    let value = |key: &str| {
        let v = i.config_value(key).unwrap_or_else(|| panic!("no {key}"));
        (v.value.as_str(), v.source.as_str())
    };
    assert_eq!(value("backend"), ("redis", "config `shared`"));
    assert_eq!(value("limit-for-period"), ("100", "config `shared`"));
    assert_eq!(value("algorithm"), ("GCRA", "instance"));
    assert_eq!(value("failure-policy"), ("LOCAL_FALLBACK", "instance"));
    assert_eq!(value("buckets").1, "default");
    assert_eq!(i.health, Status::Degraded);
    assert!(
        i.health_reason
            .as_deref()
            .unwrap()
            .contains("LOCAL_FALLBACK"),
        "{:?}",
        i.health_reason
    );
    assert_eq!(
        i.metric("ratelimiter_distributed_fallback_calls", Some("granted")),
        Some(1.0)
    );
    assert_eq!(
        i.metric("ratelimiter_distributed_script_calls", None),
        Some(1.0)
    );

    let health = registry.health();
    assert_eq!(health.status, Status::Degraded);
    assert!(
        health
            .reason
            .as_deref()
            .unwrap()
            .starts_with("rate_limiter `checkout`: Redis gave no verdict"),
        "{:?}",
        health.reason
    );

    let recorder = recorder::Remember::default();
    metrics::with_local_recorder(&recorder, || registry.publish_metrics());
    assert_eq!(
        recorder.get(
            "resilience4j_ratelimiter_distributed_fallback_calls\
             {backend=redis,kind=granted,name=checkout}"
        ),
        Some(1.0)
    );
    assert_eq!(
        recorder.get(
            "resilience4j_ratelimiter_distributed_acquire_calls\
             {backend=redis,kind=successful,name=checkout}"
        ),
        Some(0.0),
        "Redis granted nothing: the fallback did"
    );
    assert_eq!(
        recorder.get("resilience4j_ratelimiter_waiting_threads{name=search}"),
        Some(0.0),
        "the local limiter of another name publishes as before"
    );

    // Opting out of health works by the rate limiter's name, whatever its backend.
    registry.set_health_indicator::<RateLimiter>("checkout", false);
    assert_eq!(registry.health().status, Status::Up);
}

#[test]
fn operators_change_a_distributed_limiters_limit_and_timeout_by_name() {
    let registry = Registry::from_toml_str(FILE).unwrap();
    let checkout = registry.distributed_rate_limiter("checkout").unwrap();

    registry.set_rate_limit("checkout", 40).unwrap();
    registry
        .set_rate_limiter_timeout("checkout", Duration::from_millis(250))
        .unwrap();
    assert_eq!(checkout.config().limit_for_period(), 40);
    assert_eq!(
        checkout.config().timeout_duration(),
        Duration::from_millis(250)
    );
    assert_eq!(
        checkout.config().algorithm(),
        Algorithm::Gcra,
        "the rest is kept"
    );

    let refused = registry.set_rate_limit("checkout", 0).unwrap_err();
    assert!(
        matches!(refused, RegistryError::InvalidConfig { .. }),
        "{refused:?}"
    );
    assert_eq!(checkout.config().limit_for_period(), 40, "nothing changed");
    assert!(matches!(
        registry.set_rate_limit("nobody", 5),
        Err(RegistryError::NotFound { .. })
    ));

    // A reload keeps the operator's limit, whether it leaves this
    // limiter's settings alone or changes them (issue 32: an operator's
    // switch survives every reload); a release applies the file.
    registry
        .reload(file(&FILE.replace(
            "[resilience4j.ratelimiter.instances.search]\nlimit-for-period = 5",
            "[resilience4j.ratelimiter.instances.search]\nlimit-for-period = 6",
        )))
        .unwrap();
    assert_eq!(checkout.config().limit_for_period(), 40);
    registry
        .reload(file(&FILE.replace("burst = 20", "burst = 30")))
        .unwrap();
    assert_eq!(checkout.config().limit_for_period(), 40);
    assert_eq!(
        checkout.config().burst(),
        30,
        "the reload's own change is in"
    );
    assert!(registry.release(Kind::RateLimiter, "checkout").unwrap());
    assert_eq!(checkout.config().limit_for_period(), 100);
    assert_eq!(checkout.config().timeout_duration(), Duration::ZERO);
}

/// A wrong password is counted as `kind="auth"`, not as unavailable or
/// timed out, in the instance's metrics and in what the registry publishes;
/// the password shows nowhere.
#[tokio::test]
async fn a_wrong_password_is_counted_as_an_auth_failure() {
    let server = RedisServer::start_with(&["--requirepass", "right-secret"]);
    let text = format!(
        "[resilience4j.ratelimiter.instances.vault]\nbackend = \"redis\"\n\
         redis-url = \"redis://:wrong-secret@127.0.0.1:{port}/\"\n\
         redis-timeout = \"2s\"\ntimeout-duration = \"0ms\"\nlimit-refresh-period = \"1s\"\n\
         [resilience4j.ratelimiter.instances.bulk]\nbackend = \"redis\"\n\
         redis-url = \"redis://:right-secret@127.0.0.1:{port}/\"\nlease-size = 5\n\
         redis-timeout = \"2s\"\ntimeout-duration = \"0ms\"\nlimit-refresh-period = \"10s\"\n",
        port = server.port()
    );
    let registry = Registry::from_toml_str(&text).unwrap();
    let vault = registry.distributed_rate_limiter("vault").unwrap();
    let refused = vault.acquire_async().await;
    assert!(refused.is_err(), "fail-closed refuses without Redis");
    let m = vault.metrics();
    assert_eq!(
        (
            m.redis_auth_failures(),
            m.redis_unavailable(),
            m.redis_timeouts()
        ),
        (1, 0, 0),
        "{m:?}"
    );

    let snapshot = registry.snapshot();
    let i = snapshot.instance(Kind::RateLimiter, "vault").unwrap();
    for (kind, n) in [("auth", 1.0), ("unavailable", 0.0), ("timeout", 0.0)] {
        assert_eq!(
            i.metric("ratelimiter_distributed_backend_failure_calls", Some(kind)),
            Some(n),
            "{kind}"
        );
    }
    let recorder = recorder::Remember::default();
    metrics::with_local_recorder(&recorder, || registry.publish_metrics());
    assert_eq!(
        recorder.get(
            "resilience4j_ratelimiter_distributed_backend_failure_calls\
             {backend=redis,kind=auth,name=vault}"
        ),
        Some(1.0)
    );
    let shown = format!("{snapshot:?} {:?}", registry.health());
    assert!(!shown.contains("wrong-secret"), "{shown}");

    // With the right password, a limiter with leases publishes them.
    let bulk = registry.distributed_rate_limiter("bulk").unwrap();
    bulk.acquire_async().await.unwrap();
    bulk.acquire_async().await.unwrap();
    let recorder = recorder::Remember::default();
    metrics::with_local_recorder(&recorder, || registry.publish_metrics());
    for (kind, n) in [("leased", 5.0), ("handed_out", 2.0), ("returned", 0.0)] {
        assert_eq!(
            recorder.get(&format!(
                "resilience4j_ratelimiter_distributed_lease_permits\
                 {{backend=redis,kind={kind},name=bulk}}"
            )),
            Some(n),
            "{kind}"
        );
    }
    assert_eq!(
        recorder.get("resilience4j_ratelimiter_distributed_script_calls{backend=redis,name=bulk}"),
        Some(1.0),
        "one lease, one round trip"
    );
}

/// The file form of `Topology::Cluster` and `Topology::Sentinel`: `topology`
/// says what `redis-url` lists (a cluster's nodes or the sentinels,
/// comma-separated), `sentinel-master-name` the primary the sentinels watch.
#[test]
fn a_file_selects_the_cluster_or_the_sentinel_backend() {
    use resil::distributed_rate_limiter::Topology;
    let registry = Registry::from_toml_str(
        r#"
[resilience4j.ratelimiter.configs.base]
backend = "redis"
limit-for-period = 10
limit-refresh-period = "1s"

[resilience4j.ratelimiter.instances.clustered]
base-config = "base"
topology = "cluster"
redis-url = "redis://:node-secret@10.0.0.1:7000, redis://:node-secret@10.0.0.2:7001"

[resilience4j.ratelimiter.instances.watched]
base-config = "base"
topology = "SENTINEL"
sentinel-master-name = "orders"
redis-url = "redis://:sentinel-secret@10.0.0.1:26379,redis://10.0.0.2:26379"

[resilience4j.ratelimiter.instances.single]
base-config = "base"
redis-url = "redis://10.0.0.1:6379/"
"#,
    )
    .unwrap();
    let single = registry.distributed_rate_limiter("single").unwrap();
    assert_eq!(single.config().topology(), Topology::Standalone);

    let clustered = registry.distributed_rate_limiter("clustered");
    #[cfg(feature = "redis-cluster")]
    assert_eq!(clustered.unwrap().config().topology(), Topology::Cluster);
    #[cfg(not(feature = "redis-cluster"))]
    match clustered.unwrap_err() {
        RegistryError::InvalidConfig { source, .. } => {
            assert_eq!(
                source.field(),
                "resilience4j.ratelimiter.instances.clustered.topology"
            );
            assert!(source.to_string().contains("redis-cluster"), "{source}");
        }
        other => panic!("{other:?}"),
    }

    let watched = registry.distributed_rate_limiter("watched");
    #[cfg(feature = "redis-sentinel")]
    {
        let watched = watched.unwrap();
        assert_eq!(watched.config().topology(), Topology::Sentinel);
        assert_eq!(watched.config().sentinel_master_name(), "orders");
        let snapshot = registry.snapshot();
        let i = snapshot.instance(Kind::RateLimiter, "watched").unwrap();
        let value = |key: &str| {
            let v = i.config_value(key).unwrap_or_else(|| panic!("no {key}"));
            (v.value.clone(), v.source.clone())
        };
        assert_eq!(value("topology"), ("SENTINEL".into(), "instance".into()));
        assert_eq!(
            value("sentinel-master-name"),
            ("orders".into(), "instance".into())
        );
        assert_eq!(
            value("redis-url").0,
            "redis://:***@10.0.0.1:26379,redis://10.0.0.2:26379"
        );
        let shown = format!("{snapshot:?} {:?}", watched.config());
        assert!(!shown.contains("sentinel-secret"), "{shown}");
    }
    #[cfg(not(feature = "redis-sentinel"))]
    assert!(watched.is_err());
}

#[test]
fn bad_topology_values_name_the_key_and_the_allowed_form_without_the_password() {
    // Ill-typed: refused with the file, naming the key and the allowed words.
    let err = FileConfig::from_toml_str(
        "[resilience4j.ratelimiter.instances.x]\nbackend = \"redis\"\ntopology = \"ring\"\n\
         sentinel-master-name = \"\"\nlease-size = -1\nlease-ttl = \"soon\"\n",
    )
    .unwrap_err();
    let mut found: Vec<(String, String)> = err
        .problems()
        .iter()
        .map(|p| (p.path().unwrap_or("").to_owned(), p.to_string()))
        .collect();
    found.sort();
    let at = |key: &str| format!("resilience4j.ratelimiter.instances.x.{key}");
    let keys: Vec<&str> = found.iter().map(|(path, _)| path.as_str()).collect();
    assert_eq!(
        keys,
        [
            at("lease-size"),
            at("lease-ttl"),
            at("sentinel-master-name"),
            at("topology")
        ]
    );
    assert!(
        found[3]
            .1
            .contains("one of `STANDALONE`, `CLUSTER`, `SENTINEL`"),
        "{}",
        found[3].1
    );
    assert!(found[2].1.contains("a non-empty string"), "{}", found[2].1);

    // Well-typed but not a form the limiter takes: refused when it is built,
    // naming the key path, never showing the password.
    let cases = [
        (
            "redis-url = \"redis://:hunter2@a:1,redis://:hunter2@b:2\"",
            "redis-url",
            "several, comma-separated, only with Topology::Cluster or Sentinel",
        ),
        (
            "topology = \"cluster\"\nredis-url = \"redis://:hunter2@a:1,redis://:hunter2@b:x\"",
            "redis-url",
            "a redis:// URL",
        ),
        (
            "redis-url = \"redis://:hunter2@a:1/\"\nlimit-for-period = 10\nlease-size = 11",
            "lease-size",
            "an integer in 0..=10 (0: no leases; at most limit_for_period",
        ),
        (
            "redis-url = \"redis://:hunter2@a:1/\"\nlease-size = 5\nlease-ttl = \"2s\"",
            "lease-ttl",
            "a positive duration of at most limit_refresh_period (1s)",
        ),
    ];
    for (entry, key, expected) in cases {
        let text = format!(
            "[resilience4j.ratelimiter.instances.x]\nbackend = \"redis\"\n\
             limit-refresh-period = \"1s\"\n{entry}\n"
        );
        let registry = Registry::from_toml_str(&text).expect("well-typed");
        let err = registry.distributed_rate_limiter("x").unwrap_err();
        let shown = format!("{err} {err:?}");
        assert!(!shown.contains("hunter2"), "{entry}: {shown}");
        match err {
            RegistryError::InvalidConfig { source, .. } => {
                #[cfg(not(all(feature = "redis-cluster", feature = "redis-sentinel")))]
                if source.field().ends_with(".topology") {
                    continue; // the feature is off: that is the first problem
                }
                assert_eq!(
                    source.field(),
                    format!("resilience4j.ratelimiter.instances.x.{key}"),
                    "{entry}"
                );
                assert!(source.expected().contains(expected), "{entry}: {source}");
            }
            other => panic!("{entry}: {other:?}"),
        }
    }
}

#[test]
fn lease_keys_reach_the_distributed_limiter_and_the_snapshot() {
    let registry = Registry::from_toml_str(
        "[resilience4j.ratelimiter.instances.bulk]\nbackend = \"redis\"\n\
         redis-url = \"redis://127.0.0.1:1/\"\nlimit-for-period = 1000\n\
         limit-refresh-period = \"1s\"\nlease-size = 20\nlease-ttl = \"250ms\"\n",
    )
    .unwrap();
    let bulk = registry.distributed_rate_limiter("bulk").unwrap();
    assert_eq!(bulk.config().lease_size(), 20);
    assert_eq!(bulk.config().lease_ttl(), Duration::from_millis(250));
    let snapshot = registry.snapshot();
    let i = snapshot.instance(Kind::RateLimiter, "bulk").unwrap();
    let value = |key: &str| i.config_value(key).map(|v| v.value.clone());
    assert_eq!(value("lease-size").as_deref(), Some("20"));
    assert_eq!(value("lease-ttl").as_deref(), Some("250ms"));
    assert_eq!(value("topology").as_deref(), Some("STANDALONE"));
}
