//! Retry: re-run a failed call with waits between attempts (Resilience4j `Retry`),
//! plus a shared retry budget and respect for end-to-end deadlines.
//!
//! A [`Retry`] makes up to `max_attempts` attempts per logical call (the first
//! call counts), waiting [`IntervalFunction`]`::interval(n)` after the `n`-th
//! failed attempt. Which failures are retried is set in [`RetryConfig`]; by
//! default every error is, as in Resilience4j.
//!
//! * **Sync** ([`Retry::call`]): the calling thread sleeps between attempts,
//!   through the injected clock (so a [`ManualClock`](crate::clock::ManualClock)
//!   makes tests instant). A sync retry holds its thread for the whole backoff
//!   (seed 000 §15).
//! * **Async** ([`Retry::call_async`]): the future awaits the clock's timer
//!   between attempts; no thread is blocked.
//! * **Nested resil calls** ([`Retry::call_nested`], [`Retry::call_async_nested`]):
//!   when the retried closure is itself protected (a circuit breaker, a bulkhead
//!   or a rate limiter inside the retry) it returns `resil::Error<E>`; these
//!   flavours return that same error type, classify `Error::Call(e)` with the
//!   error predicates, and by default do **not** retry refusals such as an open
//!   breaker's `CallNotPermitted`, which would only be refused again at once
//!   (seed 003, `order`). Time-limiter timeouts are retried. See
//!   [`RetryConfigBuilder::retry_on_rejection`].
//!
//! # What the caller gets
//!
//! | the call … | `call` returns |
//! |---|---|
//! | succeeds on some attempt | `Ok(value)` |
//! | runs out of attempts on a retried result | `Ok(last value)` (counted as failed), or with [`fail_after_max_attempts`](RetryConfigBuilder::fail_after_max_attempts) `Err(Error::MaxRetriesExceeded)` |
//! | is stopped early by [`interval_bi_function`](RetryConfigBuilder::interval_bi_function) returning `None` | the attempt's own outcome, as if the attempts had run out |
//! | fails with a non-retryable, ignored, or last-attempt error | `Err(Error::Call(e))` (nested: the inner `Error<E>` as is) |
//! | is refused a retry by the budget | `Err(Error::RetryBudgetExhausted)`; the last error is dropped (its cause is in the [`RetryEventKind::RetryBudgetExhausted`] event) |
//! | has no time left in its [deadline](crate::deadline) for the next attempt or backoff | `Err(Error::DeadlineExceeded)` naming this retry |
//!
//! # Order
//!
//! Retry outside a circuit breaker: every attempt is a breaker sample (3 failed
//! samples per failing logical call with `max_attempts = 3`), and once the
//! breaker opens the retry stops at once on `CallNotPermitted`. Breaker outside
//! the retry: the breaker sees one sample per logical call, after all the
//! backoffs (seed 003 `order`: 3 samples vs 1 for the same 6 HTTP calls).
//!
//! ```
//! use std::time::Duration;
//! use resil_core::clock::ManualClock;
//! use resil_core::retry::{Retry, RetryConfig};
//!
//! let clock = ManualClock::new();
//! let retry = Retry::with_clock("inventory", RetryConfig::default(), clock.clone());
//! let mut calls = 0;
//! let out: Result<&str, _> = retry.call(|| {
//!     calls += 1;
//!     if calls < 3 { Err("connection refused") } else { Ok("42 in stock") }
//! });
//! assert_eq!(out.unwrap(), "42 in stock");
//! assert_eq!(clock.elapsed(), Duration::from_secs(1)); // two waits of 500 ms
//! let m = retry.metrics();
//! assert_eq!((m.calls(), m.attempts(), m.successful_calls_with_retry()), (1, 3, 1));
//! ```

