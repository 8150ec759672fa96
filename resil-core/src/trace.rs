//! What resil tells [`tracing`]: a span per attempt of a retry or a hedge, a
//! span event per refusal, and the `error.type` label of a failure, with
//! attribute names in the style of OpenTelemetry's draft resilience
//! conventions (`retry.attempt`, `circuitbreaker.name`,
//! `circuitbreaker.state`, `ratelimiter.result`, `timeout.occurred`,
//! `error.type`).
//!
//! The spans are plain `tracing` spans, always compiled in. Each is built
//! by a `tracing` macro at a fixed level, so with no subscriber interested
//! it costs the macro's static interest check (one relaxed load) and
//! allocates nothing; what a span records is computed only when the span is
//! enabled.
//!
//! | span or event | level | fields |
//! |---|---|---|
//! | `resil.attempt` (span; one per retry attempt) | INFO | `retry.name`, `retry.attempt` (1-based), `error.type` when the attempt failed |
//! | `resil.attempt` (span; one per hedged attempt) | INFO | `hedging.name`, `hedging.attempt` (1 = the primary), `hedging.primary`, `error.type` when the attempt failed |
//! | refusal (event in the current span) | DEBUG | `error.type`, and the refusing instance: `circuitbreaker.name` + `circuitbreaker.state`, `bulkhead.name`, `ratelimiter.name` + `ratelimiter.result = "rejected"`, `timelimiter.name` + `timeout.occurred = true`, `retry.name`, `throttler.name` |
//!
//! The `resil.call` span around a whole protected call is made by the
//! attribute macros' expansion (the `resil` facade) and the tower layer
//! (`resil-web`); they use [`LeanSpan`], [`error_type`], [`refused`] and
//! [`refused_by`] from here.
//!
//! # `error.type`
//!
//! One low-cardinality label per failure, so a trace tells apart:
//!
//! * a refusal: the [`ErrorKind`] label (`call_not_permitted`,
//!   `bulkhead_full`, `request_not_permitted`, `timeout`,
//!   `retry_budget_exhausted`, `max_retries_exceeded`, `deadline_exceeded`,
//!   `throttled`);
//! * the call's own error, by its type: the name an error type registered
//!   with [`register_error_type`] gives the value (resil-web registers its
//!   `HttpError`: the status code such as `503`, or `connect` / `timeout` /
//!   `transport`; the registry registers every `ErrorClass` type: its class
//!   name), else for a [`std::io::Error`] `connect` (refused, unreachable)
//!   or `timeout` (timed out), else the error type's Rust path (as
//!   OpenTelemetry asks for an exception: its fully-qualified type name).

use std::any::{Any, TypeId};
use std::future::Future;
use std::pin::Pin;
use std::sync::RwLock;
use std::task::{Context, Poll};

use pin_project_lite::pin_project;
use tracing::Span;

use crate::circuit_breaker::State;
use crate::error::{
    BulkheadFull, CallNotPermitted, DeadlineExceeded, Error, ErrorKind, MaxRetriesExceeded,
    RequestNotPermitted, RetryBudgetExhausted, Throttled, Timeout,
};

/// The `tracing` target of every span and event resil makes: filter it as
/// a whole (`resil=warn` turns the spans off, `resil=debug` adds the
/// refusal events).
pub const TARGET: &str = "resil";

/// Names one error value for `error.type`, through its callback (so a
/// status code needs no allocation).
type Namer = Box<dyn Fn(&dyn Any, &mut dyn FnMut(&str)) + Send + Sync>;

/// What [`register_error_type`] is given for an error type `E`: hands a
/// value's label to the callback.
pub type NameError<E> = fn(&E, &mut dyn FnMut(&str));

/// The namers [`register_error_type`] installed, by error type. Read only
/// when an enabled span records a failure.
static NAMERS: RwLock<Vec<(TypeId, Namer)>> = RwLock::new(Vec::new());

