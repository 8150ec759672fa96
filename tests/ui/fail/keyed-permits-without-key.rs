// `permits` weighs calls on a keyed rate limiter: without `key` it is an
// error at `permits`.

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

fn main() {
    let _ = order(vec![1]);
}
