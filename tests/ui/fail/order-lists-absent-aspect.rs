#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::retry(name = "a", order = [retry, circuit_breaker, bulkhead])]
#[resil::circuit_breaker(name = "a")]
fn fetch() -> Result<u32, E> {
    Ok(1)
}

fn main() {}
