#[derive(Debug, resil::ErrorClass)]
pub enum E {
    Timeout,
    #[error_class(name = "timeout")]
    Slow,
}

fn main() {}
