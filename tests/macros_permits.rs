//! `permits = <expr>` on an unkeyed `#[resil::rate_limiter]` (Resilience4j
//! 2.3's `@RateLimiter(permits = N)`): each call takes as many permits as the
//! expression says, evaluated over its arguments; a call asking for more
//! than the limiter can ever grant is refused at once and consumes nothing.
//! Sync and async, innermost and around another aspect.

use std::time::Duration;

use resil::rate_limiter::RateLimiterConfigBuilder;
use resil::{registry, Error, ErrorKind, Rejection};

#[derive(Debug, PartialEq)]
enum OrderError {
    Refused(ErrorKind),
}

impl From<Rejection> for OrderError {
    fn from(r: Rejection) -> Self {
        OrderError::Refused(Error::<()>::from(r).kind())
    }
}

/// Five permits a very long period, none waited for.
fn five(name: &str) {
    registry()
        .configure_rate_limiter(name, |b: RateLimiterConfigBuilder| {
            b.limit_for_period(5)
                .limit_refresh_period(Duration::from_secs(3600))
                .timeout_duration(Duration::ZERO)
        })
        .unwrap();
}

#[resil::rate_limiter(name = "weighted-sync", permits = items.len())]
fn order(items: Vec<u32>) -> Result<usize, OrderError> {
    Ok(items.len())
}

#[resil::rate_limiter(name = "weighted-async", permits = items.len())]
async fn order_async(items: Vec<u32>) -> Result<usize, OrderError> {
    Ok(items.len())
}

// The rate limiter around the bulkhead: the weighted limiter is an outer
// aspect here.
#[resil::rate_limiter(name = "weighted-outer", permits = weight)]
#[resil::bulkhead(name = "weighted-outer")]
fn weighed(weight: u64) -> Result<u64, OrderError> {
    Ok(weight)
}

#[resil::rate_limiter(name = "weighted-outer-async", permits = weight)]
#[resil::bulkhead(name = "weighted-outer-async")]
async fn weighed_async(weight: u64) -> Result<u64, OrderError> {
    Ok(weight)
}

const REFUSED: OrderError = OrderError::Refused(ErrorKind::RequestNotPermitted);

#[test]
fn a_sync_call_takes_as_many_permits_as_its_expression_says() {
    five("weighted-sync");
    assert_eq!(order(vec![1, 2, 3]), Ok(3));
    assert_eq!(order(vec![4, 5]), Ok(2));
    // All five are taken: even one more is refused.
    assert_eq!(order(vec![6]), Err(REFUSED));
    let limiter = registry().rate_limiter("weighted-sync");
    assert_eq!(limiter.metrics().available_permissions(), 0);
}

#[tokio::test]
async fn an_async_call_takes_as_many_permits_as_its_expression_says() {
    five("weighted-async");
    assert_eq!(order_async(vec![1, 2, 3, 4]).await, Ok(4));
    assert_eq!(order_async(vec![5, 6]).await, Err(REFUSED));
    assert_eq!(order_async(vec![7]).await, Ok(1));
    assert_eq!(order_async(vec![8]).await, Err(REFUSED));
}

#[test]
fn a_call_heavier_than_the_limit_is_refused_and_consumes_nothing() {
    five("weighted-outer");
    assert_eq!(weighed(6), Err(REFUSED));
    assert_eq!(weighed(5), Ok(5));
    assert_eq!(weighed(1), Err(REFUSED));
}

#[tokio::test]
async fn around_another_aspect_the_weight_applies_as_well() {
    five("weighted-outer-async");
    assert_eq!(weighed_async(2).await, Ok(2));
    assert_eq!(weighed_async(3).await, Ok(3));
    assert_eq!(weighed_async(1).await, Err(REFUSED));
    let limiter = registry().rate_limiter("weighted-outer-async");
    assert_eq!(limiter.metrics().available_permissions(), 0);
}
