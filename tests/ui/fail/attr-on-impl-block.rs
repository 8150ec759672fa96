#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

pub struct Inventory;

#[resil::retry(name = "a")]
impl Inventory {
    pub fn stock(&self) -> Result<u32, E> {
        Ok(1)
    }
}

fn main() {}
