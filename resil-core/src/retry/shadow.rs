//! A retry's shadow: the staged settings judging the live call's attempts,
//! deciding none.
//!
//! A shadow cannot make attempts of its own: it judges, with its own
//! predicates, `max_attempts`, interval functions and
//! `fail_after_max_attempts`, the outcomes of the attempts the live retry
//! made, in order, and counts what it would have done in its own
//! [`metrics`](super::Retry::metrics), as a retry with its settings in the
//! live one's place:
//!
//! - an outcome it would have retried is counted in
//!   [`shadow_retries`](super::Retry::shadow_retries) ("would have retried N
//!   times"), and the live call's next attempt is judged as its own next;
//! - an attempt after which it would have stopped ends its side of the
//!   call (counted by outcome, as the promoted retry would count it); a
//!   call whose attempts ran out is also counted in
//!   [`shadow_give_ups`](super::Retry::shadow_give_ups) ("would have given
//!   up");
//! - a call the live retry ended while the shadow would have made another
//!   attempt is counted in [`unobserved_calls`](super::Retry::unobserved_calls):
//!   that retry is counted as one it would have made, but its outcome (and
//!   so how the call would have ended) is unknown, and the call is not
//!   counted in the shadow's metrics.
//!
//! While `unobserved_calls` stays 0, the shadow's metrics are exactly those
//! a retry with its settings would have counted on the same attempts. A
//! shadow waits for nothing (the live retry's backoffs are the live one's),
//! never draws on a [budget](super::RetryBudget) (it shares the live one's),
//! never hands a value to `consume_result_before_retry_attempt`, and a
//! panic in one of its predicates is caught and counted in
//! [`shadow_panics`](super::Retry::shadow_panics), unnoticed by the call. A
//! call abandoned (cancelled, panicked) is not counted by the shadow.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::context::{Class, Context, Verdict};
use super::metrics::{Outcome, Refusal};
use super::{Inner, ResultVerdict, Retry, RetryConfig};
use crate::shadow::{Divergence, ShadowNews, ShadowSlot, Shadowed};

/// What only a shadow retry counts (zero on a live one).
#[derive(Default)]
pub(super) struct ShadowCounts {
    retried: AtomicU64,
    gave_up: AtomicU64,
    unobserved: AtomicU64,
    panicked: AtomicU64,
    news: ShadowNews,
}

impl ShadowCounts {
    pub(super) fn gave_up(&self) {
        self.gave_up.fetch_add(1, Ordering::Relaxed);
        self.news.note(Divergence::GaveUp);
    }
}

/// The shadow's side of one live call: the shadow (held for the whole call,
/// even if it is detached meanwhile) and whether its side has ended.
pub(super) struct ShadowCall {
    shadow: Retry,
    done: bool,
}

impl ShadowCall {
    /// The shadow's side of a call `live` begins. Cold: a retry without a
    /// shadow never gets here.
    #[cold]
    #[inline(never)]
    pub(super) fn start(live: &Inner) -> Option<Self> {
        live.shadow.get().map(|shadow| ShadowCall {
            shadow,
            done: false,
        })
    }

