//! What the expansion costs beyond the same primitives composed by hand: the
//! async fn's future is no larger than the hand-composed one plus a few words
//! (the per-call-site handles it holds across the await), and a protected call
//! that succeeds allocates nothing.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};

use resil::{registry, Error, Rejection};

#[derive(Debug)]
struct Down;

impl From<Rejection> for Down {
    fn from(_: Rejection) -> Self {
        Down
    }
}

async fn op(x: u64) -> Result<u64, Down> {
    Ok(x + 1)
}

#[resil::retry(name = "macros-cost")]
#[resil::circuit_breaker(name = "macros-cost")]
#[resil::bulkhead(name = "macros-cost")]
async fn annotated(x: u64) -> Result<u64, Down> {
    op(x).await
}

fn fn_error(e: Error<Down>) -> Down {
    e.into_rejection().map_or_else(|call| call, Down::from)
}

fn ready<F: Future>(fut: F) -> F::Output {
    match pin!(fut).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => panic!("the success path never waits"),
    }
}

#[test]
fn the_annotated_future_is_at_most_a_few_words_larger_than_the_hand_composed_one() {
    let retry = registry().retry("macros-cost-hand");
    let breaker = registry().circuit_breaker("macros-cost-hand");
    let bulkhead = registry().bulkhead("macros-cost-hand");
    let (retry, breaker, bulkhead) = (&*retry, &*breaker, &*bulkhead);
    let hand = |x: u64| async move {
        retry
            .call_async_nested(|| async move {
                breaker.call_async_nested(bulkhead.call_async(op(x))).await
            })
            .await
            .map_err(fn_error)
    };
    let annotated_size = std::mem::size_of_val(&annotated(1));
    let hand_size = std::mem::size_of_val(&hand(1));
    println!("future sizes: annotated {annotated_size} B, hand-composed {hand_size} B");
    assert!(
        annotated_size <= hand_size + 8 * std::mem::size_of::<usize>(),
        "annotated {annotated_size} B vs hand-composed {hand_size} B"
    );
    assert_eq!(ready(annotated(1)).unwrap(), 2);
    assert_eq!(ready(hand(1)).unwrap(), 2);
}

#[path = "support/counting_alloc.rs"]
mod counting_alloc;

use counting_alloc::allocations;

/// Counts this thread's allocations (other tests run on other threads).
#[global_allocator]
static ALLOC: counting_alloc::Counting = counting_alloc::Counting;

#[resil::retry(name = "macros-cost-sync")]
#[resil::circuit_breaker(name = "macros-cost-sync", fallback = zero)]
#[resil::rate_limiter(name = "macros-cost-sync", limit_for_period = 1000000)]
#[resil::bulkhead(name = "macros-cost-sync")]
fn annotated_sync(items: &[u64]) -> Result<u64, Down> {
    Ok(items.iter().sum())
}

fn zero(_items: &[u64]) -> Result<u64, Down> {
    Ok(0)
}

#[test]
fn a_protected_call_that_succeeds_allocates_nothing_once_its_call_site_is_initialised() {
    let items = [1, 2, 3];
    assert_eq!(annotated_sync(&items).unwrap(), 6); // initialises the call site
    assert_eq!(ready(annotated(1)).unwrap(), 2);
    let before = allocations();
    for _ in 0..100 {
        assert_eq!(annotated_sync(&items).unwrap(), 6);
        assert_eq!(ready(annotated(1)).unwrap(), 2);
    }
    assert_eq!(allocations() - before, 0);
}
