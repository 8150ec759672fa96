//! The circuit breaker handle and its state machine.

use std::any::{type_name, Any};
use std::fmt;
use std::future::{Future, Pending};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use parking_lot::Mutex;

use super::calls::{CallKind, CallTotals, Totals};
use super::config::{
    CircuitBreakerConfig, FailureModel, Outcome, ResultTransition, SlidingWindowType, MIN_OPEN_WAIT,
};
use super::event::{CircuitBreakerEvent, CircuitBreakerEventKind};
use super::metrics::Metrics;
use super::permit::{OwnedPermit, Permit};
use super::shadow::ShadowCounts;
use super::state::Word;
use super::window::{Aggregate, Change, CountWindow, Measurement, TimeWindow, Window};
use super::{IllegalTransition, State};
use crate::clock::{self, Clock, SharedClock};
use crate::error::{CallNotPermitted, Error, SharedName};
use crate::event::{EventPublisher, EventStream};
use crate::guarded::{Acquire, Guarded};
use crate::log::RefusalLog;
use crate::shadow::ShadowSlot;

/// A circuit breaker: stops calling a dependency whose recent calls mostly failed
/// or were slow, and probes it carefully before trusting it again.
///
/// A cheap [`Clone`] handle; clones share one breaker. See the
/// [module docs](super) for the state machine and its costs.
///
/// ```
/// use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
/// use resil_core::Error;
///
/// let config = CircuitBreakerConfig::builder()
///     .sliding_window_size(4)
///     .minimum_number_of_calls(4)
///     .build()
///     .unwrap();
/// let breaker = CircuitBreaker::new("price", config);
/// for _ in 0..4 {
///     let _ = breaker.call(|| Err::<(), _>("downstream failed"));
/// }
/// assert_eq!(breaker.state(), State::Open);
/// let refused = breaker.call(|| Ok::<_, &str>("never runs"));
/// assert!(matches!(refused, Err(Error::CallNotPermitted(r)) if r.state() == State::Open));
/// ```
#[derive(Clone)]
pub struct CircuitBreaker {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// Packed state tag, free probe slots and epoch (see [`Word`]).
    word: AtomicU64,
    /// The count window is full of fast successes (CLOSED / METRICS_ONLY): a
    /// fast success changes nothing and skips the lock.
    clean: AtomicBool,
    slow_nanos: u64,
    /// OPEN: the last instant of the wait (clock nanos); probes are allowed
    /// strictly after it (see [`due`]).
    open_until: AtomicU64,
    /// HALF_OPEN: the last instant of the round's max wait (`u64::MAX`: never).
    half_open_until: AtomicU64,
    /// CLOSED after recovery, ramping up (`warm_up_period`): when the ramp
    /// started and ends (clock nanos), and the calls it has seen.
    ramp_from: AtomicU64,
    ramp_until: AtomicU64,
    ramp_calls: AtomicU64,
    /// A classification found no predicate written for the type it was shown
    /// (reported once per breaker, at debug level).
    untyped_reported: AtomicBool,
    not_permitted: AtomicU64,
    /// The cumulative call timers and refusals (shared with the breakers a
    /// reload builds from this one).
    totals: Arc<Totals>,
    /// Refusals since the last aggregated log line (see [`crate::log`]).
    refusals_logged: RefusalLog,
    pub(crate) inspects_values: bool,
    pub(crate) name: Arc<str>,
    /// The refusals OPEN, HALF_OPEN, FORCED_OPEN and a ramping CLOSED hand
    /// out, built once (see [`SharedName`]).
    refusals: [CallNotPermitted; 4],
    pub(crate) clock: SharedClock,
    pub(crate) config: CircuitBreakerConfig,
    events: EventPublisher<CircuitBreakerEvent>,
    me: Weak<Inner>,
    /// The CLOSED / METRICS_ONLY window: recorded without the lock (see
    /// [`Inner::complete`]), reset under it.
    window: Window,
    /// What opens the breaker on failures (the config's, copied beside the
    /// window: one byte read on the recording path).
    model: FailureModel,
    /// [`FailureModel::Consecutive`]: failures in a row since the last
    /// success (CLOSED / METRICS_ONLY; reset when they are entered).
    run: AtomicU32,
    /// [`FailureModel::Count`]: the instants (clock nanos) of the last
    /// `failure_count_threshold` failures, failure `i` in slot `i % len`
    /// (empty for the other models).
    failure_times: Box<[AtomicU64]>,
    /// [`FailureModel::Count`]: failures recorded since CLOSED was entered
    /// (the ring's never-wrapping cursor).
    failure_cursor: AtomicU64,
    core: Mutex<Core>,
    /// The shadow attached to this breaker (see [`super::shadow`]).
    pub(crate) shadow: ShadowSlot<CircuitBreaker>,
    /// Whether this breaker is itself a shadow: it logs what it would have
    /// done, and its refusals are not logged as refusals.
    pub(crate) is_shadow: bool,
    /// A shadow's own counts (zero on a live breaker).
    pub(crate) shadow_counts: ShadowCounts,
}

/// Everything that changes only under the lock.
struct Core {
    /// The HALF_OPEN round's totals. A round is decided as soon as it holds
    /// `half_open_minimum_number_of_calls` outcomes, so it never needs more than
    /// running totals: no per-probe storage, whatever the permitted count.
    probes: Aggregate,
    shown: Shown,
    ignored: u64,
    /// Counted OPEN periods since the last CLOSED (for the interval function;
    /// see `wait_interval_function_in_open_state`).
    attempts: u32,
    /// METRICS_ONLY publishes threshold events once per state.
    thresholds_reported: bool,
    timer: Option<tokio::task::AbortHandle>,
}

/// Which window the metrics show.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shown {
    Main,
    Probes,
}

#[derive(Clone, Copy)]
enum Timer {
    /// OPEN's wait passed: move to HALF_OPEN.
    OpenToHalfOpen,
    /// HALF_OPEN's max wait passed: move to `transition_to_state_after_wait_duration`.
    HalfOpenExpired,
}

/// Whether a wait whose last instant is `until` has passed at `now`: strictly
/// after, as Resilience4j compares. The one comparison every wait check uses
/// (permission, [`CircuitBreaker::state`], the timers). `until == u64::MAX`
/// never passes, so a clock stuck at its maximum reading cannot make a state
/// expire the instant it is entered.
#[inline]
fn due(now: u64, until: u64) -> bool {
    now > until
}

/// Why a breaker changed state, as its log line says.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Reason {
    /// A new breaker entering its `initial_state`, or a reconfigured one
    /// taking over its predecessor's state: not logged.
    Initial,
    FailureRateExceeded,
    SlowCallRateExceeded,
    BothRatesExceeded,
    /// `transition_on_result` / `transition_on_error` asked for OPEN.
    ResultTransition,
    /// [`FailureModel::Consecutive`]: a run reached its threshold.
    ConsecutiveFailures,
    /// [`FailureModel::Count`]: the failures within the interval reached
    /// their threshold.
    FailureCount,
    /// [`FailureModel::Consecutive`] / [`FailureModel::Count`]: a half-open
    /// probe failed.
    ProbeFailed,
    ProbesPassed,
    OpenWaitElapsed,
    HalfOpenWaitElapsed,
    /// A `transition_to_*` call (an operator's, through a registry).
    Requested,
    Reset,
}

impl Reason {
    fn as_str(self) -> &'static str {
        match self {
            Reason::Initial => "initial state",
            Reason::FailureRateExceeded => "failure rate reached its threshold",
            Reason::SlowCallRateExceeded => "slow-call rate reached its threshold",
            Reason::BothRatesExceeded => "failure and slow-call rates reached their thresholds",
            Reason::ResultTransition => {
                "a result or error asked to open (transition_on_result / transition_on_error)"
            }
            Reason::ConsecutiveFailures => "consecutive failures reached their threshold",
            Reason::FailureCount => "failures within the interval reached their threshold",
            Reason::ProbeFailed => "a half-open probe failed",
            Reason::ProbesPassed => "half-open probes passed",
            Reason::OpenWaitElapsed => "wait duration in open state elapsed",
            Reason::HalfOpenWaitElapsed => "max wait duration in half-open state elapsed",
            Reason::Requested => "requested (transition_to_*)",
            Reason::Reset => "reset",
        }
    }
}

impl CircuitBreaker {
    /// A breaker named `name` (used in errors, events and metrics), timing calls
    /// on the [`CoarseClock`](crate::clock::CoarseClock): one atomic load per
    /// reading, ±1 ms precision. Pass
    /// [`SystemClock`](crate::clock::SystemClock) to
    /// [`with_clock`](Self::with_clock) for nanosecond precision at ~9 ns a
    /// reading.
    pub fn new(name: impl Into<Arc<str>>, config: CircuitBreakerConfig) -> Self {
        Self::with_shared_clock(name.into(), config, SharedClock::coarse())
    }

