//! A bulkhead's shadow: the calls in flight counted against the staged
//! limit, beside the live bulkhead, deciding none.
//!
//! Every call the live bulkhead admits is offered to the shadow at the same
//! instant: the shadow takes a slot of its own if its limit (and the task's
//! class share under its thresholds) leaves one free, and the live call's
//! permit gives that slot back when it is dropped — on success, error,
//! panic and cancellation alike, so a shadow never leaks a slot. A call
//! that finds the shadow full is one the staged settings would have
//! refused (with a zero `max_wait_duration`), or made wait (with a nonzero
//! one: the shadow cannot wait, so it cannot tell whether a slot would have
//! come free in time; it counts the call in
//! [`shadow_waited_calls`](Bulkhead::shadow_waited_calls) and takes no
//! slot). A call the live bulkhead refused that the shadow had room for is
//! counted in [`unobserved_calls`](Bulkhead::unobserved_calls): it never
//! ran, so it holds no shadow slot either.
//!
//! While `unobserved_calls` and `shadow_waited_calls` stay 0, the shadow's
//! refusals are exactly those a bulkhead with its settings would have made
//! in the live one's place.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{Bulkhead, Inner};
use crate::criticality::Criticality;
use crate::shadow::{Divergence, ShadowNews, ShadowSlot, Shadowed};

/// What only a shadow bulkhead counts (zero on a live one).
#[derive(Default)]
pub(super) struct ShadowCounts {
    /// Calls that found it full with a nonzero `max_wait_duration`.
    waited: AtomicU64,
    /// Calls the live bulkhead refused that it had room for.
    unobserved: AtomicU64,
    news: ShadowNews,
}

/// A slot held in a shadow's count by a live call; given back on drop.
pub(crate) struct ShadowHold(Bulkhead);

impl Drop for ShadowHold {
    #[inline]
    fn drop(&mut self) {
        self.0.inner.sem.release();
    }
}

impl Inner {
    /// Offers a call the live bulkhead just admitted to its shadow: the
    /// shadow's slot, if it had one free. Cold: a bulkhead without a shadow
    /// never gets here.
    #[cold]
    #[inline(never)]
    pub(super) fn shadow_admit(&self) -> Option<ShadowHold> {
        self.shadow
            .with(|shadow| {
                shadow
                    .inner
                    .observe(true)
                    .then(|| ShadowHold(shadow.clone()))
            })
            .flatten()
    }

    /// Tells the shadow the live bulkhead refused a call for want of a slot.
    #[cold]
    #[inline(never)]
    pub(super) fn shadow_refused(&self) {
        self.shadow.with(|shadow| shadow.inner.observe(false));
    }

    /// On a shadow: whether it would have admitted a call now, counting the
    /// decision; a slot is kept only for a call that runs (`live_admitted`).
    fn observe(&self, live_admitted: bool) -> bool {
        let took = match self.class_share() {
            Some(share) => self.sem.try_acquire_share(share),
            None => self.sem.try_acquire(),
        };
        if !took {
            if self.max_wait_nanos.load(Ordering::Relaxed) == 0 {
                self.rejected[Criticality::current().index()].fetch_add(1, Ordering::Relaxed);
                self.shadow_counts.news.note(Divergence::Refused);
            } else {
                self.shadow_counts.waited.fetch_add(1, Ordering::Relaxed);
                self.shadow_counts.news.note(Divergence::Waited);
            }
            return false;
        }
        if live_admitted {
            self.permitted.increment();
            true
        } else {
            self.sem.release();
            self.shadow_counts
                .unobserved
                .fetch_add(1, Ordering::Relaxed);
            self.shadow_counts.news.note(Divergence::Unobserved);
            false
        }
    }
}

impl Bulkhead {
    /// For a shadow ([`Shadowed::start_shadow`]): calls that found it full
    /// while its `max_wait_duration` is nonzero; they would have waited, and
    /// whether a slot came free in time is unknown (they hold none).
    pub fn shadow_waited_calls(&self) -> u64 {
        self.inner.shadow_counts.waited.load(Ordering::Relaxed)
    }

    /// For a shadow: calls its live bulkhead refused that it had room for.
    /// They never ran, so they took no slot of the shadow's.
    pub fn unobserved_calls(&self) -> u64 {
        self.inner.shadow_counts.unobserved.load(Ordering::Relaxed)
    }
}

/// A bulkhead's shadow counts the live calls in flight against its own
/// limit (see the `shadow` module's source docs): its
/// [`metrics`](Bulkhead::metrics) show the slots it holds now, the calls it
/// admitted and those it would have refused.
///
/// ```
/// use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
/// use resil_core::shadow::Shadowed;
///
/// let size = |n| BulkheadConfig::builder().max_concurrent_calls(n).build().unwrap();
/// let live = Bulkhead::new("reports", size(3));
/// let shadow = live.start_shadow(size(2));
/// let held: Vec<_> = (0..3).map(|_| live.try_acquire_permission().unwrap()).collect();
/// assert_eq!(shadow.metrics().rejected_calls(), 1, "the third would have been refused");
/// drop(held);
/// assert_eq!(shadow.available_concurrent_calls(), 2, "every shadow slot is back");
/// ```
impl Shadowed for Bulkhead {
    type Config = super::BulkheadConfig;

    fn shadow_slot(&self) -> &ShadowSlot<Self> {
        &self.inner.shadow
    }

    fn shadowed_by(&self, config: Self::Config) -> Self {
        let inner = &*self.inner;
        Bulkhead::build(Arc::clone(&inner.name), config, inner.clock.clone(), true)
    }

    fn is_shadow(&self) -> bool {
        self.inner.is_shadow
    }

    fn shadow_news(&self) -> Option<&ShadowNews> {
        Some(&self.inner.shadow_counts.news)
    }
}
