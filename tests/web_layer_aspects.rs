//! The aspects `ResilienceLayer` gained beside the attributes' (issue 31):
//! the adaptive bulkhead and chaos, in process around a tower
//! `service_fn`. A slot comes back on completion, cancellation and panic;
//! a timeout teaches the adaptive bulkhead; chaos is innermost, so the
//! breaker counts an injected error and an injected latency holds the
//! bulkhead's slot and is timed by the time limiter.

use std::future::Future;
use std::io;
use std::panic::AssertUnwindSafe;
use std::pin::pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use futures::FutureExt;
use resil::{Error, ErrorKind, Registry};
use resil_web::tower::ResilienceLayer;
use tokio::sync::oneshot;
use tower::{service_fn, Layer, Service, ServiceExt};

/// What a request asks of the inner service.
enum Ask {
    /// Answer when the sender sends (or fail when it is dropped).
    Wait(oneshot::Receiver<u32>),
    /// Panic while polled.
    Panic,
    /// Answer at once.
    Now(u32),
}

fn inner(
    calls: Arc<AtomicUsize>,
) -> impl Service<
    Ask,
    Response = u32,
    Error = io::Error,
    Future = impl Future<Output = io::Result<u32>> + Send,
> + Clone {
    service_fn(move |ask: Ask| {
        calls.fetch_add(1, Ordering::SeqCst);
        async move {
            match ask {
                Ask::Wait(rx) => rx.await.map_err(|_| io::Error::other("sender dropped")),
                Ask::Panic => panic!("the downstream's code panicked"),
                Ask::Now(n) => Ok(n),
            }
        }
    })
}

fn poll_once<F: Future>(fut: std::pin::Pin<&mut F>) -> Poll<F::Output> {
    fut.poll(&mut Context::from_waker(Waker::noop()))
}

