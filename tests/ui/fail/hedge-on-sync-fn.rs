#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::hedge(name = "a")]
fn fetch() -> Result<u32, E> {
    Ok(1)
}

fn main() {}