mod budget;
mod config;
mod context;
mod event;
mod metrics;
pub mod shadow;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::task::{self, ready, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;

pub use self::budget::{RetryBudget, RetryBudgetConfig, RetryBudgetConfigBuilder};
pub use self::config::{
    RetryConfig, RetryConfigBuilder, DEFAULT_MAX_ATTEMPTS, DEFAULT_WAIT_DURATION,
};
pub use self::event::{RetryCause, RetryEvent, RetryEventKind};
// The retry's waits: the type lives in `crate::interval`, shared with the circuit
// breaker's OPEN backoff, and is re-exported here where retry users look for it.
pub use self::metrics::RetryMetrics;
pub use crate::interval::{IntervalFunction, DEFAULT_MULTIPLIER, DEFAULT_RANDOMIZATION_FACTOR};

use self::context::{Class, Context, Verdict};
use self::metrics::Counters;
use self::metrics::Refusal;
use crate::clock::{Clock, SharedClock, SystemClock};
use crate::error::{Error, SharedName};
use crate::event::{EventPublisher, EventStream};
use crate::shadow::ShadowSlot;
use crate::trace;

/// A named retry policy with its metrics and events; a cheap `Clone` handle.
///
/// Error and result types are chosen per call, not per instance: one retry may
/// serve call sites with different `T` and `E` (they must be `'static`, so the
/// type-erased predicates can recognise them).
#[derive(Clone)]
pub struct Retry {
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    name: Arc<str>,
    /// The name every refusal carries (built once; see [`SharedName`]).
    refusal_name: SharedName,
    config: RetryConfig,
    clock: SharedClock,
    counters: Counters,
    events: EventPublisher<RetryEvent>,
    /// Set once an error met predicates all written for other types (traced once).
    warned_foreign: AtomicBool,
    /// The shadow attached to this retry (see [`shadow`]).
    shadow: ShadowSlot<Retry>,
    /// Whether this retry is itself a shadow, and what only a shadow counts.
    is_shadow: bool,
    shadow_counts: shadow::ShadowCounts,
}

impl Retry {
    /// A retry sleeping on the system clock.
    pub fn new(name: impl Into<Arc<str>>, config: RetryConfig) -> Self {
        Self::with_clock(name, config, SystemClock)
    }

    /// A retry whose backoffs wait on `clock`: a
    /// [`ManualClock`](crate::clock::ManualClock) advances instead of sleeping,
    /// a [`TokioClock`](crate::clock::TokioClock) follows paused tokio time.
    pub fn with_clock(name: impl Into<Arc<str>>, config: RetryConfig, clock: impl Clock) -> Self {
        Self::build(name.into(), config, SharedClock::new(clock), false)
    }

    fn build(name: Arc<str>, config: RetryConfig, clock: SharedClock, is_shadow: bool) -> Self {
        Retry {
            inner: Arc::new(Inner {
                refusal_name: SharedName::new(Arc::clone(&name)),
                name,
                config,
                clock,
                counters: Counters::default(),
                events: EventPublisher::default(),
                warned_foreign: AtomicBool::new(false),
                shadow: ShadowSlot::default(),
                is_shadow,
                shadow_counts: shadow::ShadowCounts::default(),
            }),
        }
    }

    /// The retry's name.
    #[inline]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The retry's configuration.
    #[inline]
    pub fn config(&self) -> &RetryConfig {
        &self.inner.config
    }

    /// A snapshot of the counters.
    pub fn metrics(&self) -> RetryMetrics {
        self.inner.counters.snapshot()
    }

    /// Every event published from now on.
    pub fn subscribe(&self) -> EventStream<RetryEvent> {
        self.inner.events.subscribe()
    }

    /// Calls `f` until it succeeds or the configuration says stop, sleeping the
    /// current thread between attempts (through the retry's clock).
    ///
    /// ```
    /// use resil_core::retry::{Retry, RetryConfig};
    /// use resil_core::Error;
    ///
    /// let retry = Retry::new("once", RetryConfig::builder().max_attempts(1).build().unwrap());
    /// let out: Result<(), Error<&str>> = retry.call(|| Err("boom"));
    /// assert_eq!(out, Err(Error::Call("boom")));
    /// ```
    #[inline]
    pub fn call<T, E, F>(&self, f: F) -> Result<T, Error<E>>
    where
        F: FnMut() -> Result<T, E>,
        T: 'static,
        E: 'static,
    {
        self.own_budget().call(f)
    }

