//! One flat error type for every protected call, and the configuration error.
//!
//! A protected call fails in exactly one of a few ways: the call itself failed
//! ([`Error::Call`]), or a primitive refused to run it. Each refusal is a small
//! struct carrying the name of the instance that refused, so a log line or a
//! fallback can say *which* breaker, bulkhead or limiter said no. There are no
//! nested per-primitive error enums and no boxed errors: a stack of five
//! primitives around a call still yields one `Error<E>` to match on.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::circuit_breaker::State;

/// The outcome of a protected call that did not produce a value.
///
/// `E` is the protected call's own error type. Everything else is a refusal by
/// one of resil's primitives, and carries the instance name.
///
/// ```
/// use resil_core::{Error, ErrorKind};
/// use resil_core::error::BulkheadFull;
///
/// let err: Error<std::io::Error> = Error::from(BulkheadFull::new("reports"));
/// assert_eq!(err.kind(), ErrorKind::BulkheadFull);
/// assert_eq!(err.kind(), "bulkhead_full");
/// assert_eq!(err.name(), Some("reports"));
/// assert_eq!(err.to_string(), "bulkhead 'reports' is full and does not permit further calls");
/// ```
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Error<E> {
    /// The protected call ran and returned this error.
    Call(E),
    /// A circuit breaker refused the call without running it.
    CallNotPermitted(CallNotPermitted),
    /// A bulkhead (semaphore or thread pool) had no free slot.
    BulkheadFull(BulkheadFull),
    /// A rate limiter had no permission for this call within its timeout.
    RequestNotPermitted(RequestNotPermitted),
    /// A time limiter stopped waiting for the call.
    ///
    /// The call may still have had its effect: a timeout stops *waiting*, it does
    /// not undo what a remote service already did.
    Timeout(Timeout),
    /// A retry wanted to retry but its shared retry budget was spent.
    RetryBudgetExhausted(RetryBudgetExhausted),
    /// A retry with `fail_after_max_attempts` ran out of attempts while the
    /// result was still one `retry_on_result` retries (Resilience4j's
    /// `MaxRetriesExceededException`); the last value was discarded.
    MaxRetriesExceeded(MaxRetriesExceeded),
    /// The task's end-to-end deadline (see [`crate::deadline`]) left no time for
    /// the work, so it was not started or stopped waiting.
    DeadlineExceeded(DeadlineExceeded),
    /// An adaptive client-side throttler (see [`crate::throttler`]) shed the
    /// call locally because its downstream keeps refusing: not a rate
    /// limit, an overloaded downstream.
    Throttled(Throttled),
}

/// A short, stable label for each [`Error`] variant, for logs, metrics tags and
/// fallbacks. Compares equal to its label: `kind == "timeout"`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ErrorKind {
    /// `"call"`: the protected call's own error.
    Call,
    /// `"call_not_permitted"`: a circuit breaker refused.
    CallNotPermitted,
    /// `"bulkhead_full"`: a bulkhead had no free slot.
    BulkheadFull,
    /// `"request_not_permitted"`: a rate limiter refused.
    RequestNotPermitted,
    /// `"timeout"`: a time limiter stopped waiting.
    Timeout,
    /// `"retry_budget_exhausted"`: a retry budget refused a retry.
    RetryBudgetExhausted,
    /// `"max_retries_exceeded"`: a retry's attempts ran out on a retried result.
    MaxRetriesExceeded,
    /// `"deadline_exceeded"`: the end-to-end deadline was spent.
    DeadlineExceeded,
    /// `"throttled"`: an adaptive throttler shed the call locally.
    Throttled,
}

impl ErrorKind {
    /// Every kind: the call's own error first, then the refusals in the
    /// order of [`Rejection`](crate::Rejection)'s variants.
    pub const ALL: [ErrorKind; 9] = [
        ErrorKind::Call,
        ErrorKind::CallNotPermitted,
        ErrorKind::BulkheadFull,
        ErrorKind::RequestNotPermitted,
        ErrorKind::Timeout,
        ErrorKind::RetryBudgetExhausted,
        ErrorKind::MaxRetriesExceeded,
        ErrorKind::DeadlineExceeded,
        ErrorKind::Throttled,
    ];

    /// The refusals: every kind but [`Call`](ErrorKind::Call).
    pub const REJECTIONS: [ErrorKind; 8] = {
        let mut out = [ErrorKind::Call; 8];
        let mut i = 0;
        while i < out.len() {
            out[i] = ErrorKind::ALL[i + 1];
            i += 1;
        }
        out
    };

