#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::bulkhead(name = "a", kind = "thread_pool", core_thread_pool_size = 4, max_thread_pool_size = 2)]
async fn fetch() -> Result<u32, E> {
    Ok(1)
}

fn main() {}
