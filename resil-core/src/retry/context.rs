//! One logical call's retry state: attempts so far, and what to do after each.

use std::any::Any;
use std::time::Duration;

use super::config::{Attempted, ErrorClass};
use super::event::{RetryCause, RetryEvent, RetryEventKind};
use super::metrics::{Outcome, Refusal};
use super::shadow::ShadowCall;
use super::{Inner, ResultVerdict, RetryBudget};
use crate::deadline;
use crate::error::{DeadlineExceeded, Error, ErrorKind, MaxRetriesExceeded, RetryBudgetExhausted};

/// What an attempt's error is, for classification.
pub(crate) enum Class<'a> {
    /// The call's own error (type-erased for the predicates), and its type's
    /// name for diagnostics.
    Call(&'a dyn Any, &'static str),
    /// A refusal by a resil primitive inside the retried call, and the
    /// rejection's own struct for the predicates written for it.
    Rejection(ErrorKind, &'a dyn Any),
}

/// The class of an error returned by a plain call.
#[inline]
pub(crate) fn plain<E: 'static>(error: &E) -> Class<'_> {
    Class::Call(error, std::any::type_name::<E>())
}

/// The class of an error returned by a nested resil call: the call's own error
/// as itself, a rejection as its struct (the breaker's classification too).
#[inline]
pub(crate) fn nested<E: 'static>(error: &Error<E>) -> Class<'_> {
    match error.classified() {
        (error, false) => Class::Call(error, std::any::type_name::<E>()),
        (rejection, true) => Class::Rejection(error.kind(), rejection),
    }
}

/// What the loop does after an attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// Return the attempt's outcome as it is.
    Return,
    /// Wait this long, then make the next attempt.
    Wait(Duration),
    /// Return this refusal instead of the attempt's outcome.
    Refuse(Refusal),
}

/// The state of one logical call, shared by the sync and async loops so both
/// decide identically. It is also the call's cancellation guard: dropped before
/// [`finish`](Context::finish) (a dropped future, a panicking closure), it
/// counts the call as cancelled with the attempts it made.
pub(crate) struct Context<'a> {
    retry: &'a Inner,
    /// The budget this call deposits into and withdraws retries from: the
    /// retry's own, or a key's ([`Retry::with_budget`](super::Retry::with_budget)).
    budget: Option<&'a RetryBudget>,
    attempts: u32,
    /// Set once the call is counted (a shadow's side sets it too: its
    /// call is never a cancelled one).
    pub(super) finished: bool,
    /// The shadow's side of this call, when the retry has a shadow.
    shadow: Option<ShadowCall>,
}

impl<'a> Context<'a> {
    #[inline]
    pub(crate) fn new(retry: &'a Inner, budget: Option<&'a RetryBudget>) -> Self {
        Context {
            retry,
            budget,
            attempts: 0,
            finished: false,
            shadow: if retry.shadow.is_set() {
                ShadowCall::start(retry)
            } else {
                None
            },
        }
    }

    /// A context judging on `retry`'s behalf attempts that another retry's
    /// call made (a shadow's, see [`super::shadow`]).
    pub(super) fn observing(retry: &'a Inner, attempts: u32) -> Self {
        Context {
            retry,
            budget: None,
            attempts,
            finished: false,
            shadow: None,
        }
    }

    /// The attempts begun so far (the current one's number, 1-based).
    #[inline(always)]
    pub(crate) fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Called before each attempt: refuses when the deadline is already spent,
    /// otherwise counts the attempt (and pays the budget for a first one).
    #[inline(always)]
    pub(crate) fn begin_attempt(&mut self) -> Result<(), Refusal> {
        if deadline::remaining().is_some_and(|left| left.is_zero()) {
            return Err(self.deadline_spent());
        }
        if self.attempts == 0 {
            if let Some(budget) = self.budget {
                budget.deposit();
            }
        }
        self.attempts += 1;
        Ok(())
    }

    #[cold]
    fn deadline_spent(&mut self) -> Refusal {
        if let Some(shadow) = &mut self.shadow {
            shadow.deadline_spent(self.attempts);
        }
        self.retry.events.publish_with(|| {
            RetryEvent::new(
                self.retry.name.clone(),
                RetryEventKind::DeadlineExceeded {
                    attempts: self.attempts,
                    wait: None,
                },
            )
        });
        self.finish(Outcome::Failure, Some(Refusal::Deadline));
        Refusal::Deadline
    }

