//! The keyed tower layer: a breaker, a rate limiter and a bulkhead per key
//! found in the request (a header, a path parameter, the client's address
//! behind trusted proxies, an extension, a closure), over real HTTP (axum)
//! and through `oneshot`; a client that writes `X-Forwarded-For` cannot
//! land in another client's key.

use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Path;
use axum::routing::get;
use axum::Router;
use resil::clock::ManualClock;
use resil::config::FileConfig;
use resil::Registry;
use resil_web::tower::keyed::{
    by_extension, by_header, by_path_param, by_peer_ip, key_fn, KeyExtractorExt, KeyedLayer,
};
use tokio::sync::Notify;
use tower::{service_fn, Service, ServiceExt};

const FILE: &str = r#"
[resilience4j.ratelimiter.instances.api]
limit-for-period = 2
limit-refresh-period = "1m"
timeout-duration = "0s"

[resilience4j.ratelimiter.instances.edge]
limit-for-period = 1
limit-refresh-period = "1m"
timeout-duration = "0s"

[resilience4j.ratelimiter.instances.batch]
limit-for-period = 10
limit-refresh-period = "1m"
timeout-duration = "0s"

[resilience4j.ratelimiter.instances.patient]
limit-for-period = 1
limit-refresh-period = "1s"
timeout-duration = "5s"

[resilience4j.bulkhead.instances.slots]
max-concurrent-calls = 1

[resilience4j.circuitbreaker.instances.hosts]
sliding-window-size = 2
minimum-number-of-calls = 2
wait-duration-in-open-state = "30s"
"#;

fn registry(clock: &ManualClock) -> Registry {
    let registry = Registry::builder().clock(clock.clone()).build();
    registry
        .reload(FileConfig::from_toml_str(FILE).unwrap())
        .unwrap();
    registry
}

async fn serve(app: Router) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        axum::serve(
            listener,
            app.into_make_service_with_connect_info::<SocketAddr>(),
        )
        .await
        .unwrap()
    });
    format!("http://{addr}")
}

async fn status(req: reqwest::RequestBuilder) -> (u16, String) {
    let res = req.send().await.unwrap();
    (res.status().as_u16(), res.text().await.unwrap())
}

fn ok_service(
) -> impl Service<http::Request<()>, Response = http::Response<String>, Error = Infallible> + Clone
{
    service_fn(|_: http::Request<()>| async { Ok(http::Response::new(String::from("ok"))) })
}

#[tokio::test]
async fn a_noisy_tenant_by_header_is_limited_and_a_quiet_one_is_not() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let layer = KeyedLayer::builder(&registry, "api", by_header("x-tenant"))
        .rate_limiter()
        .build();
    let app = Router::new().route("/", get(|| async { "ok" }).layer(layer));
    let base = serve(app).await;
    let client = reqwest::Client::new();
    let as_tenant = |t: &str| client.get(&base).header("x-tenant", t);
    assert_eq!(status(as_tenant("noisy")).await.0, 200);
    assert_eq!(status(as_tenant("noisy")).await.0, 200);
    let res = as_tenant("noisy").send().await.unwrap();
    assert_eq!(res.status(), 429);
    // The key's own quota and its next cycle, never the key in a name.
    assert_eq!(res.headers()["ratelimit-policy"], "\"api\";q=2;w=60");
    assert!(res.headers().contains_key("retry-after"));
    assert_eq!(status(as_tenant("quiet")).await.0, 200);
    // No header: 400, naming it.
    let (code, body) = status(client.get(&base)).await;
    assert_eq!((code, body.trim()), (400, "no `x-tenant` header"));
    let family = registry.keyed_rate_limiter("api");
    assert_eq!(family.counts().in_use, 2);
    let top = family.top_keys(1);
    assert_eq!(top.by_refusals[0].key, "noisy");
    // A minute later the noisy tenant has its quota again.
    clock.advance(Duration::from_secs(60));
    assert_eq!(status(as_tenant("noisy")).await.0, 200);
}