    /// Like [`call`](Self::call), for a closure that is itself protected by resil
    /// primitives and returns `resil::Error<E>`: `Error::Call(e)` is classified
    /// like an error of `call`; a refusal is retried only if
    /// [`retry_on_rejection`](RetryConfigBuilder::retry_on_rejection) allows it
    /// (by default only timeouts), and is otherwise returned at once.
    ///
    /// ```
    /// use resil_core::circuit_breaker::State;
    /// use resil_core::error::CallNotPermitted;
    /// use resil_core::retry::{Retry, RetryConfig};
    /// use resil_core::{Error, ErrorKind};
    ///
    /// let retry = Retry::new("inventory", RetryConfig::default());
    /// let mut attempts = 0;
    /// let out: Result<(), Error<std::io::Error>> = retry.call_nested(|| {
    ///     attempts += 1;
    ///     Err(CallNotPermitted::new("inventory", State::Open).into())
    /// });
    /// assert_eq!(out.unwrap_err().kind(), ErrorKind::CallNotPermitted);
    /// assert_eq!(attempts, 1); // an open breaker is not retried
    /// ```
    #[inline]
    pub fn call_nested<T, E, F>(&self, f: F) -> Result<T, Error<E>>
    where
        F: FnMut() -> Result<T, Error<E>>,
        T: 'static,
        E: 'static,
    {
        self.own_budget().call_nested(f)
    }

    /// [`call_nested`](Self::call_nested) without the attempts' spans: the
    /// same loop, for `benches/tracing.rs` to measure what the spans cost
    /// beside it. Not part of the API.
    #[doc(hidden)]
    #[inline]
    pub fn call_nested_without_spans<T, E, F>(&self, f: F) -> Result<T, Error<E>>
    where
        F: FnMut() -> Result<T, Error<E>>,
        T: 'static,
        E: 'static,
    {
        self.run::<false, _, _, _>(self.inner.config.budget(), f, context::nested)
            .unwrap_or_else(|refusal| Err(self.inner.refusal(refusal)))
    }

    /// The sync retry loop: the outcome of the last attempt, or why the retry
    /// stopped without one.
    ///
    /// With `TRACED`, whether the attempts get spans is decided once, here,
    /// as the call begins: when no subscriber can want an INFO span, the loop
    /// that runs is the one without any span code (with a span entered around
    /// each attempt, even a disabled one, the loop cost 5 ns more a call in
    /// `benches/tracing.rs`); otherwise the loop with spans runs, out of line.
    /// `f` is called from both loops: the macros' expansion marks its
    /// closures `#[inline(always)]` so that each loop inlines it.
    #[inline]
    fn run<'a, const TRACED: bool, T, R, F>(
        &'a self,
        budget: Option<&'a RetryBudget>,
        f: F,
        class: impl Fn(&R) -> Class<'_>,
    ) -> Result<Result<T, R>, Refusal>
    where
        F: FnMut() -> Result<T, R>,
        T: 'static,
    {
        if TRACED && trace::info_enabled() {
            self.run_spanned(budget, f, class)
        } else {
            self.attempts::<false, T, R, F>(budget, f, class)
        }
    }