    /// A breaker that reads `clock` (a [`ManualClock`](crate::clock::ManualClock)
    /// in tests).
    pub fn with_clock(
        name: impl Into<Arc<str>>,
        config: CircuitBreakerConfig,
        clock: impl Clock,
    ) -> Self {
        Self::with_shared_clock(name.into(), config, SharedClock::new(clock))
    }

    fn with_shared_clock(name: Arc<str>, config: CircuitBreakerConfig, clock: SharedClock) -> Self {
        Self::build(name, config, clock, Arc::default(), false)
    }

    fn build(
        name: Arc<str>,
        config: CircuitBreakerConfig,
        clock: SharedClock,
        totals: Arc<Totals>,
        is_shadow: bool,
    ) -> Self {
        let now = clock.now_nanos();
        let window = match config.sliding_window_type {
            SlidingWindowType::CountBased => {
                Window::Count(CountWindow::new(config.sliding_window_size))
            }
            SlidingWindowType::TimeBased => {
                Window::Time(TimeWindow::new(config.sliding_window_size, now))
            }
        };
        let initial = config.initial_state;
        let model = config.failure_model;
        let failure_times: Box<[AtomicU64]> = match model {
            FailureModel::Count => (0..config.failure_count_threshold)
                .map(|_| AtomicU64::new(0))
                .collect(),
            _ => Box::default(),
        };
        let inner = Arc::new_cyclic(|me| Inner {
            word: AtomicU64::new(Word::new(0, State::Closed, 0).0),
            clean: AtomicBool::new(false),
            slow_nanos: clock::nanos(config.slow_call_duration_threshold),
            open_until: AtomicU64::new(0),
            half_open_until: AtomicU64::new(u64::MAX),
            ramp_from: AtomicU64::new(0),
            ramp_until: AtomicU64::new(0),
            ramp_calls: AtomicU64::new(0),
            untyped_reported: AtomicBool::new(false),
            not_permitted: AtomicU64::new(0),
            totals,
            refusals_logged: RefusalLog::new(),
            inspects_values: config.inspects_values(),
            refusals: {
                let name = SharedName::new(Arc::clone(&name));
                [
                    State::Open,
                    State::HalfOpen,
                    State::ForcedOpen,
                    State::Closed,
                ]
                .map(|state| CallNotPermitted::by(&name, state))
            },
            name,
            clock,
            config,
            events: EventPublisher::default(),
            me: me.clone(),
            window,
            model,
            run: AtomicU32::new(0),
            failure_times,
            failure_cursor: AtomicU64::new(0),
            core: Mutex::new(Core {
                probes: Aggregate::default(),
                shown: Shown::Main,
                ignored: 0,
                attempts: 0,
                thresholds_reported: false,
                timer: None,
            }),
            shadow: ShadowSlot::default(),
            is_shadow,
            shadow_counts: ShadowCounts::default(),
        });
        if initial != State::Closed {
            // Nobody can have subscribed yet, so entering the initial state
            // publishes nothing.
            let mut core = inner.core.lock();
            inner.transition_locked(&mut core, initial, None, Reason::Initial);
        }
        CircuitBreaker { inner }
    }

    /// The breaker's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The breaker's configuration.
    pub fn config(&self) -> &CircuitBreakerConfig {
        &self.inner.config
    }

    /// The current state. Applies a transition that is due by time and would
    /// have been made by a timer: OPEN → HALF_OPEN when the automatic transition
    /// is enabled and the wait has passed, HALF_OPEN → OPEN when
    /// `max_wait_duration_in_half_open_state` has passed. A plain OPEN stays OPEN
    /// until the next permission request, as in Resilience4j.
    pub fn state(&self) -> State {
        let inner = &*self.inner;
        let w = inner.load();
        match w.state() {
            State::Open
                if inner.config.automatic_transition
                    && due(
                        inner.clock.precise_now_nanos(),
                        inner.open_until.load(Ordering::Acquire),
                    ) =>
            {
                inner.fire(w.epoch(), Timer::OpenToHalfOpen);
                inner.load().state()
            }
            State::HalfOpen
                if due(
                    inner.clock.precise_now_nanos(),
                    inner.half_open_until.load(Ordering::Acquire),
                ) =>
            {
                inner.fire(w.epoch(), Timer::HalfOpenExpired);
                inner.load().state()
            }
            state => state,
        }
    }

    /// How long an OPEN breaker still refuses calls before it lets probes
    /// through (`None` in every other state, FORCED_OPEN included: that wait
    /// is an operator's). What an HTTP server puts in `Retry-After` when the
    /// breaker refuses a request.
    pub fn remaining_open_wait(&self) -> Option<Duration> {
        let inner = &*self.inner;
        match inner.load().state() {
            State::Open => {
                let until = inner.open_until.load(Ordering::Acquire);
                Some(Duration::from_nanos(
                    until.saturating_sub(inner.clock.precise_now_nanos()),
                ))
            }
            _ => None,
        }
    }

    /// A snapshot of the current window and counters (see [`Metrics`]).
    pub fn metrics(&self) -> Metrics {
        let state = self.state();
        let inner = &*self.inner;
        let core = inner.core.lock();
        let now = inner.clock.now_nanos();
        let (total, minimum) = match core.shown {
            Shown::Main => (
                inner.window.total(now),
                inner.config.minimum_number_of_calls(),
            ),
            Shown::Probes => (
                core.probes,
                inner.config.half_open_minimum_number_of_calls(),
            ),
        };
        Metrics {
            state,
            calls: total.calls,
            failed: total.failed,
            slow: total.slow,
            slow_failed: total.slow_failed,
            minimum: u64::from(minimum),
            not_permitted: inner.not_permitted.load(Ordering::Relaxed),
            ignored: core.ignored,
            consecutive_failures: inner.run.load(Ordering::Relaxed),
            failures_in_interval: inner.failures_in_interval(now),
        }
    }

    /// Everything counted since the breaker was created, never reset by a
    /// transition (see [`CallTotals`]): the call timers Resilience4j
    /// publishes as `resilience4j_circuitbreaker_calls_seconds{kind}` and
    /// the not-permitted counter. Together they add up to every call the
    /// breaker was asked to make.
    ///
    /// ```
    /// use resil_core::circuit_breaker::{CallKind, CircuitBreaker, CircuitBreakerConfig};
    ///
    /// let breaker = CircuitBreaker::new("price", CircuitBreakerConfig::default());
    /// let _ = breaker.call(|| Ok::<_, &str>(1));
    /// let _ = breaker.call(|| Err::<u32, _>("down"));
    /// breaker.transition_to_forced_open().unwrap();
    /// let _ = breaker.call(|| Ok::<_, &str>(1));
    /// let totals = breaker.call_totals();
    /// assert_eq!(totals.timer(CallKind::Successful).count(), 1);
    /// assert_eq!(totals.timer(CallKind::Failed).count(), 1);
    /// assert_eq!(totals.not_permitted(), 1);
    /// assert_eq!(totals.calls(), 3);
    /// ```
    pub fn call_totals(&self) -> CallTotals {
        self.inner.totals.read(self.inner.clock.now_nanos())
    }

    /// Keeps a percentile histogram of call durations from now on
    /// (Micrometer's buckets from 1 ms to 30 s, see
    /// [`histogram_bounds`](super::histogram_bounds)), shown by
    /// [`CallTimer::buckets`](super::CallTimer::buckets). Off by default: it costs a bucket search and
    /// a shared atomic add per call. Stays on for the breakers a reload
    /// builds from this one.
    pub fn enable_call_histogram(&self) {
        self.inner.totals.enable_histogram();
    }

    /// Whether [`enable_call_histogram`](Self::enable_call_histogram) was called.
    pub fn call_histogram_enabled(&self) -> bool {
        self.inner.totals.histogram_enabled()
    }

    /// Subscribes to this breaker's events. Without subscribers, publishing
    /// costs one atomic load and no event is built.
    pub fn subscribe(&self) -> EventStream<CircuitBreakerEvent> {
        self.inner.events.subscribe()
    }

    /// Sets the tap that sees this breaker's notable events (transitions,
    /// resets, thresholds crossed) synchronously, while the transition is
    /// decided, subscribed or not; per-call events never reach it and cost
    /// nothing more. One tap per breaker: `false` if one is set already. See
    /// [`EventPublisher::tap_notable`] for what the tap must not do.
    pub fn tap_notable(&self, tap: impl Fn(&CircuitBreakerEvent) + Send + Sync + 'static) -> bool {
        self.inner.events.tap_notable(tap)
    }

