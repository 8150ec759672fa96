#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

pub struct Request {
    pub sku: String,
}

#[resil::retry(name = "a")]
fn fetch(request: Request) -> Result<usize, E> {
    Ok(request.sku.len())
}

fn main() {}
