//! Hedging: race extra attempts against a slow one and keep the first good
//! answer (Polly v8's hedging strategy).
//!
//! A [`Hedging`] starts the first attempt at once. If it has not finished
//! after [`delay`](HedgingConfig::delay), or as soon as it *fails*, a hedged
//! attempt starts, and so on up to
//! [`max_hedged_attempts`](HedgingConfig::max_hedged_attempts) extra attempts
//! (the delay counts from the latest attempt's start). The first outcome that
//! is acceptable wins: every other attempt still running is dropped at once,
//! so whatever permits it held (a bulkhead slot, a breaker probe, a
//! connection) are given back before the caller sees the result. If every
//! attempt fails, the outcome of the one that failed last is returned.
//!
//! Hedging cuts tail latency for idempotent reads against replicated
//! services. It sends more load downstream; bound that with a shared
//! [`RetryBudget`](crate::retry::RetryBudget): each call deposits into it,
//! each hedge withdraws a retry, and a hedge the budget cannot pay for is
//! simply not started (the attempts already running go on).
//!
//! Attempts run *inside the caller's future*, not on spawned tasks: no runtime
//! is needed except for the delay's timer (the clock's, tokio's by default),
//! and dropping the call drops every attempt.
//!
//! ```
//! use std::time::Duration;
//! use resil_core::clock::TokioClock;
//! use resil_core::hedging::{Hedging, HedgingConfig};
//!
//! # #[tokio::main(flavor = "current_thread", start_paused = true)]
//! # async fn main() {
//! let quotes = Hedging::with_clock(
//!     "quotes",
//!     HedgingConfig::builder().delay(Duration::from_millis(50)).build().unwrap(),
//!     TokioClock::new(),
//! );
//! let started = tokio::time::Instant::now();
//! let quote = quotes
//!     .call_async(|attempt| async move {
//!         // The first replica hangs for a second; the hedge answers in 10 ms.
//!         let took = if attempt == 0 { 1000 } else { 10 };
//!         tokio::time::sleep(Duration::from_millis(took)).await;
//!         Ok::<_, std::io::Error>(format!("quote from replica {attempt}"))
//!     })
//!     .await;
//! assert_eq!(quote.unwrap(), "quote from replica 1");
//! assert_eq!(started.elapsed(), Duration::from_millis(60));
//! let m = quotes.metrics();
//! assert_eq!((m.hedges_started(), m.won_by_hedge()), (1, 1));
//! # }
//! ```
//!
//! # What is acceptable
//!
//! By default (Polly's), every `Ok` value is accepted and every error is a
//! failure that starts the next attempt at once. Narrow it with
//! [`handle_error`](HedgingConfigBuilder::handle_error) (an error none of its
//! predicates handles is accepted: a `404` is an answer, not a reason to ask
//! again) and widen it with
//! [`handle_result`](HedgingConfigBuilder::handle_result). In
//! [`call_async_nested`](Hedging::call_async_nested), a refusal by a primitive
//! inside the attempt (`Timeout`, `BulkheadFull`, `CallNotPermitted`, …) is a
//! failure unless a predicate written for that rejection struct says
//! otherwise: a refusal never beats an attempt still running.
//!
//! # Order
//!
//! Resilience4j's fixed order is Retry( CircuitBreaker( RateLimiter(
//! TimeLimiter( Bulkhead( call ))))). Hedging belongs **just inside Retry**:
//! Retry( **Hedging**( CircuitBreaker( RateLimiter( TimeLimiter( Bulkhead(
//! call )))))), so that every attempt, primary or hedge, passes through its
//! own breaker permit, rate-limiter permission, timeout and bulkhead slot.
//! What that changes:
//!
//! | statistic | hedging inside the breaker, limiter, timeout, bulkhead (this order) | hedging outside Retry |
//! |---|---|---|
//! | breaker samples | one per *finished* attempt; a dropped loser records nothing (its permit is dropped unrecorded) | one per finished attempt of every retry |
//! | rate-limiter permissions | one per attempt started: hedges are real load | the same, times the retry's attempts |
//! | bulkhead slots | one per running attempt; a loser's slot returns when the winner finishes | the same |
//! | time limiter | per attempt: a timed-out attempt is a failure and starts the next hedge at once | per attempt |
//! | retry attempts | one per hedged group: the retry sees only the winner (or the last failure) | hedging re-runs whole retry loops: load multiplies (attempts × (1 + hedges)) |
//!
//! The worst-case load per logical call in this order is
//! `max_attempts × (1 + max_hedged_attempts)`; share one
//! [`RetryBudget`](crate::retry::RetryBudget) between the retry and the
//! hedging to cap both together.
//!
//! # Deadlines
//!
//! Inside [`deadline::within`](crate::deadline::within), no hedge starts once
//! the budget is spent; the attempts already running keep going until the
//! deadline drops the whole call.
//!
//! # Cost
//!
//! A call whose first attempt is ready at once allocates nothing: the first
//! attempt is polled in place, and the outcome costs one relaxed counter
//! increment. A call that waits arms one timer (a boxed sleep from the
//! clock), and each hedge is boxed, on the slow path only.

