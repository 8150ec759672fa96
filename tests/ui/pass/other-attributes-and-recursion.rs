//! Doc comments, `#[inline]`, `#[must_use]`, `#[tracing::instrument]` and
//! inner attributes are kept; a fn that calls itself is protected on every
//! call (the fn itself is rewritten: there is no proxy to bypass).
#![deny(warnings)]
#![deny(unused_must_use)]

#[derive(Debug, PartialEq)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

/// Counts down, through the breaker each time.
#[inline]
#[must_use = "the countdown reports where it stopped"]
#[tracing::instrument]
#[resil::circuit_breaker(name = "pass-recursion")]
pub fn countdown(n: u32) -> Result<u32, E> {
    #![allow(clippy::needless_return)]
    if n == 0 {
        return Ok(0);
    }
    countdown(n - 1).map(|v| v + 1)
}

fn main() {
    assert_eq!(countdown(3), Ok(3));
    let breaker = resil::registry().circuit_breaker("pass-recursion");
    assert_eq!(breaker.metrics().successful_calls(), 4);
}