#[tokio::test]
async fn a_request_without_a_key_may_share_one_key_instead() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let layer = KeyedLayer::builder(
        &registry,
        "edge",
        by_header("x-tenant").or_key(String::from("anonymous")),
    )
    .rate_limiter()
    .build();
    let svc = tower::Layer::layer(&layer, ok_service());
    let anon = || http::Request::new(());
    assert_eq!(svc.clone().oneshot(anon()).await.unwrap().status(), 200);
    assert_eq!(svc.clone().oneshot(anon()).await.unwrap().status(), 429);
    // The shared key is a key like any other: an explicit "anonymous" shares it.
    let named = http::Request::builder()
        .header("x-tenant", "anonymous")
        .body(())
        .unwrap();
    assert_eq!(svc.clone().oneshot(named).await.unwrap().status(), 429);
    let other = http::Request::builder()
        .header("x-tenant", "t1")
        .body(())
        .unwrap();
    assert_eq!(svc.oneshot(other).await.unwrap().status(), 200);
}

#[tokio::test]
async fn a_path_parameter_keys_the_route_after_routing() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let layer = KeyedLayer::builder(&registry, "edge", by_path_param("tenant"))
        .rate_limiter()
        .build();
    let app = Router::new()
        .route(
            "/tenants/{tenant}/orders",
            get(|Path(t): Path<String>| async move { t }),
        )
        .route_layer(layer);
    let base = serve(app).await;
    let client = reqwest::Client::new();
    let get = |t: &str| client.get(format!("{base}/tenants/{t}/orders"));
    assert_eq!(status(get("acme")).await, (200, "acme".into()));
    assert_eq!(status(get("acme")).await.0, 429);
    assert_eq!(status(get("globex")).await, (200, "globex".into()));
    let mut keys = Vec::new();
    registry
        .keyed_rate_limiter("edge")
        .for_each_key(|k, _| keys.push(k.as_str().unwrap().to_owned()));
    keys.sort();
    assert_eq!(keys, ["acme", "globex"]);
}

#[tokio::test]
async fn a_spoofed_x_forwarded_for_cannot_land_in_another_client_s_key() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    // The test client connects from 127.0.0.1: it plays the trusted proxy,
    // which appends the address it got each request from.
    let layer = KeyedLayer::builder(
        &registry,
        "edge",
        by_peer_ip().trust(["127.0.0.0/8", "10.0.0.0/8"]).unwrap(),
    )
    .rate_limiter()
    .build();
    let app = Router::new().route("/", get(|| async { "ok" }).layer(layer));
    let base = serve(app).await;
    let client = reqwest::Client::new();
    let via_proxy = |xff: &str| client.get(&base).header("x-forwarded-for", xff);
    // The victim spends its one permit.
    assert_eq!(status(via_proxy("203.0.113.7")).await.0, 200);
    // The attacker writes the victim's address (and a trusted proxy's) in
    // front of what the proxies append: it is keyed by its own address, so
    // it neither spends the victim's quota nor finds it spent.
    let spoofed = "203.0.113.7, 10.0.0.9, 198.51.100.9";
    assert_eq!(status(via_proxy(spoofed)).await.0, 200);
    // Nor can it escape its own key with a fresh made-up address.
    assert_eq!(status(via_proxy("192.0.2.1, 198.51.100.9")).await.0, 429);
    assert_eq!(
        status(via_proxy("192.0.2.77, 10.0.0.2, 198.51.100.9, 10.0.0.3"))
            .await
            .0,
        429
    );
    let mut keys = Vec::new();
    registry
        .keyed_rate_limiter("edge")
        .for_each_key(|k, free| keys.push((*k.downcast_ref::<IpAddr>().unwrap(), free)));
    keys.sort();
    let ip = |s: &str| s.parse::<IpAddr>().unwrap();
    assert_eq!(keys, [(ip("198.51.100.9"), 0), (ip("203.0.113.7"), 0)]);
}

