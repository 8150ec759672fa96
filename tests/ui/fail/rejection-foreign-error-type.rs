//! `std::io::Error` carries a rejection (resil provides the conversion); a
//! foreign error type without one gets a fix that compiles.
#[resil::circuit_breaker(name = "a")]
fn render() -> Result<String, std::fmt::Error> {
    Ok(String::new())
}

fn main() {}
