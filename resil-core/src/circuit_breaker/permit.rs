//! The RAII permission to make one call through a circuit breaker.

use std::any::{type_name, Any};
use std::fmt;
use std::mem::ManuallyDrop;
use std::sync::Arc;
use std::time::Duration;

use super::breaker::Inner;
use super::config::{Outcome, ResultTransition};
use super::state::Word;
use super::State;
use crate::clock::{self, Clock};
use crate::error::Error;

/// Permission to make one call, from
/// [`CircuitBreaker::try_acquire_permission`](super::CircuitBreaker::try_acquire_permission).
///
/// The call is timed from the moment the permit was granted. Record its outcome
/// with exactly one of [`on_result`](Self::on_result), [`on_value`](Self::on_value),
/// [`on_error`](Self::on_error), [`on_error_any`](Self::on_error_any),
/// [`on_success`](Self::on_success) or [`record`](Self::record); each consumes
/// the permit.
///
/// A permit dropped without an outcome (its future was cancelled, the call or a
/// classifying predicate panicked) records nothing, and in HALF_OPEN gives its
/// probe slot back, so an abandoned probe can never wedge the breaker in
/// HALF_OPEN.
///
/// ```
/// use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
///
/// let breaker = CircuitBreaker::new("inventory", CircuitBreakerConfig::default());
/// let permit = breaker.try_acquire_permission().expect("a closed breaker permits");
/// let result: Result<u32, std::io::Error> = Ok(7);
/// permit.on_result(&result);
/// assert_eq!(breaker.metrics().successful_calls(), 1);
/// ```
#[must_use = "a permit records nothing unless an outcome is given; dropping it abandons the call"]
pub struct Permit<'a> {
    inner: &'a Inner,
    word: Word,
    start: u64,
}

impl<'a> Permit<'a> {
    #[inline]
    pub(crate) fn new(inner: &'a Inner, word: Word, start: u64) -> Self {
        Permit { inner, word, start }
    }

    /// The state that granted this permit.
    pub fn state(&self) -> State {
        self.word.state()
    }

    /// Time since the permit was granted, on the breaker's clock.
    pub fn elapsed(&self) -> Duration {
        clock::elapsed(self.start, self.inner.clock.now_nanos())
    }

    /// Records a success, without consulting any result predicate.
    #[inline]
    pub fn on_success(self) {
        self.record_with(Outcome::Success, ResultTransition::Stay);
    }

    /// The breaker and start of this permit, for its shadow (read before the
    /// permit is consumed).
    #[inline]
    fn parts(&self) -> (&'a Inner, u64) {
        (self.inner, self.start)
    }

    /// Records a successful value, classified by the `record_result` and
    /// `transition_on_result` predicates written for type `T`.
    #[inline]
    pub fn on_value<T: 'static>(self, value: &T) {
        let (inner, start) = self.parts();
        if self.inner.inspects_values {
            let (outcome, transition) = self.inner.judge_value(value, type_name::<T>());
            self.finish(outcome, transition);
        } else {
            self.finish(Outcome::Success, ResultTransition::Stay);
        }
        if inner.shadow.is_set() {
            inner.feed_shadow(start, &|s: &Inner| {
                if s.inspects_values {
                    s.judge_value(value, type_name::<T>())
                } else {
                    (Outcome::Success, ResultTransition::Stay)
                }
            });
        }
    }

    /// Records an error, classified by the `ignore_error` / `record_error` (and
    /// `transition_on_error`) predicates written for type `E`.
    #[inline]
    pub fn on_error<E: 'static>(self, error: &E) {
        let (inner, start) = self.parts();
        let (outcome, transition) = self.inner.judge_error(error, false, type_name::<E>());
        self.finish(outcome, transition);
        if inner.shadow.is_set() {
            inner.feed_shadow(start, &|s: &Inner| {
                s.judge_error(error, false, type_name::<E>())
            });
        }
    }

    /// Records an error seen only as `&dyn Any`, classified by the predicates
    /// written for its concrete type. For a `resil::Error<E>` returned by an
    /// inner primitive, prefer [`on_nested_result`](Self::on_nested_result).
    pub fn on_error_any(self, error: &dyn Any) {
        let (inner, start) = self.parts();
        let (outcome, transition) = self.inner.judge_error(error, false, "an erased error");
        self.finish(outcome, transition);
        if inner.shadow.is_set() {
            inner.feed_shadow(start, &|s: &Inner| {
                s.judge_error(error, false, "an erased error")
            });
        }
    }

    /// Records a call's result: [`on_value`](Self::on_value) for `Ok`,
    /// [`on_error`](Self::on_error) for `Err`.
    #[inline]
    pub fn on_result<T: 'static, E: 'static>(self, result: &Result<T, E>) {
        match result {
            Ok(value) => self.on_value(value),
            Err(error) => self.on_error(error),
        }
    }

    /// Records the result of a call that is itself protected by resil
    /// primitives (so its error is a `resil::Error<E>`): `Ok` as
    /// [`on_value`](Self::on_value), [`Error::Call`]`(e)` by the predicates
    /// written for `E`, and an inner rejection by the predicates written for its
    /// own type, a failure when there are none (see
    /// [`CircuitBreakerConfig::classify_nested_error`](super::CircuitBreakerConfig::classify_nested_error)).
    #[inline(always)]
    pub fn on_nested_result<T: 'static, E: 'static>(self, result: &Result<T, Error<E>>) {
        match result {
            Ok(value) => self.on_value(value),
            Err(error) => {
                let (breaker, start) = self.parts();
                let (inner, rejection) = error.classified();
                let (outcome, transition) =
                    self.inner
                        .judge_error(inner, rejection, error.classified_type_name());
                self.finish(outcome, transition);
                if breaker.shadow.is_set() {
                    breaker.feed_shadow(start, &|s: &Inner| s.judge_nested(result));
                }
            }
        }
    }

    /// Records an outcome decided by the caller, bypassing every predicate.
    pub fn record(self, outcome: Outcome) {
        self.record_with(outcome, ResultTransition::Stay);
    }

    /// Records an outcome decided by the caller, bypassing every predicate,
    /// and then applies `transition` as a `transition_on_result` predicate's
    /// answer would be (an HTTP classifier's `Retry-After`:
    /// [`ResultTransition::OpenFor`]).
    pub fn record_with(self, outcome: Outcome, transition: ResultTransition) {
        let (inner, start) = self.parts();
        self.finish(outcome, transition);
        inner.shadow_outcome(start, outcome, transition);
    }

    /// Marks the permit used and records. Predicates run *before* this, so a
    /// panicking predicate leaves the permit unused and its `Drop` gives a
    /// half-open probe slot back.
    #[inline]
    fn finish(self, outcome: Outcome, transition: ResultTransition) {
        // Used: its `Drop` (which gives an unused probe slot back) must not
        // run. No flag for it: three words with no padding copy cheaply.
        let this = ManuallyDrop::new(self);
        this.inner
            .complete(this.word, this.start, outcome, transition);
    }
}

