#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

// A config file's `failure-rate-treshold` gets the same suggestion
// (tests/config_files.rs).
#[resil::circuit_breaker(name = "a", failure_rate_treshold = 50)]
fn fetch() -> Result<u32, E> {
    Ok(1)
}

fn main() {}
