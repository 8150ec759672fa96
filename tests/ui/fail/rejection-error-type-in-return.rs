#[derive(Debug)]
pub struct AppError;

#[resil::retry(name = "a")]
fn fetch(id: u32) -> Result<u32, AppError> {
    Ok(id)
}

fn main() {}
