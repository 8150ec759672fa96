//! A fallback's signature checked one part at a time, in the order a reader
//! compares it with the protected fn: each parameter, then the optional
//! trailing error parameter, then (for a sync fn; an async fn's is checked
//! where the fallback is awaited) the return type. Each step is a trait with
//! its own message naming the part and what was expected there, and each
//! step's result type is the next step's input, so the first part that does
//! not fit is the one error reported: once a step fails, the later steps
//! (and the dispatch after them) see an unknown type and rustc stays silent
//! about them.
//!
//! Every step's trait is implemented for any `Self` (the carried [`Fit`]),
//! with the compared types as trait parameters: rustc then names them in the
//! message instead of listing resil's impls. Each step is a trait method
//! the expansion calls by the trait's path (`Param::<1, T, _, A>::param(fit)`),
//! never a fn with a bound: rustc then points at the user's token and names
//! no item of resil's source ("required by a bound in …").

use std::marker::PhantomData;

use resil_core::error::{
    BulkheadFull, CallNotPermitted, DeadlineExceeded, MaxRetriesExceeded, RequestNotPermitted,
    RetryBudgetExhausted, Throttled, Timeout,
};
use resil_core::{Error, Rejection};

/// The fallback being checked, its parameters still to compare (`P`), and
/// its return type (`R`).
pub struct Fit<'f, F, P, R>(&'f F, PhantomData<fn() -> (P, R)>);

/// Marker: the fallback's arity.
pub struct Arity<const N: usize>;

/// What `fallback = …` names: a fn (or closure) with parameters `P`.
#[diagnostic::on_unimplemented(
    message = "`fallback = …` must name a fn",
    label = "this is not a fn",
    note = "a fallback is a fn taking the protected fn's parameters, plus an optional trailing error parameter"
)]
pub trait Signature<P, M> {
    /// The fallback's return type.
    type Output;
}

macro_rules! signature {
    ($n:literal $(, $a:ident)*) => {
        impl<F, $($a,)* R> Signature<($($a,)*), Arity<$n>> for F
        where
            F: Fn($($a),*) -> R,
        {
            type Output = R;
        }
    };
}

signature!(0);
signature!(1, A1);
signature!(2, A1, A2);
signature!(3, A1, A2, A3);
signature!(4, A1, A2, A3, A4);
signature!(5, A1, A2, A3, A4, A5);
signature!(6, A1, A2, A3, A4, A5, A6);
signature!(7, A1, A2, A3, A4, A5, A6, A7);
signature!(8, A1, A2, A3, A4, A5, A6, A7, A8);
signature!(9, A1, A2, A3, A4, A5, A6, A7, A8, A9);
signature!(10, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10);
signature!(11, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11);
signature!(12, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12);
signature!(13, A1, A2, A3, A4, A5, A6, A7, A8, A9, A10, A11, A12, A13);

/// The first step: the fallback's parameters and return type, as rustc
/// infers them from the fn.
#[inline(always)]
pub fn signature<F, P, M>(f: &F) -> Fit<'_, F, P, <F as Signature<P, M>>::Output>
where
    F: Signature<P, M>,
{
    Fit(f, PhantomData)
}

/// Stands for an `impl Trait` parameter of the protected fn in messages
/// (its type cannot be written).
pub struct ImplTrait;

/// The fallback's parameter `I` (found in its parameters `P`) must be `T`,
/// as the protected fn's parameter `I` is (`A`: the protected fn's
/// parameters, for the note). Implemented for every arity from `I` on: a
/// fallback with fewer parameters is told what parameter `I` must be.
#[diagnostic::on_unimplemented(
    message = "the fallback's parameter {I} must be `{T}`, as the protected fn's is",
    label = "this fallback takes `{P}`",
    note = "a fallback takes the protected fn's parameters in order, `{A}`, plus an optional trailing error parameter"
)]
pub trait Param<const I: usize, T, P, A> {
    /// `Self` again.
    type Next;
    /// `self`, for the next step.
    fn next(&self) -> &Self::Next;

