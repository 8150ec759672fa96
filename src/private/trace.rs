//! The `resil.call` span around a protected call: made by the expansion
//! from the site's [`CallTrace`] (a `static`), entered while the stack runs
//! (on every poll of an async fn's stack), and given the call's outcome at
//! the end. One `tracing` callsite for every protected fn, at INFO: with no
//! subscriber interested a call pays `tracing`'s level check (one relaxed
//! load); nothing is recorded or allocated.
//!
//! Every operation on an enabled span runs out of line (`LeanSpan`), and
//! the outcome is read inline by value (its error's kind) before anything
//! is recorded (see [`outcome`]), so a disabled span leaves the protected
//! call's code as it was. An async call's future carries the span and
//! records the outcome as it completes.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use pin_project_lite::pin_project;

use resil_core::circuit_breaker::CircuitBreaker;
pub use resil_core::trace::LeanSpan;
use resil_core::trace::{info_enabled, refused_by, TARGET};
use resil_core::{Error, ErrorKind};
use resil_registry::Handle;
use tracing::field::Empty;
use tracing::Span;

/// What a call site's span says about its stack, written by the expansion.
#[derive(Debug)]
pub struct CallTrace {
    /// The instance name (the outermost aspect's, when they differ).
    pub instance: &'static str,
    /// The aspects applied, outermost first (`retry,circuit_breaker`).
    pub aspects: &'static str,
    /// `retry.name`.
    pub retry: Option<&'static str>,
    /// `hedging.name`.
    pub hedging: Option<&'static str>,
    /// `circuitbreaker.name`.
    pub circuit_breaker: Option<&'static str>,
    /// `ratelimiter.name`.
    pub rate_limiter: Option<&'static str>,
    /// `timelimiter.name`.
    pub time_limiter: Option<&'static str>,
    /// `bulkhead.name`.
    pub bulkhead: Option<&'static str>,
    /// `chaos.name`.
    pub chaos: Option<&'static str>,
    /// `throttler.name`.
    pub throttler: Option<&'static str>,
}

/// The call's span; with a breaker in the stack, its state as the call
/// begins (read only when the span is enabled).
#[inline(always)]
pub fn call_span(trace: &'static CallTrace, breaker: Option<&Handle<CircuitBreaker>>) -> LeanSpan {
    if info_enabled() {
        LeanSpan::new(enabled_call_span(trace, breaker))
    } else {
        LeanSpan::none()
    }
}

/// [`call_span`] past `tracing`'s level check: the callsite's interest
/// check, and the span when a subscriber wants it (out of line, so the
/// protected call's own code stays small enough to inline).
#[cold]
#[inline(never)]
fn enabled_call_span(trace: &'static CallTrace, breaker: Option<&Handle<CircuitBreaker>>) -> Span {
    let span = tracing::info_span!(
        target: TARGET,
        "resil.call",
        "resil.instance" = trace.instance,
        "resil.aspects" = trace.aspects,
        "retry.name" = trace.retry,
        "hedging.name" = trace.hedging,
        "circuitbreaker.name" = trace.circuit_breaker,
        "circuitbreaker.state" = Empty,
        "ratelimiter.name" = trace.rate_limiter,
        "ratelimiter.result" = Empty,
        "timelimiter.name" = trace.time_limiter,
        "timeout.occurred" = Empty,
        "bulkhead.name" = trace.bulkhead,
        "chaos.name" = trace.chaos,
        "throttler.name" = trace.throttler,
        "error.type" = Empty,
    );
    if let Some(breaker) = breaker {
        if !span.is_disabled() {
            span.record("circuitbreaker.state", breaker.get().state().as_str());
        }
    }
    span
}

/// Runs a sync stack inside the call's span, which then gets the outcome.
///
/// Whether there is a span is decided once, before the stack runs: when no
/// subscriber can want one, the stack runs as if untraced, with no span code
/// around it (a `None` span tested around the stack still cost 1.8 ns a call
/// in `benches/tracing.rs`); otherwise the traced run is out of line.
#[inline(always)]
pub fn traced_call<T, E>(
    trace: &'static CallTrace,
    breaker: Option<&Handle<CircuitBreaker>>,
    stack: impl FnOnce() -> Result<T, Error<E>>,
) -> Result<T, Error<E>> {
    if info_enabled() {
        traced_call_spanned(trace, breaker, stack)
    } else {
        stack()
    }
}

/// [`traced_call`] when a subscriber may want the span.
#[inline(never)]
fn traced_call_spanned<T, E>(
    trace: &'static CallTrace,
    breaker: Option<&Handle<CircuitBreaker>>,
    stack: impl FnOnce() -> Result<T, Error<E>>,
) -> Result<T, Error<E>> {
    let span = LeanSpan::new(enabled_call_span(trace, breaker));
    let out = span.in_scope(stack);
    if !span.is_disabled() {
        ended::<E>(span.span(), trace, breaker, outcome(&out));
    }
    out
}

