#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

use std::rc::Rc;

#[resil::bulkhead(name = "a", kind = "thread_pool")]
async fn fetch(sku: Rc<String>) -> Result<usize, E> {
    Ok(sku.len())
}

fn main() {}