    /// Judges attempt number `attempt`'s `outcome` with the shadow's
    /// settings (and what the caller knows of a value, `result`, as the
    /// live retry was told); `live` is what the live retry decided on it.
    #[cold]
    #[inline(never)]
    pub(super) fn observe<T: 'static, R>(
        &mut self,
        attempt: u32,
        outcome: &Result<T, R>,
        class: impl Fn(&R) -> Class<'_>,
        result: impl Fn(&T) -> ResultVerdict,
        live: Verdict,
    ) {
        if self.done {
            return;
        }
        let s = &*self.shadow.inner;
        let mut cx = Context::observing(s, attempt);
        let judged = catch_unwind(AssertUnwindSafe(|| cx.decide(outcome, class, result)));
        // The shadow's call was counted by `decide` if it ended; it is never
        // a cancelled one.
        cx.finished = true;
        let counts = &s.shadow_counts;
        match judged {
            Ok(Verdict::Wait(_)) => {
                counts.retried.fetch_add(1, Ordering::Relaxed);
                counts.news.note(Divergence::Retried);
                if !matches!(live, Verdict::Wait(_)) {
                    counts.unobserved.fetch_add(1, Ordering::Relaxed);
                    counts.news.note(Divergence::Unobserved);
                    self.done = true;
                }
            }
            Ok(Verdict::Return | Verdict::Refuse(_)) => self.done = true,
            Err(_) => {
                counts.panicked.fetch_add(1, Ordering::Relaxed);
                self.done = true;
            }
        }
    }

    /// The live call found its deadline spent before attempt `attempts + 1`:
    /// so would the shadow's, if it was still going.
    #[cold]
    pub(super) fn deadline_spent(&mut self, attempts: u32) {
        if std::mem::replace(&mut self.done, true) {
            return;
        }
        Context::observing(&self.shadow.inner, attempts)
            .finish(Outcome::Failure, Some(Refusal::Deadline));
    }
}

impl Retry {
    /// For a shadow ([`Shadowed::start_shadow`]): the retries it would have
    /// made ("would have retried N times"), including a last one whose
    /// outcome is unknown (see [`unobserved_calls`](Self::unobserved_calls)).
    pub fn shadow_retries(&self) -> u64 {
        self.inner.shadow_counts.retried.load(Ordering::Relaxed)
    }

    /// For a shadow: calls whose attempts it would have run out of (or its
    /// interval bi-function stopped), failing them.
    pub fn shadow_give_ups(&self) -> u64 {
        self.inner.shadow_counts.gave_up.load(Ordering::Relaxed)
    }

    /// For a shadow: calls the live retry ended while it would have made
    /// another attempt, whose outcome is unknown; not in its metrics.
    pub fn unobserved_calls(&self) -> u64 {
        self.inner.shadow_counts.unobserved.load(Ordering::Relaxed)
    }

    /// For a shadow: outcomes one of its predicates (or its interval
    /// function) panicked on; its side of those calls ended there.
    pub fn shadow_panics(&self) -> u64 {
        self.inner.shadow_counts.panicked.load(Ordering::Relaxed)
    }
}

/// A retry's shadow judges the live call's attempts with its own settings
/// (see the [module](self)).
///
/// ```
/// use resil_core::clock::ManualClock;
/// use resil_core::retry::{Retry, RetryConfig};
/// use resil_core::shadow::Shadowed;
///
/// let attempts = |n| RetryConfig::builder().max_attempts(n).build().unwrap();
/// let live = Retry::with_clock("quote", attempts(3), ManualClock::new());
/// let shadow = live.start_shadow(attempts(2));
/// let mut n = 0;
/// let out = live.call(|| { n += 1; if n < 3 { Err("503") } else { Ok(n) } });
/// assert_eq!(out.unwrap(), 3, "the live retry decides");
/// assert_eq!(shadow.shadow_retries(), 1);
/// assert_eq!(shadow.shadow_give_ups(), 1, "two attempts would have failed the call");
/// assert_eq!(shadow.metrics().failed_calls_with_retry(), 1);
/// ```
impl Shadowed for Retry {
    type Config = RetryConfig;

    fn shadow_slot(&self) -> &ShadowSlot<Self> {
        &self.inner.shadow
    }

    fn shadowed_by(&self, config: RetryConfig) -> Self {
        let inner = &*self.inner;
        Retry::build(Arc::clone(&inner.name), config, inner.clock.clone(), true)
    }

    fn is_shadow(&self) -> bool {
        self.inner.is_shadow
    }

    fn shadow_news(&self) -> Option<&ShadowNews> {
        Some(&self.inner.shadow_counts.news)
    }
}
