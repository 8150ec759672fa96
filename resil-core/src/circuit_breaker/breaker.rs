//! The circuit breaker handle and its state machine.

use std::fmt;
use std::future::{Future, Pending};
use std::sync::atomic::{fence, AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock, Weak};
use std::time::Duration;

use parking_lot::Mutex;

use super::config::{CircuitBreakerConfig, Outcome, ResultTransition, SlidingWindowType};
use super::event::{CircuitBreakerEvent, CircuitBreakerEventKind};
use super::metrics::Metrics;
use super::permit::Permit;
use super::state::Word;
use super::window::{Aggregate, Change, CountWindow, Measurement, TimeWindow, Window};
use super::{IllegalTransition, State};
use crate::clock::{self, Clock, SharedClock};
use crate::error::{CallNotPermitted, Error};
use crate::event::{EventPublisher, EventStream};
use crate::guarded::{Acquire, Guarded};

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
    inner: Arc<Inner>,
}

pub(crate) struct Inner {
    /// Packed state tag, free probe slots and epoch (see [`Word`]).
    word: AtomicU64,
    /// The count window is full of fast successes (CLOSED / METRICS_ONLY): a
    /// fast success changes nothing and skips the lock.
    clean: AtomicBool,
    slow_nanos: u64,
    /// OPEN: when probes are allowed (clock nanos).
    open_until: AtomicU64,
    /// HALF_OPEN: when the round gives up and opens again (`u64::MAX`: never).
    half_open_until: AtomicU64,
    not_permitted: AtomicU64,
    pub(crate) inspects_values: bool,
    pub(crate) name: Arc<str>,
    pub(crate) clock: SharedClock,
    pub(crate) config: CircuitBreakerConfig,
    events: OnceLock<EventPublisher<CircuitBreakerEvent>>,
    me: Weak<Inner>,
    /// The CLOSED / METRICS_ONLY window: recorded without the lock (see
    /// [`Inner::complete`]), reset under it.
    window: Window,
    core: Mutex<Core>,
}

