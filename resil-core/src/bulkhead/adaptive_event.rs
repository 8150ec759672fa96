//! What an adaptive bulkhead reports to its subscribers, and its metrics.

use std::fmt;
use std::time::Duration;

use crate::event::{Event, EventKind};

/// Something that happened at an [`AdaptiveBulkhead`](super::AdaptiveBulkhead),
/// delivered to every stream from
/// [`AdaptiveBulkhead::subscribe`](super::AdaptiveBulkhead::subscribe).
pub type AdaptiveBulkheadEvent = Event<AdaptiveBulkheadEventKind>;

/// The kinds of [`AdaptiveBulkheadEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AdaptiveBulkheadEventKind {
    /// A call got a slot.
    CallPermitted,
    /// A call was refused: every slot of the current limit was taken
    /// (`BulkheadFull`), or the task's deadline was spent.
    CallRejected,
    /// A permitted call ended and gave its slot back.
    CallFinished,
    /// The measured latency moved the limit.
    LimitChanged {
        /// The limit before.
        from: u32,
        /// The limit now.
        to: u32,
    },
}

impl AdaptiveBulkheadEventKind {
    /// A short, stable label: `call_permitted`, `call_rejected`,
    /// `call_finished`, `limit_changed`.
    pub const fn as_str(self) -> &'static str {
        match self {
            AdaptiveBulkheadEventKind::CallPermitted => "call_permitted",
            AdaptiveBulkheadEventKind::CallRejected => "call_rejected",
            AdaptiveBulkheadEventKind::CallFinished => "call_finished",
            AdaptiveBulkheadEventKind::LimitChanged { .. } => "limit_changed",
        }
    }
}

impl fmt::Display for AdaptiveBulkheadEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdaptiveBulkheadEventKind::LimitChanged { from, to } => {
                write!(f, "limit_changed {from} -> {to}")
            }
            other => f.write_str(other.as_str()),
        }
    }
}

impl EventKind for AdaptiveBulkheadEventKind {
    type Detail = ();
    const EVENT: &'static str = "AdaptiveBulkheadEvent";
    const SOURCE: &'static str = "adaptive bulkhead";

    /// `CALL_PERMITTED`, `CALL_REJECTED`, `CALL_FINISHED`, `LIMIT_CHANGED`.
    fn label(&self) -> &'static str {
        match self {
            AdaptiveBulkheadEventKind::CallPermitted => "CALL_PERMITTED",
            AdaptiveBulkheadEventKind::CallRejected => "CALL_REJECTED",
            AdaptiveBulkheadEventKind::CallFinished => "CALL_FINISHED",
            AdaptiveBulkheadEventKind::LimitChanged { .. } => "LIMIT_CHANGED",
        }
    }

    /// A limit change; not a call's events.
    fn is_notable(&self) -> bool {
        matches!(self, AdaptiveBulkheadEventKind::LimitChanged { .. })
    }

    fn fmt_line(&self, (): &(), f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ": {self}")
    }
}

/// A snapshot of an [`AdaptiveBulkhead`](super::AdaptiveBulkhead), taken by
/// [`metrics`](super::AdaptiveBulkhead::metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AdaptiveBulkheadMetrics {
    pub(crate) limit: u32,
    pub(crate) in_use: u32,
    pub(crate) rejected: u64,
    pub(crate) rejected_by_class: [u64; 4],
    pub(crate) samples: u64,
    pub(crate) dropped: u64,
    pub(crate) min_rtt: Duration,
}

impl AdaptiveBulkheadMetrics {
    /// The current limit (a gauge: it moves with the measured latency).
    #[inline]
    pub fn limit(&self) -> u32 {
        self.limit
    }

    /// Slots held by calls in flight (may exceed a limit that just shrank:
    /// held slots are never revoked).
    #[inline]
    pub fn concurrent_calls(&self) -> u32 {
        self.in_use
    }

    /// Free slots under the current limit.
    #[inline]
    pub fn available_concurrent_calls(&self) -> u32 {
        self.limit.saturating_sub(self.in_use)
    }

    /// Calls refused since the bulkhead was created.
    #[inline]
    pub fn rejected_calls(&self) -> u64 {
        self.rejected
    }

    /// Calls of `class` refused since the bulkhead was created (they add up
    /// to [`rejected_calls`](Self::rejected_calls)).
    #[inline]
    pub fn rejected_calls_of(&self, class: crate::criticality::Criticality) -> u64 {
        self.rejected_by_class[class.index()]
    }

    /// Calls whose latency was a sample (finished calls, minus ignored ones,
    /// those under `min_rtt_threshold` and the few that found the estimator
    /// busy); windows of them update the limit.
    #[inline]
    pub fn samples(&self) -> u64 {
        self.samples
    }

    /// Samples that were drops (timeouts): a window holding one shrinks the
    /// limit.
    #[inline]
    pub fn dropped_calls(&self) -> u64 {
        self.dropped
    }

    /// The no-load latency the limit is measured against (zero before the
    /// first sample).
    #[inline]
    pub fn min_rtt(&self) -> Duration {
        self.min_rtt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_formats_are_pinned() {
        let e = AdaptiveBulkheadEvent::new(
            "inventory",
            AdaptiveBulkheadEventKind::LimitChanged { from: 20, to: 26 },
        );
        assert_eq!(
            e.to_string(),
            "adaptive bulkhead 'inventory': limit_changed 20 -> 26"
        );
        assert_eq!(
            format!("{e:?}"),
            "AdaptiveBulkheadEvent { name: \"inventory\", kind: LimitChanged { from: 20, to: 26 } }"
        );
        assert_eq!(e.kind().as_str(), "limit_changed");
        assert_eq!(e.label(), "LIMIT_CHANGED");
        assert!(e.is_notable());
        assert_eq!(
            AdaptiveBulkheadEventKind::CallRejected.as_str(),
            "call_rejected"
        );
    }
}
