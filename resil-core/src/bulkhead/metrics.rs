//! A point-in-time view of a bulkhead's slots.

use crate::criticality::Criticality;

/// A snapshot of a [`Bulkhead`](super::Bulkhead)'s slots, taken by
/// [`metrics`](super::Bulkhead::metrics). Slot figures come from one atomic
/// reading, so they agree with each other.
///
/// Successful and failed calls are deliberately not counted here: that would add
/// an atomic write to every call's fast path. Subscribe to the events, or put a
/// circuit breaker or the registry's metrics export around the bulkhead.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BulkheadMetrics {
    pub(crate) in_use: u32,
    pub(crate) max: u32,
    pub(crate) waiting: usize,
    /// Per class ([`Criticality::index`]).
    pub(crate) rejected: [u64; 4],
    pub(crate) permitted: u64,
}

impl BulkheadMetrics {
    /// Free slots: the limit minus the slots held, and zero while more are held
    /// than a lowered limit allows (Resilience4j `availableConcurrentCalls`).
    #[inline]
    pub fn available_concurrent_calls(&self) -> u32 {
        self.max.saturating_sub(self.in_use)
    }

    /// The current limit (Resilience4j `maxAllowedConcurrentCalls`).
    #[inline]
    pub fn max_allowed_concurrent_calls(&self) -> u32 {
        self.max
    }

    /// Slots held by calls in flight. May exceed the limit for a while after the
    /// limit was lowered: held slots are never revoked.
    #[inline]
    pub fn concurrent_calls(&self) -> u32 {
        self.in_use
    }

    /// Calls waiting for a slot.
    #[inline]
    pub fn waiting_calls(&self) -> usize {
        self.waiting
    }

    /// Calls refused since the bulkhead was created, whether with
    /// `BulkheadFull` or because their deadline ran out while they waited.
    #[inline]
    pub fn rejected_calls(&self) -> u64 {
        self.rejected.iter().sum()
    }

    /// Calls of `class` refused (a full bulkhead, a wait that timed out,
    /// or a class over its threshold); they add up to
    /// [`rejected_calls`](Self::rejected_calls).
    #[inline]
    pub fn rejected_calls_of(&self, class: Criticality) -> u64 {
        self.rejected[class.index()]
    }

    /// Calls let in since the bulkhead was created (at once or after a wait).
    #[inline]
    pub fn permitted_calls(&self) -> u64 {
        self.permitted
    }
}
