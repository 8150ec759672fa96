//! Fallback matching, decided by the compiler. A fallback is a fn taking the
//! protected fn's parameters (`Args`, as a tuple) plus an optional trailing
//! error parameter whose type says what it handles:
//!
//! | trailing parameter | handles | rank |
//! |---|---|---|
//! | none, or `resil::Error<E>` | every error | 0 |
//! | `resil::Rejection` | every refusal | 1 |
//! | `E` | the call's own error | 2 |
//! | one refusal type (`Timeout`, …) | that refusal | 2 |
//!
//! The marker type `M` of [`Fallback`] is inferred from the fallback's
//! signature (axum's `Handler<T>` technique), so the expansion needs no
//! knowledge of it. Among the fallbacks handling an error, the highest rank
//! wins, whatever the list order; two fallbacks handling the same type are a
//! compile error ([`DistinctFallbacks`]).

use std::future::Future;
use std::marker::PhantomData;

use resil_core::error::{
    BulkheadFull, CallNotPermitted, DeadlineExceeded, MaxRetriesExceeded, RequestNotPermitted,
    RetryBudgetExhausted, Throttled, Timeout,
};
use resil_core::{Error, Rejection};

/// Marker: a fallback with no error parameter.
pub struct NoError;
/// Marker: a fallback whose last parameter is `resil::Error<E>`.
pub struct WithError;
/// Marker: a fallback whose last parameter is the call's own `E`.
pub struct WithCall;
/// Marker: a fallback whose last parameter is a refusal type `R`.
pub struct WithRejection<R>(PhantomData<R>);

/// A type a fallback can take as its trailing error parameter, other than
/// `Error<E>` and `E`.
pub trait RejectionParam: Sized {
    /// See the module table.
    const RANK: u8;
    /// What [`DistinctFallbacks`] compares.
    type Id;
    /// [`Yes`] when this type takes every refusal.
    type All;
    /// Whether `err` is this refusal.
    fn matches<E>(err: &Error<E>) -> bool;
    /// The refusal out of `err`, which [`matches`](Self::matches).
    fn take<E>(err: Error<E>) -> Option<Self>;
}

macro_rules! rejection_params {
    ($($ty:ident => $id:ident),*) => {$(
        #[doc(hidden)]
        pub struct $id;
        impl RejectionParam for $ty {
            const RANK: u8 = 2;
            type Id = $id;
            type All = No;
            #[inline]
            fn matches<E>(err: &Error<E>) -> bool {
                matches!(err, Error::$ty(_))
            }
            #[inline]
            fn take<E>(err: Error<E>) -> Option<Self> {
                match err {
                    Error::$ty(r) => Some(r),
                    _ => None,
                }
            }
        }
    )*};
}

rejection_params! {
    CallNotPermitted => IdCallNotPermitted,
    BulkheadFull => IdBulkheadFull,
    RequestNotPermitted => IdRequestNotPermitted,
    Timeout => IdTimeout,
    RetryBudgetExhausted => IdRetryBudgetExhausted,
    MaxRetriesExceeded => IdMaxRetriesExceeded,
    DeadlineExceeded => IdDeadlineExceeded,
    Throttled => IdThrottled
}

#[doc(hidden)]
pub struct IdEverything;
#[doc(hidden)]
pub struct IdCall;
#[doc(hidden)]
pub struct IdAnyRejection;

impl RejectionParam for Rejection {
    const RANK: u8 = 1;
    type Id = IdAnyRejection;
    type All = Yes;
    #[inline]
    fn matches<E>(err: &Error<E>) -> bool {
        err.is_rejection()
    }
    #[inline]
    fn take<E>(err: Error<E>) -> Option<Self> {
        err.into_rejection().ok()
    }
}

/// A fn usable as a fallback of a protected fn whose parameters are `Args`
/// and whose error type is `E`.
#[diagnostic::on_unimplemented(
    message = "this fallback does not fit the protected fn",
    label = "expected a fn taking `{Args}`, plus an optional trailing error parameter",
    note = "a fallback takes the protected fn's parameters in order, plus an optional trailing `resil::Error<{E}>` (every error), `{E}` (the call's own error), `resil::Rejection` (every refusal) or one refusal type such as `resil::error::Timeout`"
)]
pub trait Fallback<Args, E, M> {
    /// The fallback's return type.
    type Output;
    /// What [`DistinctFallbacks`] compares.
    type Id;
    /// What [`DistinctFallbacks`] names: the trailing parameter's type
    /// (`resil::Error<E>` for a fallback without one).
    type Takes;
    /// Which errors, by kind, this fallback takes over.
    type Covers;
    /// `Some(rank)` if this fallback handles `err`.
    fn rank(err: &Error<E>) -> Option<u8>;
    /// Calls the fallback. Only called for an `err` it [ranks](Self::rank).
    fn invoke(&self, args: Args, err: Error<E>) -> Self::Output;
}

