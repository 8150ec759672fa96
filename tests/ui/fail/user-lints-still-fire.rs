#![deny(unused_variables)]

#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::retry(name = "a")]
fn fetch() -> Result<u32, E> {
    let unused = 1;
    Ok(1)
}

fn main() {}
