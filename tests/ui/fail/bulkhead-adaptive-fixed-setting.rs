#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::bulkhead(name = "a", kind = "adaptive", max_concurrent_calls = 4)]
fn fetch() -> Result<u32, E> {
    Ok(1)
}

fn main() {}