#[tokio::test]
async fn without_trusted_proxies_the_header_is_never_read() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let layer = KeyedLayer::builder(&registry, "edge", by_peer_ip())
        .rate_limiter()
        .build();
    let app = Router::new().route("/", get(|| async { "ok" }).layer(layer));
    let base = serve(app).await;
    let client = reqwest::Client::new();
    assert_eq!(
        status(client.get(&base).header("x-forwarded-for", "192.0.2.1"))
            .await
            .0,
        200
    );
    // Another made-up address is still the same peer.
    assert_eq!(
        status(client.get(&base).header("x-forwarded-for", "192.0.2.2"))
            .await
            .0,
        429
    );
    let mut keys = Vec::new();
    registry
        .keyed_rate_limiter("edge")
        .for_each_key(|k, _| keys.push(*k.downcast_ref::<IpAddr>().unwrap()));
    assert_eq!(keys, ["127.0.0.1".parse::<IpAddr>().unwrap()]);
}

#[derive(Clone, Hash, PartialEq, Eq, Debug)]
struct Principal(u64);

#[tokio::test]
async fn an_extension_or_a_closure_is_the_key_and_a_request_may_cost_more_permits() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let layer = KeyedLayer::builder(&registry, "batch", by_extension::<Principal>())
        .rate_limiter()
        .cost(|req: &http::Request<()>| {
            req.headers()
                .get("x-items")
                .and_then(|v| v.to_str().ok()?.parse().ok())
                .unwrap_or(1)
        })
        .build();
    let svc = tower::Layer::layer(&layer, ok_service());
    let as_user = |id: u64, items: u32| {
        let mut req = http::Request::builder()
            .header("x-items", items)
            .body(())
            .unwrap();
        req.extensions_mut().insert(Principal(id));
        req
    };
    assert_eq!(
        svc.clone().oneshot(as_user(1, 8)).await.unwrap().status(),
        200
    );
    assert_eq!(
        svc.clone().oneshot(as_user(1, 3)).await.unwrap().status(),
        429
    );
    assert_eq!(
        svc.clone().oneshot(as_user(1, 2)).await.unwrap().status(),
        200
    );
    assert_eq!(
        svc.clone().oneshot(as_user(2, 10)).await.unwrap().status(),
        200
    );
    let none = svc.oneshot(http::Request::new(())).await.unwrap();
    assert_eq!(none.status(), 400);
    assert!(none.body().contains("Principal"), "{}", none.body());

    // A closure: the first 4 characters of an API key.
    let layer = KeyedLayer::builder(
        &registry,
        "edge",
        key_fn(|req: &http::Request<()>| {
            Some(
                req.headers()
                    .get("x-api-key")?
                    .to_str()
                    .ok()?
                    .get(..4)?
                    .to_owned(),
            )
        }),
    )
    .rate_limiter()
    .build();
    let svc = tower::Layer::layer(&layer, ok_service());
    let with_key = |k: &str| {
        http::Request::builder()
            .header("x-api-key", k)
            .body(())
            .unwrap()
    };
    assert_eq!(
        svc.clone()
            .oneshot(with_key("abcd-1"))
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(
        svc.clone()
            .oneshot(with_key("abcd-2"))
            .await
            .unwrap()
            .status(),
        429
    );
    assert_eq!(
        svc.clone()
            .oneshot(with_key("wxyz-1"))
            .await
            .unwrap()
            .status(),
        200
    );
    assert_eq!(svc.oneshot(with_key("ab")).await.unwrap().status(), 400);
}

#[tokio::test]
async fn a_failing_host_opens_its_own_breaker_only() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let layer = KeyedLayer::builder(&registry, "hosts", by_header("x-host"))
        .circuit_breaker()
        .build();
    let svc = tower::Layer::layer(
        &layer,
        service_fn(|req: http::Request<()>| async move {
            let mut res = http::Response::new(String::new());
            if req.headers()["x-host"] == "down" {
                *res.status_mut() = http::StatusCode::INTERNAL_SERVER_ERROR;
            }
            Ok::<_, Infallible>(res)
        }),
    );
    let to = |h: &str| {
        http::Request::builder()
            .header("x-host", h)
            .body(())
            .unwrap()
    };
    for _ in 0..2 {
        assert_eq!(svc.clone().oneshot(to("down")).await.unwrap().status(), 500);
    }
    let refused = svc.clone().oneshot(to("down")).await.unwrap();
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "30");
    assert_eq!(svc.clone().oneshot(to("up")).await.unwrap().status(), 200);
    let breakers = registry.keyed_circuit_breaker("hosts");
    assert_eq!(
        breakers.get("down").state(),
        resil::circuit_breaker::State::Open
    );
    assert_eq!(
        breakers.get("up").state(),
        resil::circuit_breaker::State::Closed
    );
}