/// Gives the call errors of type `E` their `error.type` label: `name` is
/// handed a value and calls its callback with the label (a status code,
/// `connect`, a class name). A second registration for `E` replaces the
/// first.
///
/// ```
/// use resil_core::trace::{error_type_of, register_error_type};
///
/// enum PriceError { Unreachable, Rejected(u16) }
/// register_error_type::<PriceError>(|e, label| match e {
///     PriceError::Unreachable => label("connect"),
///     PriceError::Rejected(code) => label(&code.to_string()),
/// });
/// let mut seen = String::new();
/// error_type_of(&PriceError::Rejected(503), |l| seen = l.to_owned());
/// assert_eq!(seen, "503");
/// ```
pub fn register_error_type<E: 'static>(name: NameError<E>) {
    let erased: Namer = Box::new(move |any, label| {
        if let Some(error) = any.downcast_ref::<E>() {
            name(error, label);
        }
    });
    let mut namers = NAMERS
        .write()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let id = TypeId::of::<E>();
    match namers.iter_mut().find(|(t, _)| *t == id) {
        Some(slot) => slot.1 = erased,
        None => namers.push((id, erased)),
    }
}

/// Hands `label` the `error.type` of a call's own error (see the
/// [module docs](self)).
pub fn error_type_of<E: 'static>(error: &E, label: impl FnOnce(&str)) {
    call_error_type(error, std::any::type_name::<E>(), label);
}

/// Hands `label` the `error.type` of a protected call's error: the kind of a
/// refusal, the call's own error by its type.
pub fn error_type<E: 'static>(error: &Error<E>, label: impl FnOnce(&str)) {
    match error {
        Error::Call(e) => error_type_of(e, label),
        refusal => label(refusal.kind().as_str()),
    }
}

/// [`error_type_of`] for an error seen as `&dyn Any`, with its type's name.
pub(crate) fn call_error_type(error: &dyn Any, type_name: &'static str, label: impl FnOnce(&str)) {
    let mut label = Some(label);
    {
        let namers = NAMERS
            .read()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let id = error.type_id();
        if let Some((_, namer)) = namers.iter().find(|(t, _)| *t == id) {
            namer(error, &mut |l| {
                if let Some(f) = label.take() {
                    f(l)
                }
            });
        }
    }
    let Some(label) = label else { return };
    match error.downcast_ref::<std::io::Error>() {
        Some(io) => label(io_error_type(io).unwrap_or(type_name)),
        None => label(type_name),
    }
}

/// `connect` or `timeout` for an I/O error that is one.
pub fn io_error_type(error: &std::io::Error) -> Option<&'static str> {
    use std::io::ErrorKind as K;
    match error.kind() {
        K::ConnectionRefused | K::AddrNotAvailable | K::NotConnected => Some("connect"),
        K::TimedOut => Some("timeout"),
        _ => None,
    }
}

/// Emits the refusal span event (DEBUG, in the current span) for a
/// protected call's error; nothing for the call's own error.
#[inline]
pub fn refused<E>(error: &Error<E>) {
    let fields = match error {
        Error::Call(_) => return,
        Error::CallNotPermitted(r) => Refusal::breaker(r),
        Error::BulkheadFull(r) => Refusal::new(ErrorKind::BulkheadFull, r.name()),
        Error::RequestNotPermitted(r) => Refusal::new(ErrorKind::RequestNotPermitted, r.name()),
        Error::Timeout(r) => Refusal::new(ErrorKind::Timeout, r.name()),
        Error::RetryBudgetExhausted(r) => Refusal::new(ErrorKind::RetryBudgetExhausted, r.name()),
        Error::MaxRetriesExceeded(r) => Refusal::new(ErrorKind::MaxRetriesExceeded, r.name()),
        Error::DeadlineExceeded(r) => {
            Refusal::new(ErrorKind::DeadlineExceeded, r.name().unwrap_or(""))
        }
        Error::Throttled(r) => Refusal::new(ErrorKind::Throttled, r.name()),
    };
    fields.emit();
}

/// [`refused`] for a refusal known by its kind, the refusing instance's
/// name and (for a breaker) its state.
#[inline]
pub fn refused_by(kind: ErrorKind, name: &str, state: Option<State>) {
    if kind.is_rejection() {
        Refusal { kind, name, state }.emit();
    }
}

