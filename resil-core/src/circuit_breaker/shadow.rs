//! Shadow breakers: a second breaker that sees a live one's calls and
//! outcomes, with its own settings, and never refuses anything.
//!
//! A shadow trial answers "what would these thresholds have done on this
//! traffic?" before they act (seed 000 §11.3: trial a new rule on real
//! traffic first). [`CircuitBreaker::start_shadow`] attaches one to a live
//! breaker; from then on every outcome the live breaker records is also
//! offered to the shadow, which runs the whole state machine with its own
//! configuration (its own thresholds, window and predicates) and records the
//! transitions and refusals it *would* have made. The live breaker decides
//! every call as before.
//!
//! # What the shadow sees
//!
//! - **A call the live breaker permitted**: when it completes, the shadow
//!   decides whether *it* would have permitted the call at the instant the
//!   call started (OPEN's wait, HALF_OPEN's probes, a ramp), then records
//!   the result classified by *its own* predicates, timed from the call's
//!   start to its end on the live breaker's clock. A refusal is counted in
//!   the shadow's `not_permitted` totals: the call it would have refused.
//! - **A call the live breaker refused**: the shadow either would have
//!   refused it too (counted as not permitted), or would have let it through;
//!   that call never ran, so its outcome is unknown: it is counted in
//!   [`unobserved_calls`](CircuitBreaker::unobserved_calls) and nothing is
//!   recorded.
//! - **A call abandoned** (cancelled, panicked): nothing, as for the live
//!   breaker.
//!
//! For calls that do not overlap, the shadow makes exactly the transitions a
//! breaker with its settings would make in the live one's place, as long as
//! `unobserved_calls` stays 0. Overlapping calls are admitted in the order
//! they complete rather than the order they started, so under concurrency
//! the shadow's probe count and the instant of a HALF_OPEN decision may
//! differ slightly from what the live breaker with the same settings would do.
//!
//! # Cost
//!
//! Without a shadow, a call pays one relaxed load of a flag on the breaker
//! (already in cache) and nothing else; no allocation either way. With one,
//! each completed call also takes a shared read lock, asks the shadow for
//! permission and records into its window: about the cost of a second
//! breaker call, still without allocating. A shadow's predicates may panic:
//! the panic is caught and counted, and neither the call nor the live breaker
//! notices.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};

use super::breaker::Inner;
use super::config::{Outcome, ResultTransition};
use super::CircuitBreaker;
use crate::clock::Clock;
use crate::shadow::Shadowed;

/// The shadow's side: what only a shadow counts.
#[derive(Default)]
pub(crate) struct ShadowCounts {
    /// Calls the live breaker refused that the shadow would have permitted.
    pub(crate) unobserved: AtomicU64,
    /// Observations a shadow predicate panicked on.
    pub(crate) panicked: AtomicU64,
}

impl Inner {
    /// Offers a completed call that started at `start` to the shadow, which
    /// classifies it with `judge` (its own predicates). Cold: a breaker
    /// without a shadow never gets here.
    #[cold]
    #[inline(never)]
    pub(crate) fn feed_shadow(
        &self,
        start: u64,
        judge: &dyn Fn(&Inner) -> (Outcome, ResultTransition),
    ) {
        self.shadow.with(|shadow| {
            let s = &*shadow.inner;
            let observed = catch_unwind(AssertUnwindSafe(|| {
                if let Ok(permit) = s.admit_at(start) {
                    let (outcome, transition) = judge(s);
                    permit.record_with(outcome, transition);
                }
            }));
            if observed.is_err() {
                s.shadow_counts.panicked.fetch_add(1, Ordering::Relaxed);
            }
        });
    }

    /// Tells the shadow the live breaker refused a call now: it would have
    /// refused it too (counted by its own refusal), or the call is one it
    /// cannot judge.
    #[cold]
    #[inline(never)]
    pub(crate) fn feed_shadow_refused(&self) {
        self.shadow.with(|shadow| {
            let s = &*shadow.inner;
            // A permit is dropped unrecorded: a HALF_OPEN probe slot goes back.
            let permitted = s.admit_at(self.clock.now_nanos()).is_ok();
            if permitted {
                s.shadow_counts.unobserved.fetch_add(1, Ordering::Relaxed);
            }
        });
    }