    /// [`attempts`](Self::attempts) with a span per attempt, out of line.
    #[inline(never)]
    fn run_spanned<'a, T, R, F>(
        &'a self,
        budget: Option<&'a RetryBudget>,
        f: F,
        class: impl Fn(&R) -> Class<'_>,
    ) -> Result<Result<T, R>, Refusal>
    where
        F: FnMut() -> Result<T, R>,
        T: 'static,
    {
        self.attempts::<true, T, R, F>(budget, f, class)
    }

    /// The attempts themselves; `SPANS` gives each one a span.
    #[inline]
    fn attempts<'a, const SPANS: bool, T, R, F>(
        &'a self,
        budget: Option<&'a RetryBudget>,
        mut f: F,
        class: impl Fn(&R) -> Class<'_>,
    ) -> Result<Result<T, R>, Refusal>
    where
        F: FnMut() -> Result<T, R>,
        T: 'static,
    {
        let mut cx = Context::new(&self.inner, budget);
        loop {
            cx.begin_attempt()?;
            let span = attempt_span::<SPANS>(&self.inner, cx.attempts());
            // `f` called here, not through `in_scope(&mut f)`: through the
            // `&mut F` shim the stack was not inlined into the loop.
            let entered = span.enter();
            let outcome = f();
            drop(entered);
            if !span.is_disabled() {
                traced(&span, &outcome, &class);
            }
            match cx.judge(&outcome, &class, by_predicates) {
                Verdict::Return => return Ok(outcome),
                Verdict::Refuse(refusal) => {
                    cx.discard(outcome);
                    return Err(refusal);
                }
                Verdict::Wait(wait) => {
                    cx.discard(outcome);
                    if !wait.is_zero() {
                        self.inner.clock.sleep(wait);
                    }
                }
            }
        }
    }

    /// Calls `f` and awaits its future until one succeeds or the configuration
    /// says stop, awaiting the clock's timer between attempts (no thread is
    /// blocked).
    ///
    /// Dropping the returned future cancels the call: the attempt or backoff in
    /// progress is dropped and the call is counted in
    /// [`RetryMetrics::cancelled_calls`] with the attempts it started.
    ///
    /// ```
    /// use resil_core::clock::TokioClock;
    /// use resil_core::retry::{Retry, RetryConfig};
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let retry = Retry::with_clock("inventory", RetryConfig::default(), TokioClock::new());
    /// let mut calls = 0;
    /// let out = retry
    ///     .call_async(|| {
    ///         calls += 1;
    ///         let n = calls;
    ///         async move { if n < 2 { Err("timeout") } else { Ok(n) } }
    ///     })
    ///     .await;
    /// assert_eq!(out.unwrap(), 2);
    /// # }
    /// ```
    #[inline]
    pub fn call_async<'a, T, E, F, Fut>(
        &'a self,
        f: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + 'a
    where
        F: FnMut() -> Fut + 'a,
        Fut: Future<Output = Result<T, E>> + 'a,
        T: 'static,
        E: 'static,
    {
        self.own_budget().call_async(f)
    }

    /// Like [`call_async`](Self::call_async), for a closure whose futures are
    /// themselves protected by resil primitives (see [`call_nested`](Self::call_nested)).
    #[inline]
    pub fn call_async_nested<'a, T, E, F, Fut>(
        &'a self,
        f: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + 'a
    where
        F: FnMut() -> Fut + 'a,
        Fut: Future<Output = Result<T, Error<E>>> + 'a,
        T: 'static,
        E: 'static,
    {
        self.own_budget().call_async_nested(f)
    }

    /// [`call_async_nested`](Self::call_async_nested) for a caller that
    /// knows more of its values than the configuration can: `judge` sees
    /// each attempt's `Ok` value first and may call it a failure, retried
    /// as a [`retry_on_result`](RetryConfigBuilder::retry_on_result) match
    /// is (with its own wait, or the interval's), or a failure not worth
    /// waiting for ([`ResultVerdict::Stop`]). Everything else is decided by
    /// the configuration, exactly as for `call_async_nested`: the error
    /// predicates, the rejection rule, the result predicates for a value
    /// `judge` leaves to them, the attempts, the budget and the deadline.
    ///
    /// The client layers call it with their classifier: a 503 is a failed
    /// result, its `Retry-After` the wait, and when the attempts run out
    /// the last response is the answer.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resil_core::clock::TokioClock;
    /// use resil_core::retry::{ResultVerdict, Retry, RetryConfig};
    /// use resil_core::Error;
    ///
    /// # #[tokio::main(flavor = "current_thread", start_paused = true)]
    /// # async fn main() {
    /// let retry = Retry::with_clock("quotes", RetryConfig::default(), TokioClock::new());
    /// let start = tokio::time::Instant::now();
    /// let mut status = [503, 200].into_iter();
    /// let out: Result<u16, Error<std::io::Error>> = retry
    ///     .call_async_nested_judged(
    ///         || std::future::ready(Ok(status.next().unwrap())),
    ///         // A 503 asks for two seconds.
    ///         |s: &u16| match s {
    ///             503 => ResultVerdict::Retry(Some(Duration::from_secs(2))),
    ///             _ => ResultVerdict::Predicates,
    ///         },
    ///     )
    ///     .await;
    /// assert_eq!(out.unwrap(), 200);
    /// assert_eq!(start.elapsed(), Duration::from_secs(2));
    /// # }
    /// ```
    #[inline]
    pub fn call_async_nested_judged<'a, T, E, F, Fut>(
        &'a self,
        f: F,
        judge: impl Fn(&T) -> ResultVerdict + 'a,
    ) -> impl Future<Output = Result<T, Error<E>>> + 'a
    where
        F: FnMut() -> Fut + 'a,
        Fut: Future<Output = Result<T, Error<E>>> + 'a,
        T: 'static,
        E: 'static,
    {
        self.own_budget().call_async_nested_judged(f, judge)
    }

    /// [`call_async_nested`](Self::call_async_nested) without the attempts'
    /// spans: the same loop, for `benches/tracing.rs` to measure what the
    /// spans cost beside it. Not part of the API.
    #[doc(hidden)]
    #[inline]
    pub fn call_async_nested_without_spans<'a, T, E, F, Fut>(
        &'a self,
        f: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + 'a
    where
        F: FnMut() -> Fut + 'a,
        Fut: Future<Output = Result<T, Error<E>>> + 'a,
        T: 'static,
        E: 'static,
    {
        self.run_async::<false, _, _, _, _, _>(
            self.inner.config.budget(),
            f,
            context::nested,
            by_predicates,
            |retry, exit| exit.unwrap_or_else(|refusal| Err(retry.refusal(refusal))),
        )
    }

    /// The async retry loop, deciding exactly as [`run`](Self::run) does.
    /// `exit` turns the outcome of the last attempt (or the refusal that
    /// stopped the retry) into the caller's result, inside the same future.
    ///
    /// An `async` block rather than an `async fn`: an `async fn` moves its
    /// arguments into the body's locals on the first poll, which, for a
    /// future living in memory (in a task, or inside a composed stack),
    /// copies them at once just after they were stored field by field: a load
    /// stalled on store forwarding, measured at 6 ns a call. The block uses
    /// its captures where they lie.
    #[allow(clippy::manual_async_fn)] // an `async fn` is what this avoids (above)
    #[inline]
    fn run_async<'a, const TRACED: bool, T, R, F, Fut, O>(
        &'a self,
        budget: Option<&'a RetryBudget>,
        mut f: F,
        class: impl Fn(&R) -> Class<'_> + 'a,
        result: impl Fn(&T) -> ResultVerdict + 'a,
        exit: impl FnOnce(&Inner, Result<Result<T, R>, Refusal>) -> O + 'a,
    ) -> impl Future<Output = O> + 'a
    where
        F: FnMut() -> Fut + 'a,
        Fut: Future<Output = Result<T, R>> + 'a,
        T: 'static,
    {
        async move {
            let mut cx = Context::new(&self.inner, budget);
            // As in `run`: whether the attempts get spans is decided once, as
            // the call begins; without, an attempt is `f().await` and nothing
            // more (a span entered on every poll, even a disabled one, cost
            // 14 ns a call in `benches/tracing.rs`); with, the attempt's
            // future is polled out of line inside its span.
            let spans = TRACED && trace::info_enabled();
            loop {
                if let Err(refusal) = cx.begin_attempt() {
                    return exit(&self.inner, Err(refusal));
                }
                // The outcome is dropped before the backoff, so it is not held
                // across the await (nor required to be `Send` for it).
                let wait = {
                    let outcome = if spans {
                        let span = trace::retry_attempt(&self.inner.name, cx.attempts());
                        // Entered while the attempt's future is made, too.
                        let attempt = {
                            let _entered = span.enter();
                            f()
                        };
                        SpannedAttempt::new(span, &class, attempt).await
                    } else {
                        f().await
                    };
                    match cx.judge(&outcome, &class, &result) {
                        Verdict::Return => return exit(&self.inner, Ok(outcome)),
                        Verdict::Refuse(refusal) => {
                            cx.discard(outcome);
                            return exit(&self.inner, Err(refusal));
                        }
                        Verdict::Wait(wait) => {
                            cx.discard(outcome);
                            wait
                        }
                    }
                };
                if !wait.is_zero() {
                    self.inner.clock.sleep_async(wait).await;
                }
            }
        }
    }
}

