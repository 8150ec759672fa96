//! What a bulkhead reports to its subscribers.

use std::fmt;

use crate::event::{Event, EventKind};

/// Something that happened to a call at a [`Bulkhead`](super::Bulkhead),
/// delivered to every stream from [`Bulkhead::subscribe`](super::Bulkhead::subscribe)
/// (Resilience4j's `BulkheadOnCallPermittedEvent`, `…RejectedEvent`,
/// `…FinishedEvent`).
pub type BulkheadEvent = Event<BulkheadEventKind>;

/// The kinds of [`BulkheadEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BulkheadEventKind {
    /// A call got a slot (at once or after waiting).
    CallPermitted,
    /// A call was refused: no slot came free within its wait
    /// (`BulkheadFull`), or within what was left of its deadline
    /// (`DeadlineExceeded`).
    CallRejected,
    /// A permitted call ended (success, error, panic or cancellation) and gave
    /// its slot back.
    CallFinished,
}

impl BulkheadEventKind {
    /// A short, stable label: `call_permitted`, `call_rejected`, `call_finished`.
    pub const fn as_str(self) -> &'static str {
        match self {
            BulkheadEventKind::CallPermitted => "call_permitted",
            BulkheadEventKind::CallRejected => "call_rejected",
            BulkheadEventKind::CallFinished => "call_finished",
        }
    }
}

impl fmt::Display for BulkheadEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl EventKind for BulkheadEventKind {
    type Detail = ();
    const EVENT: &'static str = "BulkheadEvent";
    const SOURCE: &'static str = "bulkhead";

    /// `CALL_PERMITTED`, `CALL_REJECTED`, `CALL_FINISHED`.
    fn label(&self) -> &'static str {
        match self {
            BulkheadEventKind::CallPermitted => "CALL_PERMITTED",
            BulkheadEventKind::CallRejected => "CALL_REJECTED",
            BulkheadEventKind::CallFinished => "CALL_FINISHED",
        }
    }

    /// Never: every bulkhead event is about one call.
    fn is_notable(&self) -> bool {
        false
    }

    fn fmt_line(&self, (): &(), f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ": {self}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_formats_are_pinned() {
        let e = BulkheadEvent::new("reports", BulkheadEventKind::CallRejected);
        assert_eq!(e.to_string(), "bulkhead 'reports': call_rejected");
        assert_eq!(
            format!("{e:?}"),
            "BulkheadEvent { name: \"reports\", kind: CallRejected }"
        );
        assert_eq!(BulkheadEventKind::CallPermitted.as_str(), "call_permitted");
        assert_eq!(BulkheadEventKind::CallFinished.as_str(), "call_finished");
        assert_eq!(e.label(), "CALL_REJECTED");
    }
}