#[tokio::test(start_paused = true)]
async fn an_adaptive_bulkhead_refuses_past_its_limit_and_every_slot_comes_back() {
    let registry = Registry::new();
    registry
        .configure_adaptive_bulkhead("adaptive", |b| {
            // Every finished call a sample, however fast (the bulkhead times
            // calls on the process's clock, not tokio's paused one).
            b.initial_limit(1)
                .min_limit(1)
                .max_limit(1)
                .min_rtt_threshold(Duration::ZERO)
        })
        .unwrap();
    let bulkhead = registry.adaptive_bulkhead("adaptive");
    let calls = Arc::new(AtomicUsize::new(0));
    let svc = ResilienceLayer::builder(&registry, "adaptive")
        .adaptive_bulkhead()
        .build()
        .layer(inner(calls.clone()));

    // Held by a pending request: the next is refused without being sent.
    let (tx, rx) = oneshot::channel();
    let mut held = pin!(svc.clone().oneshot(Ask::Wait(rx)));
    assert!(poll_once(held.as_mut()).is_pending());
    let refused = svc.clone().oneshot(Ask::Now(1)).await.unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::BulkheadFull);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // Completion gives it back, and is a latency sample.
    tx.send(7).unwrap();
    assert_eq!(held.await.unwrap(), 7);
    assert_eq!(bulkhead.available_concurrent_calls(), 1);
    assert_eq!(bulkhead.metrics().samples(), 1);

    // Cancellation gives it back (and teaches nothing).
    let (_tx, rx) = oneshot::channel();
    let mut cancelled = Box::pin(svc.clone().oneshot(Ask::Wait(rx)));
    assert!(poll_once(cancelled.as_mut()).is_pending());
    assert_eq!(bulkhead.available_concurrent_calls(), 0);
    drop(cancelled);
    assert_eq!(bulkhead.available_concurrent_calls(), 1);

    // So does a panic in the downstream's code.
    let panicked = AssertUnwindSafe(svc.clone().oneshot(Ask::Panic))
        .catch_unwind()
        .await;
    assert!(panicked.is_err());
    assert_eq!(bulkhead.available_concurrent_calls(), 1);
    assert_eq!(svc.oneshot(Ask::Now(3)).await.unwrap(), 3);
    assert_eq!(bulkhead.metrics().samples(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_timeout_inside_the_layer_is_a_dropped_call_for_the_adaptive_bulkhead() {
    let registry = Registry::new();
    registry
        .configure_time_limiter("slow", |b| b.timeout_duration(Duration::from_millis(100)))
        .unwrap();
    registry
        .configure_adaptive_bulkhead("slow", |b| b.min_rtt_threshold(Duration::ZERO))
        .unwrap();
    let bulkhead = registry.adaptive_bulkhead("slow");
    let svc = ResilienceLayer::builder(&registry, "slow")
        .time_limiter()
        .adaptive_bulkhead()
        .build()
        .layer(inner(Arc::new(AtomicUsize::new(0))));
    let (_tx, rx) = oneshot::channel();
    let out = svc.oneshot(Ask::Wait(rx)).await.unwrap_err();
    assert_eq!(out.kind(), ErrorKind::Timeout);
    let m = bulkhead.metrics();
    assert_eq!((m.dropped_calls(), m.concurrent_calls()), (1, 0));
}

#[tokio::test(start_paused = true)]
async fn chaos_is_innermost_an_injected_error_is_a_breaker_failure_and_the_call_is_not_made() {
    let registry = Registry::new();
    registry
        .configure_chaos("chaos", |b| {
            b.enabled(true)
                .seed(7)
                .inject_error::<io::Error>(1.0, || io::Error::other("injected"))
        })
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let svc = ResilienceLayer::builder(&registry, "chaos")
        .circuit_breaker()
        .chaos()
        .build()
        .layer(inner(calls.clone()));
    let out = svc.clone().oneshot(Ask::Now(1)).await.unwrap_err();
    let Error::Call(error) = out else {
        panic!("not the injected error: {out:?}")
    };
    assert_eq!(error.to_string(), "injected");
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "an injected error replaces the call"
    );
    assert_eq!(
        registry.circuit_breaker("chaos").metrics().failed_calls(),
        1
    );

    // Switched off, the layer passes the request through.
    registry.chaos("chaos").disable("drill over");
    assert_eq!(svc.oneshot(Ask::Now(5)).await.unwrap(), 5);
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn an_injected_latency_holds_the_bulkhead_slot_and_is_timed_by_the_time_limiter() {
    let registry = Registry::new();
    registry
        .configure_chaos("latency", |b| {
            b.enabled(true)
                .seed(7)
                .inject_latency(1.0, Duration::from_secs(2))
        })
        .unwrap();
    registry
        .configure_bulkhead("latency", |b| b.max_concurrent_calls(1))
        .unwrap();
    registry
        .configure_time_limiter("latency", |b| b.timeout_duration(Duration::from_secs(1)))
        .unwrap();
    let calls = Arc::new(AtomicUsize::new(0));
    let svc = ResilienceLayer::builder(&registry, "latency")
        .time_limiter()
        .bulkhead()
        .chaos()
        .build()
        .layer(inner(calls.clone()));

    let mut delayed = pin!(svc.clone().oneshot(Ask::Now(1)));
    assert!(poll_once(delayed.as_mut()).is_pending());
    let refused = svc.clone().oneshot(Ask::Now(2)).await.unwrap_err();
    assert_eq!(
        refused.kind(),
        ErrorKind::BulkheadFull,
        "the delayed call holds the slot"
    );
    let started = tokio::time::Instant::now();
    assert_eq!(delayed.await.unwrap_err().kind(), ErrorKind::Timeout);
    assert_eq!(started.elapsed(), Duration::from_secs(1));
    assert_eq!(
        calls.load(Ordering::SeqCst),
        0,
        "the call after the delay never started"
    );
    assert_eq!(registry.bulkhead("latency").available_concurrent_calls(), 1);

    // Without a time limiter the call runs after the delay.
    let svc = ResilienceLayer::builder(&registry, "latency")
        .chaos()
        .build()
        .layer(inner(calls.clone()));
    let started = tokio::time::Instant::now();
    assert_eq!(svc.oneshot(Ask::Now(9)).await.unwrap(), 9);
    assert_eq!(started.elapsed(), Duration::from_secs(2));
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}