    /// Asks for permission to make one call. CLOSED, DISABLED and METRICS_ONLY
    /// always permit (a breaker never limits concurrency); OPEN permits nothing
    /// until strictly after its wait, then moves to HALF_OPEN; HALF_OPEN hands out
    /// exactly `permitted_number_of_calls_in_half_open_state` probe permits;
    /// FORCED_OPEN permits nothing. A refusal is counted as not permitted.
    // Always inlined: the permit is three words, which a call would return
    // through memory, and copying it back out stalls on store forwarding.
    #[inline(always)]
    pub fn try_acquire_permission(&self) -> Result<Permit<'_>, CallNotPermitted> {
        let inner = &*self.inner;
        let w = inner.load();
        if w.passes_unguarded() {
            Ok(Permit::new(inner, w, inner.start(w)))
        } else {
            inner.acquire_slow(w)
        }
    }

    /// [`try_acquire_permission`](Self::try_acquire_permission), as a permit
    /// that holds a handle of the breaker rather than a borrow (for a future
    /// that outlives the borrow: a keyed family's breaker in a tower
    /// layer's response future). Costs a reference count.
    pub fn try_acquire_owned_permission(&self) -> Result<OwnedPermit, CallNotPermitted> {
        let permit = self.try_acquire_permission()?;
        Ok(OwnedPermit::new(Arc::clone(&self.inner), permit))
    }

    /// Runs `f` if permitted, times it, and records its result.
    ///
    /// `Ok` values are classified by `record_result`, errors by `ignore_error` /
    /// `record_error` predicates written for `E`. A panic in `f` or in a
    /// predicate records nothing (and returns a half-open probe slot); the panic
    /// continues.
    ///
    /// When `f` is itself protected by resil primitives (it returns
    /// `Result<T, resil::Error<E>>`), its error is classified as
    /// [`call_nested`](Self::call_nested) classifies it: `Error::Call(e)` by
    /// the predicates written for `E`, an inner refusal by those written for
    /// that refusal (predicates written for `resil::Error<E>` itself answer
    /// first). The two differ only in the result: here `Error<Error<E>>`,
    /// there one flat `Error<E>`. Up to four levels (`Error<Error<Error<E>>>`
    /// from a stack of plain calls) are looked through, for every `E` an
    /// error predicate is written for: with predicates for refusal structs
    /// only, use `call_nested`.
    #[inline]
    pub fn call<T, E, F>(&self, f: F) -> Result<T, Error<E>>
    where
        T: 'static,
        E: 'static,
        F: FnOnce() -> Result<T, E>,
    {
        let inner = &*self.inner;
        let w = inner.load();
        if !w.passes_unguarded() {
            return self.call_guarded(f);
        }
        // CLOSED, METRICS_ONLY, DISABLED: no probe slot to give back on a panic,
        // so no permit (and no drop guard) is needed.
        let start = inner.start(w);
        let result = f();
        inner.complete_result(w, start, &result);
        result.map_err(Error::Call)
    }

    #[inline(never)]
    fn call_guarded<T, E, F>(&self, f: F) -> Result<T, Error<E>>
    where
        T: 'static,
        E: 'static,
        F: FnOnce() -> Result<T, E>,
    {
        let permit = self
            .try_acquire_permission()
            .map_err(Error::CallNotPermitted)?;
        let result = f();
        permit.on_result(&result);
        result.map_err(Error::Call)
    }

    /// Awaits `future` if permitted, times it, and records its result.
    ///
    /// The future is not polled when the call is refused. If the returned future
    /// is dropped before completion (cancelled), nothing is recorded and a
    /// half-open probe slot is given back; so does a panicking predicate, whose
    /// panic continues.
    ///
    /// Permission is asked on the first poll. `future` is stored once and
    /// polled in place, so the returned future is `future` plus a few words,
    /// not twice its size as an `async fn` would make it.
    #[inline]
    pub fn call_async<T, E, F>(
        &self,
        future: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + use<'_, T, E, F>
    where
        T: 'static,
        E: 'static,
        F: Future<Output = Result<T, E>>,
    {
        Guarded::new(
            future,
            move || {
                self.try_acquire_permission()
                    .map(Acquire::<_, Pending<_>>::Now)
            },
            |permit: Permit<'_>, result: Result<T, E>| {
                permit.on_result(&result);
                result.map_err(Error::Call)
            },
        )
    }

    /// Runs `f`, a call protected by other resil primitives (so it returns
    /// `Result<T, resil::Error<E>>`), if permitted; times it, records it, and
    /// returns its result with this breaker's refusal added: one flat
    /// `resil::Error<E>`, no `Error<Error<E>>`.
    ///
    /// Classification keeps every predicate's meaning through the composition:
    ///
    /// | `f` returned | classified by |
    /// |---|---|
    /// | `Ok(v)` | `record_result` / `transition_on_result` written for `T` |
    /// | `Err(Error::Call(e))` | `ignore_error` / `record_error` / `transition_on_error` written for `E` |
    /// | `Err(Error::Timeout(t))`, `Err(Error::BulkheadFull(b))`, … | predicates written for that rejection type ([`Timeout`](crate::error::Timeout), [`BulkheadFull`](crate::error::BulkheadFull), …) |
    ///
    /// Resilience4j's rule decides what no predicate names: without any
    /// `record_error` predicate every error, rejections included, is a
    /// failure (as Resilience4j records `TimeoutException` and
    /// `BulkheadFullException` by default); once `record_error` predicates
    /// exist, only what they record is a failure, and a rejection they do not
    /// name is a success. `record_error(|_: &Timeout| true)` puts timeouts
    /// back in; `ignore_error(|_: &BulkheadFull| true)` leaves full bulkheads
    /// out of the window. This is the call the attribute macros make when the
    /// breaker wraps another aspect.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
    /// use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
    /// use resil_core::Error;
    ///
    /// #[derive(Debug, PartialEq)]
    /// enum InvError { Business, Down }
    ///
    /// let breaker = CircuitBreaker::new(
    ///     "inventory",
    ///     CircuitBreakerConfig::builder()
    ///         .ignore_error(|e: &InvError| matches!(e, InvError::Business))
    ///         .build()
    ///         .unwrap(),
    /// );
    /// let bulkhead = Bulkhead::new("inventory", BulkheadConfig::default());
    ///
    /// let out = breaker.call_nested(|| bulkhead.call(|| Err::<u32, _>(InvError::Business)));
    /// assert_eq!(out, Err(Error::Call(InvError::Business)));
    /// assert_eq!(breaker.metrics().ignored_calls(), 1); // ignored, as written for InvError
    ///
    /// let out = breaker.call_nested(|| bulkhead.call(|| Err::<u32, _>(InvError::Down)));
    /// assert_eq!(out, Err(Error::Call(InvError::Down)));
    /// assert_eq!(breaker.metrics().failed_calls(), 1);
    /// ```
    #[inline]
    pub fn call_nested<T, E, F>(&self, f: F) -> Result<T, Error<E>>
    where
        T: 'static,
        E: 'static,
        F: FnOnce() -> Result<T, Error<E>>,
    {
        let inner = &*self.inner;
        let w = inner.load();
        if !w.passes_unguarded() {
            let permit = self
                .try_acquire_permission()
                .map_err(Error::CallNotPermitted)?;
            let result = f();
            permit.on_nested_result(&result);
            return result;
        }
        let start = inner.start(w);
        let result = f();
        inner.complete_nested(w, start, &result);
        result
    }

    /// The async [`call_nested`](Self::call_nested): awaits `future`, itself
    /// protected by other resil primitives, if permitted, and classifies its
    /// `resil::Error<E>` as `call_nested` does. Cancellation and panics behave as
    /// in [`call_async`](Self::call_async).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap().block_on(async {
    /// use std::time::Duration;
    /// use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
    /// use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig};
    /// use resil_core::error::Timeout;
    ///
    /// let breaker = CircuitBreaker::new(
    ///     "inventory",
    ///     CircuitBreakerConfig::builder()
    ///         .ignore_error(|_: &Timeout| true) // timeouts say nothing about health here
    ///         .build()
    ///         .unwrap(),
    /// );
    /// let limiter = TimeLimiter::new(
    ///     "inventory",
    ///     TimeLimiterConfig::builder().timeout_duration(Duration::from_millis(1)).build().unwrap(),
    /// );
    /// let out = breaker
    ///     .call_async_nested(limiter.call_async(std::future::pending::<Result<u32, std::io::Error>>()))
    ///     .await;
    /// assert!(matches!(out, Err(resil_core::Error::Timeout(_))));
    /// assert_eq!(breaker.metrics().ignored_calls(), 1);
    /// # });
    /// ```
    ///
    /// Like [`call_async`](Self::call_async), `future` is stored once and
    /// polled in place.
    #[inline]
    pub fn call_async_nested<T, E, F>(
        &self,
        future: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + use<'_, T, E, F>
    where
        T: 'static,
        E: 'static,
        F: Future<Output = Result<T, Error<E>>>,
    {
        Guarded::new(
            future,
            move || {
                self.try_acquire_permission()
                    .map(Acquire::<_, Pending<_>>::Now)
            },
            |permit: Permit<'_>, result: Result<T, Error<E>>| {
                permit.on_nested_result(&result);
                result
            },
        )
    }

    /// How `error` would count (see [`CircuitBreakerConfig::classify_error`]).
    pub fn classify_error(&self, error: &dyn std::any::Any) -> Outcome {
        self.inner.config.classify_error(error)
    }

    /// Moves to CLOSED with a fresh window.
    ///
    /// Every `transition_to_*` follows Resilience4j's transition table (see
    /// [`State::can_transition_to`]): a refused transition returns
    /// [`IllegalTransition`] naming the breaker, its current state and the
    /// refused target, and leaves the breaker as it was. CLOSED is reachable
    /// from every state.
    pub fn transition_to_closed(&self) -> Result<(), IllegalTransition> {
        self.inner.transition(State::Closed, None)
    }

    /// Moves to OPEN for the configured wait, keeping the current metrics.
    /// Refused from METRICS_ONLY.
    pub fn transition_to_open(&self) -> Result<(), IllegalTransition> {
        self.inner.transition(State::Open, None)
    }

    /// Moves to OPEN for exactly `wait`, keeping the current metrics. Refused
    /// from METRICS_ONLY.
    pub fn transition_to_open_for(&self, wait: Duration) -> Result<(), IllegalTransition> {
        self.inner.transition(State::Open, Some(wait))
    }

    /// Moves to HALF_OPEN with a fresh probe round. Refused from CLOSED (probing
    /// follows an OPEN period) and from METRICS_ONLY.
    pub fn transition_to_half_open(&self) -> Result<(), IllegalTransition> {
        self.inner.transition(State::HalfOpen, None)
    }

    /// Moves to FORCED_OPEN: every call is refused until another transition.
    /// Allowed from every state.
    pub fn transition_to_forced_open(&self) -> Result<(), IllegalTransition> {
        self.inner.transition(State::ForcedOpen, None)
    }

    /// Moves to DISABLED: every call passes, nothing is recorded. Allowed from
    /// every state.
    pub fn transition_to_disabled(&self) -> Result<(), IllegalTransition> {
        self.inner.transition(State::Disabled, None)
    }

    /// Moves to METRICS_ONLY: every call passes and is recorded; thresholds
    /// publish events but never open the breaker. Allowed from every state.
    pub fn transition_to_metrics_only(&self) -> Result<(), IllegalTransition> {
        self.inner.transition(State::MetricsOnly, None)
    }

    /// Returns to a fresh CLOSED state (publishing a transition if the state
    /// changes) and publishes a reset event.
    pub fn reset(&self) {
        let inner = &*self.inner;
        let mut core = inner.core.lock();
        inner.transition_locked(&mut core, State::Closed, None, Reason::Reset);
        inner.publish_notable(CircuitBreakerEventKind::Reset);
    }

    /// A new breaker with `config` that carries this one on (a registry
    /// reload): when the sliding window's type and size are unchanged it takes
    /// over the window's outcomes, the not-permitted count and the state —
    /// CLOSED, METRICS_ONLY, DISABLED and FORCED_OPEN as they are, OPEN for the
    /// rest of its wait, HALF_OPEN as a fresh probe round under the new
    /// config. Returns the new breaker and whether it carried the state over;
    /// with another window shape it starts CLOSED with an empty window, as a
    /// new breaker does. Calls in flight on this breaker finish here and are
    /// not seen by the new one.
    ///
    /// ```
    /// use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
    ///
    /// let config = CircuitBreakerConfig::builder().sliding_window_size(10).build().unwrap();
    /// let old = CircuitBreaker::new("inventory", config.clone());
    /// let _ = old.call(|| Err::<(), _>("boom"));
    ///
    /// let stricter = config.to_builder().failure_rate_threshold(20.0).build().unwrap();
    /// let (new, carried) = old.reconfigured(stricter);
    /// assert!(carried);
    /// assert_eq!(new.metrics().failed_calls(), 1);
    ///
    /// let wider = config.to_builder().sliding_window_size(20).build().unwrap();
    /// let (fresh, carried) = old.reconfigured(wider);
    /// assert!(!carried);
    /// assert_eq!(fresh.metrics().buffered_calls(), 0);
    /// ```
    pub fn reconfigured(&self, config: CircuitBreakerConfig) -> (CircuitBreaker, bool) {
        // The totals count on: a reload is no reset for a monitoring system.
        let totals = Arc::clone(&self.inner.totals);
        self.carried(config, totals, false)
    }

    /// A shadow of this breaker running `config`: carried over as
    /// [`reconfigured`](Self::reconfigured) does, with totals of its own,
    /// and CLOSED where this breaker is in a manual mode.
    pub(crate) fn shadowed_by(&self, config: CircuitBreakerConfig) -> CircuitBreaker {
        self.carried(config, Arc::default(), true).0
    }

    fn carried(
        &self,
        config: CircuitBreakerConfig,
        totals: Arc<Totals>,
        is_shadow: bool,
    ) -> (CircuitBreaker, bool) {
        let old = &*self.inner;
        let same_shape = old.config.sliding_window_type == config.sliding_window_type
            && old.config.sliding_window_size == config.sliding_window_size;
        let next = Self::build(
            Arc::clone(&old.name),
            config,
            old.clock.clone(),
            totals,
            is_shadow,
        );
        if !same_shape {
            return (next, false);
        }
        let old_core = old.core.lock();
        let state = match old.load().state() {
            State::ForcedOpen | State::Disabled | State::MetricsOnly if is_shadow => State::Closed,
            state => state,
        };
        let inner = &*next.inner;
        let mut core = inner.core.lock();
        core.attempts = old_core.attempts;
        match state {
            State::Closed => {}
            State::Open => {
                let now = old.clock.precise_now_nanos();
                let rest = old.open_until.load(Ordering::Acquire).saturating_sub(now);
                let rest = Duration::from_nanos(rest).max(MIN_OPEN_WAIT);
                inner.transition_locked(&mut core, State::Open, Some(rest), Reason::Initial);
            }
            other => inner.transition_locked(&mut core, other, None, Reason::Initial),
        }
        inner.window.copy_from(&old.window);
        // The failure model's memory carries over too when the model keeps
        // its shape (a run, or as many failure instants).
        inner
            .run
            .store(old.run.load(Ordering::Acquire), Ordering::Release);
        if inner.failure_times.len() == old.failure_times.len() {
            for (new, old) in inner.failure_times.iter().zip(old.failure_times.iter()) {
                new.store(old.load(Ordering::Acquire), Ordering::Relaxed);
            }
            inner.failure_cursor.store(
                old.failure_cursor.load(Ordering::Acquire),
                Ordering::Release,
            );
        }
        core.ignored = old_core.ignored;
        inner
            .not_permitted
            .store(old.not_permitted.load(Ordering::Relaxed), Ordering::Relaxed);
        drop(core);
        (next, true)
    }

    /// Bytes this breaker occupies: the shared state plus its windows' heap
    /// memory (the configuration's predicates and the event channel, created on
    /// the first `subscribe`, are not counted).
    pub fn memory_footprint(&self) -> usize {
        std::mem::size_of::<Inner>()
            + std::mem::size_of::<Totals>()
            + self.inner.window.heap_bytes()
            + std::mem::size_of_val(&*self.inner.failure_times)
    }
}

