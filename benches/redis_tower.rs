//! The Redis-backed rate limiter as a tower layer aspect, beside the
//! attribute (`#[resil::rate_limiter]` on an instance with `backend =
//! "redis"`) over the same instance settings and the same redis-server, and
//! beside the local limiter's layer for scale.
//!
//! # The traffic this stands for
//!
//! A client whose requests all pass a quota shared by a fleet: every
//! request takes one permit from Redis (one `EVALSHA` round trip: leases
//! off), and the quota (10⁶ a second) is never spent, so every acquire is
//! a grant. The inner service answers at once.
//!
//! # What is measured
//!
//! One request at a time, `block_on` on a current-thread runtime: the round
//! trip dominates, so read the layer's figure against the attribute's (the
//! ratio is what the layer's state machine adds around the same acquire).
//!
//! # What distorts it
//!
//! The server runs on the same shared 2-core machine as the client
//! (loopback round trips, cores contended, other engineers compiling):
//! compare ratios within one run.

#[path = "../tests/support/redis_server.rs"]
mod redis_server;

use std::future::ready;
use std::io;

use criterion::Criterion;
use redis_server::RedisServer;
use resil::Registry;
use resil_web::tower::ResilienceLayer;
use tower::{service_fn, Layer, Service, ServiceExt};

fn file(url: &str) -> String {
    format!(
        r#"
[resilience4j.ratelimiter.instances.bench-redis]
backend = "redis"
redis-url = "{url}"
key-prefix = "bench-tower:"
limit-for-period = 1000000
limit-refresh-period = "1s"
timeout-duration = "0ms"

[resilience4j.ratelimiter.instances.bench-local]
limit-for-period = 1000000000
limit-refresh-period = "1s"
timeout-duration = "0ms"
"#
    )
}

#[resil::rate_limiter(name = "bench-redis")]
async fn by_attribute(x: u64) -> Result<u64, io::Error> {
    Ok(x)
}

fn main() {
    let server = RedisServer::start();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    resil::init(Registry::from_toml_str(&file(&server.url())).unwrap()).unwrap();
    let registry = resil::registry();
    let inner = || service_fn(|x: u64| ready(Ok::<_, io::Error>(x)));
    let redis = ResilienceLayer::builder(registry, "bench-redis")
        .rate_limiter()
        .build()
        .layer(inner());
    let local = ResilienceLayer::builder(registry, "bench-local")
        .rate_limiter()
        .build()
        .layer(inner());

    let mut c = Criterion::default()
        .warm_up_time(std::time::Duration::from_millis(500))
        .measurement_time(std::time::Duration::from_secs(3))
        .sample_size(30)
        .configure_from_args();
    let mut g = c.benchmark_group("redis_tower");
    let mut x = 0u64;
    // The attribute first: the first contender also pays for the
    // connection's warm-up.
    g.bench_function("rate_limiter on redis/resil attribute", |b| {
        b.iter(|| {
            x += 1;
            rt.block_on(by_attribute(x)).unwrap()
        })
    });
    g.bench_function("rate_limiter on redis/resil layer", |b| {
        b.iter(|| {
            x += 1;
            rt.block_on(redis.clone().oneshot(x)).unwrap()
        })
    });
    g.bench_function("rate_limiter local/resil layer (for scale)", |b| {
        b.iter(|| {
            x += 1;
            let mut svc = local.clone();
            rt.block_on(async {
                std::future::poll_fn(|cx| svc.poll_ready(cx)).await.unwrap();
                svc.call(x).await.unwrap()
            })
        })
    });
    g.finish();
    let m = registry
        .distributed_rate_limiter("bench-redis")
        .unwrap()
        .metrics();
    println!(
        "redis acquires granted: {} (layer and attribute share the instance)",
        m.successful_acquires()
    );
    c.final_summary();
}
