#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

use std::future::Future;

pub struct Inventory;

impl Inventory {
    #[resil::time_limiter(name = "a")]
    fn stock(&self) -> impl Future<Output = Result<u32, E>> {
        async { Ok(1) }
    }
}

fn main() {}