impl fmt::Debug for CircuitBreaker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CircuitBreaker")
            .field("name", &&*self.inner.name)
            .field("state", &self.inner.load().state())
            .field("config", &self.inner.config)
            .finish()
    }
}

impl Inner {
    #[inline]
    fn load(&self) -> Word {
        Word(self.word.load(Ordering::Acquire))
    }

    /// The start time of a call permitted by `w` (DISABLED does not time calls).
    #[inline]
    fn start(&self, w: Word) -> u64 {
        if w.state() == State::Disabled && !self.shadow.is_set() {
            0
        } else {
            self.clock.now_nanos()
        }
    }

    /// Classifies and records a result (the permit-free path of `call`).
    #[inline]
    fn complete_result<T: 'static, E: 'static>(&self, w: Word, start: u64, result: &Result<T, E>) {
        let (outcome, transition) = self.judge_result(result);
        self.complete(w, start, outcome, transition);
        self.shadow_result(start, result);
    }

    /// Runs the predicates that classify `result` (user code: may panic).
    #[inline]
    pub(crate) fn judge_result<T: 'static, E: 'static>(
        &self,
        result: &Result<T, E>,
    ) -> (Outcome, ResultTransition) {
        match result {
            Ok(_) if !self.inspects_values => (Outcome::Success, ResultTransition::Stay),
            Ok(value) => self.judge_value(value, type_name::<T>()),
            Err(error) => self.judge_error(error, false, type_name::<E>()),
        }
    }

