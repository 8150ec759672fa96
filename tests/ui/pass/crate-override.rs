//! `crate = "…"`: a crate that re-exports resil points the expansion at it.
#![deny(warnings)]
mod facade {
    pub use resil;
}

#[derive(Debug, PartialEq)]
pub struct E;
impl From<facade::resil::Rejection> for E {
    fn from(_: facade::resil::Rejection) -> Self {
        E
    }
}

#[facade::resil::retry(name = "pass-crate", crate = "crate::facade::resil", wait_duration = "0ms", fallback = zero)]
pub fn get(fail: bool) -> Result<u32, E> {
    if fail {
        Err(E)
    } else {
        Ok(1)
    }
}

fn zero(_fail: bool) -> Result<u32, E> {
    Ok(0)
}

fn main() {
    assert_eq!(get(false), Ok(1));
    assert_eq!(get(true), Ok(0));
}
