//! `#[rate_limiter(name = …)]` on a name whose settings say
//! `backend = "redis"`: the call site uses the registry's Redis-backed limiter,
//! so every process shares one quota, with the local limiter's refusal and
//! fallbacks. One test fn, because the attributes use the process-wide
//! registry (configured once) and the `redis-server` it starts must be
//! stopped when the test ends.
#![cfg(feature = "redis")]

#[path = "support/redis_server.rs"]
mod redis_server;

use redis_server::RedisServer;
use resil::distributed_rate_limiter::DistributedRateLimiter;
use resil::error::RequestNotPermitted;
use resil::rate_limiter::RateLimiter;
use resil::{Registry, Rejection};

#[derive(Debug, PartialEq)]
enum AppError {
    Busy,
}

impl From<Rejection> for AppError {
    fn from(_: Rejection) -> Self {
        AppError::Busy
    }
}

#[resil::rate_limiter(name = "quote", fallback = busy)]
async fn quote(i: u32) -> Result<u32, AppError> {
    Ok(i)
}

async fn busy(_i: u32, _why: RequestNotPermitted) -> Result<u32, AppError> {
    Ok(0)
}

/// The attribute's literal is applied to the shared quota, as it would be to
/// a local one.
#[resil::rate_limiter(name = "attributed", limit_for_period = 2)]
async fn attributed() -> Result<(), AppError> {
    Ok(())
}

/// A sync fn blocks its thread while Redis answers.
#[resil::rate_limiter(name = "nightly-export")]
fn export() -> Result<&'static str, AppError> {
    Ok("exported")
}

/// `permits = <expr>`: each call weighs its items against the shared quota.
#[resil::rate_limiter(name = "bulk-quote", permits = items.len())]
async fn bulk_quote(items: Vec<u32>) -> Result<usize, AppError> {
    Ok(items.len())
}

/// `backend = "local"` keeps a per-process limiter under the same feature.
#[resil::rate_limiter(name = "local-only")]
async fn local_only() -> Result<(), AppError> {
    Ok(())
}

fn config(url: &str) -> String {
    format!(
        r#"
[resilience4j.ratelimiter.configs.default]
backend = "redis"
redis-url = "{url}"
key-prefix = "macro-test:"
limit-for-period = 3
limit-refresh-period = "1h"
timeout-duration = "0ms"
redis-timeout = "5s"

[resilience4j.ratelimiter.instances.nightly-export]
limit-for-period = 1

[resilience4j.ratelimiter.instances.local-only]
backend = "local"
limit-for-period = 1
"#
    )
}

/// Another process of the same service: its own registry, same file.
fn other_process(url: &str, name: &str) -> resil::Handle<DistributedRateLimiter> {
    Registry::from_toml_str(&config(url))
        .unwrap()
        .distributed_rate_limiter(name)
        .unwrap()
}

#[test]
fn rate_limiter_attributes_share_one_redis_quota_when_the_config_says_redis() {
    let server = RedisServer::start();
    let url = server.url();
    resil::init(Registry::from_toml_str(&config(&url)).unwrap()).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    // Three per hour for `quote`, decided by Redis: the 4th and 5th calls
    // take the fallback.
    let answers: Vec<u32> = rt.block_on(async {
        let mut out = Vec::new();
        for i in 1..=5 {
            out.push(quote(i).await.unwrap());
        }
        out
    });
    assert_eq!(answers, [1, 2, 3, 0, 0]);
    let registry = resil::registry();
    assert_eq!(registry.distributed_rate_limiter_names(), ["quote"]);
    assert!(
        registry.names::<RateLimiter>().is_empty(),
        "no local limiter was created for a redis-backed name"
    );
    let site = registry.distributed_rate_limiter("quote").unwrap();
    let m = site.metrics();
    assert_eq!((m.successful_acquires(), m.failed_acquires()), (3, 2));
    assert_eq!(m.fallback_decisions(), 0, "Redis decided every call");

    // The quota is the cluster's: another process finds it spent.
    let other = other_process(&url, "quote");
    let refused = rt.block_on(other.acquire_async()).unwrap_err();
    assert!(
        matches!(refused, resil::rate_limiter::AcquireError::NotPermitted(_)),
        "{refused:?}"
    );

    // The attribute's `limit_for_period = 2` is the shared quota's limit.
    let attributed_ok = rt.block_on(async {
        let mut ok = 0;
        for _ in 0..4 {
            if attributed().await.is_ok() {
                ok += 1;
            }
        }
        ok
    });
    assert_eq!(attributed_ok, 2);
    assert_eq!(
        registry
            .distributed_rate_limiter("attributed")
            .unwrap()
            .config()
            .limit_for_period(),
        2
    );

    // A sync fn outside any runtime: the limiter blocks the thread on its
    // own runtime while Redis answers.
    assert_eq!(export(), Ok("exported"));
    assert_eq!(export(), Err(AppError::Busy), "1 per hour, spent");
    let grant = rt
        .block_on(other_process(&url, "nightly-export").acquire_async())
        .unwrap_err();
    assert!(matches!(
        grant,
        resil::rate_limiter::AcquireError::NotPermitted(_)
    ));
    let export_limiter = registry.distributed_rate_limiter("nightly-export").unwrap();
    assert_eq!(export_limiter.metrics().successful_acquires(), 1);

    // `backend = "local"`: a local limiter, one permit per process.
    rt.block_on(async {
        assert_eq!(local_only().await, Ok(()));
        assert_eq!(local_only().await, Err(AppError::Busy));
    });
    assert_eq!(registry.names::<RateLimiter>(), ["local-only"]);
    assert!(!registry
        .distributed_rate_limiter_names()
        .contains(&"local-only".to_owned()));

    // Weighted calls against the shared quota of 3: 2 + 2 does not fit,
    // 2 + 1 does, and another process finds the quota spent.
    rt.block_on(async {
        assert_eq!(bulk_quote(vec![1, 2]).await, Ok(2));
        assert_eq!(bulk_quote(vec![3, 4]).await, Err(AppError::Busy));
        assert_eq!(bulk_quote(vec![5]).await, Ok(1));
    });
    let bulk = registry.distributed_rate_limiter("bulk-quote").unwrap();
    assert_eq!(bulk.metrics().successful_acquires(), 2);
    assert!(rt
        .block_on(other_process(&url, "bulk-quote").acquire_async())
        .is_err());

    // Redis stops: the default FAIL_CLOSED policy refuses, and says so.
    drop(server);
    let after = rt.block_on(quote(6)).unwrap();
    assert_eq!(after, 0, "refused by the failure policy, so the fallback");
    let m = site.metrics();
    assert_eq!(m.fallback_refusals(), 1);
    assert!(m.backend_failing());
}