    /// The stable snake_case label of this kind.
    #[inline]
    pub const fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Call => "call",
            ErrorKind::CallNotPermitted => "call_not_permitted",
            ErrorKind::BulkheadFull => "bulkhead_full",
            ErrorKind::RequestNotPermitted => "request_not_permitted",
            ErrorKind::Timeout => "timeout",
            ErrorKind::RetryBudgetExhausted => "retry_budget_exhausted",
            ErrorKind::MaxRetriesExceeded => "max_retries_exceeded",
            ErrorKind::DeadlineExceeded => "deadline_exceeded",
            ErrorKind::Throttled => "throttled",
        }
    }

    /// Whether this kind is a refusal by a resil primitive (everything but `Call`).
    #[inline]
    pub const fn is_rejection(self) -> bool {
        !matches!(self, ErrorKind::Call)
    }
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl PartialEq<str> for ErrorKind {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for ErrorKind {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl<E> Error<E> {
    /// The short, stable label of this error.
    #[inline]
    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Call(_) => ErrorKind::Call,
            Error::CallNotPermitted(_) => ErrorKind::CallNotPermitted,
            Error::BulkheadFull(_) => ErrorKind::BulkheadFull,
            Error::RequestNotPermitted(_) => ErrorKind::RequestNotPermitted,
            Error::Timeout(_) => ErrorKind::Timeout,
            Error::RetryBudgetExhausted(_) => ErrorKind::RetryBudgetExhausted,
            Error::MaxRetriesExceeded(_) => ErrorKind::MaxRetriesExceeded,
            Error::DeadlineExceeded(_) => ErrorKind::DeadlineExceeded,
            Error::Throttled(_) => ErrorKind::Throttled,
        }
    }

    /// The name of the instance that refused the call, or `None` for
    /// [`Error::Call`] (and for a deadline spent outside any instance).
    pub fn name(&self) -> Option<&str> {
        match self {
            Error::Call(_) => None,
            Error::CallNotPermitted(r) => Some(r.name()),
            Error::BulkheadFull(r) => Some(r.name()),
            Error::RequestNotPermitted(r) => Some(r.name()),
            Error::Timeout(r) => Some(r.name()),
            Error::RetryBudgetExhausted(r) => Some(r.name()),
            Error::MaxRetriesExceeded(r) => Some(r.name()),
            Error::DeadlineExceeded(r) => r.name(),
            Error::Throttled(r) => Some(r.name()),
        }
    }

    /// Whether a resil primitive refused the call (it did not run, or was no
    /// longer waited for).
    #[inline]
    pub fn is_rejection(&self) -> bool {
        self.kind().is_rejection()
    }

    /// The call's own error, if this is [`Error::Call`].
    pub fn as_call(&self) -> Option<&E> {
        match self {
            Error::Call(e) => Some(e),
            _ => None,
        }
    }

    /// The call's own error, if this is [`Error::Call`].
    pub fn into_call(self) -> Option<E> {
        match self {
            Error::Call(e) => Some(e),
            _ => None,
        }
    }

    /// Maps the call's own error, keeping every rejection as it is.
    pub fn map_call<F, E2>(self, f: F) -> Error<E2>
    where
        F: FnOnce(E) -> E2,
    {
        match self {
            Error::Call(e) => Error::Call(f(e)),
            Error::CallNotPermitted(r) => Error::CallNotPermitted(r),
            Error::BulkheadFull(r) => Error::BulkheadFull(r),
            Error::RequestNotPermitted(r) => Error::RequestNotPermitted(r),
            Error::Timeout(r) => Error::Timeout(r),
            Error::RetryBudgetExhausted(r) => Error::RetryBudgetExhausted(r),
            Error::MaxRetriesExceeded(r) => Error::MaxRetriesExceeded(r),
            Error::DeadlineExceeded(r) => Error::DeadlineExceeded(r),
            Error::Throttled(r) => Error::Throttled(r),
        }
    }
}

