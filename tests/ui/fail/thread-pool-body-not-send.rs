#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

use std::rc::Rc;

#[resil::bulkhead(name = "a", kind = "thread_pool")]
async fn fetch(shared: Rc<u32>) -> Result<u32, E> {
    Ok(*shared)
}

fn main() {}
