//! What a thread-pool bulkhead reports about each submitted task.

use std::fmt;

use crate::event::{Event, EventKind};

/// Resilience4j's `BulkheadEvent.Type` for a thread-pool bulkhead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ThreadPoolBulkheadEventKind {
    /// A thread or a queue slot took the task.
    CallPermitted,
    /// No thread and no queue slot was free; the task was not run.
    CallRejected,
    /// A worker finished running the task (with a value, an error or a panic).
    CallFinished,
}

impl ThreadPoolBulkheadEventKind {
    /// Resilience4j's name: `CALL_PERMITTED`, `CALL_REJECTED`, `CALL_FINISHED`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ThreadPoolBulkheadEventKind::CallPermitted => "CALL_PERMITTED",
            ThreadPoolBulkheadEventKind::CallRejected => "CALL_REJECTED",
            ThreadPoolBulkheadEventKind::CallFinished => "CALL_FINISHED",
        }
    }
}

impl fmt::Display for ThreadPoolBulkheadEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One task's progress, published to the streams of
/// [`ThreadPoolBulkhead::subscribe`](super::ThreadPoolBulkhead::subscribe).
pub type ThreadPoolBulkheadEvent = Event<ThreadPoolBulkheadEventKind>;

impl EventKind for ThreadPoolBulkheadEventKind {
    type Detail = ();
    const EVENT: &'static str = "ThreadPoolBulkheadEvent";
    const SOURCE: &'static str = "thread-pool bulkhead";

    /// [`as_str`](Self::as_str).
    fn label(&self) -> &'static str {
        self.as_str()
    }

    /// Never: every event is about one task.
    fn is_notable(&self) -> bool {
        false
    }

    fn fmt_line(&self, (): &(), f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, " recorded {self}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_display_a_stable_line() {
        let event =
            ThreadPoolBulkheadEvent::new("reports", ThreadPoolBulkheadEventKind::CallRejected);
        assert_eq!(
            event.to_string(),
            "thread-pool bulkhead 'reports' recorded CALL_REJECTED"
        );
        assert_eq!(
            format!("{event:?}"),
            "ThreadPoolBulkheadEvent { name: \"reports\", kind: CallRejected }"
        );
    }
}
