//! What a bulkhead reports to its subscribers.

use std::fmt;
use std::sync::Arc;

/// Something that happened to a call at a [`Bulkhead`](super::Bulkhead),
/// delivered to every stream from [`Bulkhead::subscribe`](super::Bulkhead::subscribe)
/// (Resilience4j's `BulkheadOnCallPermittedEvent`, `…RejectedEvent`,
/// `…FinishedEvent`).
#[derive(Clone, PartialEq, Eq)]
pub struct BulkheadEvent {
    name: Arc<str>,
    kind: BulkheadEventKind,
}

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

impl BulkheadEvent {
    pub(crate) fn new(name: &Arc<str>, kind: BulkheadEventKind) -> Self {
        BulkheadEvent {
            name: Arc::clone(name),
            kind,
        }
    }

    /// The bulkhead's name.
    #[inline]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What happened.
    #[inline]
    pub fn kind(&self) -> BulkheadEventKind {
        self.kind
    }
}

impl fmt::Debug for BulkheadEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BulkheadEvent")
            .field("name", &&*self.name)
            .field("kind", &self.kind)
            .finish()
    }
}

impl fmt::Display for BulkheadEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bulkhead '{}': {}", self.name, self.kind)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_formats_are_pinned() {
        let e = BulkheadEvent::new(&Arc::from("reports"), BulkheadEventKind::CallRejected);
        assert_eq!(e.to_string(), "bulkhead 'reports': call_rejected");
        assert_eq!(
            format!("{e:?}"),
            "BulkheadEvent { name: \"reports\", kind: CallRejected }"
        );
        assert_eq!(BulkheadEventKind::CallPermitted.as_str(), "call_permitted");
        assert_eq!(BulkheadEventKind::CallFinished.as_str(), "call_finished");
    }
}