/// What a caller that knows its values says of one (see
/// [`Retry::call_async_nested_judged`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ResultVerdict {
    /// Leave it to the configuration's
    /// [`retry_on_result`](RetryConfigBuilder::retry_on_result) predicates
    /// (a success unless one accepts it).
    Predicates,
    /// A failed result, retried as a `retry_on_result` match is: after this
    /// wait, or with `None` after the configuration's (the interval
    /// bi-function for the value's type, else the interval function). When
    /// the attempts run out on it, the value is the answer (or, with
    /// [`fail_after_max_attempts`](RetryConfigBuilder::fail_after_max_attempts),
    /// `MaxRetriesExceeded`).
    Retry(Option<Duration>),
    /// A failed result not worth another attempt (it asks for a wait longer
    /// than the caller allows): the call ends on it as if its attempts had
    /// run out.
    Stop,
}

/// The verdict of every caller but the client layers: the configuration's
/// result predicates decide.
#[inline(always)]
fn by_predicates<T>(_: &T) -> ResultVerdict {
    ResultVerdict::Predicates
}

impl Retry {
    /// This retry drawing on `budget` instead of its own
    /// ([`RetryConfigBuilder::budget`]) for the calls made through the
    /// result: a key's budget of a
    /// [`KeyedRetryBudget`](crate::keyed::KeyedRetryBudget), so one noisy
    /// tenant spending its retries leaves the others theirs. Everything else
    /// (attempts, waits, predicates, metrics, events) is the retry's.
    ///
    /// ```
    /// use resil_core::retry::{Retry, RetryBudget, RetryBudgetConfig, RetryConfig};
    /// use resil_core::{Error, ErrorKind};
    ///
    /// let retry = Retry::new("api", RetryConfig::builder().wait_duration(std::time::Duration::ZERO).build().unwrap());
    /// let none = RetryBudgetConfig::builder().min_retries_per_second(0).retry_ratio(0.0).build().unwrap();
    /// let spent = RetryBudget::new(none);
    /// let out: Result<(), Error<&str>> = retry.with_budget(&spent).call(|| Err("boom"));
    /// assert_eq!(out.unwrap_err().kind(), ErrorKind::RetryBudgetExhausted);
    /// ```
    #[inline]
    pub fn with_budget<'a>(&'a self, budget: &'a RetryBudget) -> OnBudget<'a> {
        OnBudget {
            retry: self,
            budget: Some(budget),
        }
    }