impl<E: 'static> Error<E> {
    /// What a classifying predicate is shown: the call's own error for
    /// [`Error::Call`], else the rejection's own struct ([`Timeout`],
    /// [`BulkheadFull`], …), and whether it is a rejection.
    pub(crate) fn classified(&self) -> (&dyn std::any::Any, bool) {
        match self {
            Error::Call(e) => (e, false),
            Error::CallNotPermitted(r) => (r, true),
            Error::BulkheadFull(r) => (r, true),
            Error::RequestNotPermitted(r) => (r, true),
            Error::Timeout(r) => (r, true),
            Error::RetryBudgetExhausted(r) => (r, true),
            Error::MaxRetriesExceeded(r) => (r, true),
            Error::DeadlineExceeded(r) => (r, true),
            Error::Throttled(r) => (r, true),
            // A rejection added without an arm here is still a rejection (a
            // failure by default); its predicates see the whole `Error<E>`.
            #[allow(unreachable_patterns)]
            _ => (self, true),
        }
    }

    /// The type name of what [`classified`](Self::classified) shows, for
    /// diagnostics.
    pub(crate) fn classified_type_name(&self) -> &'static str {
        match self {
            Error::Call(_) => std::any::type_name::<E>(),
            Error::CallNotPermitted(_) => std::any::type_name::<CallNotPermitted>(),
            Error::BulkheadFull(_) => std::any::type_name::<BulkheadFull>(),
            Error::RequestNotPermitted(_) => std::any::type_name::<RequestNotPermitted>(),
            Error::Timeout(_) => std::any::type_name::<Timeout>(),
            Error::RetryBudgetExhausted(_) => std::any::type_name::<RetryBudgetExhausted>(),
            Error::MaxRetriesExceeded(_) => std::any::type_name::<MaxRetriesExceeded>(),
            Error::DeadlineExceeded(_) => std::any::type_name::<DeadlineExceeded>(),
            Error::Throttled(_) => std::any::type_name::<Throttled>(),
            #[allow(unreachable_patterns)]
            _ => std::any::type_name::<Self>(),
        }
    }
}

/// What [`look_inside`] finds: the call's own error, or a refusal's struct
/// and its kind.
pub(crate) type Inside<'a> = (&'a dyn std::any::Any, Option<ErrorKind>);

/// [`look_inside`] for one type, as predicates store it.
pub(crate) type Look = fn(&dyn std::any::Any) -> Option<Inside<'_>>;

/// What a classifying predicate written for `X` is shown of `any` when
/// `any` is a `resil::Error<X>` nested up to four levels deep (primitives
/// composed by hand with their plain `call`, each adding one level): the
/// call's own `X`, or the innermost refusal's struct with its kind. `None`
/// for any other type.
pub(crate) fn look_inside<X: 'static>(
    any: &dyn std::any::Any,
) -> Option<(&dyn std::any::Any, Option<ErrorKind>)> {
    fn level<E: 'static>(e: &Error<E>) -> (&dyn std::any::Any, Option<ErrorKind>) {
        match e.classified() {
            (value, false) => (value, None),
            (refusal, true) => (refusal, Some(e.kind())),
        }
    }
    fn two<X: 'static>(e: &Error<Error<X>>) -> (&dyn std::any::Any, Option<ErrorKind>) {
        match e {
            Error::Call(inner) => level(inner),
            refusal => level(refusal),
        }
    }
    fn three<X: 'static>(e: &Error<Error<Error<X>>>) -> (&dyn std::any::Any, Option<ErrorKind>) {
        match e {
            Error::Call(inner) => two(inner),
            refusal => level(refusal),
        }
    }
    fn four<X: 'static>(
        e: &Error<Error<Error<Error<X>>>>,
    ) -> (&dyn std::any::Any, Option<ErrorKind>) {
        match e {
            Error::Call(inner) => three(inner),
            refusal => level(refusal),
        }
    }
    if let Some(e) = any.downcast_ref::<Error<X>>() {
        return Some(level(e));
    }
    if let Some(e) = any.downcast_ref::<Error<Error<X>>>() {
        return Some(two(e));
    }
    if let Some(e) = any.downcast_ref::<Error<Error<Error<X>>>>() {
        return Some(three(e));
    }
    any.downcast_ref::<Error<Error<Error<Error<X>>>>>()
        .map(four)
}

impl<E> Error<Error<E>> {
    /// Collapses a nested error (a protected call that itself returns a resil
    /// error) into one level: an inner refusal stays a refusal.
    pub fn flatten(self) -> Error<E> {
        match self {
            Error::Call(inner) => inner,
            Error::CallNotPermitted(r) => Error::CallNotPermitted(r),
            Error::BulkheadFull(r) => Error::BulkheadFull(r),
            Error::RequestNotPermitted(r) => Error::RequestNotPermitted(r),
            Error::Timeout(r) => Error::Timeout(r),
            Error::RetryBudgetExhausted(r) => Error::RetryBudgetExhausted(r),
            Error::MaxRetriesExceeded(r) => Error::MaxRetriesExceeded(r),
            Error::DeadlineExceeded(r) => Error::DeadlineExceeded(r),
            Error::Throttled(r) => Error::Throttled(r),
        }
    }
}