    /// Offers a result to the shadow, classified by its own predicates.
    #[inline]
    pub(crate) fn shadow_result<T: 'static, E: 'static>(&self, start: u64, result: &Result<T, E>) {
        if self.shadow.is_set() {
            self.feed_shadow(start, &|s: &Inner| s.judge_result(result));
        }
    }

    /// Offers an outcome decided by the caller to the shadow.
    #[inline]
    pub(crate) fn shadow_outcome(
        &self,
        start: u64,
        outcome: Outcome,
        transition: ResultTransition,
    ) {
        if self.shadow.is_set() {
            self.feed_shadow(start, &|_: &Inner| (outcome, transition));
        }
    }
}

impl CircuitBreaker {
    /// Attaches a shadow running `config` beside this breaker (replacing any
    /// shadow it had) and returns it: a breaker of the same name and clock
    /// that is offered every outcome this one records and never decides a
    /// call (see the [`shadow`](super::shadow) module). It starts from
    /// this breaker's state and window as [`reconfigured`](Self::reconfigured)
    /// would carry them over, except that a manual mode (FORCED_OPEN,
    /// DISABLED, METRICS_ONLY) is an operator's, not the settings': the shadow
    /// starts CLOSED then. Its transitions are logged at INFO under target
    /// `resil::shadow` ("would have moved …"), never as the live breaker's.
    ///
    /// ```
    /// use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
    ///
    /// let lenient = CircuitBreakerConfig::builder()
    ///     .sliding_window_size(4).minimum_number_of_calls(4).failure_rate_threshold(80.0)
    ///     .build().unwrap();
    /// let strict = lenient.to_builder().failure_rate_threshold(50.0).build().unwrap();
    /// let live = CircuitBreaker::new("price", lenient);
    /// let shadow = live.start_shadow(strict);
    ///
    /// for fail in [true, false, true, false] {
    ///     let _ = live.call(|| if fail { Err("503") } else { Ok(()) });
    /// }
    /// assert_eq!(live.state(), State::Closed, "50 % is below the live 80 %");
    /// assert_eq!(shadow.state(), State::Open, "the trial would have opened");
    /// assert!(live.call(|| Ok::<_, &str>(())).is_ok(), "the shadow refuses nothing");
    /// assert_eq!(shadow.call_totals().not_permitted(), 1, "but counts what it would have refused");
    /// ```
    pub fn start_shadow(&self, config: super::CircuitBreakerConfig) -> CircuitBreaker {
        Shadowed::start_shadow(self, config)
    }

    /// Detaches this breaker's shadow, which is returned (and sees no more
    /// calls).
    pub fn stop_shadow(&self) -> Option<CircuitBreaker> {
        Shadowed::stop_shadow(self)
    }

    /// The shadow attached to this breaker.
    pub fn shadow(&self) -> Option<CircuitBreaker> {
        Shadowed::shadow(self)
    }

    /// Moves this breaker's shadow to `next`, the breaker that replaces it
    /// (a registry rebuilding an instance keeps a running trial this way).
    pub fn move_shadow_to(&self, next: &CircuitBreaker) {
        Shadowed::move_shadow_to(self, next)
    }

    /// Whether this breaker is a shadow ([`start_shadow`](Self::start_shadow)).
    pub fn is_shadow(&self) -> bool {
        self.inner.is_shadow
    }

    /// For a shadow: calls its live breaker refused that it would have
    /// permitted. They never ran, so the shadow could not record them; while
    /// this is 0, the shadow's transitions are exactly those its settings
    /// would have made (for calls that do not overlap). 0 for a live breaker.
    pub fn unobserved_calls(&self) -> u64 {
        self.inner.shadow_counts.unobserved.load(Ordering::Relaxed)
    }

    /// For a shadow: outcomes it could not record because one of its own
    /// predicates panicked (the call and the live breaker were not affected).
    pub fn shadow_panics(&self) -> u64 {
        self.inner.shadow_counts.panicked.load(Ordering::Relaxed)
    }
}

impl Shadowed for CircuitBreaker {
    type Config = super::CircuitBreakerConfig;

    fn shadow_slot(&self) -> &crate::shadow::ShadowSlot<Self> {
        &self.inner.shadow
    }

    fn shadowed_by(&self, config: Self::Config) -> Self {
        CircuitBreaker::shadowed_by(self, config)
    }

    fn is_shadow(&self) -> bool {
        self.inner.is_shadow
    }
}
