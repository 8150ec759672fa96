#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::circuit_breaker(name = "a", sliding_window_size = 20_000_000)]
fn fetch() -> Result<u32, E> {
    Ok(1)
}

fn main() {}
