//! Adaptive client-side throttling (Google SRE book, *Handling Overload*):
//! a client that sees its downstream refuse requests starts refusing them
//! itself, locally and at once, with probability
//!
//! ```text
//! max(0, (requests − K · accepts) / (requests + 1))
//! ```
//!
//! over a sliding window (default: the last 2 minutes, K = 2). `requests`
//! counts every call the application attempted — answered by the downstream
//! or refused locally — and `accepts` those the downstream accepted. While
//! the downstream accepts everything the probability is 0 and nothing is
//! refused; once it refuses more than `1 − 1/K` of the calls it sees, the
//! client sheds the excess before it leaves the process, so a downstream
//! that answers 429 for minutes is asked less without waiting for a
//! breaker's window to fill.
//!
//! # What counts as accepted
//!
//! A call the downstream did not refuse. By default every `Ok` value is
//! accepted and every error is a refusal; `accept_error` names errors the
//! downstream answered after doing the work (a 404), `refuse_result` values
//! that are refusals (an HTTP 429 or 503 returned as a value). A refusal is
//! counted when the call completes; a call cancelled or panicking before it
//! completes counts nothing.
//!
//! # The refusal
//!
//! A local rejection is [`Error::Throttled`], its
//! own kind (`throttled`), named after the throttler and carrying the
//! rejection probability the decision used (to the nearest percent). It is
//! not a rate limiter's [`RequestNotPermitted`](crate::error::RequestNotPermitted):
//! the throttler refuses because the *downstream* keeps refusing, so a
//! fallback typed for [`Throttled`] serves a cached answer for an
//! overloaded dependency, and an HTTP layer answers 503 with `Retry-After`
//! (the dependency is unavailable; the client did nothing wrong) where a
//! rate limiter's refusal is a 429. It is counted (`not_permitted_calls`)
//! and published as a `NOT_PERMITTED` event.
//!
//! A refusal never allocates: the throttler builds one refusal per percent
//! of probability the first time it refuses at that percent (at most 101,
//! after the first refusal of its life), and clones it after.
//!
//! # Cost
//!
//! A decision is a clock reading (one atomic load on the default coarse
//! clock), one load of the packed totals and, only while the probability is
//! above 0, one draw of a thread-local random number. Recording an outcome
//! is two relaxed `fetch_add`s (the current second's bucket and the totals,
//! requests and accepts packed in one word); moving to a new second takes a
//! lock once per second. No call allocates. The window costs 8 bytes per
//! second it spans.
//!
//! ```
//! use std::time::Duration;
//! use resil_core::clock::ManualClock;
//! use resil_core::throttler::{Throttler, ThrottlerConfig};
//!
//! let clock = ManualClock::new();
//! let throttler = Throttler::with_clock("search", ThrottlerConfig::default(), clock);
//! for _ in 0..10 {
//!     let _ = throttler.call(|| Err::<(), _>("429 Too Many Requests"));
//! }
//! // 10 requests, 0 accepts: p = (10 − 2·0) / (10 + 1)
//! let p = throttler.metrics().rejection_probability();
//! assert!((p - 10.0 / 11.0).abs() < 1e-9);
//! ```

mod config;
mod event;
mod window;

use std::any::Any;
use std::fmt;
use std::future::{Future, Pending};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

pub use self::config::{ThrottlerConfig, ThrottlerConfigBuilder, MAX_WINDOW_SECONDS};
pub use self::event::{ThrottlerEvent, ThrottlerEventKind, ThrottlerMetrics};

use self::window::{Counts, Window, ACCEPT, REQUEST};
use crate::clock::{Clock, SharedClock};
use crate::error::{Error, SharedName, Throttled};
use crate::event::{EventPublisher, EventStream};
use crate::guarded::{Acquire, Guarded};
use crate::log::RefusalLog;

/// A source of uniform random numbers in `[0, 1)` (injected in tests).
type RandomSource = Arc<dyn Fn() -> f64 + Send + Sync>;

/// An adaptive client-side throttler: a cheap [`Clone`] handle; clones share
/// one window. See the [module docs](self).
#[derive(Clone)]
pub struct Throttler {
    inner: Arc<Inner>,
}

struct Inner {
    name: Arc<str>,
    refusals: Refusals,
    config: ThrottlerConfig,
    clock: SharedClock,
    window: Window,
    /// `None`: fastrand's thread-local generator.
    random: Option<RandomSource>,
    not_permitted: AtomicU64,
    refusals_logged: RefusalLog,
    inspects_values: bool,
    events: EventPublisher<ThrottlerEvent>,
}

/// The permission to make one call: record what the downstream answered with
/// [`accepted`](Permit::accepted) / [`refused`](Permit::refused) (or
/// [`on_result`](Permit::on_result)). Dropped unrecorded (a cancelled future,
/// a panic), it counts nothing and holds nothing back.
#[must_use = "a permit records the call's outcome when told"]
pub struct Permit<'a> {
    inner: &'a Inner,
}

