// `permits` is an unsigned count of permits: a float is refused at the
// expression.

#[derive(Debug)]
struct AppError;

impl From<resil::Rejection> for AppError {
    fn from(_: resil::Rejection) -> Self {
        AppError
    }
}

#[resil::rate_limiter(name = "api", key = user, permits = weight)]
fn charge(user: u64, weight: f64) -> Result<(), AppError> {
    let _ = (user, weight);
    Ok(())
}

fn main() {
    let _ = charge(1, 2.5);
}
