#[derive(Debug, resil::ErrorClass)]
pub struct NotAnEnum;

fn main() {}