macro_rules! fallback_arity {
    ($($a:ident $v:ident),*) => {
        impl<Func, $($a,)* E, R> Fallback<($($a,)*), E, NoError> for Func
        where
            Func: Fn($($a),*) -> R,
        {
            type Output = R;
            type Id = IdEverything;
            type Takes = Error<E>;
            type Covers = Covers<Yes, Yes>;
            #[inline]
            fn rank(_: &Error<E>) -> Option<u8> {
                Some(0)
            }
            #[inline]
            fn invoke(&self, ($($v,)*): ($($a,)*), _: Error<E>) -> R {
                self($($v),*)
            }
        }

        impl<Func, $($a,)* E, R> Fallback<($($a,)*), E, WithError> for Func
        where
            Func: Fn($($a,)* Error<E>) -> R,
        {
            type Output = R;
            type Id = IdEverything;
            type Takes = Error<E>;
            type Covers = Covers<Yes, Yes>;
            #[inline]
            fn rank(_: &Error<E>) -> Option<u8> {
                Some(0)
            }
            #[inline]
            fn invoke(&self, ($($v,)*): ($($a,)*), err: Error<E>) -> R {
                self($($v,)* err)
            }
        }

        impl<Func, $($a,)* E, R> Fallback<($($a,)*), E, WithCall> for Func
        where
            Func: Fn($($a,)* E) -> R,
        {
            type Output = R;
            type Id = IdCall;
            type Takes = E;
            type Covers = Covers<Yes, No>;
            #[inline]
            fn rank(err: &Error<E>) -> Option<u8> {
                matches!(err, Error::Call(_)).then_some(2)
            }
            #[inline]
            fn invoke(&self, ($($v,)*): ($($a,)*), err: Error<E>) -> R {
                match err.into_rejection() {
                    Err(call) => self($($v,)* call),
                    Ok(_) => unreachable!("a call-error fallback is only invoked for a call error"),
                }
            }
        }

        impl<Func, $($a,)* E, R, X> Fallback<($($a,)*), E, WithRejection<X>> for Func
        where
            Func: Fn($($a,)* X) -> R,
            X: RejectionParam,
        {
            type Output = R;
            type Id = X::Id;
            type Takes = X;
            type Covers = Covers<No, X::All>;
            #[inline]
            fn rank(err: &Error<E>) -> Option<u8> {
                X::matches(err).then_some(X::RANK)
            }
            #[inline]
            fn invoke(&self, ($($v,)*): ($($a,)*), err: Error<E>) -> R {
                match X::take(err) {
                    Some(r) => self($($v,)* r),
                    None => unreachable!("a refusal fallback is only invoked for its refusal"),
                }
            }
        }
    };
}

fallback_arity!();
fallback_arity!(A1 a1);
fallback_arity!(A1 a1, A2 a2);
fallback_arity!(A1 a1, A2 a2, A3 a3);
fallback_arity!(A1 a1, A2 a2, A3 a3, A4 a4);
fallback_arity!(A1 a1, A2 a2, A3 a3, A4 a4, A5 a5);
fallback_arity!(A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6);
fallback_arity!(A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7);
fallback_arity!(A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8);
fallback_arity!(A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9);
fallback_arity!(A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9, A10 a10);
fallback_arity!(A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9, A10 a10, A11 a11);
fallback_arity!(A1 a1, A2 a2, A3 a3, A4 a4, A5 a5, A6 a6, A7 a7, A8 a8, A9 a9, A10 a10, A11 a11, A12 a12);

/// Type-level yes.
pub struct Yes;
/// Type-level no.
pub struct No;

/// Which errors a set of fallbacks takes over: call errors `C`, every refusal `R`.
pub struct Covers<C, R>(PhantomData<(C, R)>);

/// Type-level or.
pub trait Or<B> {
    /// `Self || B`.
    type Out;
}
impl<B> Or<B> for Yes {
    type Out = Yes;
}
impl Or<Yes> for No {
    type Out = Yes;
}
impl Or<No> for No {
    type Out = No;
}