    /// Runs the predicates that classify a nested `result` (user code: may
    /// panic).
    #[inline]
    pub(crate) fn judge_nested<T: 'static, E: 'static>(
        &self,
        result: &Result<T, Error<E>>,
    ) -> (Outcome, ResultTransition) {
        match result {
            Ok(_) if !self.inspects_values => (Outcome::Success, ResultTransition::Stay),
            Ok(value) => self.judge_value(value, type_name::<T>()),
            Err(error) => {
                let (inner, rejection) = error.classified();
                self.judge_error(inner, rejection, error.classified_type_name())
            }
        }
    }

    /// Classifies and records a nested result (the permit-free path of
    /// `call_nested`).
    #[inline]
    fn complete_nested<T: 'static, E: 'static>(
        &self,
        w: Word,
        start: u64,
        result: &Result<T, Error<E>>,
    ) {
        let (outcome, transition) = self.judge_nested(result);
        self.complete(w, start, outcome, transition);
        if self.shadow.is_set() {
            self.feed_shadow(start, &|s: &Inner| s.judge_nested(result));
        }
    }

    /// Runs the value predicates (user code: may panic, before anything is
    /// recorded).
    #[inline(never)]
    pub(crate) fn judge_value(
        &self,
        value: &dyn Any,
        type_name: &'static str,
    ) -> (Outcome, ResultTransition) {
        let verdict = self.config.judge_value(value);
        if !verdict.typed {
            self.report_untyped("value", "record_result / transition_on_result", type_name);
        }
        (verdict.outcome, verdict.transition)
    }

    /// Runs the error predicates (user code: may panic, before anything is
    /// recorded).
    #[inline(never)]
    pub(crate) fn judge_error(
        &self,
        error: &dyn Any,
        rejection: bool,
        type_name: &'static str,
    ) -> (Outcome, ResultTransition) {
        let verdict = self.config.judge_error(error, rejection);
        if !verdict.typed {
            self.report_untyped(
                "error",
                "ignore_error / record_error / transition_on_error",
                type_name,
            );
        }
        (verdict.outcome, verdict.transition)
    }

    /// Predicates are configured but none was written for the type just
    /// classified, so they cannot match it: say so once per breaker.
    #[cold]
    fn report_untyped(&self, what: &str, predicates: &str, type_name: &'static str) {
        if self.untyped_reported.load(Ordering::Relaxed)
            || self.untyped_reported.swap(true, Ordering::Relaxed)
        {
            return;
        }
        tracing::debug!(
            target: "resil::circuit_breaker",
            circuit_breaker = &*self.name,
            type_name,
            "circuit breaker '{}': no {} predicate is written for the {} type `{}`, so none can \
             match it and it is classified by the defaults; a predicate matches only the type \
             it is written for, or a `resil::Error` of it (reported once per breaker)",
            self.name,
            predicates,
            what,
            type_name,
        );
    }

    #[inline]
    fn publish(&self, kind: impl FnOnce() -> CircuitBreakerEventKind) {
        self.events
            .publish_with(|| CircuitBreakerEvent::of(&self.name, kind()));
    }

    /// Publishes a notable event: to the tap and subscribers (see
    /// [`EventPublisher::publish_notable_with`]).
    fn publish_notable(&self, kind: CircuitBreakerEventKind) {
        self.events
            .publish_notable_with(|| CircuitBreakerEvent::of(&self.name, kind));
    }

    #[cold]
    fn reject(&self, state: State) -> CallNotPermitted {
        self.not_permitted.fetch_add(1, Ordering::Relaxed);
        self.totals.not_permitted();
        if !self.is_shadow {
            // A shadow's refusals are what it would have done: its report
            // counts them, no log line calls them refusals.
            self.refusals_logged.refused(
                "circuit breaker",
                &self.name,
                "calls not permitted",
                &self.clock,
            );
        }
        if self.shadow.is_set() {
            self.feed_shadow_refused();
        }
        self.publish(|| CircuitBreakerEventKind::NotPermitted { state });
        let i = match state {
            State::Open => 0,
            State::HalfOpen => 1,
            State::Closed => 3,
            _ => 2,
        };
        self.refusals[i].clone()
    }

