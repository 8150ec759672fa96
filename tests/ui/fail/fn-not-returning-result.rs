
#[resil::retry(name = "a")]
fn fetch() -> u32 {
    1
}

fn main() {}
