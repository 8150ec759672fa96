
#[resil::retry(name = "a")]
fn fetch() {}

fn main() {}
