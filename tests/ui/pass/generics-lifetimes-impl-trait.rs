//! Generic fns with where-clauses, `impl Trait` arguments and lifetimes.
#![deny(warnings)]
use std::fmt::Display;

#[derive(Debug, PartialEq)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

#[resil::retry(name = "pass-generics", wait_duration = "0ms")]
pub fn describe<T, U>(value: T, extra: &U) -> Result<String, E>
where
    T: Display + Clone,
    U: Display + ?Sized,
{
    Ok(format!("{value}{extra}"))
}

#[resil::circuit_breaker(name = "pass-generics", fallback = shout_fallback)]
pub fn shout(what: impl Display + Clone) -> Result<String, E> {
    Ok(what.to_string().to_uppercase())
}

fn shout_fallback(_what: impl Display + Clone, _why: resil::Error<E>) -> Result<String, E> {
    Ok(String::new())
}

#[resil::bulkhead(name = "pass-generics")]
pub async fn longest<'a, 'b: 'a>(a: &'a str, b: &'b str) -> Result<usize, E> {
    Ok(a.len().max(b.len()))
}

#[resil::retry(name = "pass-generics", wait_duration = "0ms")]
pub fn generic_error<Err: From<resil::Rejection> + 'static>(
    fail: bool,
    make: fn() -> Err,
) -> Result<u8, Err> {
    if fail {
        Err(make())
    } else {
        Ok(1)
    }
}

fn main() {
    assert_eq!(describe(1, "x"), Ok("1x".to_owned()));
    assert_eq!(shout("a"), Ok("A".to_owned()));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(rt.block_on(longest("ab", "abc")), Ok(3));
    assert_eq!(generic_error(true, || E), Err(E));
}