/// Everything that changes only under the lock.
struct Core {
    probes: CountWindow,
    shown: Shown,
    ignored: u64,
    /// Consecutive OPEN periods since the last CLOSED (for the interval function).
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
    OpenToHalfOpen,
    HalfOpenToOpen,
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
        let now = clock.now_nanos();
        let window = match config.sliding_window_type {
            SlidingWindowType::CountBased => {
                Window::Count(CountWindow::new(config.sliding_window_size))
            }
            SlidingWindowType::TimeBased => {
                Window::Time(TimeWindow::new(config.sliding_window_size, now))
            }
        };
        let probes = CountWindow::new(config.permitted_number_of_calls_in_half_open_state);
        let inner = Arc::new_cyclic(|me| Inner {
            word: AtomicU64::new(Word::new(0, State::Closed, 0).0),
            clean: AtomicBool::new(false),
            slow_nanos: clock::nanos(config.slow_call_duration_threshold),
            open_until: AtomicU64::new(0),
            half_open_until: AtomicU64::new(u64::MAX),
            not_permitted: AtomicU64::new(0),
            inspects_values: config.inspects_values(),
            name,
            clock,
            config,
            events: OnceLock::new(),
            me: me.clone(),
            window,
            core: Mutex::new(Core {
                probes,
                shown: Shown::Main,
                ignored: 0,
                attempts: 0,
                thresholds_reported: false,
                timer: None,
            }),
        });
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
                    && inner.clock.precise_now_nanos()
                        >= inner.open_until.load(Ordering::Acquire) =>
            {
                inner.fire(w.epoch(), Timer::OpenToHalfOpen);
                inner.load().state()
            }
            State::HalfOpen
                if inner.clock.precise_now_nanos()
                    >= inner.half_open_until.load(Ordering::Acquire) =>
            {
                inner.fire(w.epoch(), Timer::HalfOpenToOpen);
                inner.load().state()
            }
            state => state,
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
                core.probes.total(),
                inner.config.permitted_number_of_calls_in_half_open_state,
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
        }
    }

    /// Subscribes to this breaker's events. Without subscribers, publishing
    /// costs one atomic load and no event is built.
    pub fn subscribe(&self) -> EventStream<CircuitBreakerEvent> {
        self.inner
            .events
            .get_or_init(EventPublisher::default)
            .subscribe()
    }

    /// Asks for permission to make one call. CLOSED, DISABLED and METRICS_ONLY
    /// always permit (a breaker never limits concurrency); OPEN permits nothing
    /// until its wait has passed, then moves to HALF_OPEN; HALF_OPEN hands out
    /// exactly `permitted_number_of_calls_in_half_open_state` probe permits;
    /// FORCED_OPEN permits nothing. A refusal is counted as not permitted.
    #[inline]
    pub fn try_acquire_permission(&self) -> Result<Permit<'_>, CallNotPermitted> {
        let inner = &*self.inner;
        let w = inner.load();
        if w.state().passes_unguarded() {
            Ok(Permit::new(inner, w, inner.start(w)))
        } else {
            inner.acquire_slow(w)
        }
    }

    /// Runs `f` if permitted, times it, and records its result.
    ///
    /// `Ok` values are classified by `record_result`, errors by `ignore_error` /
    /// `record_error`. A panic in `f` records nothing (and returns a half-open
    /// probe slot); the panic continues.
    #[inline]
    pub fn call<T, E, F>(&self, f: F) -> Result<T, Error<E>>
    where
        T: 'static,
        E: 'static,
        F: FnOnce() -> Result<T, E>,
    {
        let inner = &*self.inner;
        let w = inner.load();
        if !w.state().passes_unguarded() {
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
    /// half-open probe slot is given back.
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
            |permit: Permit<'_>, result: &Result<T, E>| permit.on_result(result),
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
        inner.transition_locked(&mut core, State::Closed, None);
        inner.publish(|| CircuitBreakerEventKind::Reset);
    }

    /// Bytes this breaker occupies: the shared state plus its windows' heap
    /// memory (the configuration's predicates and the event channel, created on
    /// the first `subscribe`, are not counted).
    pub fn memory_footprint(&self) -> usize {
        let core = self.inner.core.lock();
        std::mem::size_of::<Inner>() + self.inner.window.heap_bytes() + core.probes.heap_bytes()
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

impl State {
    /// CLOSED, METRICS_ONLY and DISABLED permit every call without a probe slot.
    #[inline]
    fn passes_unguarded(self) -> bool {
        matches!(self, State::Closed | State::MetricsOnly | State::Disabled)
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
        if w.state() == State::Disabled {
            0
        } else {
            self.clock.now_nanos()
        }
    }

    /// Classifies and records a result (the permit-free path of `call`).
    #[inline]
    fn complete_result<T: 'static, E: 'static>(&self, w: Word, start: u64, result: &Result<T, E>) {
        match result {
            Ok(_) if !self.inspects_values => {
                self.complete(w, start, Outcome::Success, ResultTransition::Stay)
            }
            Ok(value) => self.complete_value(w, start, value),
            Err(error) => self.complete_error(w, start, error),
        }
    }

    #[inline(never)]
    pub(crate) fn complete_value(&self, w: Word, start: u64, value: &dyn std::any::Any) {
        let outcome = self.config.classify_value(value);
        let transition = self.config.transition_for_value(value);
        self.complete(w, start, outcome, transition);
    }

    #[inline(never)]
    pub(crate) fn complete_error(&self, w: Word, start: u64, error: &dyn std::any::Any) {
        let outcome = self.config.classify_error(error);
        let transition = if self.config.inspects_error_transitions() {
            self.config.transition_for_error(error)
        } else {
            ResultTransition::Stay
        };
        self.complete(w, start, outcome, transition);
    }

    #[inline]
    fn publish(&self, kind: impl FnOnce() -> CircuitBreakerEventKind) {
        if let Some(events) = self.events.get() {
            events.publish_with(|| CircuitBreakerEvent {
                name: Arc::clone(&self.name),
                kind: kind(),
            });
        }
    }

    #[cold]
    fn reject(&self, state: State) -> CallNotPermitted {
        self.not_permitted.fetch_add(1, Ordering::Relaxed);
        self.publish(|| CircuitBreakerEventKind::NotPermitted { state });
        CallNotPermitted::new(Arc::clone(&self.name), state)
    }

    /// OPEN, HALF_OPEN and FORCED_OPEN.
    fn acquire_slow(&self, mut w: Word) -> Result<Permit<'_>, CallNotPermitted> {
        loop {
            match w.state() {
                State::Closed | State::MetricsOnly => {
                    return Ok(Permit::new(self, w, self.clock.now_nanos()))
                }
                State::Disabled => return Ok(Permit::new(self, w, 0)),
                State::ForcedOpen => return Err(self.reject(State::ForcedOpen)),
                State::Open => {
                    if self.clock.precise_now_nanos() < self.open_until.load(Ordering::Acquire) {
                        return Err(self.reject(State::Open));
                    }
                    // The wait has passed: the first to get here moves to HALF_OPEN.
                    self.fire(w.epoch(), Timer::OpenToHalfOpen);
                }
                State::HalfOpen => {
                    let now = self.clock.precise_now_nanos();
                    if now >= self.half_open_until.load(Ordering::Acquire) {
                        self.fire(w.epoch(), Timer::HalfOpenToOpen);
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
        match change {
            Change::Up
                if !m.is_clean()
                    || self.window.calls() <= u64::from(self.config.minimum_number_of_calls()) =>
            {
                self.check_window(permit, end)
            }
            Change::Down if self.window.is_saturated_clean() => {
                let _core = self.core.lock();
                if self.load().epoch() == permit.epoch() {
                    self.refresh_clean();
                }
            }
            _ => {}
        }
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
                        self.refresh_clean();
                        let total = self.window.total(end);
                        let minimum = self.config.minimum_number_of_calls();
                        self.check_thresholds(&mut core, state, total, minimum);
                    }
                    State::HalfOpen => {
                        core.probes.record(m);
                        let total = core.probes.total();
                        let minimum = self.config.permitted_number_of_calls_in_half_open_state;
                        if !self.check_thresholds(&mut core, state, total, minimum)
                            && total.calls >= u64::from(minimum)
                        {
                            self.transition_locked(&mut core, State::Closed, None);
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
                ResultTransition::Open => self.transition_locked(&mut core, State::Open, None),
                ResultTransition::OpenFor(wait) => {
                    self.transition_locked(&mut core, State::Open, Some(wait))
                }
            }
        }
    }

    /// Publishes exceeded thresholds and opens (except in METRICS_ONLY).
    /// Returns whether a threshold was reached.
    fn check_thresholds(
        &self,
        core: &mut Core,
        state: State,
        total: Aggregate,
        minimum: u32,
    ) -> bool {
        if total.calls < u64::from(minimum) || total.calls == 0 {
            return false;
        }
        let failure_rate = total.failed as f32 * 100.0 / total.calls as f32;
        let slow_rate = total.slow as f32 * 100.0 / total.calls as f32;
        let failure_exceeded = failure_rate >= self.config.failure_rate_threshold;
        let slow_exceeded = slow_rate >= self.config.slow_call_rate_threshold;
        if !failure_exceeded && !slow_exceeded {
            return false;
        }
        if state == State::MetricsOnly {
            if core.thresholds_reported {
                return true;
            }
            core.thresholds_reported = true;
        }
        if failure_exceeded {
            self.publish(|| CircuitBreakerEventKind::FailureRateExceeded { rate: failure_rate });
        }
        if slow_exceeded {
            self.publish(|| CircuitBreakerEventKind::SlowCallRateExceeded { rate: slow_rate });
        }
        if state != State::MetricsOnly {
            self.transition_locked(core, State::Open, None);
        }
        true
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
                if w.state() == State::Open && now >= self.open_until.load(Ordering::Acquire) =>
            {
                self.transition_locked(&mut core, State::HalfOpen, None)
            }
            Timer::HalfOpenToOpen
                if w.state() == State::HalfOpen
                    && now >= self.half_open_until.load(Ordering::Acquire) =>
            {
                self.transition_locked(&mut core, State::Open, None)
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
        self.transition_locked(&mut core, to, wait);
        Ok(())
    }

    /// Enters `to` (re-entering the current state starts it afresh and publishes
    /// nothing). Every transition bumps the epoch.
    fn transition_locked(&self, core: &mut Core, to: State, wait: Option<Duration>) {
        let from_word = self.load();
        let from = from_word.state();
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
                core.attempts = core.attempts.saturating_add(1);
                let wait = wait.unwrap_or_else(|| self.open_wait(core.attempts));
                let until = now.saturating_add(clock::nanos(wait));
                self.open_until.store(until, Ordering::Release);
                if self.config.automatic_transition {
                    core.timer = self.schedule(epoch, until, Timer::OpenToHalfOpen);
                }
            }
            State::HalfOpen => {
                core.probes.reset();
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
                    core.timer = self.schedule(epoch, until, Timer::HalfOpenToOpen);
                }
            }
            State::Closed | State::ForcedOpen | State::Disabled | State::MetricsOnly => {
                if to == State::Closed {
                    core.attempts = 0;
                }
                self.window.reset(now);
                core.shown = Shown::Main;
            }
        }
        if reset_counters {
            core.ignored = 0;
            self.not_permitted.store(0, Ordering::Relaxed);
        }
        self.word
            .store(Word::new(epoch, to, slots).0, Ordering::Release);
        if from != to {
            self.publish(|| CircuitBreakerEventKind::StateTransition { from, to });
        }
    }

    fn open_wait(&self, attempts: u32) -> Duration {
        match &self.config.wait_interval_function_in_open_state {
            Some(f) => f.interval(attempts),
            None => self.config.wait_duration_in_open_state,
        }
    }

    /// Spawns a tokio timer for a transition due at `at` (clock nanos), if a
    /// runtime is current. Without one, the transition happens lazily.
    fn schedule(&self, epoch: u64, at: u64, timer: Timer) -> Option<tokio::task::AbortHandle> {
        let handle = tokio::runtime::Handle::try_current().ok()?;
        let me = self.me.clone();
        let task = handle.spawn(async move {
            loop {
                let Some(inner) = me.upgrade() else { return };
                let now = inner.clock.precise_now_nanos();
                if now >= at {
                    inner.fire(epoch, timer);
                    return;
                }
                drop(inner);
                tokio::time::sleep(Duration::from_nanos(at - now)).await;
            }
        });
        Some(task.abort_handle())
    }
}
