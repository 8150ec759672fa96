//! A resil attribute below a non-resil one still collects its siblings.
#![deny(warnings)]
#[derive(Debug, PartialEq)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::retry(name = "pass-mixed", wait_duration = "0ms")]
#[allow(clippy::unnecessary_wraps)]
#[resil::circuit_breaker(name = "pass-mixed")]
pub fn get() -> Result<u32, E> {
    Ok(1)
}

fn main() {
    assert_eq!(get(), Ok(1));
}
