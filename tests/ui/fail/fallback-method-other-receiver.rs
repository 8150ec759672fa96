#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

pub struct Inventory;

impl Inventory {
    #[resil::circuit_breaker(name = "a", fallback = plan_b)]
    fn fetch(&self, sku: &str) -> Result<u32, E> {
        Ok(sku.len() as u32)
    }

    fn plan_b(&mut self, _sku: &str) -> Result<u32, E> {
        Ok(0)
    }
}

fn main() {}
