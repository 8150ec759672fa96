
#[derive(Debug)]
pub struct E;

#[resil::circuit_breaker(name = "a")]
fn fetch() -> Result<u32, E> {
    Ok(1)
}

fn main() {}