    /// This retry on `budget`, or on its own (if any) when `None`: a caller
    /// that has a key's budget for some calls only.
    #[inline]
    pub fn with_budget_or_own<'a>(&'a self, budget: Option<&'a RetryBudget>) -> OnBudget<'a> {
        OnBudget {
            retry: self,
            budget: budget.or(self.inner.config.budget()),
        }
    }

    /// This retry on its own budget (or none).
    #[inline(always)]
    fn own_budget(&self) -> OnBudget<'_> {
        self.with_budget_or_own(None)
    }
}

/// A [`Retry`] drawing on another budget than its own, from
/// [`Retry::with_budget`]: the same four ways to call.
#[derive(Clone, Copy)]
pub struct OnBudget<'a> {
    retry: &'a Retry,
    budget: Option<&'a RetryBudget>,
}

impl<'a> OnBudget<'a> {
    /// [`Retry::call`] on this budget.
    #[inline]
    pub fn call<T, E, F>(self, f: F) -> Result<T, Error<E>>
    where
        F: FnMut() -> Result<T, E>,
        T: 'static,
        E: 'static,
    {
        let retry = self.retry;
        match retry.run::<true, _, _, _>(self.budget, f, context::plain) {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(Error::Call(error)),
            Err(refusal) => Err(retry.inner.refusal(refusal)),
        }
    }

    /// [`Retry::call_nested`] on this budget.
    #[inline]
    pub fn call_nested<T, E, F>(self, f: F) -> Result<T, Error<E>>
    where
        F: FnMut() -> Result<T, Error<E>>,
        T: 'static,
        E: 'static,
    {
        let retry = self.retry;
        retry
            .run::<true, _, _, _>(self.budget, f, context::nested)
            .unwrap_or_else(|refusal| Err(retry.inner.refusal(refusal)))
    }

    /// [`Retry::call_async`] on this budget.
    #[inline]
    pub fn call_async<T, E, F, Fut>(self, f: F) -> impl Future<Output = Result<T, Error<E>>> + 'a
    where
        F: FnMut() -> Fut + 'a,
        Fut: Future<Output = Result<T, E>> + 'a,
        T: 'static,
        E: 'static,
    {
        self.retry.run_async::<true, _, _, _, _, _>(
            self.budget,
            f,
            context::plain,
            by_predicates,
            |retry, exit| match exit {
                Ok(Ok(value)) => Ok(value),
                Ok(Err(error)) => Err(Error::Call(error)),
                Err(refusal) => Err(retry.refusal(refusal)),
            },
        )
    }