/// The coverage of one fallback, as a value the expansion folds with [`join`].
#[inline(always)]
pub fn coverage<F, Args, E, M>(_: &F, _: &Error<E>) -> PhantomData<F::Covers>
where
    F: Fallback<Args, E, M>,
{
    PhantomData
}

/// The coverage of two sets of fallbacks together.
#[inline(always)]
pub fn join<C1, R1, C2, R2>(
    _: PhantomData<Covers<C1, R1>>,
    _: PhantomData<Covers<C2, R2>>,
) -> PhantomData<Covers<<C1 as Or<C2>>::Out, <R1 as Or<R2>>::Out>>
where
    C1: Or<C2>,
    R1: Or<R2>,
{
    PhantomData
}

/// What becomes of an error no fallback took.
pub trait Leftover<E> {
    /// The error as the fn's own.
    fn leftover(err: Error<E>) -> E;
}

/// Every refusal is handled by some fallback: only call errors are left,
/// returned as they are, and `E` needs no conversion from a rejection.
impl<C, E> Leftover<E> for Covers<C, Yes> {
    #[inline]
    fn leftover(err: Error<E>) -> E {
        match err.into_rejection() {
            Err(call) => call,
            Ok(_) => unreachable!("a fallback takes every refusal"),
        }
    }
}

/// Some refusal may be left: `E` must be able to carry it.
impl<C, E: super::AcceptsRejection> Leftover<E> for Covers<C, No> {
    #[inline]
    fn leftover(err: Error<E>) -> E {
        super::into_fn_error(err)
    }
}

/// The fn's error for an `err` no fallback took.
#[inline]
pub fn leftover<C, E>(_: PhantomData<C>, err: Error<E>) -> E
where
    C: Leftover<E>,
{
    C::leftover(err)
}

/// The rank of fallback `f` for `err` (see the module table).
#[inline(always)]
pub fn rank<F, Args, E, M>(_: &F, err: &Error<E>) -> Option<u8>
where
    F: Fallback<Args, E, M>,
{
    F::rank(err)
}

/// The index of the most specific fallback handling the error.
#[inline]
pub fn pick(ranks: &[Option<u8>]) -> Option<usize> {
    let mut best: Option<(usize, u8)> = None;
    for (i, rank) in ranks.iter().enumerate() {
        if let Some(r) = *rank {
            if best.is_none_or(|(_, b)| r > b) {
                best = Some((i, r));
            }
        }
    }
    best.map(|(i, _)| i)
}

/// Two fallbacks of one fn must not handle the same error type. `A` and
/// `B` are named after the two fallbacks, `X` is what both take.
#[diagnostic::on_unimplemented(
    message = "`{A}` and `{B}` both take `{X}`; a fn has one fallback per error type",
    label = "this fallback takes `{X}`, as `{A}` does",
    note = "remove one of them, or change one's last parameter to another error type (`E`, `resil::Error<E>`, `resil::Rejection` or one refusal type); no error parameter counts as `resil::Error<E>`"
)]
pub trait DistinctFallbacks<A, B, X> {}