/// [`refused`] for a rejection seen as the retry's classification does: its
/// kind and its own struct.
pub(crate) fn refused_as(kind: ErrorKind, rejection: &dyn Any) {
    let fields = if let Some(r) = rejection.downcast_ref::<CallNotPermitted>() {
        Refusal::breaker(r)
    } else if let Some(r) = rejection.downcast_ref::<BulkheadFull>() {
        Refusal::new(kind, r.name())
    } else if let Some(r) = rejection.downcast_ref::<RequestNotPermitted>() {
        Refusal::new(kind, r.name())
    } else if let Some(r) = rejection.downcast_ref::<Timeout>() {
        Refusal::new(kind, r.name())
    } else if let Some(r) = rejection.downcast_ref::<RetryBudgetExhausted>() {
        Refusal::new(kind, r.name())
    } else if let Some(r) = rejection.downcast_ref::<MaxRetriesExceeded>() {
        Refusal::new(kind, r.name())
    } else if let Some(r) = rejection.downcast_ref::<DeadlineExceeded>() {
        Refusal::new(kind, r.name().unwrap_or(""))
    } else if let Some(r) = rejection.downcast_ref::<Throttled>() {
        Refusal::new(kind, r.name())
    } else {
        Refusal::new(kind, "")
    };
    fields.emit();
}

/// One refusal's event fields.
struct Refusal<'a> {
    kind: ErrorKind,
    name: &'a str,
    state: Option<State>,
}

impl<'a> Refusal<'a> {
    fn new(kind: ErrorKind, name: &'a str) -> Self {
        Refusal {
            kind,
            name,
            state: None,
        }
    }

    fn breaker(r: &'a CallNotPermitted) -> Self {
        Refusal {
            kind: ErrorKind::CallNotPermitted,
            name: r.name(),
            state: Some(r.state()),
        }
    }

    /// The event: the refusing instance's name under its kind's attribute.
    #[cold]
    #[inline(never)]
    fn emit(self) {
        let of = |k: ErrorKind| (self.kind == k).then_some(self.name);
        let limited = self.kind == ErrorKind::RequestNotPermitted;
        let timed_out = self.kind == ErrorKind::Timeout;
        let retry = matches!(
            self.kind,
            ErrorKind::RetryBudgetExhausted | ErrorKind::MaxRetriesExceeded
        );
        tracing::debug!(
            target: TARGET,
            {
            "error.type" = self.kind.as_str(),
            "circuitbreaker.name" = of(ErrorKind::CallNotPermitted),
            "circuitbreaker.state" = self.state.map(State::as_str),
            "bulkhead.name" = of(ErrorKind::BulkheadFull),
            "ratelimiter.name" = of(ErrorKind::RequestNotPermitted),
            "ratelimiter.result" = limited.then_some("rejected"),
            "timelimiter.name" = of(ErrorKind::Timeout),
            "timeout.occurred" = timed_out.then_some(true),
            "retry.name" = retry.then_some(self.name),
            "throttler.name" = of(ErrorKind::Throttled),
            },
            "{}",
            message(self.kind)
        );
    }
}

/// The refusal event's message (its name in OpenTelemetry).
fn message(kind: ErrorKind) -> &'static str {
    match kind {
        ErrorKind::CallNotPermitted => "call not permitted",
        ErrorKind::BulkheadFull => "bulkhead full",
        ErrorKind::RequestNotPermitted => "request not permitted",
        ErrorKind::Timeout => "timeout",
        ErrorKind::RetryBudgetExhausted => "retry budget exhausted",
        ErrorKind::MaxRetriesExceeded => "max retries exceeded",
        ErrorKind::DeadlineExceeded => "deadline exceeded",
        ErrorKind::Throttled => "throttled",
        ErrorKind::Call => "call failed",
    }
}

/// A span whose every operation, once the span is enabled, runs out of
/// line: with no subscriber interested, making, entering, leaving and
/// dropping it test a null pointer inline and nothing more, so it does not
/// grow the protected call's code or the futures that carry it (one word,
/// where a `tracing::Span` is five). (`tracing::Span`'s own `enter` and
/// `Drop` inline the subscriber's dynamic calls; around a stack that must
/// inline into its caller, that cost 10 ns a call, measured in
/// `benches/tracing.rs`.) An enabled span is boxed: a subscriber that wants
/// spans pays one allocation a span, a call without one pays nothing.
#[derive(Debug)]
pub struct LeanSpan(Option<Box<Span>>);