impl Permit<'_> {
    /// The permit's word and start, its `Drop` disarmed (for an
    /// [`OwnedPermit`] that takes it over).
    fn into_parts(self) -> (Word, u64) {
        let this = ManuallyDrop::new(self);
        (this.word, this.start)
    }
}

/// A [`Permit`] that keeps its breaker alive instead of borrowing it, from
/// [`CircuitBreaker::try_acquire_owned_permission`](super::CircuitBreaker::try_acquire_owned_permission):
/// for a future that outlives the borrow of the breaker it came from (a
/// keyed family's breaker, held in a response future).
///
/// Record its outcome through [`record`](Self::record); dropped without
/// one, it behaves as a dropped [`Permit`] (records nothing, gives a
/// half-open probe slot back).
#[must_use = "a permit records nothing unless an outcome is given; dropping it abandons the call"]
pub struct OwnedPermit {
    inner: Arc<Inner>,
    word: Word,
    start: u64,
    /// Whether `Drop` still has to give an unused probe slot back.
    armed: bool,
}

impl OwnedPermit {
    pub(crate) fn new(inner: Arc<Inner>, permit: Permit<'_>) -> Self {
        let (word, start) = permit.into_parts();
        OwnedPermit {
            inner,
            word,
            start,
            armed: true,
        }
    }

    /// The state that granted this permit.
    pub fn state(&self) -> State {
        self.word.state()
    }

    /// Hands the permit, as a [`Permit`], to `f`, which records the outcome
    /// with one of its methods (or drops it: an abandoned call).
    pub fn record<R>(mut self, f: impl FnOnce(Permit<'_>) -> R) -> R {
        // From here the borrowed permit's own `Drop` is the only one.
        self.armed = false;
        f(Permit::new(&self.inner, self.word, self.start))
    }
}

impl Drop for OwnedPermit {
    fn drop(&mut self) {
        if self.armed {
            drop(Permit::new(&self.inner, self.word, self.start));
        }
    }
}

impl fmt::Debug for OwnedPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OwnedPermit")
            .field("breaker", &&*self.inner.name)
            .field("state", &self.word.state())
            .finish()
    }
}

impl Drop for Permit<'_> {
    #[inline]
    fn drop(&mut self) {
        if self.word.state() == State::HalfOpen {
            self.inner.return_probe_slot(self.word);
        }
    }
}

impl fmt::Debug for Permit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("breaker", &&*self.inner.name)
            .field("state", &self.word.state())
            .field("epoch", &self.word.epoch())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{CircuitBreaker, CircuitBreakerConfig, State};

    #[test]
    fn an_owned_permit_gives_its_probe_back_when_dropped_and_records_once_used() {
        let config = CircuitBreakerConfig::builder()
            .permitted_number_of_calls_in_half_open_state(1)
            .minimum_number_of_calls(1)
            .build()
            .unwrap();
        let breaker = CircuitBreaker::new("owned", config);
        breaker.transition_to_open().unwrap();
        breaker.transition_to_half_open().unwrap();
        let probe = breaker.try_acquire_owned_permission().unwrap();
        assert_eq!(probe.state(), State::HalfOpen);
        // The one probe slot is taken.
        assert!(breaker.try_acquire_permission().is_err());
        drop(probe);
        // Dropped unused: the slot is back, nothing recorded.
        let probe = breaker.try_acquire_owned_permission().unwrap();
        assert_eq!(breaker.metrics().successful_calls(), 0);
        probe.record(|p| p.on_success());
        assert_eq!(breaker.state(), State::Closed);
    }
}
