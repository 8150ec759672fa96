#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::circuit_breaker(name = "a")]
fn first_word<'a>(text: &'a str) -> Result<&'a str, E> {
    Ok(text.split(' ').next().unwrap_or(text))
}

fn main() {}