impl Permit<'_> {
    /// The downstream accepted the call.
    #[inline]
    pub fn accepted(self) {
        self.inner.record(true);
    }

    /// The downstream refused the call.
    #[inline]
    pub fn refused(self) {
        self.inner.record(false);
    }

    /// Classifies `result` by the configuration (see the module docs) and
    /// records it.
    #[inline]
    pub fn on_result<T: 'static, E: 'static>(self, result: &Result<T, E>) {
        let accepted = self.inner.judge(result);
        self.inner.record(accepted);
    }

    /// Classifies a successful value by the `refuse_result` predicates and
    /// records it.
    #[inline]
    pub fn on_value<T: 'static>(self, value: &T) {
        let accepted = self.inner.accepts_value(value);
        self.inner.record(accepted);
    }

    /// Classifies the result of a call protected by other resil primitives
    /// (see [`Throttler::call_nested`]) and records it, or records nothing
    /// when an inner primitive refused the call locally.
    #[inline]
    pub fn on_nested_result<T: 'static, E: 'static>(self, result: &Result<T, Error<E>>) {
        let accepted = match result {
            Ok(value) => self.inner.accepts_value(value),
            Err(Error::Call(error)) => self.inner.config.accepts_error(error),
            Err(Error::Timeout(_)) => false,
            // A breaker, bulkhead, rate limiter, retry budget or deadline
            // refused before the downstream saw the call: no request.
            Err(_) => return,
        };
        self.inner.record(accepted);
    }
}

impl fmt::Debug for Permit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("throttler", &&*self.inner.name)
            .finish()
    }
}

impl Throttler {
    /// A throttler named `name` on the coarse clock (one atomic load per
    /// reading), drawing from a thread-local random generator.
    pub fn new(name: impl Into<Arc<str>>, config: ThrottlerConfig) -> Self {
        Self::build(name.into(), config, SharedClock::coarse(), None)
    }

    /// A throttler that reads `clock` (a [`ManualClock`](crate::clock::ManualClock)
    /// in tests).
    pub fn with_clock(
        name: impl Into<Arc<str>>,
        config: ThrottlerConfig,
        clock: impl Clock,
    ) -> Self {
        Self::build(name.into(), config, SharedClock::new(clock), None)
    }

    /// A throttler that reads `clock` and draws its rejections from
    /// `random`, which returns numbers in `[0, 1)`: a call is refused when
    /// the draw is below the rejection probability. For deterministic
    /// tests; a draw outside `[0, 1)` is clamped.
    pub fn with_random_source(
        name: impl Into<Arc<str>>,
        config: ThrottlerConfig,
        clock: impl Clock,
        random: impl Fn() -> f64 + Send + Sync + 'static,
    ) -> Self {
        Self::build(
            name.into(),
            config,
            SharedClock::new(clock),
            Some(Arc::new(random)),
        )
    }

    /// A throttler on a clock already shared (a registry's).
    pub fn with_shared_clock(
        name: impl Into<Arc<str>>,
        config: ThrottlerConfig,
        clock: SharedClock,
    ) -> Self {
        Self::build(name.into(), config, clock, None)
    }

    fn build(
        name: Arc<str>,
        config: ThrottlerConfig,
        clock: SharedClock,
        random: Option<RandomSource>,
    ) -> Self {
        let window = Window::new(config.window_seconds(), clock.now_nanos());
        Throttler {
            inner: Arc::new(Inner {
                refusals: Refusals::new(SharedName::new(Arc::clone(&name))),
                name,
                inspects_values: config.inspects_values(),
                config,
                clock,
                window,
                random,
                not_permitted: AtomicU64::new(0),
                refusals_logged: RefusalLog::new(),
                events: EventPublisher::default(),
            }),
        }
    }

    /// The throttler's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The throttler's configuration.
    pub fn config(&self) -> &ThrottlerConfig {
        &self.inner.config
    }

