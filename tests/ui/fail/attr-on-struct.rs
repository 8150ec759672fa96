#[resil::circuit_breaker(name = "a")]
pub struct Inventory;

fn main() {}
