//! The layer's `resil.call` span, as the attribute macros make theirs: one
//! per request, entered on every poll of its response future, given the
//! outcome at the end. At INFO on the `resil` target; with no subscriber
//! interested, one relaxed load and a disabled span carried in the future
//! (nothing recorded, nothing allocated).

use std::fmt;

use resil_core::trace::{error_type, info_enabled, refused, LeanSpan, TARGET};
use resil_core::{Error, ErrorKind};
use resil_options::Aspect;
use tracing::field::Empty;
use tracing::Span;

use super::classify::Classify;
use super::layer::ResilienceLayer;
use super::shared::Shared;

/// The layer's aspects, outermost first, comma-separated (written only for
/// an enabled span).
struct Aspects<'a, C, R>(&'a Shared<C, R>);

impl<C, R> fmt::Display for Aspects<'_, C, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut first = true;
        for aspect in ResilienceLayer::ORDER {
            if self.0.applies(aspect) {
                if !first {
                    f.write_str(",")?;
                }
                f.write_str(aspect.name())?;
                first = false;
            }
        }
        Ok(())
    }
}

/// The request's span, with the breaker's state as it begins.
#[inline(always)]
pub(crate) fn call_span<C, R>(shared: &'static Shared<C, R>) -> LeanSpan {
    if info_enabled() {
        LeanSpan::new(enabled_call_span(shared))
    } else {
        LeanSpan::none()
    }
}

/// [`call_span`] past `tracing`'s level check (out of line: the request's
/// path stays small).
#[cold]
#[inline(never)]
fn enabled_call_span<C, R>(shared: &'static Shared<C, R>) -> Span {
    let name = |aspect: Aspect| shared.applies(aspect).then_some(shared.name.as_str());
    let span = tracing::info_span!(
        target: TARGET,
        "resil.call",
        "resil.instance" = shared.name.as_str(),
        "resil.aspects" = %Aspects(shared),
        "throttler.name" = name(Aspect::Throttler),
        "circuitbreaker.name" = name(Aspect::CircuitBreaker),
        "circuitbreaker.state" = Empty,
        "ratelimiter.name" = name(Aspect::RateLimiter),
        "ratelimiter.result" = Empty,
        "timelimiter.name" = name(Aspect::TimeLimiter),
        "timeout.occurred" = Empty,
        "bulkhead.name" = name(Aspect::Bulkhead),
        "error.type" = Empty,
    );
    if let Some(breaker) = &shared.breaker {
        if !span.is_disabled() {
            span.record("circuitbreaker.state", breaker.get().state().as_str());
        }
    }
    span
}

/// A response went out: `error.type` when the classifier does not count it
/// a success (the HTTP status for [`HttpClassifier`](crate::http::HttpClassifier)).
/// The response passes through by value (see `ended`).
#[cold]
#[inline(never)]
pub(crate) fn responded<Res, E, C: Classify<Res, E>, R>(
    span: &Span,
    shared: &'static Shared<C, R>,
    response: Res,
) -> Res {
    limits(span, shared, None);
    shared.classify.error_type(&response, &mut |l| {
        span.record("error.type", l);
    });
    response
}

/// The request ended without a response from the inner service's future,
/// or with its error: `error.type`, and the refusal event. The outcome
/// passes through by value: a reference taken even only here would keep it
/// in memory on every request.
#[cold]
#[inline(never)]
pub(crate) fn ended<Res, E: 'static, C, R>(
    span: &Span,
    shared: &'static Shared<C, R>,
    out: Result<Res, Error<E>>,
) -> Result<Res, Error<E>> {
    let Err(error) = &out else {
        limits(span, shared, None);
        return out;
    };
    limits(span, shared, Some(error.kind()));
    error_type(error, |l| {
        span.record("error.type", l);
    });
    span.in_scope(|| refused(error));
    out
}

/// `ratelimiter.result` and `timeout.occurred`, for the layer's aspects.
fn limits<C, R>(span: &Span, shared: &Shared<C, R>, kind: Option<ErrorKind>) {
    if shared.limiter.is_some() {
        let limited = kind == Some(ErrorKind::RequestNotPermitted);
        span.record(
            "ratelimiter.result",
            if limited { "rejected" } else { "permitted" },
        );
    }
    if shared.time_limiter.is_some() {
        span.record("timeout.occurred", kind == Some(ErrorKind::Timeout));
    }
}
