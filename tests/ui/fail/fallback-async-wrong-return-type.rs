#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::circuit_breaker(name = "a", fallback = plan_b)]
async fn fetch(sku: &str) -> Result<u32, E> {
    Ok(sku.len() as u32)
}

async fn plan_b(_sku: &str) -> Result<String, E> {
    Ok(String::new())
}

fn main() {}
