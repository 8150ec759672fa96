//! Heap use of the tower layer, counted by a global allocator: a request
//! through the whole stack (breaker, rate limiter, time limiter, bulkhead)
//! allocates nothing beyond what the inner service does, for successes,
//! failures and refusals, with the HTTP classifier and refusal responses too;
//! an axum handler behind the stack allocates only what the handler does.
//!
//! Counts are per thread, so tests running in parallel cannot disturb each
//! other.

use std::future::{ready, Future};
use std::pin::pin;
use std::task::{Context, Waker};
use std::time::Duration;

use resil::Registry;
use resil_web::http::HttpClassifier;
use resil_web::tower::{RefusalResponses, ResilienceLayer};
use tower::{service_fn, Layer, Service};

#[path = "support/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::allocations;

#[global_allocator]
static ALLOC: counting_alloc::Counting = counting_alloc::Counting;

/// Allocations of 2 000 requests after 300 of warm-up; each request is
/// `call` then one poll, which the ready inner future completes.
fn allocations_per_request<S, Req>(svc: &mut S, mut req: impl FnMut(u64) -> Req) -> u64
where
    S: Service<Req>,
{
    let mut cx = Context::from_waker(Waker::noop());
    let mut run = |i: u64| {
        assert!(svc.poll_ready(&mut cx).is_ready());
        let fut = pin!(svc.call(req(i)));
        assert!(
            fut.poll(&mut cx).is_ready(),
            "a ready inner future completes at once"
        );
    };
    for i in 0..300 {
        run(i);
    }
    let before = allocations();
    for i in 0..2_000 {
        run(i);
    }
    allocations() - before
}

fn full_stack_registry() -> Registry {
    let registry = Registry::new();
    registry
        .configure_rate_limiter("alloc", |b| {
            b.limit_for_period(1_000_000)
                .limit_refresh_period(Duration::from_secs(1))
        })
        .unwrap();
    registry
        .configure_circuit_breaker("alloc", |b| {
            b.sliding_window_size(100).failure_rate_threshold(100.0)
        })
        .unwrap();
    registry
}

/// The whole stack with the HTTP classifier and refusal responses of body
/// type `B`.
fn http_stack<B: From<String> + 'static>(
    registry: &Registry,
) -> ResilienceLayer<HttpClassifier, RefusalResponses<B>> {
    ResilienceLayer::builder(registry, "alloc")
        .circuit_breaker()
        .rate_limiter()
        .time_limiter()
        .bulkhead()
        .classify(HttpClassifier::default())
        .respond(RefusalResponses::<B>::new())
        .build()
}

#[test]
fn a_request_through_the_whole_stack_allocates_nothing() {
    let registry = full_stack_registry();
    let layer = ResilienceLayer::builder(&registry, "alloc")
        .circuit_breaker()
        .rate_limiter()
        .time_limiter()
        .bulkhead()
        .build();
    let mut svc = layer.layer(service_fn(|i: u64| {
        ready(if i % 3 == 0 { Err(i) } else { Ok(i) })
    }));
    assert_eq!(allocations_per_request(&mut svc, |i| i), 0);
}

#[test]
fn an_http_request_classified_by_status_allocates_nothing_beyond_its_response() {
    let registry = full_stack_registry();
    let layer = http_stack::<String>(&registry);
    // `http::Response::new` allocates nothing for an empty body and no headers.
    let mut svc = layer.layer(service_fn(|i: u64| {
        let mut response = http::Response::new(String::new());
        if i % 4 == 0 {
            *response.status_mut() = http::StatusCode::SERVICE_UNAVAILABLE;
        }
        ready(Ok::<_, std::convert::Infallible>(response))
    }));
    assert_eq!(allocations_per_request(&mut svc, |i| i), 0);
}

#[test]
fn a_refused_request_allocates_nothing() {
    let registry = Registry::new();
    let layer = ResilienceLayer::builder(&registry, "refused")
        .circuit_breaker()
        .build();
    registry
        .circuit_breaker("refused")
        .transition_to_forced_open()
        .unwrap();
    let mut svc = layer.layer(service_fn(|i: u64| ready(Ok::<_, ()>(i))));
    assert_eq!(allocations_per_request(&mut svc, |i| i), 0);
}

/// Allocations of 2 000 calls of an axum handler after 300 of warm-up, each
/// polled once (the handler answers at once).
fn handler_allocations<H, T>(handler: H) -> u64
where
    H: axum::handler::Handler<T, ()>,
{
    let mut cx = Context::from_waker(Waker::noop());
    let mut run = || {
        let req = http::Request::new(axum::body::Body::empty());
        let fut = pin!(handler.clone().call(req, ()));
        assert!(fut.poll(&mut cx).is_ready(), "the handler answers at once");
    };
    for _ in 0..300 {
        run();
    }
    let before = allocations();
    for _ in 0..2_000 {
        run();
    }
    allocations() - before
}

#[test]
fn a_protected_axum_handler_allocates_only_what_the_handler_does() {
    async fn price() -> &'static str {
        "42"
    }
    let registry = full_stack_registry();
    let layer = http_stack::<axum::body::Body>(&registry);
    let bare = handler_allocations(price);
    assert!(bare > 0, "an async fn handler boxes its future");
    assert_eq!(handler_allocations(layer.handler(price)), bare);
}
