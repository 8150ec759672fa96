// A key must be hashable, comparable and owned (or a `&str`): a struct
// without `Hash` cannot key a family; the error points at the key.

#[derive(Clone, PartialEq)]
struct Region {
    code: u32,
}

#[derive(Debug)]
struct AppError;

impl From<resil::Rejection> for AppError {
    fn from(_: resil::Rejection) -> Self {
        AppError
    }
}

#[resil::rate_limiter(name = "api", key = region.clone())]
fn quote(region: Region) -> Result<u32, AppError> {
    Ok(region.code)
}

fn main() {
    let _ = quote(Region { code: 1 });
}
