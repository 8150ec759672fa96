#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::circuit_breaker(name = "a", fallback = plan_b)]
fn fetch<T: ToString + Clone>(item: T) -> Result<String, E> {
    Ok(item.to_string())
}

fn plan_b(_item: String) -> Result<String, E> {
    Ok(String::new())
}

fn main() {}