impl<E: fmt::Display> fmt::Display for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Call(e) => fmt::Display::fmt(e, f),
            Error::CallNotPermitted(r) => fmt::Display::fmt(r, f),
            Error::BulkheadFull(r) => fmt::Display::fmt(r, f),
            Error::RequestNotPermitted(r) => fmt::Display::fmt(r, f),
            Error::Timeout(r) => fmt::Display::fmt(r, f),
            Error::RetryBudgetExhausted(r) => fmt::Display::fmt(r, f),
            Error::MaxRetriesExceeded(r) => fmt::Display::fmt(r, f),
            Error::DeadlineExceeded(r) => fmt::Display::fmt(r, f),
            Error::Throttled(r) => fmt::Display::fmt(r, f),
        }
    }
}

impl<E: fmt::Debug> fmt::Debug for Error<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Call(e) => f.debug_tuple("Call").field(e).finish(),
            Error::CallNotPermitted(r) => f.debug_tuple("CallNotPermitted").field(r).finish(),
            Error::BulkheadFull(r) => f.debug_tuple("BulkheadFull").field(r).finish(),
            Error::RequestNotPermitted(r) => f.debug_tuple("RequestNotPermitted").field(r).finish(),
            Error::Timeout(r) => f.debug_tuple("Timeout").field(r).finish(),
            Error::RetryBudgetExhausted(r) => {
                f.debug_tuple("RetryBudgetExhausted").field(r).finish()
            }
            Error::MaxRetriesExceeded(r) => f.debug_tuple("MaxRetriesExceeded").field(r).finish(),
            Error::DeadlineExceeded(r) => f.debug_tuple("DeadlineExceeded").field(r).finish(),
            Error::Throttled(r) => f.debug_tuple("Throttled").field(r).finish(),
        }
    }
}

impl<E> std::error::Error for Error<E>
where
    E: std::error::Error + 'static,
{
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            // `Display` is transparent for `Call`, so the source is the call
            // error's own source, as thiserror's `#[error(transparent)]` does.
            Error::Call(e) => e.source(),
            _ => None,
        }
    }
}

/// An instance's name as its refusals carry it: one thin pointer.
///
/// Every refusal is on a hot path's return type, so its size decides whether
/// `Result<T, Error<E>>` comes back in registers or through memory at each
/// layer of a stack. A fat `Arc<str>` (16 bytes) made a refusal with a
/// `Duration` 32 bytes; a thin pointer keeps every refusal at 8 bytes, so
/// `Result<u64, Error<E>>` is 16 bytes for a small `E`. An instance builds its
/// `SharedName` (and the refusals that carry more than a name) once; each
/// refusal clones one, counting a reference and never allocating.
#[derive(Clone)]
pub(crate) struct SharedName(Arc<Arc<str>>);

impl SharedName {
    /// Shares `name` (one allocation, made once per instance).
    pub(crate) fn new(name: impl Into<Arc<str>>) -> Self {
        SharedName(Arc::new(name.into()))
    }

    #[inline]
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }
}

impl PartialEq for SharedName {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || self.as_str() == other.as_str()
    }
}

impl Eq for SharedName {}

impl fmt::Debug for SharedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for SharedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

macro_rules! rejection {
    ($(#[$meta:meta])* $ty:ident => $variant:ident) => {
        $(#[$meta])*
        impl<E> From<$ty> for Error<E> {
            #[inline]
            fn from(r: $ty) -> Self {
                Error::$variant(r)
            }
        }
        impl std::error::Error for $ty {}
    };
}

/// A circuit breaker refused the call without running it.
#[derive(Clone, PartialEq, Eq)]
pub struct CallNotPermitted {
    /// Built once per breaker and refusing state, so a refusal clones a
    /// pointer and stays thin (see [`SharedName`]).
    inner: Arc<(SharedName, State)>,
}

impl CallNotPermitted {
    /// A refusal by breaker `name` while it was in `state`.
    pub fn new(name: impl Into<Arc<str>>, state: State) -> Self {
        Self::by(&SharedName::new(name), state)
    }

    /// The refusal a breaker whose shared name is `name` hands out in
    /// `state`: built once, cloned per refusal.
    pub(crate) fn by(name: &SharedName, state: State) -> Self {
        CallNotPermitted {
            inner: Arc::new((name.clone(), state)),
        }
    }

    /// The breaker's name.
    #[inline]
    pub fn name(&self) -> &str {
        self.inner.0.as_str()
    }

    /// The state that refused: `Open`, `ForcedOpen`, `HalfOpen` (no probe slot
    /// left) or `Closed` (ramping up after recovery: see the breaker's
    /// `warm_up_period`).
    #[inline]
    pub fn state(&self) -> State {
        self.inner.1
    }
}

impl fmt::Display for CallNotPermitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.state() == State::Closed {
            return write!(
                f,
                "circuit breaker '{}' is CLOSED and ramping up after recovery: this call is not permitted",
                self.name()
            );
        }
        write!(
            f,
            "circuit breaker '{}' is {} and does not permit further calls",
            self.name(),
            self.state()
        )
    }
}

