#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

const N: u32 = 3;

#[resil::retry(name = "a", max_attempts = N)]
fn fetch() -> Result<u32, E> {
    Ok(1)
}

fn main() {}
