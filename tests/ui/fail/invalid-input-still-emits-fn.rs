#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::retry(nme = "typo")]
fn fetch() -> Result<u32, E> {
    Ok(1)
}

fn main() {
    // The attribute is wrong, yet `fetch` exists: no cascade of errors here.
    let _ = fetch();
}