impl fmt::Debug for CallNotPermitted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CallNotPermitted")
            .field("name", &self.name())
            .field("state", &self.state())
            .finish()
    }
}

rejection!(CallNotPermitted => CallNotPermitted);

/// A named rejection with no further payload.
macro_rules! named_rejection {
    ($(#[$meta:meta])* $ty:ident, $fmt:literal) => {
        $(#[$meta])*
        #[derive(Clone, PartialEq, Eq)]
        pub struct $ty {
            name: SharedName,
        }

        impl $ty {
            /// A refusal by the instance called `name`.
            pub fn new(name: impl Into<Arc<str>>) -> Self {
                Self::by(&SharedName::new(name))
            }

            /// A refusal by the instance whose shared name is `name` (no
            /// allocation).
            #[inline]
            pub(crate) fn by(name: &SharedName) -> Self {
                $ty { name: name.clone() }
            }

            /// The refusing instance's name.
            #[inline]
            pub fn name(&self) -> &str {
                self.name.as_str()
            }
        }

        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, $fmt, self.name)
            }
        }

        impl fmt::Debug for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.debug_struct(stringify!($ty)).field("name", &self.name.as_str()).finish()
            }
        }

        rejection!($ty => $ty);
    };
}

named_rejection!(
    /// A bulkhead had no free slot (and none came free within its `max_wait_duration`).
    BulkheadFull,
    "bulkhead '{}' is full and does not permit further calls"
);
named_rejection!(
    /// A rate limiter had no permission for this call within its `timeout_duration`.
    RequestNotPermitted,
    "rate limiter '{}' does not permit further calls"
);
named_rejection!(
    /// A retry wanted another attempt, but the retry budget it draws on was spent.
    RetryBudgetExhausted,
    "retry '{}' did not retry: its retry budget is exhausted"
);
named_rejection!(
    /// A retry configured with `fail_after_max_attempts` ran out of attempts
    /// while the call's result was still one its `retry_on_result` retries.
    MaxRetriesExceeded,
    "retry '{}' gave up: the result was still unacceptable after the last attempt"
);

/// A time limiter stopped waiting for the call after its `timeout_duration`.
///
/// Only the *waiting* stopped: whatever the call already sent may still take
/// effect remotely.
#[derive(Clone, PartialEq, Eq)]
pub struct Timeout {
    /// Built once per time limiter (its timeout is fixed for the instance's
    /// life), so a timeout clones a pointer and the refusal stays thin.
    inner: Arc<(SharedName, Duration)>,
}

impl Timeout {
    /// A timeout by time limiter `name` after waiting `after`.
    pub fn new(name: impl Into<Arc<str>>, after: Duration) -> Self {
        Timeout {
            inner: Arc::new((SharedName::new(name), after)),
        }
    }

    /// The timeout a time limiter hands out each time it gives up: built
    /// once, cloned per timeout.
    pub(crate) fn by(name: &SharedName, after: Duration) -> Self {
        Timeout {
            inner: Arc::new((name.clone(), after)),
        }
    }

    /// The time limiter's name.
    #[inline]
    pub fn name(&self) -> &str {
        self.inner.0.as_str()
    }

    /// How long the limiter waited before giving up.
    #[inline]
    pub fn after(&self) -> Duration {
        self.inner.1
    }
}

impl fmt::Display for Timeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "time limiter '{}' timed out after {:?}",
            self.name(),
            self.after()
        )
    }
}

impl fmt::Debug for Timeout {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Timeout")
            .field("name", &self.name())
            .field("after", &self.after())
            .finish()
    }
}

rejection!(Timeout => Timeout);

/// The task's end-to-end deadline left no time for the work.
///
/// Returned by [`crate::deadline::within`] when the budget runs out (no instance
/// name), and by a primitive that declined to start an attempt, a backoff or a
/// wait that could not finish in the remaining budget (with its name).
#[derive(Clone, PartialEq, Eq)]
pub struct DeadlineExceeded {
    name: Option<SharedName>,
}

