#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::bulkhead(name = "a", criticality = if prefetch { "sheddable" } else { "critical" })]
fn fetch(prefetch: bool) -> Result<u32, E> {
    let _ = prefetch;
    Ok(1)
}

fn main() {}
