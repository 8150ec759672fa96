#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::retry(name = "a", order = [bulkhead, retry])]
#[resil::bulkhead(name = "a", kind = "thread_pool")]
async fn fetch() -> Result<u32, E> {
    Ok(1)
}

fn main() {}