impl DeadlineExceeded {
    /// The deadline itself ran out while the work was in progress.
    pub fn new() -> Self {
        DeadlineExceeded { name: None }
    }

    /// Instance `name` declined work that could not finish before the deadline.
    pub fn by(name: impl Into<Arc<str>>) -> Self {
        Self::by_shared(&SharedName::new(name))
    }

    /// Declined by the instance whose shared name is `name` (no allocation).
    #[inline]
    pub(crate) fn by_shared(name: &SharedName) -> Self {
        DeadlineExceeded {
            name: Some(name.clone()),
        }
    }

    /// The instance that declined, if the refusal came from one.
    #[inline]
    pub fn name(&self) -> Option<&str> {
        self.name.as_ref().map(SharedName::as_str)
    }
}

impl Default for DeadlineExceeded {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for DeadlineExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            None => f.write_str("deadline exceeded: the end-to-end budget is spent"),
            Some(name) => write!(
                f,
                "deadline exceeded: '{name}' cannot finish within the remaining end-to-end budget"
            ),
        }
    }
}

impl fmt::Debug for DeadlineExceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeadlineExceeded")
            .field("name", &self.name())
            .finish()
    }
}

rejection!(DeadlineExceeded => DeadlineExceeded);

/// An adaptive client-side throttler shed the call locally: its downstream
/// has been refusing calls (the SRE book's client-side throttling), so the
/// call was refused with the probability the throttler's window gave,
/// before it left the process.
///
/// Unlike [`RequestNotPermitted`] (a rate limiter's own quota is spent), this
/// says the *downstream* is overloaded: a fallback or an HTTP layer can tell
/// the two apart. [`probability`](Self::probability) is the rejection
/// probability the decision used, to the nearest percent (a throttler builds
/// one refusal per percent, lazily, so refusing never allocates).
///
/// ```
/// use resil_core::error::Throttled;
/// use resil_core::{Error, ErrorKind};
///
/// let err: Error<std::io::Error> = Throttled::new("search", 0.734).into();
/// assert_eq!(err.kind(), ErrorKind::Throttled);
/// assert_eq!(err.name(), Some("search"));
/// assert_eq!(
///     err.to_string(),
///     "throttler 'search' shed the call locally (rejection probability 73 %): its downstream keeps refusing"
/// );
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Throttled {
    /// Built once per throttler and percent, so a refusal clones a pointer
    /// and stays thin (see [`SharedName`]).
    inner: Arc<(SharedName, u8)>,
}

impl Throttled {
    /// A refusal by throttler `name` that used rejection `probability`
    /// (clamped to `[0, 1]` and kept to the nearest percent; NaN is 0).
    pub fn new(name: impl Into<Arc<str>>, probability: f64) -> Self {
        Self::by(&SharedName::new(name), Self::percent_of(probability))
    }

    /// `probability` as a whole percent in `0..=100` (NaN is 0).
    #[inline]
    pub(crate) fn percent_of(probability: f64) -> u8 {
        if probability.is_nan() {
            return 0;
        }
        (probability.clamp(0.0, 1.0) * 100.0).round() as u8
    }

    /// The refusal a throttler whose shared name is `name` hands out at
    /// `percent`: built once, cloned per refusal.
    pub(crate) fn by(name: &SharedName, percent: u8) -> Self {
        Throttled {
            inner: Arc::new((name.clone(), percent.min(100))),
        }
    }

    /// The throttler's name.
    #[inline]
    pub fn name(&self) -> &str {
        self.inner.0.as_str()
    }

    /// The rejection probability the decision used, in `[0, 1]`, to the
    /// nearest percent.
    #[inline]
    pub fn probability(&self) -> f64 {
        f64::from(self.inner.1) / 100.0
    }
}

impl fmt::Display for Throttled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "throttler '{}' shed the call locally (rejection probability {} %): its downstream keeps refusing",
            self.name(),
            self.inner.1
        )
    }
}

impl fmt::Debug for Throttled {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Throttled")
            .field("name", &self.name())
            .field("probability", &self.probability())
            .finish()
    }
}

rejection!(Throttled => Throttled);

/// An invalid configuration value, naming the field, the value given and what is
/// allowed.
///
/// Returned by every config builder's `build()`, and by the registry when it
/// reads a config file (there the field is the full key path).
///
/// ```
/// use resil_core::ConfigError;
///
/// let err = ConfigError::new("failure_rate_threshold", "0", "a percentage in (0, 100]");
/// assert_eq!(
///     err.to_string(),
///     "invalid `failure_rate_threshold`: got 0, expected a percentage in (0, 100]"
/// );
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct ConfigError {
    field: Cow<'static, str>,
    got: String,
    expected: Cow<'static, str>,
}

