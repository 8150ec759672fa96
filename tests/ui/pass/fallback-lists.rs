//! Fallback lists (the expansion names a type after each fallback for its
//! messages) compile without a lint, sync and async, free fns and methods,
//! with fallbacks reached by a path.
#![deny(warnings)]
#![deny(unused_qualifications, unused_results, non_camel_case_types, dead_code)]

use resil::error::CallNotPermitted;

#[derive(Debug, PartialEq)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::circuit_breaker(name = "pass-fallback-lists", fallback = [stale, while_open])]
pub fn price(sku: &str) -> Result<u32, E> {
    if sku.is_empty() {
        Err(E)
    } else {
        Ok(1)
    }
}

fn stale(_sku: &str, _why: resil::Error<E>) -> Result<u32, E> {
    Ok(2)
}

fn while_open(_sku: &str, _why: CallNotPermitted) -> Result<u32, E> {
    Ok(3)
}

mod degraded {
    use super::E;

    pub async fn on_timeout(_sku: String, _why: resil::error::Timeout) -> Result<u32, E> {
        Ok(4)
    }

    pub async fn on_error(_sku: String, _why: E) -> Result<u32, E> {
        Ok(5)
    }
}

#[resil::time_limiter(name = "pass-fallback-lists", timeout_duration = "1s", fallback = [degraded::on_timeout, degraded::on_error, anything])]
pub async fn stock(sku: String) -> Result<u32, E> {
    if sku.is_empty() {
        Err(E)
    } else {
        Ok(6)
    }
}

async fn anything(_sku: String) -> Result<u32, E> {
    Ok(7)
}

pub struct Inventory;

impl Inventory {
    #[resil::retry(name = "pass-fallback-lists", wait_duration = "0ms", fallback = [on_call, on_refusal])]
    pub fn count(&self, n: u32) -> Result<u32, E> {
        if n == 0 {
            Err(E)
        } else {
            Ok(n)
        }
    }

    fn on_call(&self, _n: u32, _why: E) -> Result<u32, E> {
        Ok(8)
    }

    fn on_refusal(&self, _n: u32, _why: resil::Rejection) -> Result<u32, E> {
        Ok(9)
    }
}

fn main() {
    assert_eq!(price("sku"), Ok(1));
    assert_eq!(price(""), Ok(2));
    assert_eq!(Inventory.count(3), Ok(3));
    assert_eq!(Inventory.count(0), Ok(8));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    assert_eq!(rt.block_on(stock(String::from("sku"))), Ok(6));
    assert_eq!(rt.block_on(stock(String::new())), Ok(5));
}
