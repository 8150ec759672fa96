#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::retry(name = "a")]
async fn fetch(buffer: &mut Vec<u8>) -> Result<u32, E> {
    buffer.push(1);
    Ok(1)
}

fn main() {}