impl LeanSpan {
    /// A disabled span.
    #[inline(always)]
    pub fn none() -> Self {
        LeanSpan(None)
    }

    /// Wraps a span made by a `tracing` macro.
    #[inline(always)]
    pub fn new(span: Span) -> Self {
        if span.is_disabled() {
            LeanSpan(None)
        } else {
            LeanSpan(Some(Box::new(span)))
        }
    }

    /// Whether no subscriber wants it (then there is nothing to record).
    #[inline(always)]
    pub fn is_disabled(&self) -> bool {
        self.0.is_none()
    }

    /// The span, to record fields on (a disabled one when no subscriber
    /// wants it).
    #[inline(always)]
    pub fn span(&self) -> &Span {
        match &self.0 {
            Some(span) => span,
            None => disabled(),
        }
    }

    /// Enters the span until the guard drops.
    #[inline(always)]
    pub fn enter(&self) -> LeanEntered<'_> {
        if let Some(span) = &self.0 {
            enter_enabled(span);
        }
        LeanEntered(self.0.as_deref())
    }

    /// Runs `f` inside the span.
    #[inline(always)]
    pub fn in_scope<T>(&self, f: impl FnOnce() -> T) -> T {
        let _entered = self.enter();
        f()
    }
}

impl Drop for LeanSpan {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(span) = self.0.take() {
            close_enabled(span);
        }
    }
}

/// A disabled span, for [`LeanSpan::span`] on a disabled one.
#[cold]
fn disabled() -> &'static Span {
    static NONE: std::sync::OnceLock<Span> = std::sync::OnceLock::new();
    NONE.get_or_init(Span::none)
}

/// A [`LeanSpan`] entered; leaves it when dropped.
#[must_use = "the span is left when the guard drops"]
#[derive(Debug)]
pub struct LeanEntered<'a>(Option<&'a Span>);

impl Drop for LeanEntered<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        if let Some(span) = self.0 {
            exit_enabled(span);
        }
    }
}

#[cold]
#[inline(never)]
fn enter_enabled(span: &Span) {
    span.with_subscriber(|(id, dispatch)| dispatch.enter(id));
}

#[cold]
#[inline(never)]
fn exit_enabled(span: &Span) {
    span.with_subscriber(|(id, dispatch)| dispatch.exit(id));
}

#[cold]
#[inline(never)]
fn close_enabled(span: Box<Span>) {
    drop(span);
}

pin_project! {
    /// A future polled inside a span it borrows (the span outlives it, so
    /// whoever made it can record the outcome on it afterwards).
    #[must_use = "futures do nothing unless polled"]
    pub struct InSpan<'a, F> {
        span: &'a LeanSpan,
        #[pin]
        fut: F,
    }
}

/// Polls `fut` inside `span`: entered on every poll (for a disabled span, a
/// check of a `None`).
#[inline(always)]
pub fn in_span<F: Future>(span: &LeanSpan, fut: F) -> InSpan<'_, F> {
    InSpan { span, fut }
}

impl<F: Future> Future for InSpan<'_, F> {
    type Output = F::Output;

    #[inline(always)]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _entered = this.span.enter();
        this.fut.poll(cx)
    }
}

/// Whether an INFO span may be enabled at all: `tracing`'s own first check
/// (the static max level, then a relaxed load of the current one), made
/// inline so the span's construction, its callsite's interest check
/// included, stays out of line: built in place, the enabled branch of
/// `info_span!` made the retry loop too large to inline the stack into it
/// (measured: +10 ns a call with no subscriber).
#[inline(always)]
pub fn info_enabled() -> bool {
    use tracing::level_filters::{LevelFilter, STATIC_MAX_LEVEL};
    tracing::Level::INFO <= STATIC_MAX_LEVEL && tracing::Level::INFO <= LevelFilter::current()
}

/// The span of one retry attempt (a disabled one, made inline, when INFO is
/// off).
#[inline(always)]
pub(crate) fn retry_attempt(name: &str, attempt: u32) -> LeanSpan {
    if info_enabled() {
        LeanSpan::new(retry_attempt_span(name, attempt))
    } else {
        LeanSpan::none()
    }
}