    /// OPEN, HALF_OPEN and FORCED_OPEN.
    ///
    /// Always answers: a wait that has passed fires its transition at most
    /// [`MAX_FIRES`] times in one request; beyond that (a clock that jumps back
    /// and forth) the request is decided by the state as it is.
    fn acquire_slow(&self, w: Word) -> Result<Permit<'_>, CallNotPermitted> {
        self.acquire_slow_at(w, None)
    }

    /// Permission as of `at` (clock nanos), the instant a call the live
    /// breaker saw started: how a shadow decides (see [`super::shadow`]).
    pub(crate) fn admit_at(&self, at: u64) -> Result<Permit<'_>, CallNotPermitted> {
        let w = self.load();
        if w.passes_unguarded() {
            Ok(Permit::new(
                self,
                w,
                if w.state() == State::Disabled { 0 } else { at },
            ))
        } else {
            self.acquire_slow_at(w, Some(at))
        }
    }

    /// [`acquire_slow`](Self::acquire_slow) as of `at` (`None`: now).
    fn acquire_slow_at(
        &self,
        mut w: Word,
        at: Option<u64>,
    ) -> Result<Permit<'_>, CallNotPermitted> {
        const MAX_FIRES: u32 = 2;
        let mut fires = 0;
        loop {
            match w.state() {
                State::Closed if w.slots() != 0 => {
                    // Ramping up after recovery (`warm_up_period`).
                    let now = at.unwrap_or_else(|| self.clock.now_nanos());
                    if !self.ramp_admits(w, now) {
                        return Err(self.reject(State::Closed));
                    }
                    return Ok(Permit::new(self, w, now));
                }
                State::Closed | State::MetricsOnly => {
                    let now = at.unwrap_or_else(|| self.clock.now_nanos());
                    return Ok(Permit::new(self, w, now));
                }
                State::Disabled => return Ok(Permit::new(self, w, 0)),
                State::ForcedOpen => return Err(self.reject(State::ForcedOpen)),
                State::Open => {
                    let now = at.unwrap_or_else(|| self.clock.precise_now_nanos());
                    if fires == MAX_FIRES || !due(now, self.open_until.load(Ordering::Acquire)) {
                        return Err(self.reject(State::Open));
                    }
                    // The wait has passed: the first to get here moves to HALF_OPEN.
                    fires += 1;
                    self.fire(w.epoch(), Timer::OpenToHalfOpen);
                }
                State::HalfOpen => {
                    let now = at.unwrap_or_else(|| self.clock.precise_now_nanos());
                    if fires < MAX_FIRES && due(now, self.half_open_until.load(Ordering::Acquire)) {
                        fires += 1;
                        self.fire(w.epoch(), Timer::HalfOpenExpired);
                    } else if w.slots() == 0 {
                        return Err(self.reject(State::HalfOpen));
                    } else {
                        let taken = w.take_slot();
                        match self.word.compare_exchange_weak(
                            w.0,
                            taken.0,
                            Ordering::AcqRel,
                            Ordering::Acquire,
                        ) {
                            Ok(_) => return Ok(Permit::new(self, taken, now)),
                            Err(current) => {
                                w = Word(current);
                                continue;
                            }
                        }
                    }
                }
            }
            w = self.load();
        }
    }

    /// Whether the ramp after recovery admits a call at `now`: the fraction
    /// grows linearly from `1 / cold_factor` to 1 over `warm_up_period`, and
    /// the ramp's `n`-th call is admitted when `floor((n + 1)·f) > floor(n·f)`
    /// (admissions spread evenly). Once the ramp is over, the CLOSED word
    /// drops its ramp mark (same epoch) and every call passes unguarded again.
    #[cold]
    #[inline(never)]
    fn ramp_admits(&self, w: Word, now: u64) -> bool {
        let until = self.ramp_until.load(Ordering::Acquire);
        if now >= until {
            let _ = self.word.compare_exchange(
                w.0,
                Word::new(w.epoch(), State::Closed, 0).0,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
            return true;
        }
        let from = self.ramp_from.load(Ordering::Acquire);
        let progress = now.saturating_sub(from) as f64 / until.saturating_sub(from).max(1) as f64;
        let cold = 1.0 / f64::from(self.config.cold_factor.max(1));
        let f = cold + (1.0 - cold) * progress.min(1.0);
        let n = self.ramp_calls.fetch_add(1, Ordering::Relaxed) as f64;
        ((n + 1.0) * f).floor() > (n * f).floor()
    }

    /// Gives back a HALF_OPEN probe slot, if its round is still the current one.
    pub(crate) fn return_probe_slot(&self, permit: Word) {
        debug_assert_eq!(permit.state(), State::HalfOpen, "only probes hold slots");
        let mut w = self.load();
        while w.epoch() == permit.epoch() {
            debug_assert!(
                w.slots() < self.config.permitted_number_of_calls_in_half_open_state,
                "a returned slot was taken from this round"
            );
            match self.word.compare_exchange_weak(
                w.0,
                w.return_slot().0,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return,
                Err(current) => w = Word(current),
            }
        }
    }

    /// Records one permitted call's outcome.
    #[inline]
    pub(crate) fn complete(
        &self,
        permit: Word,
        start: u64,
        outcome: Outcome,
        transition: ResultTransition,
    ) {
        let state = permit.state();
        if state == State::Disabled {
            return;
        }
        let end = self.clock.now_nanos();
        let elapsed = end.saturating_sub(start);
        let slow = elapsed > self.slow_nanos;
        self.totals.record(
            match outcome {
                Outcome::Success => CallKind::Successful,
                Outcome::Failure => CallKind::Failed,
                Outcome::Ignored => CallKind::Ignored,
            },
            elapsed,
        );
        if outcome == Outcome::Success
            && !slow
            && transition == ResultTransition::Stay
            && state != State::HalfOpen
            && self.clean.load(Ordering::Relaxed)
        {
            // The window is full of fast successes: recording another changes
            // neither its totals nor its content. (If the permit's epoch is stale,
            // the outcome must not be recorded anyway.)
            self.publish(|| CircuitBreakerEventKind::Success {
                elapsed: Duration::from_nanos(elapsed),
            });
            return;
        }
        if outcome != Outcome::Ignored
            && transition == ResultTransition::Stay
            && matches!(state, State::Closed | State::MetricsOnly)
            && self.load().epoch() == permit.epoch()
        {
            self.record_unlocked(permit, end, elapsed, slow, outcome == Outcome::Failure);
            return;
        }
        self.complete_slow(permit, end, elapsed, slow, outcome, transition);
    }

    /// Records a CLOSED / METRICS_ONLY outcome without the lock: the window
    /// takes it with atomics, and the lock is taken only when the record may
    /// have reached a threshold (a failure or slow call entered, or the window
    /// holds no more than `minimum_number_of_calls`) or may have made the window
    /// clean. The transition itself is still decided under the lock, once.
    ///
    /// A transition that lands between the epoch check and the record lets
    /// this one outcome into the new state's fresh window (the locked path
    /// kept it out); totals stay exact either way.
    #[inline]
    fn record_unlocked(&self, permit: Word, end: u64, elapsed: u64, slow: bool, failed: bool) {
        let m = Measurement::new(failed, slow);
        let change = self.window.record(end, m);
        if !m.is_clean() {
            // Pairs with the fence in `refresh_clean`: either it sees this
            // record's totals, or this sees its `true` and clears it.
            fence(Ordering::SeqCst);
            if self.clean.load(Ordering::Relaxed) {
                self.clean.store(false, Ordering::Relaxed);
            }
        }
        let elapsed = Duration::from_nanos(elapsed);
        self.publish(|| {
            if failed {
                CircuitBreakerEventKind::Error { elapsed }
            } else {
                CircuitBreakerEventKind::Success { elapsed }
            }
        });
        if self.model != FailureModel::Rate && self.note_model_outcome(end, failed) {
            self.check_window(permit, end);
        }
        if change == Change::Up
            && (!m.is_clean()
                || self.window.calls() <= u64::from(self.config.minimum_number_of_calls()))
        {
            self.check_window(permit, end);
        }
        // The window may have just become full of fast successes: when the
        // last failure or slow call left it (`Down`), or when a fast success
        // filled its last empty slot (`Up`; a window that never saw a failure
        // becomes clean this way). Neither happens once a clean window stays
        // clean, so the check costs nothing on the shortcut's traffic.
        let may_be_clean = match change {
            Change::Down => true,
            Change::Up => m.is_clean(),
            Change::Same => false,
        };
        if may_be_clean && self.window.is_saturated_clean() {
            let _core = self.core.lock();
            if self.load().epoch() == permit.epoch() {
                self.refresh_clean();
            }
        }
    }

    /// Whether a fast success in CLOSED is recorded by the shortcut (tests).
    #[cfg(test)]
    pub(crate) fn is_clean(&self) -> bool {
        self.clean.load(Ordering::Relaxed)
    }

    /// Decides, under the lock, whether the window reached a threshold.
    #[cold]
    #[inline(never)]
    fn check_window(&self, permit: Word, end: u64) {
        let mut core = self.core.lock();
        let current = self.load();
        if current.epoch() != permit.epoch() {
            return;
        }
        let total = self.window.total(end);
        let minimum = self.config.minimum_number_of_calls();
        self.check_thresholds(&mut core, current.state(), total, minimum);
    }

    /// Sets the clean flag to whether the window is full of fast successes
    /// (with the lock held, in the window's current epoch). Setting it is
    /// checked again after a fence, so a failure recorded concurrently without
    /// the lock is never hidden behind a stale `true`.
    fn refresh_clean(&self) {
        if self.window.is_saturated_clean() {
            self.clean.store(true, Ordering::Relaxed);
            fence(Ordering::SeqCst);
            if !self.window.is_saturated_clean() {
                self.clean.store(false, Ordering::Relaxed);
            }
        } else {
            self.clean.store(false, Ordering::Relaxed);
        }
    }

    #[cold]
    #[inline(never)]
    fn complete_slow(
        &self,
        permit: Word,
        end: u64,
        elapsed: u64,
        slow: bool,
        outcome: Outcome,
        transition: ResultTransition,
    ) {
        let elapsed_d = Duration::from_nanos(elapsed);
        self.publish(|| match outcome {
            Outcome::Success => CircuitBreakerEventKind::Success { elapsed: elapsed_d },
            Outcome::Failure => CircuitBreakerEventKind::Error { elapsed: elapsed_d },
            Outcome::Ignored => CircuitBreakerEventKind::IgnoredError { elapsed: elapsed_d },
        });
        let mut core = self.core.lock();
        let current = self.load();
        if current.epoch() != permit.epoch() {
            // Granted in an earlier state: OPEN keeps showing the metrics that
            // opened it, and a CLOSED-era call cannot decide a probe round.
            return;
        }
        let state = current.state();
        match outcome {
            Outcome::Ignored => {
                core.ignored += 1;
                if state == State::HalfOpen {
                    self.return_probe_slot(permit);
                }
            }
            Outcome::Success | Outcome::Failure => {
                let m = Measurement::new(outcome == Outcome::Failure, slow);
                match state {
                    State::Closed | State::MetricsOnly => {
                        self.window.record(end, m);
                        if self.model != FailureModel::Rate {
                            self.note_model_outcome(end, outcome == Outcome::Failure);
                        }
                        self.refresh_clean();
                        let total = self.window.total(end);
                        let minimum = self.config.minimum_number_of_calls();
                        self.check_thresholds(&mut core, state, total, minimum);
                    }
                    State::HalfOpen => {
                        // Decided as soon as min(minimum_number_of_calls, permitted)
                        // probes completed: every branch below leaves the round.
                        let minimum = self.config.half_open_minimum_number_of_calls();
                        debug_assert!(
                            core.probes.calls < u64::from(minimum),
                            "a decided round takes no more outcomes"
                        );
                        add(&mut core.probes, outcome == Outcome::Failure, slow);
                        let total = core.probes;
                        if !self.check_thresholds(&mut core, state, total, minimum)
                            && total.calls >= u64::from(minimum)
                        {
                            self.transition_locked(
                                &mut core,
                                State::Closed,
                                None,
                                Reason::ProbesPassed,
                            );
                        }
                    }
                    _ => debug_assert!(false, "no permit is granted in {state}"),
                }
            }
        }
        let state = self.load().state();
        if self.load().epoch() == permit.epoch() && matches!(state, State::Closed | State::HalfOpen)
        {
            match transition {
                ResultTransition::Stay => {}
                ResultTransition::Open => {
                    self.transition_locked(&mut core, State::Open, None, Reason::ResultTransition)
                }
                ResultTransition::OpenFor(wait) => self.transition_locked(
                    &mut core,
                    State::Open,
                    Some(wait),
                    Reason::ResultTransition,
                ),
            }
        }
    }

    /// Publishes exceeded thresholds and opens (except in METRICS_ONLY).
    /// Returns whether a threshold was reached.
    ///
    /// The slow-call rate is the window's (or the round's) in every failure
    /// model, gated by `minimum`. Failures are judged by the model: the
    /// failure rate for [`FailureModel::Rate`]; the run or the failure
    /// instants for the others in CLOSED / METRICS_ONLY, and any failed probe
    /// in HALF_OPEN.
    fn check_thresholds(
        &self,
        core: &mut Core,
        state: State,
        total: Aggregate,
        minimum: u32,
    ) -> bool {
        let rated = total.calls >= u64::from(minimum) && total.calls > 0;
        let slow_rate = total.slow as f32 * 100.0 / total.calls.max(1) as f32;
        let slow_exceeded = rated && slow_rate >= self.config.slow_call_rate_threshold;
        let failures = match self.model {
            FailureModel::Rate => {
                let rate = total.failed as f32 * 100.0 / total.calls.max(1) as f32;
                (rated && rate >= self.config.failure_rate_threshold).then_some(Tripped::Rate(rate))
            }
            _ if state == State::HalfOpen => (total.failed > 0).then_some(Tripped::Probe),
            _ => self.model_tripped(),
        };
        if failures.is_none() && !slow_exceeded {
            return false;
        }
        if state == State::MetricsOnly {
            if core.thresholds_reported {
                return true;
            }
            core.thresholds_reported = true;
        }
        match failures {
            Some(Tripped::Rate(rate)) => {
                self.publish_notable(CircuitBreakerEventKind::FailureRateExceeded { rate })
            }
            Some(Tripped::Consecutive(failures)) => self
                .publish_notable(CircuitBreakerEventKind::ConsecutiveFailuresExceeded { failures }),
            Some(Tripped::Count(failures)) => {
                self.publish_notable(CircuitBreakerEventKind::FailureCountExceeded {
                    failures,
                    interval: self.config.failure_count_interval,
                })
            }
            Some(Tripped::Probe) | None => {}
        }
        if slow_exceeded {
            self.publish_notable(CircuitBreakerEventKind::SlowCallRateExceeded { rate: slow_rate });
        }
        if state != State::MetricsOnly {
            let reason = match (failures, slow_exceeded) {
                (Some(Tripped::Rate(_)), true) => Reason::BothRatesExceeded,
                (Some(Tripped::Rate(_)), false) => Reason::FailureRateExceeded,
                (Some(Tripped::Consecutive(_)), _) => Reason::ConsecutiveFailures,
                (Some(Tripped::Count(_)), _) => Reason::FailureCount,
                (Some(Tripped::Probe), _) => Reason::ProbeFailed,
                (None, _) => Reason::SlowCallRateExceeded,
            };
            self.transition_locked(core, State::Open, None, reason);
        }
        true
    }

    /// Whether the failures recorded in CLOSED / METRICS_ONLY open the
    /// breaker under a [`FailureModel::Consecutive`] or
    /// [`FailureModel::Count`] model (decided under the lock, from what the
    /// lock-free recorders stored).
    fn model_tripped(&self) -> Option<Tripped> {
        match self.model {
            FailureModel::Rate => None,
            FailureModel::Consecutive => {
                let run = self.run.load(Ordering::Acquire);
                (run >= self.config.consecutive_failure_threshold)
                    .then_some(Tripped::Consecutive(run))
            }
            FailureModel::Count => {
                let n = self.failure_times.len() as u64;
                if n == 0 || self.failure_cursor.load(Ordering::Acquire) < n {
                    return None;
                }
                let (mut oldest, mut newest) = (u64::MAX, 0);
                for t in self.failure_times.iter() {
                    let t = t.load(Ordering::Acquire);
                    oldest = oldest.min(t);
                    newest = newest.max(t);
                }
                (newest - oldest <= clock::nanos(self.config.failure_count_interval))
                    .then_some(Tripped::Count(n as u32))
            }
        }
    }

    /// [`FailureModel::Count`]: the failures recorded within the interval
    /// that ends `now` (at most `failure_count_threshold`; 0 for the other
    /// models).
    fn failures_in_interval(&self, now: u64) -> u64 {
        let written = self
            .failure_cursor
            .load(Ordering::Acquire)
            .min(self.failure_times.len() as u64) as usize;
        let interval = clock::nanos(self.config.failure_count_interval);
        self.failure_times[..written]
            .iter()
            .filter(|t| now.saturating_sub(t.load(Ordering::Acquire)) <= interval)
            .count() as u64
    }

    /// Notes one CLOSED / METRICS_ONLY outcome for a
    /// [`FailureModel::Consecutive`] or [`FailureModel::Count`] model, without
    /// the lock: a success ends the run (a load, and a store only when there
    /// was a run), a failure extends it and stores its instant. Returns
    /// whether the failure may have reached the model's threshold, to be
    /// decided under the lock.
    #[inline]
    fn note_model_outcome(&self, end: u64, failed: bool) -> bool {
        if !failed {
            if self.run.load(Ordering::Relaxed) != 0 {
                self.run.store(0, Ordering::Relaxed);
            }
            return false;
        }
        self.note_model_failure(end)
    }

    #[cold]
    #[inline(never)]
    fn note_model_failure(&self, end: u64) -> bool {
        let run = self.run.fetch_add(1, Ordering::AcqRel).saturating_add(1);
        match self.model {
            FailureModel::Rate => false,
            FailureModel::Consecutive => run >= self.config.consecutive_failure_threshold,
            FailureModel::Count => {
                let n = self.failure_times.len() as u64;
                let i = self.failure_cursor.fetch_add(1, Ordering::AcqRel);
                self.failure_times[(i % n) as usize].store(end, Ordering::Release);
                // The failure `n - 1` before this one is the oldest of the last
                // `n`; a slot a concurrent recorder has claimed but not yet
                // written holds an older instant, so the check errs towards
                // "not yet" and that recorder checks again.
                let oldest = self.failure_times[((i + 1) % n) as usize].load(Ordering::Acquire);
                i + 1 >= n
                    && end.saturating_sub(oldest)
                        <= clock::nanos(self.config.failure_count_interval)
            }
        }
    }

    /// Forgets the run and the failure instants (entering CLOSED,
    /// METRICS_ONLY or DISABLED; with the lock held).
    fn reset_model(&self) {
        self.run.store(0, Ordering::Release);
        self.failure_cursor.store(0, Ordering::Release);
        for t in self.failure_times.iter() {
            t.store(0, Ordering::Relaxed);
        }
    }

    /// Applies a time-triggered transition if the breaker is still in the state
    /// (and epoch) that scheduled it and the time has come. One winner: the lock.
    fn fire(&self, epoch: u64, timer: Timer) {
        let mut core = self.core.lock();
        let w = self.load();
        if w.epoch() != epoch {
            return;
        }
        let now = self.clock.precise_now_nanos();
        match timer {
            Timer::OpenToHalfOpen
                if w.state() == State::Open
                    && due(now, self.open_until.load(Ordering::Acquire)) =>
            {
                self.transition_locked(&mut core, State::HalfOpen, None, Reason::OpenWaitElapsed)
            }
            Timer::HalfOpenExpired
                if w.state() == State::HalfOpen
                    && due(now, self.half_open_until.load(Ordering::Acquire)) =>
            {
                let to = self.config.transition_to_state_after_wait_duration;
                self.transition_locked(&mut core, to, None, Reason::HalfOpenWaitElapsed)
            }
            _ => {}
        }
    }

    /// A transition asked for by the user (or an operator): checked against the
    /// transition table under the lock, so the state it is checked against is
    /// the one it leaves.
    fn transition(&self, to: State, wait: Option<Duration>) -> Result<(), IllegalTransition> {
        let mut core = self.core.lock();
        let from = self.load().state();
        if !from.can_transition_to(to) {
            return Err(IllegalTransition::new(Arc::clone(&self.name), from, to));
        }
        self.transition_locked(&mut core, to, wait, Reason::Requested);
        Ok(())
    }

    /// Enters `to` (re-entering the current state starts it afresh and publishes
    /// nothing). Every transition bumps the epoch. A change of state is
    /// logged (see [`crate::log`]) and published as a notable event here,
    /// synchronously, for `reason` (except a new breaker's initial state).
    ///
    /// OPEN with the configured wait (`wait: None`) is a counted opening and
    /// advances the interval function's attempt count; OPEN for an explicit
    /// `wait` does not. The wait is computed before anything changes, so a
    /// panicking interval function cannot leave a transition half done.
    fn transition_locked(
        &self,
        core: &mut Core,
        to: State,
        wait: Option<Duration>,
        reason: Reason,
    ) {
        let open_wait = match (to, wait) {
            (State::Open, Some(wait)) => Some(wait),
            (State::Open, None) => Some(self.open_wait(core.attempts.saturating_add(1))),
            _ => None,
        };
        let from_word = self.load();
        let from = from_word.state();
        // What the metrics show now, before the transition resets it.
        let left = (from != to && reason != Reason::Initial).then(|| self.shown_total(core));
        if let Some(timer) = core.timer.take() {
            timer.abort();
        }
        self.clean.store(false, Ordering::Relaxed);
        let now = self.clock.precise_now_nanos();
        let epoch = from_word.epoch().wrapping_add(1);
        let mut slots = 0;
        core.thresholds_reported = false;
        let mut reset_counters = true;
        match to {
            State::Open => {
                reset_counters = false;
                if wait.is_none() {
                    core.attempts = core.attempts.saturating_add(1);
                }
                let wait = open_wait.unwrap_or(MIN_OPEN_WAIT);
                let until = now.saturating_add(clock::nanos(wait));
                self.open_until.store(until, Ordering::Release);
                if self.config.automatic_transition {
                    core.timer = self.schedule(epoch, until, Timer::OpenToHalfOpen);
                }
            }
            State::HalfOpen => {
                core.probes = Aggregate::default();
                core.shown = Shown::Probes;
                slots = self.config.permitted_number_of_calls_in_half_open_state;
                let max_wait = self.config.max_wait_duration_in_half_open_state;
                let until = if max_wait.is_zero() {
                    u64::MAX
                } else {
                    now.saturating_add(clock::nanos(max_wait))
                };
                self.half_open_until.store(until, Ordering::Release);
                if until != u64::MAX {
                    core.timer = self.schedule(epoch, until, Timer::HalfOpenExpired);
                }
            }
            State::Closed | State::ForcedOpen | State::Disabled | State::MetricsOnly => {
                let ramp = self.config.warm_up_period;
                if to == State::Closed && reason == Reason::ProbesPassed && !ramp.is_zero() {
                    // Recovered: ramp up (the word's slot field marks it).
                    self.ramp_from.store(now, Ordering::Release);
                    self.ramp_until
                        .store(now.saturating_add(clock::nanos(ramp)), Ordering::Release);
                    self.ramp_calls.store(0, Ordering::Relaxed);
                    slots = 1;
                }
                if to != State::ForcedOpen {
                    // CLOSED, DISABLED and METRICS_ONLY end the run of OPEN
                    // periods; FORCED_OPEN neither counts nor ends it.
                    core.attempts = 0;
                }
                self.window.reset(now);
                self.reset_model();
                core.shown = Shown::Main;
            }
        }
        if reset_counters {
            core.ignored = 0;
            self.not_permitted.store(0, Ordering::Relaxed);
        }
        self.word
            .store(Word::new(epoch, to, slots).0, Ordering::Release);
        if let Some(left) = left {
            self.log_transition(left, from, to, reason);
            self.publish_notable(CircuitBreakerEventKind::StateTransition { from, to });
        }
    }

    /// The window the metrics show, with the minimum number of calls its
    /// rates need (as [`CircuitBreaker::metrics`] reads it).
    fn shown_total(&self, core: &Core) -> (Aggregate, u32) {
        match core.shown {
            Shown::Main => (
                self.window.total(self.clock.now_nanos()),
                self.config.minimum_number_of_calls(),
            ),
            Shown::Probes => (core.probes, self.config.half_open_minimum_number_of_calls()),
        }
    }

    /// The transition's log line: WARN when it refuses calls from now on
    /// (OPEN, FORCED_OPEN), INFO otherwise, with the window it leaves.
    /// `left` is the window the state leaves ([`shown_total`](Self::shown_total)).
    #[cold]
    fn log_transition(&self, left: (Aggregate, u32), from: State, to: State, reason: Reason) {
        let (total, minimum) = left;
        let rate = |part: u64| {
            (total.calls >= u64::from(minimum) && total.calls > 0)
                .then(|| part as f64 * 100.0 / total.calls as f64)
        };
        let failure_rate = rate(total.failed).unwrap_or(-1.0);
        let slow_call_rate = rate(total.slow).unwrap_or(-1.0);
        let (name, from, to, reason) = (&*self.name, from.as_str(), to.as_str(), reason.as_str());
        let buffered_calls = total.calls;
        if self.is_shadow {
            // What the trial's settings would have done: news for whoever
            // compares, not an alarm about the dependency.
            tracing::info!(
                target: "resil::shadow",
                name, from, to, failure_rate, slow_call_rate, buffered_calls, reason,
                "shadow of circuit breaker '{name}' would have moved {from} -> {to}: {reason}"
            );
        } else if matches!(to, "OPEN" | "FORCED_OPEN") {
            tracing::warn!(
                target: "resil::circuit_breaker",
                name, from, to, failure_rate, slow_call_rate, buffered_calls, reason,
                "circuit breaker '{name}' {from} -> {to}: {reason}"
            );
        } else {
            tracing::info!(
                target: "resil::circuit_breaker",
                name, from, to, failure_rate, slow_call_rate, buffered_calls, reason,
                "circuit breaker '{name}' {from} -> {to}: {reason}"
            );
        }
    }

    /// The configured wait of the `attempts`-th counted OPEN period: the
    /// interval function's, raised to 1 ms if it returns less. An interval
    /// function that panics must not wedge the breaker half-way through a
    /// transition (the lock is held, a probe round may be over), so its panic
    /// is caught, reported, and the fixed wait used instead.
    fn open_wait(&self, attempts: u32) -> Duration {
        let Some(f) = &self.config.wait_interval_function_in_open_state else {
            return self.config.wait_duration_in_open_state;
        };
        match catch_unwind(AssertUnwindSafe(|| f.interval(attempts))) {
            Ok(wait) => wait.max(MIN_OPEN_WAIT),
            Err(_) => {
                tracing::warn!(
                    target: "resil::circuit_breaker",
                    circuit_breaker = &*self.name,
                    attempts,
                    "circuit breaker '{}': wait_interval_function_in_open_state panicked; \
                     using wait_duration_in_open_state ({:?}) for this OPEN period",
                    self.name,
                    self.config.wait_duration_in_open_state,
                );
                self.config.wait_duration_in_open_state
            }
        }
    }

    /// Spawns a tokio timer for a transition due at `at` (clock nanos), if a
    /// runtime is current. Without one, the transition happens lazily.
    fn schedule(&self, epoch: u64, at: u64, timer: Timer) -> Option<tokio::task::AbortHandle> {
        if at == u64::MAX {
            // Never due (see `due`).
            return None;
        }
        let handle = tokio::runtime::Handle::try_current().ok()?;
        let me = self.me.clone();
        let task = handle.spawn(async move {
            loop {
                let Some(inner) = me.upgrade() else { return };
                let now = inner.clock.precise_now_nanos();
                if due(now, at) {
                    inner.fire(epoch, timer);
                    return;
                }
                drop(inner);
                // Due one nanosecond after `at`; never a zero sleep.
                tokio::time::sleep(Duration::from_nanos((at - now).saturating_add(1))).await;
            }
        });
        Some(task.abort_handle())
    }
}