    /// Judges the outcome of the attempt just made; `class` tells what kind of
    /// failure an error is, `result` what the caller knows of a value (the
    /// client layers: a response their classifier records as a failure;
    /// [`by_predicates`](super::by_predicates) everywhere else).
    #[inline(always)]
    pub(crate) fn judge<T: 'static, R>(
        &mut self,
        outcome: &Result<T, R>,
        class: impl Fn(&R) -> Class<'_> + Copy,
        result: impl Fn(&T) -> ResultVerdict + Copy,
    ) -> Verdict {
        let verdict = self.decide(outcome, class, result);
        if let Some(shadow) = &mut self.shadow {
            shadow.observe(self.attempts, outcome, class, result, verdict);
        }
        verdict
    }

    /// What this retry does after the attempt just made.
    #[inline(always)]
    pub(super) fn decide<T: 'static, R>(
        &mut self,
        outcome: &Result<T, R>,
        class: impl FnOnce(&R) -> Class<'_>,
        result: impl FnOnce(&T) -> ResultVerdict,
    ) -> Verdict {
        debug_assert!(
            self.attempts >= 1,
            "an outcome is judged only after an attempt began"
        );
        match outcome {
            Ok(value) => {
                match result(value) {
                    ResultVerdict::Predicates => {
                        if self.retry.config.retries_result(value as &dyn Any) {
                            return self.retry_result(value, None);
                        }
                    }
                    ResultVerdict::Retry(wait) => return self.retry_result(value, wait),
                    ResultVerdict::Stop => return self.give_up(RetryCause::Result),
                }
                // As Resilience4j: SUCCESS only for a success that needed
                // retries; a first-attempt success is only counted.
                if self.attempts > 1 {
                    self.succeeded_after_retries();
                }
                self.finish(Outcome::Success, None);
                Verdict::Return
            }
            Err(error) => self.judge_error(class(error)),
        }
    }

    #[cold]
    #[inline(never)]
    fn succeeded_after_retries(&self) {
        self.retry.events.publish_with(|| {
            RetryEvent::new(
                self.retry.name.clone(),
                RetryEventKind::Success {
                    attempts: self.attempts,
                },
            )
        });
    }

    /// A value retried like an error; `wait`, when the caller gives one,
    /// replaces the interval's.
    #[cold]
    #[inline(never)]
    fn retry_result(&mut self, value: &dyn Any, wait: Option<Duration>) -> Verdict {
        self.failed_attempt(RetryCause::Result, Attempted::Value(value), wait)
    }

    /// Hands the outcome of an attempt the loop is about to drop (a retried
    /// value before the next attempt, or one a refusal discards) to
    /// `consume_result_before_retry_attempt`.
    #[inline]
    pub(crate) fn discard<T: 'static, R>(&self, outcome: Result<T, R>) {
        if let Ok(value) = outcome {
            let mut slot = Some(value);
            self.retry.config.consume(self.attempts, &mut slot);
        }
    }

    #[inline(never)]
    fn judge_error(&mut self, class: Class<'_>) -> Verdict {
        let config = &self.retry.config;
        match class {
            Class::Call(error, type_name) => {
                let (class, foreign) = config.classify_error(error);
                if foreign {
                    if let Some((kind, refusal)) = config.inner_refusal(error) {
                        return self.judge_error(Class::Rejection(kind, refusal));
                    }
                    self.foreign_error(type_name);
                }
                match class {
                    ErrorClass::Ignored => {
                        self.not_retryable(RetryCause::Error);
                        self.finish(Outcome::Ignored, None);
                        Verdict::Return
                    }
                    ErrorClass::Retried => {
                        self.failed_attempt(RetryCause::Error, Attempted::Error(error), None)
                    }
                    ErrorClass::NotRetried => {
                        self.not_retryable(RetryCause::Error);
                        self.finish(Outcome::Failure, None);
                        Verdict::Return
                    }
                }
            }
            Class::Rejection(kind, rejection) => {
                if config.is_ignored(rejection) {
                    self.not_retryable(RetryCause::Rejection(kind));
                    self.finish(Outcome::Ignored, None);
                    Verdict::Return
                } else if config.retries_rejection(kind, rejection) {
                    self.failed_attempt(
                        RetryCause::Rejection(kind),
                        Attempted::Error(rejection),
                        None,
                    )
                } else {
                    self.not_retryable(RetryCause::Rejection(kind));
                    self.finish(Outcome::Failure, None);
                    Verdict::Return
                }
            }
        }
    }

    /// A retryable failure: retry after the interval (or after `decided`,
    /// the caller's wait), unless the attempts, the deadline or the budget
    /// say no.
    fn failed_attempt(
        &mut self,
        cause: RetryCause,
        outcome: Attempted<'_>,
        decided: Option<Duration>,
    ) -> Verdict {
        let retry = self.retry;
        if self.attempts >= retry.config.max_attempts() {
            return self.give_up(cause);
        }
        let Some(wait) = decided.or_else(|| retry.config.wait_after(self.attempts, outcome)) else {
            // The interval bi-function stopped the retries early.
            return self.give_up(cause);
        };
        // The backoff must end with time left for the attempt after it.
        if deadline::remaining().is_some_and(|left| wait >= left) {
            retry.events.publish_with(|| {
                RetryEvent::new(
                    retry.name.clone(),
                    RetryEventKind::DeadlineExceeded {
                        attempts: self.attempts,
                        wait: Some(wait),
                    },
                )
            });
            self.finish(Outcome::Failure, Some(Refusal::Deadline));
            return Verdict::Refuse(Refusal::Deadline);
        }
        // A shadow never draws on a budget: it shares the live retry's.
        if let Some(budget) = self.budget.filter(|_| !retry.is_shadow) {
            if !budget.withdraw() {
                retry.events.publish_with(|| {
                    RetryEvent::new(
                        retry.name.clone(),
                        RetryEventKind::RetryBudgetExhausted {
                            attempts: self.attempts,
                            cause,
                        },
                    )
                });
                self.finish(Outcome::Failure, Some(Refusal::Budget));
                return Verdict::Refuse(Refusal::Budget);
            }
        }
        retry.events.publish_with(|| {
            RetryEvent::new(
                retry.name.clone(),
                RetryEventKind::Retry {
                    attempt: self.attempts,
                    wait,
                    cause,
                },
            )
        });
        Verdict::Wait(wait)
    }

    /// An error the retry does not retry (ignored, not accepted by
    /// `retry_on_error`, or a refusal `retry_on_rejection` turns down): the
    /// call ends with it. Resilience4j publishes IGNORED_ERROR for all of them.
    fn not_retryable(&self, cause: RetryCause) {
        self.retry.events.publish_with(|| {
            RetryEvent::new(
                self.retry.name.clone(),
                RetryEventKind::IgnoredError {
                    attempts: self.attempts,
                    cause,
                },
            )
        });
    }

    /// The attempts ran out (or the interval bi-function stopped them): the
    /// call fails with the last attempt's outcome, or, for a retried value
    /// under `fail_after_max_attempts`, with `MaxRetriesExceeded`.
    fn give_up(&mut self, cause: RetryCause) -> Verdict {
        if self.retry.is_shadow {
            self.retry.shadow_counts.gave_up();
        }
        self.retry.events.publish_with(|| {
            RetryEvent::new(
                self.retry.name.clone(),
                RetryEventKind::Error {
                    attempts: self.attempts,
                    cause,
                },
            )
        });
        if cause == RetryCause::Result && self.retry.config.fail_after_max_attempts() {
            self.finish(Outcome::Failure, Some(Refusal::MaxRetries));
            return Verdict::Refuse(Refusal::MaxRetries);
        }
        self.finish(Outcome::Failure, None);
        Verdict::Return
    }

    /// Traces, once per retry instance and at debug level, an error that no
    /// error predicate is written for while some are: they can never match it,
    /// which usually means a predicate for `E` meets a `resil::Error<E>` or
    /// another wrapper.
    #[cold]
    #[inline(never)]
    fn foreign_error(&self, type_name: &'static str) {
        if self
            .retry
            .warned_foreign
            .swap(true, std::sync::atomic::Ordering::Relaxed)
        {
            return;
        }
        let written_for = self.retry.config.error_predicate_types();
        tracing::debug!(
            target: "resil_core::retry",
            retry = %self.retry.name,
            "retry '{}': an error of type `{type_name}` arrived, but its error predicates are \
             written for {written_for} and can never match it (it is classified by the \
             defaults); a retry around other resil primitives should use `call_nested` or \
             `call_async_nested`, or predicates for the error type the call returns",
            self.retry.name
        );
    }

    #[inline(always)]
    pub(super) fn finish(&mut self, outcome: Outcome, refusal: Option<Refusal>) {
        debug_assert!(!self.finished, "a call is counted once");
        self.finished = true;
        self.retry.counters.record(outcome, self.attempts, refusal);
    }
}

impl Context<'_> {
    #[cold]
    #[inline(never)]
    fn cancelled(&mut self) {
        self.retry
            .counters
            .record(Outcome::Cancelled, self.attempts, None);
    }
}

impl Inner {
    /// The error a refusal returns to the caller.
    #[cold]
    pub(crate) fn refusal<E>(&self, refusal: Refusal) -> Error<E> {
        let name = &self.refusal_name;
        match refusal {
            Refusal::Budget => Error::RetryBudgetExhausted(RetryBudgetExhausted::by(name)),
            Refusal::Deadline => Error::DeadlineExceeded(DeadlineExceeded::by_shared(name)),
            Refusal::MaxRetries => Error::MaxRetriesExceeded(MaxRetriesExceeded::by(name)),
        }
    }
}

impl Drop for Context<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        if !self.finished {
            self.cancelled();
        }
    }
}