macro_rules! distinct {
    ($a:ident: $($b:ident),*) => {$(
        #[diagnostic::do_not_recommend]
        impl<A, B, X> DistinctFallbacks<A, B, X> for ($a, $b) {}
    )*};
}
distinct!(IdEverything: IdCall, IdAnyRejection, IdCallNotPermitted, IdBulkheadFull, IdRequestNotPermitted, IdTimeout, IdRetryBudgetExhausted, IdMaxRetriesExceeded, IdDeadlineExceeded, IdThrottled);
distinct!(IdCall: IdEverything, IdAnyRejection, IdCallNotPermitted, IdBulkheadFull, IdRequestNotPermitted, IdTimeout, IdRetryBudgetExhausted, IdMaxRetriesExceeded, IdDeadlineExceeded, IdThrottled);
distinct!(IdAnyRejection: IdEverything, IdCall, IdCallNotPermitted, IdBulkheadFull, IdRequestNotPermitted, IdTimeout, IdRetryBudgetExhausted, IdMaxRetriesExceeded, IdDeadlineExceeded, IdThrottled);
distinct!(IdCallNotPermitted: IdEverything, IdCall, IdAnyRejection, IdBulkheadFull, IdRequestNotPermitted, IdTimeout, IdRetryBudgetExhausted, IdMaxRetriesExceeded, IdDeadlineExceeded, IdThrottled);
distinct!(IdBulkheadFull: IdEverything, IdCall, IdAnyRejection, IdCallNotPermitted, IdRequestNotPermitted, IdTimeout, IdRetryBudgetExhausted, IdMaxRetriesExceeded, IdDeadlineExceeded, IdThrottled);
distinct!(IdRequestNotPermitted: IdEverything, IdCall, IdAnyRejection, IdCallNotPermitted, IdBulkheadFull, IdTimeout, IdRetryBudgetExhausted, IdMaxRetriesExceeded, IdDeadlineExceeded, IdThrottled);
distinct!(IdTimeout: IdEverything, IdCall, IdAnyRejection, IdCallNotPermitted, IdBulkheadFull, IdRequestNotPermitted, IdRetryBudgetExhausted, IdMaxRetriesExceeded, IdDeadlineExceeded, IdThrottled);
distinct!(IdRetryBudgetExhausted: IdEverything, IdCall, IdAnyRejection, IdCallNotPermitted, IdBulkheadFull, IdRequestNotPermitted, IdTimeout, IdMaxRetriesExceeded, IdDeadlineExceeded, IdThrottled);
distinct!(IdMaxRetriesExceeded: IdEverything, IdCall, IdAnyRejection, IdCallNotPermitted, IdBulkheadFull, IdRequestNotPermitted, IdTimeout, IdRetryBudgetExhausted, IdDeadlineExceeded, IdThrottled);
distinct!(IdDeadlineExceeded: IdEverything, IdCall, IdAnyRejection, IdCallNotPermitted, IdBulkheadFull, IdRequestNotPermitted, IdTimeout, IdRetryBudgetExhausted, IdMaxRetriesExceeded, IdThrottled);
distinct!(IdThrottled: IdEverything, IdCall, IdAnyRejection, IdCallNotPermitted, IdBulkheadFull, IdRequestNotPermitted, IdTimeout, IdRetryBudgetExhausted, IdMaxRetriesExceeded, IdDeadlineExceeded);

/// Compile-time check that fallbacks `a` and `b` handle different types
/// (`NA` and `NB`: types named after them, for the message).
#[inline(always)]
pub fn distinct<A, MA, B, MB, Args, E, NA, NB>(_: &A, _: &B, _: &Error<E>, _: PhantomData<(NA, NB)>)
where
    A: Fallback<Args, E, MA>,
    B: Fallback<Args, E, MB>,
    (A::Id, B::Id): DistinctFallbacks<NA, NB, <A as Fallback<Args, E, MA>>::Takes>,
{
}

/// A sync fn's fallback returns what the fn returns.
#[diagnostic::on_unimplemented(
    message = "the fallback must return `{Ret}`, as the protected fn does, not `{Self}`",
    label = "this fallback returns `{Self}`",
    note = "the fallback of a sync fn is a sync fn with the protected fn's return type; an `async fn` fallback only serves an `async fn`"
)]
pub trait SyncOutput<Ret> {
    /// The value to return.
    fn into_output(self) -> Ret;
}

impl<Ret> SyncOutput<Ret> for Ret {
    #[inline(always)]
    fn into_output(self) -> Ret {
        self
    }
}

/// An async fn's fallback is an `async fn` resolving to what the fn returns.
#[diagnostic::on_unimplemented(
    message = "the fallback of an async fn must be an `async fn` returning `{Ret}`, not a fn returning `{Self}`",
    label = "this fallback is not async, or resolves to another type",
    note = "write the fallback as `async fn` with the protected fn's parameters and return type"
)]
pub trait AsyncOutput<Ret> {
    /// The future to await. Its output is `Ret` whether or not the
    /// fallback fits, so an unfit one is reported once, here, and not again
    /// as a mismatched type where it is awaited.
    fn into_future(self) -> impl Future<Output = Ret>;
}

#[diagnostic::do_not_recommend]
impl<Ret, F: Future<Output = Ret>> AsyncOutput<Ret> for F {
    #[inline(always)]
    fn into_future(self) -> impl Future<Output = Ret> {
        self
    }
}

/// Calls a sync fn's fallback.
#[inline(always)]
pub fn invoke<Ret, F, Args, E, M>(f: &F, args: Args, err: Error<E>) -> Ret
where
    F: Fallback<Args, E, M>,
    F::Output: SyncOutput<Ret>,
{
    f.invoke(args, err).into_output()
}

/// The per-call-site fallback counters live in resil-registry, whose
/// snapshot and metrics show them.
pub use resil_registry::fallback::{FallbackResult, FallbackSite};
