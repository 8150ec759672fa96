//! Expansions use absolute paths and hygienic names: a local `mod core`, a
//! local `Result` alias, `Ok`/`Err` shadowing and strict lints do not break them.
#![deny(warnings)]
#![deny(unused_qualifications, unused_results, unused_imports, non_snake_case)]

mod core {}
#[allow(dead_code)]
mod resil_core {}

#[derive(Debug, PartialEq)]
pub struct E;
impl From<::resil::Rejection> for E {
    fn from(_: ::resil::Rejection) -> Self {
        E
    }
}

#[allow(dead_code)]
type Option = ();

#[resil::retry(name = "pass-hostile", wait_duration = "0ms", fallback = zero)]
pub fn get(value: u32) -> Result<u32, E> {
    let __resil_out = value; // a user name in the reserved style still works
    Ok(__resil_out)
}

fn zero(_value: u32) -> Result<u32, E> {
    Ok(0)
}

fn main() {
    assert_eq!(get(1), Ok(1));
}
