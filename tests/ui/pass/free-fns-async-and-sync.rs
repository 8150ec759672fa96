//! Free fns, sync and async, forwarding arguments and output unchanged.
#![deny(warnings)]
#[derive(Debug, PartialEq)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::circuit_breaker(name = "pass-free-sync")]
#[resil::retry(name = "pass-free-sync", wait_duration = "0ms")]
#[resil::rate_limiter(name = "pass-free-sync")]
#[resil::bulkhead(name = "pass-free-sync")]
pub fn add(a: u32, b: &u32, (c, d): (u32, u32), mut acc: Vec<u32>) -> Result<u32, E> {
    acc.push(a);
    Ok(a + *b + c + d + acc.len() as u32)
}

#[resil::time_limiter(name = "pass-free-async")]
#[resil::circuit_breaker(name = "pass-free-async")]
#[resil::retry(name = "pass-free-async", wait_duration = "0ms")]
#[resil::rate_limiter(name = "pass-free-async")]
#[resil::bulkhead(name = "pass-free-async")]
pub async fn fetch(sku: &str, n: u32) -> Result<String, E> {
    if n == 0 {
        return Err(E);
    }
    Ok(format!("{sku}:{n}"))
}

fn main() {
    assert_eq!(add(1, &2, (3, 4), vec![]), Ok(11));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(rt.block_on(fetch("a", 1)), Ok("a:1".to_owned()));
    assert_eq!(rt.block_on(fetch("a", 0)), Err(E));
}
