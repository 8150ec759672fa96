//! How the layer's breaker records a response or an error.

use resil_core::circuit_breaker::{Outcome, ResultTransition};

/// What a [`Classify`] decided about one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Leave it to the breaker's own predicates (`record_result`,
    /// `ignore_error`, `transition_on_result`, …), as `call_async` does.
    Predicates,
    /// Record this outcome, then apply this transition (open for a
    /// `Retry-After`, or stay).
    Record(Outcome, ResultTransition),
}

impl Verdict {
    /// A success, no transition.
    pub const SUCCESS: Verdict = Verdict::Record(Outcome::Success, ResultTransition::Stay);
    /// A failure, no transition.
    pub const FAILURE: Verdict = Verdict::Record(Outcome::Failure, ResultTransition::Stay);
    /// Ignored: neither success nor failure.
    pub const IGNORED: Verdict = Verdict::Record(Outcome::Ignored, ResultTransition::Stay);
}

/// Classifies a service's responses and errors for the layer's breaker.
///
/// Refusals of the aspects inside the breaker (a full bulkhead, a timeout)
/// never reach a classifier: they are recorded as with the attributes, by the
/// breaker's predicates for the rejection's type, failures by default.
pub trait Classify<Res, E>: Send + Sync + 'static {
    /// The verdict on a response.
    fn classify_response(&self, response: &Res) -> Verdict;
    /// The verdict on the inner service's error.
    fn classify_error(&self, error: &E) -> Verdict;

    /// The `error.type` of a response, for the request's `resil.call` span:
    /// hands `label` a short label (an HTTP status code, `503`) for a
    /// response that is not a success; the default labels none. Called only
    /// when the span is enabled.
    fn error_type(&self, response: &Res, label: &mut dyn FnMut(&str)) {
        let _ = (response, label);
    }

    /// For the layer's throttler: whether the downstream *refused* this
    /// response (`Some(true)`: an HTTP 429 or 503), accepted it
    /// (`Some(false)`), or `None` (the default) to leave it to the
    /// throttler's own `refuse_result` predicates. An inner error is a
    /// refusal unless the throttler's `accept_error` says otherwise.
    fn refused(&self, response: &Res) -> Option<bool> {
        let _ = response;
        None
    }
}

/// The breaker's own predicates decide, written for the service's response
/// and error types (the default).
#[derive(Debug, Clone, Copy, Default)]
pub struct BreakerPredicates;

impl<Res, E> Classify<Res, E> for BreakerPredicates {
    #[inline]
    fn classify_response(&self, _: &Res) -> Verdict {
        Verdict::Predicates
    }

    #[inline]
    fn classify_error(&self, _: &E) -> Verdict {
        Verdict::Predicates
    }
}
