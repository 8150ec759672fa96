//! Bodies of one expression, under every attribute, sync and async: no lint
//! may fire on correct user code (`unused_braces` once did on `{ Ok(id) }`).
#![deny(warnings)]

#[derive(Debug, PartialEq)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

pub struct Inventory;

impl Inventory {
    #[resil::circuit_breaker(name = "pass-one-expr")]
    #[resil::retry(name = "pass-one-expr", wait_duration = "0ms")]
    pub async fn get(&self, id: u32) -> Result<u32, E> {
        Ok(id)
    }

    #[resil::circuit_breaker(name = "pass-one-expr")]
    pub fn get_sync(&self, id: u32) -> Result<u32, E> {
        Ok(id)
    }
}

#[resil::circuit_breaker(name = "pass-one-expr")]
pub fn breaker(id: u32) -> Result<u32, E> {
    Ok(id)
}

#[resil::retry(name = "pass-one-expr", wait_duration = "0ms")]
pub fn retry(id: u32) -> Result<u32, E> {
    Ok(id)
}

#[resil::bulkhead(name = "pass-one-expr")]
pub fn bulkhead(id: u32) -> Result<u32, E> {
    Ok(id)
}

#[resil::rate_limiter(name = "pass-one-expr")]
pub fn rate_limiter(id: u32) -> Result<u32, E> {
    Ok(id)
}

#[resil::circuit_breaker(name = "pass-one-expr")]
pub async fn breaker_async(id: u32) -> Result<u32, E> {
    Ok(id)
}

#[resil::retry(name = "pass-one-expr", wait_duration = "0ms")]
pub async fn retry_async(id: u32) -> Result<u32, E> {
    Ok(id)
}

#[resil::bulkhead(name = "pass-one-expr")]
pub async fn bulkhead_async(id: u32) -> Result<u32, E> {
    Ok(id)
}

#[resil::bulkhead(name = "pass-one-expr-pool", kind = "thread_pool")]
pub async fn thread_pool(id: u32) -> Result<u32, E> {
    Ok(id)
}

#[resil::rate_limiter(name = "pass-one-expr")]
pub async fn rate_limiter_async(id: u32) -> Result<u32, E> {
    Ok(id)
}

#[resil::time_limiter(name = "pass-one-expr")]
pub async fn time_limiter(id: u32) -> Result<u32, E> {
    Ok(id)
}

#[resil::time_limiter(name = "pass-one-expr-all")]
#[resil::circuit_breaker(name = "pass-one-expr-all", fallback = all_fallback)]
#[resil::retry(name = "pass-one-expr-all", wait_duration = "0ms")]
#[resil::rate_limiter(name = "pass-one-expr-all")]
#[resil::bulkhead(name = "pass-one-expr-all", kind = "thread_pool")]
pub async fn all(id: u32, mut tag: String) -> Result<u32, E> {
    tag.push('!');
    Ok(id + tag.len() as u32)
}

async fn all_fallback(_id: u32, _tag: String, _why: resil::Rejection) -> Result<u32, E> {
    Ok(0)
}

/// `std::io::Error` carries a rejection: an `io::Result` fn is protected as is.
#[resil::circuit_breaker(name = "pass-one-expr-io")]
pub fn read_config(path: &str) -> std::io::Result<String> {
    std::fs::read_to_string(path)
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(rt.block_on(Inventory.get(1)), Ok(1));
    assert_eq!(Inventory.get_sync(2), Ok(2));
    assert_eq!(breaker(3), Ok(3));
    assert_eq!(retry(4), Ok(4));
    assert_eq!(bulkhead(5), Ok(5));
    assert_eq!(rate_limiter(6), Ok(6));
    assert_eq!(rt.block_on(breaker_async(7)), Ok(7));
    assert_eq!(rt.block_on(retry_async(8)), Ok(8));
    assert_eq!(rt.block_on(bulkhead_async(9)), Ok(9));
    assert_eq!(rt.block_on(thread_pool(10)), Ok(10));
    assert_eq!(rt.block_on(rate_limiter_async(11)), Ok(11));
    assert_eq!(rt.block_on(time_limiter(12)), Ok(12));
    assert_eq!(rt.block_on(all(1, "ab".to_owned())), Ok(4));
    assert!(read_config("/nonexistent/resil").is_err());
}
