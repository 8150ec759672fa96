#[derive(Debug)]
struct PriceError;

impl From<resil::Rejection> for PriceError {
    fn from(_: resil::Rejection) -> Self {
        PriceError
    }
}

#[resil::circuit_breaker(name = "price", fallback = cached_price)]
#[resil::retry(name = "price", on = [timeout])]
fn price(sku: &str) -> Result<u32, PriceError> {
    Ok(sku.len() as u32)
}

fn cached_price(_sku: &str) -> Result<u32, PriceError> {
    Ok(0)
}

fn main() {}