/// What a failure model found, for its event and log line.
#[derive(Clone, Copy)]
enum Tripped {
    /// The failure rate (percent) reached its threshold.
    Rate(f32),
    /// A run of this many consecutive failures.
    Consecutive(u32),
    /// This many failures within the interval.
    Count(u32),
    /// A half-open probe failed (Consecutive / Count).
    Probe,
}

/// Adds one outcome to a round's totals.
#[inline]
fn add(total: &mut Aggregate, failed: bool, slow: bool) {
    total.calls += 1;
    total.failed += u64::from(failed);
    total.slow += u64::from(slow);
    total.slow_failed += u64::from(failed && slow);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    fn breaker(size: u32, minimum: u32) -> CircuitBreaker {
        CircuitBreaker::with_clock(
            "clean",
            CircuitBreakerConfig::builder()
                .sliding_window_size(size)
                .minimum_number_of_calls(minimum)
                .build()
                .unwrap(),
            ManualClock::new(),
        )
    }

    fn succeed(cb: &CircuitBreaker) {
        assert_eq!(cb.call(|| Ok::<_, ()>(1)), Ok(1));
    }

    #[test]
    fn a_window_that_fills_with_fast_successes_becomes_clean_until_a_failure_enters() {
        for minimum in [10, 4] {
            let cb = breaker(10, minimum);
            for _ in 0..9 {
                succeed(&cb);
                assert!(!cb.inner.is_clean(), "not full yet (minimum {minimum})");
            }
            succeed(&cb);
            assert!(
                cb.inner.is_clean(),
                "the last empty slot filled (minimum {minimum})"
            );
            assert_eq!(cb.call(|| Err::<u32, ()>(())), Err(Error::Call(())));
            assert!(!cb.inner.is_clean());
            for _ in 0..9 {
                succeed(&cb);
                assert!(!cb.inner.is_clean(), "the failure is still in the window");
            }
            succeed(&cb);
            assert!(cb.inner.is_clean(), "the failure left the window");
            let m = cb.metrics();
            assert_eq!((m.buffered_calls(), m.failed_calls()), (10, 0));
        }
    }
}