/// What the span records of an outcome, read inline by value: the error's
/// kind, if any. (The outcome itself is never handed to a function that is
/// not inlined: a reference to it, even one taken only when the span is
/// enabled, keeps it in memory on every call, and reading it back stalled
/// on store forwarding, 10 ns a call in `benches/tracing.rs`. So a call's
/// own error is labelled by its type's path here; the label of its value,
/// a status or `connect`, is on the attempts' spans and the tower layer's.)
#[inline(always)]
fn outcome<T, E>(out: &Result<T, Error<E>>) -> Option<ErrorKind> {
    match out {
        Ok(_) => None,
        Err(e) => Some(e.kind()),
    }
}

pin_project! {
    /// An async stack polled inside its call's span, which gets the outcome
    /// as the stack completes.
    #[must_use = "futures do nothing unless polled"]
    pub struct Traced<'b, F> {
        span: LeanSpan,
        trace: &'static CallTrace,
        breaker: Option<&'b Handle<CircuitBreaker>>,
        #[pin]
        fut: F,
    }
}

/// Whether a call may get a span at all (`tracing`'s level check): the
/// expansion of an async fn asks before it makes the stack's future, and
/// wraps it in [`traced_async`] only then.
#[inline(always)]
pub fn call_spans_enabled() -> bool {
    info_enabled()
}

/// The closure that makes an async fn's stack, as given: an argument
/// position, where a closure may carry `#[inline(always)]` (on a `let`, an
/// attribute on an expression is not stable Rust), and where it is expected
/// to be `FnOnce`, so that the future it returns may hold what it captured
/// by reference (`&mut self` included).
#[inline(always)]
pub fn stack<F: FnOnce() -> R, R>(make: F) -> F {
    make
}

/// An async stack inside the call's span (see [`traced_call`]), boxed.
///
/// The expansion awaits either this or the stack's future bare, in two
/// branches of the fn's own future. Held inline, the traced branch would
/// lay out a second copy of the stack's state beside the bare one, and the
/// fn's future, larger and moved as a whole, cost 6.7 ns a call more with
/// no subscriber (`benches/tracing.rs`); behind a box the branch holds a
/// pointer and the untraced call costs 1.5 ns more than the bare stack.
/// The box is made only when `tracing`'s level check lets INFO through: one
/// allocation per call, beside the span's own recording, while spans are
/// on.
#[inline]
pub fn traced_async<'b, F>(
    trace: &'static CallTrace,
    breaker: Option<&'b Handle<CircuitBreaker>>,
    fut: F,
) -> Pin<Box<Traced<'b, F>>> {
    Box::pin(Traced {
        span: call_span(trace, breaker),
        trace,
        breaker,
        fut,
    })
}

impl<F, T, E> Future for Traced<'_, F>
where
    F: Future<Output = Result<T, Error<E>>>,
{
    type Output = Result<T, Error<E>>;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.project();
        let out = ready!(this.span.in_scope(|| this.fut.poll(cx)));
        if !this.span.is_disabled() {
            ended::<E>(this.span.span(), this.trace, *this.breaker, outcome(&out));
        }
        Poll::Ready(out)
    }
}

/// Gives the span the call's outcome: `error.type`, `ratelimiter.result`,
/// `timeout.occurred`, and the refusal event when no retry or hedge inside
/// already put it on an attempt's span.
#[cold]
#[inline(never)]
fn ended<E>(
    span: &Span,
    trace: &'static CallTrace,
    breaker: Option<&Handle<CircuitBreaker>>,
    kind: Option<ErrorKind>,
) {
    if trace.rate_limiter.is_some() {
        let limited = kind == Some(ErrorKind::RequestNotPermitted);
        span.record(
            "ratelimiter.result",
            if limited { "rejected" } else { "permitted" },
        );
    }
    if trace.time_limiter.is_some() {
        span.record("timeout.occurred", kind == Some(ErrorKind::Timeout));
    }
    let Some(kind) = kind else { return };
    let label = match kind {
        ErrorKind::Call => std::any::type_name::<E>(),
        refusal => refusal.as_str(),
    };
    span.record("error.type", label);
    // A retry or a hedge put an attempt's refusal on the attempt's span;
    // what is left for the call's is the retry's own.
    let attempts = trace.retry.is_some() || trace.hedging.is_some();
    let own = matches!(
        kind,
        ErrorKind::RetryBudgetExhausted
            | ErrorKind::MaxRetriesExceeded
            | ErrorKind::DeadlineExceeded
    );
    if kind.is_rejection() && (!attempts || own) {
        let (name, state) = match kind {
            ErrorKind::CallNotPermitted => {
                (trace.circuit_breaker, breaker.map(|b| b.get().state()))
            }
            ErrorKind::BulkheadFull => (trace.bulkhead, None),
            ErrorKind::RequestNotPermitted => (trace.rate_limiter, None),
            ErrorKind::Timeout => (trace.time_limiter, None),
            ErrorKind::Throttled => (trace.throttler, None),
            _ => (trace.retry.or(trace.hedging), None),
        };
        span.in_scope(|| refused_by(kind, name.unwrap_or(trace.instance), state));
    }
}
