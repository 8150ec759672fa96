#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::retry(name = "a", criticality = resil::Criticality::Sheddable)]
#[resil::bulkhead(name = "a", criticality = resil::Criticality::Critical)]
fn fetch() -> Result<u32, E> {
    Ok(1)
}

fn main() {}
