//! The `resil.call` span around a protected call: made by the expansion
//! from the site's [`CallTrace`] (a `static`), entered while the stack runs
//! (on every poll of an async fn's stack), and given the call's outcome at
//! the end. One `tracing` callsite for every protected fn, at INFO: with no
//! subscriber interested a call pays its interest check (one relaxed load)
//! and carries a disabled span; nothing is recorded or allocated.

use resil_core::circuit_breaker::CircuitBreaker;
pub use resil_core::trace::in_span;
use resil_core::trace::{error_type, refused, TARGET};
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
}

/// The call's span; with a breaker in the stack, its state as the call
/// begins (read only when the span is enabled).
#[inline(always)]
pub fn call_span(trace: &'static CallTrace, breaker: Option<&Handle<CircuitBreaker>>) -> Span {
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
        "error.type" = Empty,
    );
    if let Some(breaker) = breaker {
        if !span.is_disabled() {
            span.record("circuitbreaker.state", breaker.get().state().as_str());
        }
    }
    span
}

/// Gives the span the call's outcome: `error.type`, `ratelimiter.result`,
/// `timeout.occurred`, and the refusal event when no retry or hedge inside
/// already put it on an attempt's span.
#[inline(always)]
pub fn end_call<T, E: 'static>(span: &Span, trace: &'static CallTrace, out: &Result<T, Error<E>>) {
    if !span.is_disabled() {
        ended(span, trace, out, |error| {
            error_type(error, |l| {
                span.record("error.type", l);
            })
        });
    }
}

/// [`end_call`] for a stack whose error type may borrow (only bulkheads and
/// a time limiter): the call's own error is named by its type.
#[inline(always)]
pub fn end_call_borrowed<T, E>(span: &Span, trace: &'static CallTrace, out: &Result<T, Error<E>>) {
    if !span.is_disabled() {
        ended(span, trace, out, |error| match error {
            Error::Call(_) => {
                span.record("error.type", std::any::type_name::<E>());
            }
            refusal => {
                span.record("error.type", refusal.kind().as_str());
            }
        });
    }
}

#[cold]
#[inline(never)]
fn ended<T, E>(
    span: &Span,
    trace: &'static CallTrace,
    out: &Result<T, Error<E>>,
    name: impl FnOnce(&Error<E>),
) {
    let kind = out.as_ref().err().map(Error::kind);
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
    let Err(error) = out else { return };
    name(error);
    // A retry or a hedge put an attempt's refusal on the attempt's span;
    // what is left for the call's is the retry's own.
    let attempts = trace.retry.is_some() || trace.hedging.is_some();
    let own = matches!(
        error.kind(),
        ErrorKind::RetryBudgetExhausted
            | ErrorKind::MaxRetriesExceeded
            | ErrorKind::DeadlineExceeded
    );
    if !attempts || own {
        span.in_scope(|| refused(error));
    }
}
