#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

fn main() {
    #[resil::retry(name = "a")]
    let fetch = || -> Result<u32, E> { Ok(1) };
    let _ = fetch();
}
