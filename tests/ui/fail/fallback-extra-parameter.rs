#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::circuit_breaker(name = "a", fallback = plan_b)]
fn fetch(sku: &str) -> Result<u32, E> {
    Ok(sku.len() as u32)
}

fn plan_b(_sku: &str, _why: E, _region: u8) -> Result<u32, E> {
    Ok(0)
}

fn main() {}