#[tokio::test]
async fn a_key_s_bulkhead_slot_comes_back_when_its_request_is_cancelled_or_panics() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let layer = KeyedLayer::builder(&registry, "slots", by_header("x-tenant"))
        .circuit_breaker()
        .bulkhead()
        .build();
    let gate = Arc::new(Notify::new());
    let svc = tower::Layer::layer(&layer, {
        let gate = Arc::clone(&gate);
        service_fn(move |req: http::Request<()>| {
            let gate = Arc::clone(&gate);
            async move {
                match req.headers().get("x-do").map(|v| v.to_str().unwrap()) {
                    Some("block") => gate.notified().await,
                    Some("panic") => panic!("the handler panicked"),
                    _ => {}
                }
                Ok::<_, Infallible>(http::Response::new(String::from("ok")))
            }
        })
    });
    let req = |t: &str, action: &str| {
        http::Request::builder()
            .header("x-tenant", t)
            .header("x-do", action)
            .body(())
            .unwrap()
    };
    let slots = registry.keyed_bulkhead("slots");
    // Held by a request in flight: the key is full, another key is not.
    let mut blocked = Box::pin(svc.clone().oneshot(req("a", "block")));
    assert!(futures::poll!(blocked.as_mut()).is_pending());
    assert_eq!(slots.get("a").in_flight(), 1);
    assert_eq!(
        svc.clone().oneshot(req("a", "go")).await.unwrap().status(),
        503
    );
    assert_eq!(
        svc.clone().oneshot(req("b", "go")).await.unwrap().status(),
        200
    );
    // Cancelled: the slot is back.
    drop(blocked);
    assert_eq!(slots.get("a").in_flight(), 0);
    assert_eq!(
        svc.clone().oneshot(req("a", "go")).await.unwrap().status(),
        200
    );
    // A panic in the inner service: the slot is back too, and the breaker's
    // permit recorded nothing.
    let task = tokio::spawn(svc.clone().oneshot(req("a", "panic")));
    assert!(task.await.unwrap_err().is_panic());
    assert_eq!(slots.get("a").in_flight(), 0);
    let breaker = registry.keyed_circuit_breaker("slots");
    let before = breaker.get("a").metrics().successful_calls();
    assert_eq!(svc.oneshot(req("a", "go")).await.unwrap().status(), 200);
    assert_eq!(breaker.get("a").metrics().successful_calls(), before + 1);
}

#[tokio::test(start_paused = true)]
async fn a_request_waits_for_its_key_s_reserved_permit_within_the_timeout() {
    let clock = ManualClock::new();
    let registry = registry(&clock);
    let layer = KeyedLayer::builder(&registry, "patient", by_header("x-tenant"))
        .rate_limiter()
        .bulkhead()
        .build();
    let svc = tower::Layer::layer(&layer, ok_service());
    let req = || {
        http::Request::builder()
            .header("x-tenant", "t")
            .body(())
            .unwrap()
    };
    assert_eq!(svc.clone().oneshot(req()).await.unwrap().status(), 200);
    // The next permit is the next cycle's, 1 s away (on the family's clock):
    // reserved, waited for on tokio's (paused) timer, then served.
    let start = tokio::time::Instant::now();
    let mut waiting = Box::pin(svc.clone().oneshot(req()));
    assert!(futures::poll!(waiting.as_mut()).is_pending());
    assert_eq!(waiting.await.unwrap().status(), 200);
    assert_eq!(start.elapsed(), Duration::from_secs(1));
}