impl ConfigError {
    /// `field` was given `got`, but only `expected` is allowed.
    pub fn new(
        field: impl Into<Cow<'static, str>>,
        got: impl fmt::Display,
        expected: impl Into<Cow<'static, str>>,
    ) -> Self {
        ConfigError {
            field: field.into(),
            got: got.to_string(),
            expected: expected.into(),
        }
    }

    /// The field (or key path) that holds the invalid value.
    pub fn field(&self) -> &str {
        &self.field
    }

    /// The rejected value, as given.
    pub fn got(&self) -> &str {
        &self.got
    }

    /// What the field allows.
    pub fn expected(&self) -> &str {
        &self.expected
    }

    /// Prefixes the field with a path, e.g. a config file's key path:
    /// `circuit_breaker.instances.inventory` + `sliding_window_size`.
    pub fn in_path(mut self, path: &str) -> Self {
        if !path.is_empty() {
            self.field = Cow::Owned(format!("{path}.{}", self.field));
        }
        self
    }
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid `{}`: got {}, expected {}",
            self.field, self.got, self.expected
        )
    }
}

impl fmt::Debug for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConfigError")
            .field("field", &&*self.field)
            .field("got", &self.got)
            .field("expected", &&*self.expected)
            .finish()
    }
}

impl std::error::Error for ConfigError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn look_inside_sees_the_call_error_and_the_refusal_four_levels_deep() {
        type E1 = Error<u32>;
        let call: Error<Error<Error<E1>>> = Error::Call(Error::Call(Error::Call(Error::Call(7))));
        let (inner, refusal) = look_inside::<u32>(&call).unwrap();
        assert_eq!((inner.downcast_ref::<u32>(), refusal), (Some(&7), None));

        let full: Error<Error<E1>> =
            Error::Call(Error::Call(Error::BulkheadFull(BulkheadFull::new("b"))));
        let (inner, refusal) = look_inside::<u32>(&full).unwrap();
        assert!(inner.downcast_ref::<BulkheadFull>().is_some());
        assert_eq!(refusal, Some(ErrorKind::BulkheadFull));

        // A refusal by an outer level, around the inner ones.
        let outer: Error<E1> = Error::Timeout(Timeout::new("t", Duration::from_secs(1)));
        assert_eq!(
            look_inside::<u32>(&outer).unwrap().1,
            Some(ErrorKind::Timeout)
        );

