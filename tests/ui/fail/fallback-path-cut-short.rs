#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

mod external {}

#[resil::circuit_breaker(name = "a", fallback = external::)]
fn fetch() -> Result<u32, E> {
    Ok(1)
}

fn main() {}