mod config;
mod event;
mod future;
mod metrics;

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

pub use self::config::{HedgingConfig, HedgingConfigBuilder, DEFAULT_DELAY, MAX_HEDGED_ATTEMPTS};
pub use self::event::{HedgingEvent, HedgingEventKind};
pub use self::metrics::HedgingMetrics;

use self::future::Hedged;
use self::metrics::Counters;
use crate::clock::{Clock, SharedClock, SystemClock};
use crate::error::Error;
use crate::event::{EventPublisher, EventStream};

/// A named hedging policy with its metrics and events; a cheap `Clone` handle.
///
/// Error and result types are chosen per call (they must be `'static`, so the
/// type-erased predicates can recognise them). Hedging needs futures: there is
/// no sync `call`.
#[derive(Clone)]
pub struct Hedging {
    inner: Arc<Inner>,
}

/// The state every handle shares.
pub(crate) struct Inner {
    name: Arc<str>,
    config: HedgingConfig,
    clock: SharedClock,
    counters: Counters,
    events: EventPublisher<HedgingEvent>,
}

impl Hedging {
    /// A hedging instance timing its delays on the system clock (tokio's timer).
    pub fn new(name: impl Into<Arc<str>>, config: HedgingConfig) -> Self {
        Self::with_clock(name, config, SystemClock)
    }

    /// A hedging instance whose delays run on `clock` (tests inject
    /// [`TokioClock`](crate::clock::TokioClock) with paused tokio time).
    pub fn with_clock(name: impl Into<Arc<str>>, config: HedgingConfig, clock: impl Clock) -> Self {
        Hedging {
            inner: Arc::new(Inner {
                name: name.into(),
                config,
                clock: SharedClock::new(clock),
                counters: Counters::default(),
                events: EventPublisher::default(),
            }),
        }
    }

    /// The instance name, carried by every event.
    #[inline]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The configuration.
    #[inline]
    pub fn config(&self) -> &HedgingConfig {
        &self.inner.config
    }

    /// A snapshot of the counters.
    pub fn metrics(&self) -> HedgingMetrics {
        self.inner.counters.snapshot()
    }

    /// Every event published from now on.
    pub fn subscribe(&self) -> EventStream<HedgingEvent> {
        self.inner.events.subscribe()
    }

    /// Runs `attempt(0)`, and `attempt(1)`, `attempt(2)`, … as hedges when the
    /// delay passes or an attempt fails, returning the first acceptable
    /// outcome (see the [module docs](self)). The argument is the attempt's
    /// number, so a hedge may go to another replica. The call's own error
    /// comes back as `Error::Call`.
    ///
    /// Nothing happens until the returned future is polled. Dropping it drops
    /// every attempt still running.
    #[inline]
    pub fn call_async<'a, T, E, F, Fut>(
        &'a self,
        attempt: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + 'a
    where
        F: FnMut(u32) -> Fut + 'a,
        Fut: Future<Output = Result<T, E>> + 'a,
        T: 'static,
        E: 'static,
    {
        Hedged::new(&self.inner, attempt, plain::<E>, |out: Result<T, E>| {
            out.map_err(Error::Call)
        })
    }

    /// [`call_async`](Self::call_async) for attempts that are themselves
    /// protected (each returns `Result<T, resil::Error<E>>`): `Error::Call(e)`
    /// is judged by the predicates written for `E`, a refusal by those written
    /// for its struct (and is a failure by default), and the result is one
    /// flat `resil::Error<E>`.
    #[inline]
    pub fn call_async_nested<'a, T, E, F, Fut>(
        &'a self,
        attempt: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + 'a
    where
        F: FnMut(u32) -> Fut + 'a,
        Fut: Future<Output = Result<T, Error<E>>> + 'a,
        T: 'static,
        E: 'static,
    {
        Hedged::new(
            &self.inner,
            attempt,
            nested::<E>,
            |out: Result<T, Error<E>>| out,
        )
    }
}

/// What the predicates see of a plain attempt's error: the error itself.
#[inline]
fn plain<E: 'static>(error: &E) -> &dyn Any {
    error
}

/// What the predicates see of a nested attempt's error: the call's own error,
/// or the rejection's struct.
#[inline]
fn nested<E: 'static>(error: &Error<E>) -> &dyn Any {
    error.classified().0
}

impl fmt::Debug for Hedging {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Hedging")
            .field("name", &&*self.inner.name)
            .field("config", &self.inner.config)
            .field("metrics", &self.metrics())
            .finish()
    }
}
