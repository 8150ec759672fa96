//! The tower layer's rate limiter on Redis: a `backend = "redis"` instance
//! gives `ResilienceLayer::rate_limiter()` the distributed limiter, as it
//! gives the attribute's call site, so two processes (two registries here)
//! share one quota. Starts its own `redis-server` (see
//! `support/redis_server.rs`) and fails, never skips, when it cannot.
#![cfg(feature = "redis")]

#[path = "support/redis_server.rs"]
mod redis_server;

use std::io;

use redis_server::RedisServer;
use resil::{ErrorKind, Registry};
use resil_web::tower::ResilienceLayer;
use tower::{service_fn, Layer, ServiceExt};

fn file(url: &str) -> String {
    format!(
        r#"
[resilience4j.ratelimiter.instances.checkout]
backend = "redis"
redis-url = "{url}"
key-prefix = "tower-test:"
limit-for-period = 3
limit-refresh-period = "1h"
timeout-duration = "0ms"
"#
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_layers_share_one_quota_in_redis_and_a_refusal_sends_nothing() {
    let server = RedisServer::start();
    let first = Registry::from_toml_str(&file(&server.url())).unwrap();
    let second = Registry::from_toml_str(&file(&server.url())).unwrap();
    let layer = |registry: &Registry| {
        ResilienceLayer::builder(registry, "checkout")
            .circuit_breaker()
            .rate_limiter()
            .build()
    };
    let (a, b) = (layer(&first), layer(&second));
    assert_eq!(
        a.aspects().collect::<Vec<_>>(),
        [
            resil::options::Aspect::CircuitBreaker,
            resil::options::Aspect::RateLimiter
        ]
    );
    let sent = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let inner = {
        let sent = sent.clone();
        service_fn(move |n: u32| {
            sent.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async move { Ok::<_, io::Error>(n) }
        })
    };
    let (a, b) = (a.layer(inner.clone()), b.layer(inner));
    assert_eq!(a.clone().oneshot(1).await.unwrap(), 1);
    assert_eq!(b.clone().oneshot(2).await.unwrap(), 2);
    assert_eq!(a.clone().oneshot(3).await.unwrap(), 3);
    // The quota of 3 is spent, whichever process asks.
    let refused = b.oneshot(4).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::RequestNotPermitted);
    assert_eq!(
        a.oneshot(5).await.unwrap_err().kind(),
        ErrorKind::RequestNotPermitted
    );
    assert_eq!(sent.load(std::sync::atomic::Ordering::SeqCst), 3);
    let m = first
        .distributed_rate_limiter("checkout")
        .unwrap()
        .metrics();
    assert_eq!(m.successful_acquires(), 2);
}

// On one thread: the connection's driver task cannot run while the test
// polls, so the first poll always finds the round trip still in flight. On
// two workers the driver and Redis could answer between two awaits of that
// one poll, and the request then completed at once (seen about one run in
// five on a loaded machine).
#[tokio::test(flavor = "current_thread")]
async fn a_request_dropped_while_it_waits_for_redis_gives_its_half_open_probe_back() {
    let server = RedisServer::start();
    let registry = Registry::from_toml_str(&file(&server.url())).unwrap();
    registry
        .configure_circuit_breaker("checkout", |b| {
            b.permitted_number_of_calls_in_half_open_state(1)
        })
        .unwrap();
    let breaker = registry.circuit_breaker("checkout");
    breaker.transition_to_open().unwrap();
    breaker.transition_to_half_open().unwrap();
    let svc = ResilienceLayer::builder(&registry, "checkout")
        .circuit_breaker()
        .rate_limiter()
        .build()
        .layer(service_fn(|n: u32| async move { Ok::<_, io::Error>(n) }));

    // The one probe is taken, then the request waits on the Redis round trip.
    let mut waiting = Box::pin(svc.clone().oneshot(1));
    let first = futures::poll!(waiting.as_mut());
    assert!(first.is_pending(), "the acquire is a round trip away");
    let refused = svc.clone().oneshot(2).await.unwrap_err();
    assert_eq!(
        refused.kind(),
        ErrorKind::CallNotPermitted,
        "the probe is out"
    );
    drop(waiting);
    // Dropped unrecorded: the probe slot is back for the next request.
    assert_eq!(svc.oneshot(3).await.unwrap(), 3);
}