        assert!(look_inside::<u32>(&7u32).is_none(), "not a resil error");
        assert!(
            look_inside::<u64>(&call).is_none(),
            "another call error type"
        );
    }

    #[derive(Debug, PartialEq)]
    struct Boom;

    impl fmt::Display for Boom {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("boom")
        }
    }

    #[test]
    fn every_variant_displays_a_stable_lowercase_message_naming_the_instance() {
        let cases: Vec<(Error<Boom>, &str, &str)> = vec![
            (Error::Call(Boom), "call", "boom"),
            (
                CallNotPermitted::new("inventory", State::Open).into(),
                "call_not_permitted",
                "circuit breaker 'inventory' is OPEN and does not permit further calls",
            ),
            (
                CallNotPermitted::new("inventory", State::ForcedOpen).into(),
                "call_not_permitted",
                "circuit breaker 'inventory' is FORCED_OPEN and does not permit further calls",
            ),
            (
                BulkheadFull::new("reports").into(),
                "bulkhead_full",
                "bulkhead 'reports' is full and does not permit further calls",
            ),
            (
                RequestNotPermitted::new("read").into(),
                "request_not_permitted",
                "rate limiter 'read' does not permit further calls",
            ),
            (
                Timeout::new("slow", Duration::from_millis(800)).into(),
                "timeout",
                "time limiter 'slow' timed out after 800ms",
            ),
            (
                RetryBudgetExhausted::new("inventory").into(),
                "retry_budget_exhausted",
                "retry 'inventory' did not retry: its retry budget is exhausted",
            ),
            (
                MaxRetriesExceeded::new("inventory").into(),
                "max_retries_exceeded",
                "retry 'inventory' gave up: the result was still unacceptable after the last attempt",
            ),
            (
                DeadlineExceeded::new().into(),
                "deadline_exceeded",
                "deadline exceeded: the end-to-end budget is spent",
            ),
            (
                DeadlineExceeded::by("inventory").into(),
                "deadline_exceeded",
                "deadline exceeded: 'inventory' cannot finish within the remaining end-to-end budget",
            ),
            (
                Throttled::new("search", 0.5).into(),
                "throttled",
                "throttler 'search' shed the call locally (rejection probability 50 %): its downstream keeps refusing",
            ),
        ];
        for (err, kind, display) in cases {
            assert_eq!(err.kind(), kind);
            assert_eq!(err.kind().to_string(), kind);
            assert_eq!(err.to_string(), display);
            assert_eq!(err.is_rejection(), kind != "call");
        }
    }

    #[test]
    fn debug_formats_are_pinned() {
        let err: Error<Boom> = CallNotPermitted::new("inventory", State::HalfOpen).into();
        assert_eq!(
            format!("{err:?}"),
            "CallNotPermitted(CallNotPermitted { name: \"inventory\", state: HalfOpen })"
        );
        let err: Error<Boom> = Error::Call(Boom);
        assert_eq!(format!("{err:?}"), "Call(Boom)");
        let err: Error<Boom> = Timeout::new("t", Duration::from_secs(1)).into();
        assert_eq!(
            format!("{err:?}"),
            "Timeout(Timeout { name: \"t\", after: 1s })"
        );
        let err: Error<Boom> = DeadlineExceeded::new().into();
        assert_eq!(
            format!("{err:?}"),
            "DeadlineExceeded(DeadlineExceeded { name: None })"
        );
        let err: Error<Boom> = BulkheadFull::new("b").into();
        assert_eq!(
            format!("{err:?}"),
            "BulkheadFull(BulkheadFull { name: \"b\" })"
        );
        let err: Error<Boom> = Throttled::new("t", 0.254).into();
        assert_eq!(
            format!("{err:?}"),
            "Throttled(Throttled { name: \"t\", probability: 0.25 })"
        );
    }

    #[test]
    fn a_throttled_refusal_keeps_its_probability_to_the_percent_and_clamps_nonsense() {
        assert_eq!(Throttled::new("t", 0.734).probability(), 0.73);
        assert_eq!(Throttled::new("t", 0.736).probability(), 0.74);
        assert_eq!(Throttled::new("t", 7.0).probability(), 1.0);
        assert_eq!(Throttled::new("t", -1.0).probability(), 0.0);
        assert_eq!(Throttled::new("t", f64::NAN).probability(), 0.0);
        let err: Error<()> = Throttled::new("t", 0.5).into();
        assert_ne!(err.kind(), ErrorKind::RequestNotPermitted);
    }

    #[test]
    fn rejections_carry_the_instance_name_and_calls_carry_none() {
        let err: Error<Boom> = RequestNotPermitted::new("read").into();
        assert_eq!(err.name(), Some("read"));
        assert_eq!(Error::Call(Boom).name(), None);
        assert_eq!(Error::<Boom>::from(DeadlineExceeded::new()).name(), None);
    }

    #[test]
    fn map_call_and_flatten_keep_rejections() {
        let err: Error<Boom> = BulkheadFull::new("b").into();
        let mapped: Error<String> = err.map_call(|b| b.to_string());
        assert_eq!(mapped.kind(), ErrorKind::BulkheadFull);
        let nested: Error<Error<Boom>> = Error::Call(Error::Call(Boom));
        assert_eq!(nested.flatten(), Error::Call(Boom));
        let nested: Error<Error<Boom>> = Error::Call(Timeout::new("t", Duration::ZERO).into());
        assert_eq!(nested.flatten().kind(), ErrorKind::Timeout);
        assert_eq!(Error::Call(Boom).into_call(), Some(Boom));
    }

    #[test]
    fn config_errors_name_the_field_and_can_be_prefixed_with_a_key_path() {
        let err = ConfigError::new("sliding_window_size", 0, "an integer >= 1")
            .in_path("circuit_breaker.instances.inventory");
        assert_eq!(
            err.field(),
            "circuit_breaker.instances.inventory.sliding_window_size"
        );
        assert_eq!(
            err.to_string(),
            "invalid `circuit_breaker.instances.inventory.sliding_window_size`: got 0, expected an integer >= 1"
        );
    }

    #[test]
    fn a_value_and_a_small_error_come_back_in_two_registers() {
        use std::mem::size_of;
        // Every refusal is one thin pointer, so these stay 16 bytes: returned
        // in registers, not through memory, at each layer of a stack.
        assert_eq!(size_of::<Error<()>>(), 16);
        assert_eq!(size_of::<Result<u64, Error<()>>>(), 16);
        assert_eq!(size_of::<Result<u64, Error<std::io::Error>>>(), 16);
        assert_eq!(size_of::<Result<(), crate::Rejection>>(), 16);
    }
}
