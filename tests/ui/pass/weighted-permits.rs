// `permits` weighs calls on a rate limiter, keyed or not (Resilience4j
// 2.3's `@RateLimiter(permits = N)`): evaluated over the arguments before
// they move into the body.

#[derive(Debug)]
struct AppError;

impl From<resil::Rejection> for AppError {
    fn from(_: resil::Rejection) -> Self {
        AppError
    }
}

#[resil::rate_limiter(name = "api", permits = items.len())]
fn order(items: Vec<u32>) -> Result<usize, AppError> {
    Ok(items.len())
}

#[resil::rate_limiter(name = "api-async", permits = items.len())]
#[resil::bulkhead(name = "api-async")]
async fn order_async(items: Vec<u32>) -> Result<usize, AppError> {
    Ok(items.len())
}

fn main() {
    assert_eq!(order(vec![1, 2]).unwrap(), 2);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(rt.block_on(order_async(vec![1, 2, 3])).unwrap(), 3);
}
