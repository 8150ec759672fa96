#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::circuit_breaker(name = "a", fallback = plan_b)]
fn fetch(sku: &str, count: u32) -> Result<u32, E> {
    Ok(sku.len() as u32 + count)
}

fn plan_b(_sku: &str, _count: String) -> Result<u32, E> {
    Ok(0)
}

fn main() {}