    /// Checks the fallback's parameter `I`.
    #[inline(always)]
    fn param<R>(fit: Fit<'_, Self, P, R>) -> Fit<'_, Self::Next, P, R>
    where
        Self: Sized,
    {
        Fit(fit.0.next(), PhantomData)
    }
}

macro_rules! param_impls {
    ($i:literal, [$($before:ident),*], []) => {
        impl<F, $($before,)* T, A> Param<$i, T, ($($before,)* T,), A> for F {
            type Next = F;
            #[inline(always)]
            fn next(&self) -> &F {
                self
            }
        }
    };
    ($i:literal, [$($before:ident),*], [$first:ident $(, $rest:ident)*]) => {
        impl<F, $($before,)* T, $first, $($rest,)* A> Param<$i, T, ($($before,)* T, $first, $($rest,)*), A> for F {
            type Next = F;
            #[inline(always)]
            fn next(&self) -> &F {
                self
            }
        }
        param_impls!($i, [$($before),*], [$($rest),*]);
    };
}

param_impls!(1, [], [C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13]);
param_impls!(2, [B1], [C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13]);
param_impls!(3, [B1, B2], [C4, C5, C6, C7, C8, C9, C10, C11, C12, C13]);
param_impls!(4, [B1, B2, B3], [C5, C6, C7, C8, C9, C10, C11, C12, C13]);
param_impls!(5, [B1, B2, B3, B4], [C6, C7, C8, C9, C10, C11, C12, C13]);
param_impls!(6, [B1, B2, B3, B4, B5], [C7, C8, C9, C10, C11, C12, C13]);
param_impls!(7, [B1, B2, B3, B4, B5, B6], [C8, C9, C10, C11, C12, C13]);
param_impls!(8, [B1, B2, B3, B4, B5, B6, B7], [C9, C10, C11, C12, C13]);
param_impls!(9, [B1, B2, B3, B4, B5, B6, B7, B8], [C10, C11, C12, C13]);
param_impls!(10, [B1, B2, B3, B4, B5, B6, B7, B8, B9], [C11, C12, C13]);
param_impls!(11, [B1, B2, B3, B4, B5, B6, B7, B8, B9, B10], [C12, C13]);
param_impls!(12, [B1, B2, B3, B4, B5, B6, B7, B8, B9, B10, B11], [C13]);

/// Marker: a fallback without a trailing error parameter.
pub struct NoTail;

/// After the protected fn's parameters (`A`), the fallback's (`P`) have at
/// most one more: the error parameter.
#[diagnostic::on_unimplemented(
    message = "this fallback takes more parameters than the protected fn's `{A}` and one error parameter",
    label = "this fallback takes `{P}`",
    note = "a fallback takes the protected fn's parameters in order, plus an optional trailing `resil::Error<E>`, `E`, `resil::Rejection` or one refusal type such as `resil::error::Timeout`"
)]
pub trait Tail<A, P> {
    /// `Self` again.
    type Next;
    /// The trailing parameter's type, or [`NoTail`].
    type Last;
    /// `self`, for the next step.
    fn next(&self) -> &Self::Next;

