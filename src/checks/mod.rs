//! What the attribute macros check at compile time, as traits the generated
//! code calls through `resil::__private`. Not a public API. Each trait
//! carries a `#[diagnostic::on_unimplemented]` message written for the
//! user's token, saying what to write instead; this module's name is the one
//! rustc prints next to it, hence a descriptive one.

mod fallback;
mod fit;
mod keyed;
mod on;

pub use self::fallback::*;
pub use self::fit::*;
pub use self::keyed::*;
pub use self::on::*;

use resil_core::{Error, Rejection};

/// The protected fn must return `Result<T, E>` (checked at the return type).
#[diagnostic::on_unimplemented(
    message = "a protected fn must return `Result<T, E>`, not `{Self}`",
    label = "resil needs an error here to count, retry on and fall back from",
    note = "return `Result<T, E>` (an alias of it is fine)"
)]
pub trait ProtectedResult {
    /// `E`, the fn's own error type.
    type Err;
}

impl<T, E> ProtectedResult for Result<T, E> {
    type Err = E;
}

/// What `criticality = <expr>` takes: a `resil::Criticality`.
#[diagnostic::on_unimplemented(
    message = "`criticality` takes a `resil::Criticality`, not `{Self}`",
    label = "this is the class the call runs with",
    note = "write `criticality = resil::Criticality::Sheddable`, or an expression over the fn's arguments that evaluates to a `resil::Criticality` (one of `CriticalPlus`, `Critical`, `SheddablePlus`, `Sheddable`)"
)]
pub trait IsCriticality {
    /// The class. The expansion calls it as a trait method at the user's
    /// expression (`IsCriticality::class(expr)`), never through a fn with a
    /// bound: rustc then names no item of resil's source in the error.
    fn class(self) -> resil_core::Criticality;
}

// `do_not_recommend`: rustc would list this impl, with its path into resil's
// source, under "the trait is implemented for"; the note says what to write.
#[diagnostic::do_not_recommend]
impl IsCriticality for resil_core::Criticality {
    #[inline]
    fn class(self) -> resil_core::Criticality {
        self
    }
}

/// Work a thread-pool bulkhead runs on its own threads.
#[diagnostic::on_unimplemented(
    message = "the body of a fn with a thread-pool bulkhead must be able to move to another thread",
    label = "the body and every argument it uses move to one of the bulkhead's threads",
    note = "arguments must be owned (`String`, not `&str`), `Send` and `'static`; or use `kind = \"semaphore\"`, which runs the body in place"
)]
pub trait PoolWork<R>: FnOnce() -> R + Send + 'static {}

impl<R, F: FnOnce() -> R + Send + 'static> PoolWork<R> for F {}

/// Checks (and returns) the closure a thread-pool bulkhead runs.
#[inline(always)]
pub fn pool_work<R, F: PoolWork<R>>(work: F) -> F {
    work
}

/// An argument of a fn with a thread-pool bulkhead: it moves, with the
/// body, to one of the bulkhead's threads.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot move to the thread-pool bulkhead's threads",
    label = "this argument moves to another thread with the body, so it must be `Send + 'static`",
    note = "take an owned, thread-safe type instead: `Arc<…>` for `Rc<…>`, `Arc<Mutex<…>>` for `Rc<RefCell<…>>`, `String` for `&str`; or use `kind = \"semaphore\"`, which runs the body in place"
)]
pub trait PoolArg: Sized {
    /// The argument, unchanged. The expansion calls it at the argument's
    /// token (`PoolArg::moved(arg)`): an argument that cannot move is
    /// reported there.
    fn moved(self) -> Self;
}

#[diagnostic::do_not_recommend]
impl<T: Send + 'static> PoolArg for T {
    #[inline(always)]
    fn moved(self) -> T {
        self
    }
}

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
    note = "for an error type of your own, add one line: `impl From<resil::Rejection> for {Self}` (thiserror: a variant `Rejected(#[from] resil::Rejection)`)",
    note = "for another crate's error type, which cannot get that impl here, return an error type of your own that wraps `{Self}` and `resil::Rejection`, or give the fn a `fallback` that takes `resil::Rejection`"
)]
pub trait AcceptsRejection: Sized {
    /// The rejection as the fn's own error.
    fn from_rejection(rejection: Rejection) -> Self;

    /// The stack's result as the fn's: the call's error as it was, a
    /// rejection through `From<Rejection>`. The expansion calls it as
    /// `<E as AcceptsRejection>::into_fn_result(out)` with `E` as the user
    /// wrote it, so a missing `From<Rejection>` is reported at that token and
    /// rustc names no item of resil's source.
    #[inline]
    fn into_fn_result<T>(out: Result<T, Error<Self>>) -> Result<T, Self> {
        out.map_err(into_fn_error)
    }
}

// `do_not_recommend`: the error is then this trait's message at the user's
// error type, not a chain through this impl ("required for `AppError` to
// implement …"); the notes say to write `impl From<resil::Rejection>`.
#[diagnostic::do_not_recommend]
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