#[cold]
#[inline(never)]
fn retry_attempt_span(name: &str, attempt: u32) -> tracing::Span {
    tracing::info_span!(
        target: TARGET,
        "resil.attempt",
        "retry.name" = name,
        "retry.attempt" = attempt,
        "error.type" = tracing::field::Empty,
    )
}

/// The span of one hedged attempt (1 = the primary).
#[inline(always)]
pub(crate) fn hedging_attempt(name: &str, attempt: u32) -> LeanSpan {
    if info_enabled() {
        LeanSpan::new(hedging_attempt_span(name, attempt))
    } else {
        LeanSpan::none()
    }
}

#[cold]
#[inline(never)]
fn hedging_attempt_span(name: &str, attempt: u32) -> tracing::Span {
    tracing::info_span!(
        target: TARGET,
        "resil.attempt",
        "hedging.name" = name,
        "hedging.attempt" = attempt,
        "hedging.primary" = attempt == 1,
        "error.type" = tracing::field::Empty,
    )
}

/// Records on an attempt's span that the call's own error failed it.
/// Only called for an enabled span.
#[cold]
#[inline(never)]
pub(crate) fn attempt_failed(span: &tracing::Span, error: &dyn Any, type_name: &'static str) {
    call_error_type(error, type_name, |l| {
        span.record("error.type", l);
    });
}

/// [`attempt_failed`] or [`attempt_refused`] for an error seen only as
/// `&dyn Any` (a hedged attempt's): a rejection's struct is a refusal.
#[cold]
#[inline(never)]
pub(crate) fn attempt_failed_any(span: &tracing::Span, error: &dyn Any, type_name: &'static str) {
    match rejection_kind(error) {
        Some(kind) => attempt_refused(span, kind, error),
        None => attempt_failed(span, error, type_name),
    }
}

/// The kind of a rejection's struct.
fn rejection_kind(error: &dyn Any) -> Option<ErrorKind> {
    Some(if error.is::<CallNotPermitted>() {
        ErrorKind::CallNotPermitted
    } else if error.is::<BulkheadFull>() {
        ErrorKind::BulkheadFull
    } else if error.is::<RequestNotPermitted>() {
        ErrorKind::RequestNotPermitted
    } else if error.is::<Timeout>() {
        ErrorKind::Timeout
    } else if error.is::<RetryBudgetExhausted>() {
        ErrorKind::RetryBudgetExhausted
    } else if error.is::<MaxRetriesExceeded>() {
        ErrorKind::MaxRetriesExceeded
    } else if error.is::<DeadlineExceeded>() {
        ErrorKind::DeadlineExceeded
    } else if error.is::<Throttled>() {
        ErrorKind::Throttled
    } else {
        return None;
    })
}

/// Records on an attempt's span that a primitive inside refused it, and
/// emits the refusal event in it. Only called for an enabled span.
#[cold]
#[inline(never)]
pub(crate) fn attempt_refused(span: &tracing::Span, kind: ErrorKind, rejection: &dyn Any) {
    span.record("error.type", kind.as_str());
    span.in_scope(|| refused_as(kind, rejection));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_labelled_by_its_kind_and_an_io_error_by_what_failed() {
        let mut seen = Vec::new();
        error_type::<std::io::Error>(&BulkheadFull::new("reports").into(), |l| {
            seen.push(l.to_owned())
        });
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        error_type(&Error::Call(refused), |l| seen.push(l.to_owned()));
        let timed_out = std::io::Error::from(std::io::ErrorKind::TimedOut);
        error_type_of(&timed_out, |l| seen.push(l.to_owned()));
        error_type_of(&std::fmt::Error, |l| seen.push(l.to_owned()));
        assert_eq!(
            seen,
            ["bulkhead_full", "connect", "timeout", "core::fmt::Error"]
        );
    }

    #[test]
    fn a_registered_error_type_names_its_values() {
        struct Status(u16);
        register_error_type::<Status>(|s, label| label(&s.0.to_string()));
        let mut seen = String::new();
        error_type(&Error::Call(Status(503)), |l| seen = l.to_owned());
        assert_eq!(seen, "503");
    }
}
