#[derive(Debug, resil::ErrorClass)]
enum PriceError {
    NotFound,
    Upstream,
    Rejected(resil::Rejection),
}

impl From<resil::Rejection> for PriceError {
    fn from(r: resil::Rejection) -> Self {
        PriceError::Rejected(r)
    }
}

#[resil::circuit_breaker(name = "price", fallback = cached_price, on = [upstreem, rejected])]
fn price(sku: &str) -> Result<u32, PriceError> {
    Ok(sku.len() as u32)
}

fn cached_price(_sku: &str) -> Result<u32, PriceError> {
    Ok(0)
}

fn main() {}
