//! What the attribute macros' expansions call, and nothing else. Not a public
//! API: names and signatures change without notice. Expansions name only
//! `::resil::__private::…`, never `resil_core` or `resil_registry`.
//!
//! Every trait a generated check relies on carries a
//! `#[diagnostic::on_unimplemented]` message written for the user's token,
//! so compile errors say what to write instead and never mention this module.

mod fallback;
mod layers;
mod site;

pub use self::fallback::*;
pub(crate) use self::fallback::{KINDS, SITES};
pub use self::layers::*;
pub use self::site::*;

pub use resil_core::bulkhead::Bulkhead;
pub use resil_core::circuit_breaker::CircuitBreaker;
pub use resil_core::rate_limiter::RateLimiter;
pub use resil_core::retry::Retry;
pub use resil_core::thread_pool_bulkhead::ThreadPoolBulkhead;
pub use resil_core::time_limiter::TimeLimiter;
pub use resil_core::{Error, Rejection};

/// Pins the type of a body's value to the protected fn's return type, so
/// `?` and `return` inside an async block or closure know their target.
#[inline(always)]
pub fn returns<R>(value: R) -> R {
    value
}

/// The protected fn must return `Result<T, E>` (checked at the return type).
#[diagnostic::on_unimplemented(
    message = "a protected fn must return `Result<T, E>`, not `{Self}`",
    label = "resil needs an error here to count, retry on and fall back from",
    note = "return `Result<T, E>` (an alias of it is fine)"
)]
pub trait ProtectedResult {}

impl<T, E> ProtectedResult for Result<T, E> {}

/// Compile-time check that `R` is a `Result`.
#[inline(always)]
pub fn protected_result<R: ProtectedResult>() {}

/// An argument the stack needs again: by every retry attempt, or by the
/// fallback after the call. References and `Copy` values are re-used as they
/// are (cloning a reference copies a pointer); other types must be `Clone`.
#[diagnostic::on_unimplemented(
    message = "the argument of type `{Self}` is needed again, by a retry attempt or the fallback, but it is not `Clone`",
    label = "this argument is re-used by every attempt and by the fallback",
    note = "implement or derive `Clone` for it, take it by reference (`&{Self}`), or wrap it in an `Arc`"
)]
pub trait Reuse: Sized {
    /// The value for one more use.
    fn reuse(&self) -> Self;
}

impl<T: Clone> Reuse for T {
    #[inline(always)]
    fn reuse(&self) -> Self {
        self.clone()
    }
}

/// A fn error type able to carry a rejection when no fallback takes it.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot carry a resil rejection (an open breaker, a full bulkhead, a timeout, …)",
    label = "a rejection would be returned here, as `{Self}`",
    note = "add one line to the error type: `impl From<resil::Rejection> for {Self}` (thiserror: a variant `Rejected(#[from] resil::Rejection)`), or give the fn a `fallback` that takes `resil::Error<{Self}>`"
)]
pub trait AcceptsRejection: Sized {
    /// The rejection as the fn's own error.
    fn from_rejection(rejection: Rejection) -> Self;
}

impl<E: From<Rejection>> AcceptsRejection for E {
    #[inline]
    fn from_rejection(rejection: Rejection) -> Self {
        E::from(rejection)
    }
}

/// The stack's error as the fn's own: the call's error as it was, a
/// rejection through `From<Rejection>`.
#[inline]
pub fn into_fn_error<E: AcceptsRejection>(err: Error<E>) -> E {
    match err.into_rejection() {
        Ok(rejection) => E::from_rejection(rejection),
        Err(call) => call,
    }
}