    /// [`Retry::call_async_nested`] on this budget.
    #[inline]
    pub fn call_async_nested<T, E, F, Fut>(
        self,
        f: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + 'a
    where
        F: FnMut() -> Fut + 'a,
        Fut: Future<Output = Result<T, Error<E>>> + 'a,
        T: 'static,
        E: 'static,
    {
        self.call_async_nested_judged(f, by_predicates)
    }

    /// [`Retry::call_async_nested_judged`] on this budget.
    #[inline]
    pub fn call_async_nested_judged<T, E, F, Fut>(
        self,
        f: F,
        judge: impl Fn(&T) -> ResultVerdict + 'a,
    ) -> impl Future<Output = Result<T, Error<E>>> + 'a
    where
        F: FnMut() -> Fut + 'a,
        Fut: Future<Output = Result<T, Error<E>>> + 'a,
        T: 'static,
        E: 'static,
    {
        self.retry.run_async::<true, _, _, _, _, _>(
            self.budget,
            f,
            context::nested,
            judge,
            |retry, exit| exit.unwrap_or_else(|refusal| Err(retry.refusal(refusal))),
        )
    }

    /// The retry these calls run on.
    #[inline]
    pub fn retry(self) -> &'a Retry {
        self.retry
    }
}

impl fmt::Debug for OnBudget<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OnBudget")
            .field("retry", &self.retry.inner.name)
            .field("budget", &self.budget)
            .finish()
    }
}

/// The span of an attempt about to begin; the loop without spans makes
/// none.
#[inline(always)]
fn attempt_span<const SPANS: bool>(retry: &Inner, attempt: u32) -> trace::LeanSpan {
    if SPANS {
        trace::retry_attempt(&retry.name, attempt)
    } else {
        trace::LeanSpan::none()
    }
}

/// Records a failed attempt on its (enabled) span: `error.type`, and the
/// refusal event when a primitive inside refused it.
#[cold]
#[inline(never)]
fn traced<T, R>(span: &trace::LeanSpan, outcome: &Result<T, R>, class: &impl Fn(&R) -> Class<'_>) {
    if let Err(error) = outcome {
        match class(error) {
            Class::Call(error, type_name) => trace::attempt_failed(span.span(), error, type_name),
            Class::Rejection(kind, rejection) => {
                trace::attempt_refused(span.span(), kind, rejection)
            }
        }
    }
}

pin_project! {
    /// An async attempt in its span: entered on each poll, given the
    /// attempt's outcome as it completes; polled out of line, so the retry
    /// loop without spans carries none of this code.
    #[must_use = "futures do nothing unless polled"]
    struct SpannedAttempt<'c, C, Fut> {
        span: trace::LeanSpan,
        class: &'c C,
        #[pin]
        fut: Fut,
    }
}

impl<'c, C, Fut> SpannedAttempt<'c, C, Fut> {
    fn new(span: trace::LeanSpan, class: &'c C, fut: Fut) -> Self {
        SpannedAttempt { span, class, fut }
    }
}

impl<C, Fut, T, R> Future for SpannedAttempt<'_, C, Fut>
where
    Fut: Future<Output = Result<T, R>>,
    C: Fn(&R) -> Class<'_>,
{
    type Output = Result<T, R>;

    #[inline(never)]
    fn poll(self: Pin<&mut Self>, cx: &mut task::Context<'_>) -> Poll<Result<T, R>> {
        let this = self.project();
        let outcome = {
            let _entered = this.span.enter();
            ready!(this.fut.poll(cx))
        };
        if !this.span.is_disabled() {
            traced(this.span, &outcome, *this.class);
        }
        Poll::Ready(outcome)
    }
}

impl fmt::Debug for Retry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Retry")
            .field("name", &&*self.inner.name)
            .field("config", &self.inner.config)
            .field("metrics", &self.metrics())
            .finish()
    }
}

#[cfg(test)]
mod tests;