    /// Asks for permission to make one call: refused with the current
    /// rejection probability (see the module docs), counted and published.
    #[inline]
    pub fn try_acquire_permission(&self) -> Result<Permit<'_>, Throttled> {
        let inner = &*self.inner;
        let now = inner.clock.now_nanos();
        let p = inner.probability(inner.window.totals(now));
        if p > 0.0 && inner.draw() < p {
            return Err(inner.reject(now, p));
        }
        Ok(Permit { inner })
    }

    /// Runs `f` if permitted and records whether the downstream accepted it.
    /// A panic in `f` or in a predicate records nothing; the panic continues.
    #[inline]
    pub fn call<T: 'static, E: 'static>(
        &self,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, Error<E>> {
        let permit = self.try_acquire_permission().map_err(Error::Throttled)?;
        let result = f();
        permit.on_result(&result);
        result.map_err(Error::Call)
    }

    /// Runs `f`, a call protected by other resil primitives (so it returns
    /// `Result<T, resil::Error<E>>`), if permitted, and returns its result
    /// with this throttler's refusal added: one flat `resil::Error<E>`.
    ///
    /// `Error::Call(e)` is classified as [`call`](Self::call) classifies `e`,
    /// and an inner timeout is a refusal (the downstream did not answer in
    /// time); an inner *local* refusal (a breaker's, a bulkhead's, a rate
    /// limiter's, a spent deadline) never reached the downstream and counts
    /// nothing. This is the call the attribute macros and the tower layer
    /// make.
    #[inline]
    pub fn call_nested<T: 'static, E: 'static>(
        &self,
        f: impl FnOnce() -> Result<T, Error<E>>,
    ) -> Result<T, Error<E>> {
        let permit = self.try_acquire_permission().map_err(Error::Throttled)?;
        let result = f();
        permit.on_nested_result(&result);
        result
    }

    /// The async [`call_nested`](Self::call_nested).
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

    /// Awaits `future` if permitted (asked on the first poll) and records
    /// whether the downstream accepted it. Dropped before it completes, it
    /// records nothing.
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

    /// The window's counts and the current rejection probability.
    pub fn metrics(&self) -> ThrottlerMetrics {
        let inner = &*self.inner;
        let counts = inner.window.totals(inner.clock.now_nanos());
        ThrottlerMetrics {
            requests: counts.requests,
            accepts: counts.accepts,
            rejection_probability: inner.probability(counts),
            not_permitted: inner.not_permitted.load(Ordering::Relaxed),
        }
    }

    /// Empties the window: the probability drops to 0.
    pub fn reset(&self) {
        self.inner.window.reset();
    }

    /// Subscribes to this throttler's events. Without subscribers,
    /// publishing costs one atomic load and no event is built.
    pub fn subscribe(&self) -> EventStream<ThrottlerEvent> {
        self.inner.events.subscribe()
    }

    /// Bytes this throttler occupies (its window's buckets included).
    pub fn memory_footprint(&self) -> usize {
        std::mem::size_of::<Inner>()
            + self.inner.window.heap_bytes()
            + self.inner.refusals.heap_bytes()
    }
}

impl Inner {
    /// `max(0, (requests − K·accepts) / (requests + 1))`, capped.
    #[inline]
    fn probability(&self, c: Counts) -> f64 {
        let excess = c.requests as f64 - self.config.accepts_multiplier * c.accepts as f64;
        if excess <= 0.0 {
            return 0.0;
        }
        (excess / (c.requests as f64 + 1.0)).min(self.config.max_rejection_probability)
    }

    #[inline]
    fn draw(&self) -> f64 {
        match &self.random {
            None => fastrand::f64(),
            Some(f) => f().clamp(0.0, 1.0),
        }
    }

    #[cold]
    #[inline(never)]
    fn reject(&self, now: u64, probability: f64) -> Throttled {
        self.window.record(now, REQUEST);
        self.not_permitted.fetch_add(1, Ordering::Relaxed);
        self.refusals_logged.refused(
            "throttler",
            &self.name,
            "calls refused locally",
            &self.clock,
        );
        self.events.publish_with(|| {
            ThrottlerEvent::of(&self.name, ThrottlerEventKind::NotPermitted { probability })
        });
        self.refusals.at(probability)
    }

    /// Whether the downstream accepted `result` (user predicates may panic:
    /// before anything is recorded).
    #[inline]
    fn judge<T: 'static, E: 'static>(&self, result: &Result<T, E>) -> bool {
        match result {
            Ok(value) => self.accepts_value(value),
            Err(error) => self.config.accepts_error(error),
        }
    }

    #[inline]
    fn accepts_value(&self, value: &dyn Any) -> bool {
        !self.inspects_values || !self.config.refuses_value(value)
    }

    #[inline]
    fn record(&self, accepted: bool) {
        let now = self.clock.now_nanos();
        self.window
            .record(now, if accepted { REQUEST + ACCEPT } else { REQUEST });
        self.events.publish_with(|| {
            ThrottlerEvent::of(
                &self.name,
                if accepted {
                    ThrottlerEventKind::Accepted
                } else {
                    ThrottlerEventKind::Refused
                },
            )
        });
    }
}

/// The refusals a throttler hands out, one per percent of rejection
/// probability, each built the first time it is needed: a refusal clones
/// one and never allocates, and a throttler that never refuses holds none.
struct Refusals {
    name: SharedName,
    by_percent: OnceLock<Box<[OnceLock<Throttled>; 101]>>,
}

impl Refusals {
    fn new(name: SharedName) -> Self {
        Refusals {
            name,
            by_percent: OnceLock::new(),
        }
    }

    /// The refusal for `probability`, to the nearest percent.
    fn at(&self, probability: f64) -> Throttled {
        let percent = Throttled::percent_of(probability);
        let table = self
            .by_percent
            .get_or_init(|| Box::new(std::array::from_fn(|_| OnceLock::new())));
        table[usize::from(percent)]
            .get_or_init(|| Throttled::by(&self.name, percent))
            .clone()
    }

    /// Bytes of the table, once built (the refusals in it are counted as
    /// their pointers: each is one small allocation of its own).
    fn heap_bytes(&self) -> usize {
        self.by_percent
            .get()
            .map_or(0, |_| std::mem::size_of::<[OnceLock<Throttled>; 101]>())
    }
}

impl fmt::Debug for Throttler {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Throttler")
            .field("name", &&*self.inner.name)
            .field("config", &self.inner.config)
            .finish()
    }
}
