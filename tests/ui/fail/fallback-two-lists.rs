#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::circuit_breaker(name = "a", fallback = plan_b)]
#[resil::retry(name = "a", fallback = plan_b)]
fn fetch() -> Result<u32, E> {
    Ok(1)
}

fn plan_b() -> Result<u32, E> {
    Ok(0)
}

fn main() {}