    /// Checks the fallback's arity: the protected fn's parameters `A`, plus
    /// at most one. What is left to check is the trailing one (or
    /// [`NoTail`]).
    #[inline(always)]
    fn tail<R>(fit: Fit<'_, Self, P, R>) -> Fit<'_, Self::Next, Self::Last, R>
    where
        Self: Sized,
    {
        Fit(fit.0.next(), PhantomData)
    }
}

macro_rules! tail {
    ($($a:ident $b:ident),*) => {
        impl<F, $($a, $b,)*> Tail<($($a,)*), ($($b,)*)> for F {
            type Next = F;
            type Last = NoTail;
            #[inline(always)]
            fn next(&self) -> &F {
                self
            }
        }
        impl<F, $($a, $b,)* X> Tail<($($a,)*), ($($b,)* X,)> for F {
            type Next = F;
            type Last = X;
            #[inline(always)]
            fn next(&self) -> &F {
                self
            }
        }
    };
}

tail!();
tail!(A1 B1);
tail!(A1 B1, A2 B2);
tail!(A1 B1, A2 B2, A3 B3);
tail!(A1 B1, A2 B2, A3 B3, A4 B4);
tail!(A1 B1, A2 B2, A3 B3, A4 B4, A5 B5);
tail!(A1 B1, A2 B2, A3 B3, A4 B4, A5 B5, A6 B6);
tail!(A1 B1, A2 B2, A3 B3, A4 B4, A5 B5, A6 B6, A7 B7);
tail!(A1 B1, A2 B2, A3 B3, A4 B4, A5 B5, A6 B6, A7 B7, A8 B8);
tail!(A1 B1, A2 B2, A3 B3, A4 B4, A5 B5, A6 B6, A7 B7, A8 B8, A9 B9);
tail!(A1 B1, A2 B2, A3 B3, A4 B4, A5 B5, A6 B6, A7 B7, A8 B8, A9 B9, A10 B10);
tail!(A1 B1, A2 B2, A3 B3, A4 B4, A5 B5, A6 B6, A7 B7, A8 B8, A9 B9, A10 B10, A11 B11);
tail!(A1 B1, A2 B2, A3 B3, A4 B4, A5 B5, A6 B6, A7 B7, A8 B8, A9 B9, A10 B10, A11 B11, A12 B12);

/// Marker: the trailing parameter is `resil::Error<E>`, or there is none.
pub struct TakesAll;
/// Marker: the trailing parameter is the call's own `E`.
pub struct TakesCall;
/// Marker: the trailing parameter is a refusal type.
pub struct TakesRefusal;

/// The fallback's trailing parameter (`X`) says which errors it takes.
#[diagnostic::on_unimplemented(
    message = "the fallback's last parameter must be the error it takes, not `{X}`",
    label = "this fallback's last parameter is `{X}`",
    note = "take `{E}` (the call's own error, by value), `resil::Error<{E}>` (every error), `resil::Rejection` (every refusal) or one refusal type such as `resil::error::Timeout`; or no error parameter"
)]
pub trait ErrorParam<E, X, M> {
    /// `Self` again.
    type Next;
    /// `self`, for the next step.
    fn next(&self) -> &Self::Next;

    /// Checks the fallback's trailing parameter `X` against the call's
    /// error `E`.
    #[inline(always)]
    fn error_param<R>(fit: Fit<'_, Self, X, R>) -> Fit<'_, Self::Next, X, R>
    where
        Self: Sized,
    {
        Fit(fit.0.next(), PhantomData)
    }
}

macro_rules! error_param {
    ($x:ty, $m:ty) => {
        impl<F, E> ErrorParam<E, $x, $m> for F {
            type Next = F;
            #[inline(always)]
            fn next(&self) -> &F {
                self
            }
        }
    };
}

error_param!(NoTail, TakesAll);
error_param!(Error<E>, TakesAll);
error_param!(E, TakesCall);
error_param!(Rejection, TakesRefusal);
error_param!(CallNotPermitted, TakesRefusal);
error_param!(BulkheadFull, TakesRefusal);
error_param!(RequestNotPermitted, TakesRefusal);
error_param!(Timeout, TakesRefusal);
error_param!(RetryBudgetExhausted, TakesRefusal);
error_param!(MaxRetriesExceeded, TakesRefusal);
error_param!(DeadlineExceeded, TakesRefusal);
error_param!(Throttled, TakesRefusal);

/// A sync fn's fallback returns (`R`) what the protected fn returns (`Ret`).
#[diagnostic::on_unimplemented(
    message = "the fallback must return `{Ret}`, as the protected fn does, not `{R}`",
    label = "this fallback returns `{R}`",
    note = "the fallback of a sync fn is a sync fn with the protected fn's return type; an `async fn` fallback only serves an `async fn`"
)]
pub trait Returns<Ret, R> {
    /// `Self` again.
    type Next;
    /// `self`, for the dispatch.
    fn next(&self) -> &Self::Next;

    /// Checks a sync fn's fallback's return type, and gives the fallback to
    /// the dispatch.
    #[inline(always)]
    fn returns<X>(fit: Fit<'_, Self, X, R>) -> &Self::Next
    where
        Self: Sized,
    {
        fit.0.next()
    }
}

impl<F, Ret> Returns<Ret, Ret> for F {
    type Next = F;
    #[inline(always)]
    fn next(&self) -> &F {
        self
    }
}

/// The fallback, once every step fitted.
#[inline(always)]
pub fn fitted<'f, F, X, R>(fit: Fit<'f, F, X, R>) -> &'f F {
    fit.0
}
