//! The rate limiter handle, written once over its algorithm: acquire, wait,
//! call.
//!
//! [`Limiter<A>`] holds what every local rate limiter has — the name, the
//! clock, the events, the waiting count, the run-time timeout, the drain
//! predicate — and the algorithm's state `A` ([`Cycles`](super::Cycles) or
//! [`Bucket`](super::Bucket)), as governor is generic over its state.
//! [`RateLimiter`](super::RateLimiter) and
//! [`RefillRateLimiter`](super::RefillRateLimiter) are its two instantiations.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::cycle::{Grant, Refusal};
use super::{
    AcquireError, ExceedsLimit, RateLimiterEvent, RateLimiterEventKind, RateLimiterMetrics,
};
use crate::clock::{self, Clock, CoarseClock, SharedClock, SystemClock};
use crate::cold_box::ColdBox;
use crate::criticality::{share_from_percent, Criticality, Share};
use crate::deadline;
use crate::error::{DeadlineExceeded, Error, RequestNotPermitted, SharedName};
use crate::event::{EventPublisher, EventStream};
use crate::guarded::{Acquire, Guarded};
use crate::shadow::{Divergence, ShadowNews, ShadowSlot, Shadowed};
use crate::striped::Striped;

/// The shortest refresh period [`RateLimiter::new`](super::RateLimiter::new)
/// times with the [`CoarseClock`] (for a [`RefillRateLimiter`](super::RefillRateLimiter),
/// the shortest interval between two permits): 50 coarse ticks, so the
/// clock's error stays within 2 % of a cycle.
pub const COARSE_PERIOD: std::time::Duration = clock::COARSE_TICK.saturating_mul(50);

/// A rate-limiting algorithm a [`Limiter`] runs: [`Cycles`](super::Cycles)
/// (Resilience4j's `AtomicRateLimiter`) or [`Bucket`](super::Bucket) (its
/// `RefillRateLimiter`). Sealed: implemented by those two only.
pub trait Algorithm: sealed::Machinery {}

pub(crate) mod sealed {
    use std::fmt;
    use std::sync::atomic::AtomicBool;
    use std::sync::Arc;
    use std::time::Duration;

    use super::super::cycle::{Grant, Refusal};

    /// What [`Limiter`](super::Limiter) needs of its algorithm.
    pub trait Machinery: Send + Sync + Sized + 'static {
        /// The configuration the algorithm is built from.
        type Config: Clone + fmt::Debug + Send + Sync + 'static;

        /// The handle's name in `Debug` output.
        const NAME: &'static str;

        /// Whether a request for more permits than the algorithm can ever
        /// grant is over its capacity (a bucket) rather than its limit per
        /// period (cycles).
        const LIMIT_IS_CAPACITY: bool;

        /// Whether [`available`](Self::available) is read on the precise
        /// clock (the bucket) rather than the possibly coarse one.
        const PRECISE_AVAILABLE: bool;

        /// The state at clock reading `origin`.
        fn build(config: &Self::Config, origin: u64) -> Self;

        /// The clock reading its periods (or refills) are counted from.
        fn origin(&self) -> u64;

        /// The time between refills that picks the clock: the coarse one at
        /// [`COARSE_PERIOD`](super::COARSE_PERIOD) or more.
        fn refill_period(config: &Self::Config) -> Duration;

        /// The configured `timeout_duration`.
        fn timeout(config: &Self::Config) -> Duration;

        /// The configuration in force: the one at creation with the
        /// run-time `timeout` (and whatever else changed in the state).
        fn config_now(&self, config: &Self::Config, timeout: Duration) -> Self::Config;

        /// Whether the config's `drain_permissions_on_result` accepts `result`.
        fn drains<T: 'static, E: 'static>(
            config: &Self::Config,
            result: &Result<T, E>,
            name: &Arc<str>,
            warned_foreign: &AtomicBool,
        ) -> bool;

        /// Takes `permits` if they are free now (`clock` read at most once);
        /// `false` took nothing and leaves the decision to
        /// [`acquire_at`](Self::acquire_at).
        fn acquire_fast(&self, permits: u32, clock: impl FnOnce() -> u64) -> bool;

        /// Takes `permits` at reading `now`, or reserves them if they come
        /// within `max_wait()` nanoseconds; consumes nothing on refusal.
        fn acquire_at(
            &self,
            permits: u32,
            now: u64,
            max_wait: impl FnMut() -> u64,
        ) -> Result<Grant, Refusal>;

        /// The per-class thresholds of the configuration, in percent of the
        /// permits of a period (all 100: the algorithm does not admit by class).
        fn thresholds(_config: &Self::Config) -> [f32; 4] {
            [100.0; 4]
        }

        /// Takes `permits` now if they fit in the first `share` (1/2^32ths)
        /// of the period's permits; never reserves, consumes nothing on
        /// refusal. Called only for a class whose threshold is below 100.
        fn acquire_within(&self, permits: u32, share: crate::criticality::Share, now: u64) -> bool {
            let _ = share;
            self.acquire_fast(permits, || now)
        }

        /// Gives back an unused reservation if it is still the latest.
        fn give_back(&self, grant: &Grant);

        /// Drains the free permits at `now`; how many there were.
        fn drain(&self, now: u64) -> u32;

        /// Permits free at `now`; negative while reservations wait.
        fn available(&self, now: u64) -> i64;

        /// The algorithm's own fields in the handle's `Debug` output, after
        /// `config`.
        fn debug_fields(&self, out: &mut fmt::DebugStruct<'_, '_>);
    }
}

/// A local rate limiter: the handle shared by [`RateLimiter`](super::RateLimiter)
/// (`Limiter<Cycles>`) and [`RefillRateLimiter`](super::RefillRateLimiter)
/// (`Limiter<Bucket>`); see those for what each algorithm does.
///
/// A cheap `Clone` handle: clones share the same permits. Permits are per
/// instance, never per cluster (see the [module docs](super)).
pub struct Limiter<A: Algorithm> {
    pub(super) inner: Arc<Inner<A>>,
}

impl<A: Algorithm> Clone for Limiter<A> {
    #[inline]
    fn clone(&self) -> Self {
        Limiter {
            inner: Arc::clone(&self.inner),
        }
    }
}

pub(super) struct Inner<A: Algorithm> {
    pub(super) state: A,
    clock: SharedClock,
    name: Arc<str>,
    /// The name every refusal carries (built once; see [`SharedName`]).
    refusal_name: SharedName,
    /// The configuration at creation; the timeout (and a cycle limiter's
    /// limit) may change since.
    pub(super) config: A::Config,
    /// `timeout_duration` in nanoseconds (saturated), changeable at run time.
    timeout: AtomicU64,
    waiting: AtomicU32,
    /// Acquisitions granted, counted per thread.
    granted: Striped<AtomicU64>,
    /// Acquisitions refused, per class ([`Criticality::index`]); their sum
    /// is the total.
    refused: [AtomicU64; 4],
    events: EventPublisher<RateLimiterEvent>,
    /// Refusals since the last aggregated log line (see [`crate::log`]).
    refusals_logged: crate::log::RefusalLog,
    /// Set once a call's types met a drain predicate written for others.
    warned_foreign: AtomicBool,
    /// The shadow attached to this limiter (see [`crate::shadow`]).
    shadow: ShadowSlot<Limiter<A>>,
    /// Whether this limiter is itself a shadow, and what only a shadow counts.
    is_shadow: bool,
    shadow_counts: LimiterShadowCounts,
}

/// What only a shadow limiter counts (zero on a live one).
#[derive(Default)]
struct LimiterShadowCounts {
    /// Acquisitions it would have granted only after a wait.
    waited: AtomicU64,
    /// Acquisitions the live limiter refused that it would have granted.
    unobserved: AtomicU64,
    /// Outcomes its drain predicate panicked on.
    panicked: AtomicU64,
    news: ShadowNews,
}

impl<A: Algorithm> Limiter<A> {
    /// A rate limiter named `name`, timed by the system's monotonic clock.
    ///
    /// The clock is chosen by the refresh period (for a refilling limiter,
    /// the time between two permits). Periods of at least [`COARSE_PERIOD`]
    /// (every per-second or per-minute quota) read the [`CoarseClock`]: one
    /// atomic load instead of a TSC read, and its ±1 ms error is at most 2 %
    /// of a cycle and always on the safe side (a coarse reading trails real
    /// time, so a new cycle's permits are handed out up to a millisecond
    /// late, never early, and computed waits are never short). Shorter
    /// periods read the [`SystemClock`] (nanoseconds).
    pub fn new(name: impl Into<Arc<str>>, config: A::Config) -> Self {
        if A::refill_period(&config) >= COARSE_PERIOD {
            Self::with_clock(name, config, CoarseClock)
        } else {
            Self::with_clock(name, config, SystemClock)
        }
    }

    /// A rate limiter timed by `clock` (a [`ManualClock`](crate::clock::ManualClock)
    /// in tests, a [`TokioClock`](crate::clock::TokioClock) under paused tokio time).
    /// Sync waits sleep through [`Clock::sleep`], async waits await
    /// [`Clock::sleep_async`].
    pub fn with_clock(name: impl Into<Arc<str>>, config: A::Config, clock: impl Clock) -> Self {
        let clock = SharedClock::new(clock);
        let origin = clock.now_nanos();
        Self::build(name.into(), config, clock, origin, false)
    }

    fn build(
        name: Arc<str>,
        config: A::Config,
        clock: SharedClock,
        origin: u64,
        is_shadow: bool,
    ) -> Self {
        Limiter {
            inner: Arc::new(Inner {
                state: A::build(&config, origin),
                clock,
                refusal_name: SharedName::new(Arc::clone(&name)),
                name,
                timeout: AtomicU64::new(clock::nanos(A::timeout(&config))),
                config,
                waiting: AtomicU32::new(0),
                granted: Striped::default(),
                refused: Default::default(),
                events: EventPublisher::default(),
                refusals_logged: crate::log::RefusalLog::new(),
                warned_foreign: AtomicBool::new(false),
                shadow: ShadowSlot::default(),
                is_shadow,
                shadow_counts: LimiterShadowCounts::default(),
            }),
        }
    }

    /// The name given at creation.
    #[inline]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The configuration in force: the one at creation with run-time changes
    /// of the timeout (and, for the cycle limiter, of the limit for cycles
    /// after the current).
    pub fn config(&self) -> A::Config {
        self.inner
            .state
            .config_now(&self.inner.config, self.timeout_duration())
    }

    fn timeout_duration(&self) -> Duration {
        Duration::from_nanos(self.inner.timeout.load(Ordering::Relaxed))
    }

    /// Permits free now; negative while permits still to come are reserved
    /// (Resilience4j `availablePermissions`).
    pub fn available_permissions(&self) -> i64 {
        let now = if A::PRECISE_AVAILABLE {
            self.inner.precise_now()
        } else {
            self.inner.now()
        };
        self.inner.state.available(now)
    }

    /// A snapshot of the permits and the waiting callers.
    pub fn metrics(&self) -> RateLimiterMetrics {
        let by_class = self
            .inner
            .refused
            .each_ref()
            .map(|r| r.load(Ordering::Relaxed));
        RateLimiterMetrics {
            available_permissions: self.available_permissions(),
            number_of_waiting_threads: self.inner.waiting.load(Ordering::Relaxed),
            successful_acquisitions: self.inner.granted.sum(),
            failed_acquisitions: by_class.iter().sum(),
            failed_by_class: by_class,
        }
    }

    /// Every acquisition (and drain) from now on, successful or not.
    pub fn subscribe(&self) -> EventStream<RateLimiterEvent> {
        self.inner.events.subscribe()
    }

    /// Runs `f` once it has a permit, waiting (by sleeping the thread through the
    /// clock) for a reserved one up to `timeout_duration`.
    ///
    /// Refused with [`Error::RequestNotPermitted`] when no permit comes free in
    /// time, or [`Error::DeadlineExceeded`] when the wait would outlast the
    /// task's [deadline](crate::deadline); `f` then does not run.
    ///
    /// With `drain_permissions_on_result` set, an outcome it accepts drains
    /// the free permits.
    #[inline]
    pub fn call<T, E, F>(&self, f: F) -> Result<T, Error<E>>
    where
        F: FnOnce() -> Result<T, E>,
        T: 'static,
        E: 'static,
    {
        self.acquire_permission(1)?;
        let result = f();
        self.inner.on_result(&result);
        result.map_err(Error::Call)
    }

    /// Awaits `fut` once it has a permit, awaiting the clock's timer (no thread
    /// blocked) for a reserved one up to `timeout_duration`. `fut` is not polled
    /// before the permit is there.
    ///
    /// Refused as [`call`](Self::call). Dropping the returned future while it
    /// waits gives the reserved permit back if no later caller reserved behind
    /// it; otherwise the permit stays consumed, as in Resilience4j (later
    /// callers' waits were computed behind it).
    ///
    /// `fut` is stored once and polled in place (an `async fn` would hold it
    /// twice); a free permit is taken on the first poll without building any
    /// wait state.
    #[inline]
    pub fn call_async<T, E, F>(
        &self,
        fut: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + use<'_, T, E, F, A>
    where
        F: Future<Output = Result<T, E>>,
        T: 'static,
        E: 'static,
    {
        Guarded::new(
            fut,
            move || self.acquire_for_call(),
            move |(), result: Result<T, E>| {
                self.inner.on_result(&result);
                result.map_err(Error::Call)
            },
        )
    }

    /// [`call_async`](Self::call_async) around a future that is itself
    /// protected (it returns `Result<T, resil::Error<E>>`): one flat
    /// `resil::Error<E>`, an inner refusal staying a refusal, polled in place.
    ///
    /// The drain predicate sees the outcome as with `call_async`: a predicate
    /// written for `Result<T, E>` matches the call's own error inside the
    /// `resil::Error<E>`.
    #[inline]
    pub fn call_async_nested<T, E, F>(
        &self,
        fut: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + use<'_, T, E, F, A>
    where
        F: Future<Output = Result<T, Error<E>>>,
        T: 'static,
        E: 'static,
    {
        Guarded::new(
            fut,
            move || self.acquire_for_call(),
            move |(), result: Result<T, Error<E>>| {
                self.inner.on_result(&result);
                result
            },
        )
    }

    /// [`call`](Self::call) weighing `permits` (Resilience4j 2.3's
    /// `@RateLimiter(permits = N)`): the call runs once it holds all of
    /// them. Refused as `call`, and at once, consuming nothing, when
    /// `permits` exceeds what the limiter can ever grant at once.
    #[inline]
    pub fn call_n<T, E, F>(&self, permits: u32, f: F) -> Result<T, Error<E>>
    where
        F: FnOnce() -> Result<T, E>,
        T: 'static,
        E: 'static,
    {
        self.acquire_permission(permits)?;
        let result = f();
        self.inner.on_result(&result);
        result.map_err(Error::Call)
    }

    /// [`call_async`](Self::call_async) weighing `permits` (see
    /// [`call_n`](Self::call_n)).
    #[inline]
    pub fn call_async_n<T, E, F>(
        &self,
        permits: u32,
        fut: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + use<'_, T, E, F, A>
    where
        F: Future<Output = Result<T, E>>,
        T: 'static,
        E: 'static,
    {
        Guarded::new(
            fut,
            move || self.acquire_n_for_call(permits),
            move |(), result: Result<T, E>| {
                self.inner.on_result(&result);
                result.map_err(Error::Call)
            },
        )
    }

    /// [`call_async_nested`](Self::call_async_nested) weighing `permits`
    /// (see [`call_n`](Self::call_n)).
    #[inline]
    pub fn call_async_nested_n<T, E, F>(
        &self,
        permits: u32,
        fut: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + use<'_, T, E, F, A>
    where
        F: Future<Output = Result<T, Error<E>>>,
        T: 'static,
        E: 'static,
    {
        Guarded::new(
            fut,
            move || self.acquire_n_for_call(permits),
            move |(), result: Result<T, Error<E>>| {
                self.inner.on_result(&result);
                result
            },
        )
    }

    /// One permit for a `call_async*` future's first poll (see
    /// [`acquire_n_for_call`](Self::acquire_n_for_call)).
    #[inline]
    #[allow(clippy::type_complexity)]
    fn acquire_for_call(
        &self,
    ) -> Result<
        Acquire<(), ColdBox<impl Future<Output = Result<(), AcquireError>> + '_>>,
        AcquireError,
    > {
        self.acquire_n_for_call(1)
    }

    /// `permits` for a `call_async*` future's first poll: at once, or a
    /// wait for a reserved one. Boxed: only a waiting call pays for its wait
    /// state (it allocates a timer anyway), every other call's future stays a
    /// pointer smaller.
    #[inline]
    #[allow(clippy::type_complexity)]
    fn acquire_n_for_call(
        &self,
        permits: u32,
    ) -> Result<
        Acquire<(), ColdBox<impl Future<Output = Result<(), AcquireError>> + '_>>,
        AcquireError,
    > {
        if let Some(share) = self.inner.class_share() {
            return self
                .inner
                .take_within(permits, share, true)
                .map(|()| Acquire::Now(()));
        }
        // The common case returns without building a `Grant`: the result
        // stays two words, in registers.
        if self.inner.take_now(permits) {
            return Ok(Acquire::Now(()));
        }
        let grant = self.inner.reserve_slow(permits)?;
        Ok(if grant.wait == 0 {
            Acquire::Now(())
        } else {
            Acquire::Wait(ColdBox::pin(self.wait_for(grant)))
        })
    }

    /// Drains the free permits (Resilience4j `drainPermissions`):
    /// acquisitions wait for, or are refused until, the next ones come.
    /// Reservations already made are kept.
    pub fn drain_permissions(&self) {
        self.inner.drain();
    }

    /// Takes `permits` only if they are free now: never waits, never
    /// reserves. `false` consumed nothing.
    #[inline]
    pub fn try_acquire_permission(&self, permits: u32) -> bool {
        let inner = &*self.inner;
        if let Some(share) = inner.class_share() {
            return inner.take_within(permits, share, false).is_ok();
        }
        let granted = inner.state.acquire_fast(permits, || inner.now())
            || inner
                .state
                .acquire_at(permits, inner.precise_now(), || 0)
                .is_ok();
        inner.publish(granted, permits, false);
        granted
    }

    /// Takes `permits`, sleeping the thread (through the clock) until they
    /// are due if they are not free now (Resilience4j `acquirePermission`).
    /// Refuses at once, consuming nothing, when the wait would exceed
    /// `timeout_duration` or the task's deadline, or `permits` exceeds what
    /// the limiter can ever grant at once (`limit_for_period`, a bucket's
    /// `permit_capacity`).
    #[inline]
    pub fn acquire_permission(&self, permits: u32) -> Result<(), AcquireError> {
        let grant = self.inner.reserve(permits)?;
        if grant.wait > 0 {
            self.inner.sleep(grant.wait);
        }
        Ok(())
    }

    /// [`acquire_permission`](Self::acquire_permission) for async code: awaits
    /// the clock's timer instead of sleeping a thread. Dropping the future while
    /// it waits gives the reservation back if it is still the latest one.
    pub async fn acquire_permission_async(&self, permits: u32) -> Result<(), AcquireError> {
        let grant = self.inner.reserve(permits)?;
        if grant.wait > 0 {
            self.wait_for(grant).await?;
        }
        Ok(())
    }

    /// Waits out a reservation; dropped early, it gives the reservation back
    /// if it is still the latest one.
    async fn wait_for(&self, grant: Grant) -> Result<(), AcquireError> {
        let reserved = Reserved::new(&self.inner, grant);
        self.inner
            .clock
            .sleep_async(Duration::from_nanos(grant.wait))
            .await;
        reserved.used();
        Ok(())
    }

    /// Reserves `permits` without waiting and returns how long the caller must
    /// wait before using them (zero if they are free now); refuses as
    /// [`acquire_permission`](Self::acquire_permission) (Resilience4j
    /// `reservePermission`). A reservation is consumed whether or not the
    /// caller waits for it.
    pub fn reserve_permission(&self, permits: u32) -> Result<Duration, AcquireError> {
        self.inner
            .reserve(permits)
            .map(|grant| Duration::from_nanos(grant.wait))
    }

    /// Changes `timeout_duration` at run time (Resilience4j
    /// `changeTimeoutDuration`): it applies to acquisitions that start after the
    /// change; callers already waiting keep their wake-up time.
    pub fn change_timeout_duration(&self, timeout_duration: Duration) {
        self.inner
            .timeout
            .store(clock::nanos(timeout_duration), Ordering::Relaxed);
    }
}

impl<A: Algorithm> Inner<A> {
    /// Applies `drain_permissions_on_result` to a finished call.
    #[inline]
    fn on_result<T: 'static, E: 'static>(&self, result: &Result<T, E>) {
        if A::drains(&self.config, result, &self.name, &self.warned_foreign) {
            self.drain();
        }
        if self.shadow.is_set() {
            self.shadow_result(result);
        }
    }

    #[cold]
    fn drain(&self) {
        let drained = self.state.drain(self.precise_now());
        self.events.publish_with(|| {
            RateLimiterEvent::with_detail(&self.name, RateLimiterEventKind::Drained, drained)
        });
    }

    /// A reading of the limiter's clock.
    #[inline]
    pub(super) fn now(&self) -> u64 {
        self.clock.now_nanos()
    }

    /// A reading for the slow path, where a refusal or a wait is decided: on
    /// the coarse clock it is the precise one, so a caller that waited out a
    /// cycle is never refused because the coarse reading lags.
    pub(super) fn precise_now(&self) -> u64 {
        self.clock.precise_now_nanos()
    }

    #[inline(never)]
    fn sleep(&self, nanos: u64) {
        let _waiting = Waiting::enter(&self.waiting);
        self.clock.sleep(Duration::from_nanos(nanos));
    }

    /// The share of a period the task's class may take, when it is not all
    /// of it (a class below its threshold never reserves).
    #[inline]
    fn class_share(&self) -> Option<Share> {
        let threshold = A::thresholds(&self.config)[Criticality::current().index()];
        (threshold < 100.0).then(|| share_from_percent(threshold))
    }

    /// Takes `permits` within `share` of the current period, or refuses at
    /// once (no reservation).
    #[cold]
    fn take_within(&self, permits: u32, share: Share, may_wait: bool) -> Result<(), AcquireError> {
        let granted = self
            .state
            .acquire_within(permits, share, self.precise_now());
        self.publish(granted, permits, may_wait);
        if granted {
            Ok(())
        } else {
            self.refusals_logged
                .refused("rate limiter", &self.name, "calls refused", &self.clock);
            Err(AcquireError::NotPermitted(RequestNotPermitted::by(
                &self.refusal_name,
            )))
        }
    }

    /// Counts an acquisition decided (`may_wait`: one that could have
    /// waited for a reservation) and tells subscribers and the shadow.
    #[inline]
    fn publish(&self, granted: bool, permits: u32, may_wait: bool) {
        if self.shadow.is_set() {
            self.feed_shadow(granted, permits, may_wait);
        }
        if granted {
            self.granted.increment();
        } else {
            self.refused[Criticality::current().index()].fetch_add(1, Ordering::Relaxed);
        }
        self.events.publish_with(|| {
            let kind = if granted {
                RateLimiterEventKind::SuccessfulAcquire
            } else {
                RateLimiterEventKind::FailedAcquire
            };
            RateLimiterEvent::with_detail(&self.name, kind, permits)
        });
    }

    /// Takes or reserves `permits`, allowing a wait up to the timeout and the
    /// deadline; consumes nothing on refusal.
    #[inline]
    fn reserve(&self, permits: u32) -> Result<Grant, AcquireError> {
        if let Some(share) = self.class_share() {
            return self.take_within(permits, share, true).map(|()| Grant::NOW);
        }
        if self.take_now(permits) {
            Ok(Grant::NOW)
        } else {
            self.reserve_slow(permits)
        }
    }

    /// Takes `permits` if they are free now (and publishes the grant);
    /// `false` leaves everything to [`reserve_slow`](Self::reserve_slow).
    #[inline]
    fn take_now(&self, permits: u32) -> bool {
        if self.state.acquire_fast(permits, || self.now()) {
            self.publish(true, permits, true);
            true
        } else {
            false
        }
    }

    /// [`reserve`](Self::reserve) when the fast path could not grant: reads
    /// the precise time and takes the full path.
    #[inline(never)]
    fn reserve_slow(&self, permits: u32) -> Result<Grant, AcquireError> {
        // Both limits are read only when a wait is needed: the deadline is a
        // task-local look-up the immediate path does not pay for.
        let mut limits = None;
        let outcome = self.state.acquire_at(permits, self.precise_now(), || {
            wait_allowed(&self.timeout, &mut limits)
        });
        self.publish(outcome.is_ok(), permits, true);
        outcome.map_err(|refusal| self.refused(permits, refusal, limits))
    }

    /// The error for a refused acquisition: a wait within the timeout refused
    /// only because of the deadline is `DeadlineExceeded`.
    #[cold]
    fn refused(&self, permits: u32, refusal: Refusal, limits: Option<(u64, u64)>) -> AcquireError {
        self.refusals_logged
            .refused("rate limiter", &self.name, "calls refused", &self.clock);
        let name = &self.refusal_name;
        match refusal {
            Refusal::ExceedsLimit { limit } if A::LIMIT_IS_CAPACITY => {
                AcquireError::ExceedsLimit(ExceedsLimit::capacity(name, permits, limit))
            }
            Refusal::ExceedsLimit { limit } => {
                AcquireError::ExceedsLimit(ExceedsLimit::new(name, permits, limit))
            }
            Refusal::WaitTooLong { wait } => match limits {
                Some((timeout, _)) if wait <= timeout => {
                    AcquireError::DeadlineExceeded(DeadlineExceeded::by_shared(name))
                }
                _ => AcquireError::NotPermitted(RequestNotPermitted::by(name)),
            },
        }
    }
}

/// The wait a reservation may take: the timeout, cut to the task's deadline.
/// Records `(timeout, budget)` in `limits` for [`Inner::refused`].
fn wait_allowed(timeout: &AtomicU64, limits: &mut Option<(u64, u64)>) -> u64 {
    let timeout = timeout.load(Ordering::Relaxed);
    // A wait that ends at the deadline leaves no time for the call.
    let budget =
        deadline::remaining().map_or(u64::MAX, |left| clock::nanos(left).saturating_sub(1));
    *limits = Some((timeout, budget));
    timeout.min(budget)
}

impl<A: Algorithm> fmt::Debug for Limiter<A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = f.debug_struct(A::NAME);
        out.field("name", &&*self.inner.name)
            .field("config", &self.config());
        self.inner.state.debug_fields(&mut out);
        out.field("available_permissions", &self.available_permissions())
            .finish()
    }
}

/// Counts a caller in `number_of_waiting_threads` while it lives.
struct Waiting<'a>(&'a AtomicU32);

impl<'a> Waiting<'a> {
    fn enter(count: &'a AtomicU32) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A reservation being waited for by an async caller. Dropped before
/// [`used`](Reserved::used) (the caller's future was cancelled), it gives its
/// permits back if they are still the latest taken.
struct Reserved<'a, A: Algorithm> {
    inner: &'a Inner<A>,
    grant: Grant,
    used: bool,
    _waiting: Waiting<'a>,
}

impl<'a, A: Algorithm> Reserved<'a, A> {
    fn new(inner: &'a Inner<A>, grant: Grant) -> Self {
        Reserved {
            inner,
            grant,
            used: false,
            _waiting: Waiting::enter(&inner.waiting),
        }
    }

    fn used(mut self) {
        self.used = true;
    }
}

impl<A: Algorithm> Drop for Reserved<'_, A> {
    fn drop(&mut self) {
        if !self.used {
            self.inner.state.give_back(&self.grant);
        }
    }
}

impl<A: Algorithm> Inner<A> {
    /// Offers an acquisition the live limiter decided to its shadow.
    /// Cold: a limiter without a shadow never gets here.
    #[cold]
    #[inline(never)]
    fn feed_shadow(&self, live_granted: bool, permits: u32, may_wait: bool) {
        self.shadow
            .with(|shadow| shadow.inner.observe(live_granted, permits, may_wait));
    }

    /// On a shadow: decides the acquisition as this limiter would, taking
    /// (or reserving) from its own permits and never waiting, and counts it.
    fn observe(&self, live_granted: bool, permits: u32, may_wait: bool) {
        let wait = if let Some(share) = self.class_share() {
            self.state
                .acquire_within(permits, share, self.precise_now())
                .then_some(0)
        } else if self.state.acquire_fast(permits, || self.now()) {
            Some(0)
        } else {
            let mut limits = None;
            self.state
                .acquire_at(permits, self.precise_now(), || {
                    if may_wait {
                        wait_allowed(&self.timeout, &mut limits)
                    } else {
                        0
                    }
                })
                .ok()
                .map(|grant| grant.wait)
        };
        self.publish(wait.is_some(), permits, may_wait);
        let counts = &self.shadow_counts;
        if wait.is_none() {
            counts.news.note(Divergence::Refused);
        }
        if wait.is_some_and(|w| w > 0) {
            counts.waited.fetch_add(1, Ordering::Relaxed);
            counts.news.note(Divergence::Waited);
        }
        if wait.is_some() && !live_granted {
            counts.unobserved.fetch_add(1, Ordering::Relaxed);
            counts.news.note(Divergence::Unobserved);
        }
    }

    /// Offers a call's result to the shadow's drain predicate.
    #[cold]
    #[inline(never)]
    fn shadow_result<T: 'static, E: 'static>(&self, result: &Result<T, E>) {
        self.shadow.with(|shadow| {
            let s = &*shadow.inner;
            let drains = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                A::drains(&s.config, result, &s.name, &s.warned_foreign)
            }));
            match drains {
                Ok(true) => {
                    s.state.drain(s.precise_now());
                }
                Ok(false) => {}
                Err(_) => {
                    s.shadow_counts.panicked.fetch_add(1, Ordering::Relaxed);
                }
            }
        });
    }
}

impl<A: Algorithm> Limiter<A> {
    /// For a shadow ([`Shadowed::start_shadow`]): acquisitions it would have
    /// granted only after waiting for a later period's permits (the live
    /// limiter's caller may not have waited).
    pub fn shadow_waited_acquisitions(&self) -> u64 {
        self.inner.shadow_counts.waited.load(Ordering::Relaxed)
    }

    /// For a shadow: acquisitions its live limiter refused that it would
    /// have granted. Those calls never ran; under the shadow's settings they
    /// would have, and would have taken their permits, which the shadow did.
    pub fn unobserved_calls(&self) -> u64 {
        self.inner.shadow_counts.unobserved.load(Ordering::Relaxed)
    }

    /// For a shadow: results its drain predicate panicked on (the call and
    /// the live limiter were not affected).
    pub fn shadow_panics(&self) -> u64 {
        self.inner.shadow_counts.panicked.load(Ordering::Relaxed)
    }
}

/// A limiter's shadow takes, from permits of its own on the live limiter's
/// clock, what every acquisition of the live one asks for (the same count,
/// at the same instant, allowed the same wait or none), as a limiter with
/// its settings in the live one's place would: its
/// [`metrics`](Limiter::metrics) count what it would have granted and
/// refused. It never sleeps; an acquisition it would have granted only after
/// a wait is counted in [`shadow_waited_acquisitions`](Limiter::shadow_waited_acquisitions).
/// With the live limiter's refresh period, its periods are the live one's
/// (as for a limiter updated in place; only the period it is attached in
/// starts with all its permits); with another, they start when it is
/// attached, as a rebuilt limiter's would.
///
/// ```
/// use std::time::Duration;
/// use resil_core::clock::ManualClock;
/// use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
/// use resil_core::shadow::Shadowed;
///
/// let config = |limit| RateLimiterConfig::builder()
///     .limit_for_period(limit)
///     .limit_refresh_period(Duration::from_secs(1))
///     .timeout_duration(Duration::ZERO)
///     .build()
///     .unwrap();
/// let live = RateLimiter::with_clock("search", config(3), ManualClock::new());
/// let shadow = live.start_shadow(config(2));
/// for _ in 0..3 {
///     assert!(live.call(|| Ok::<_, ()>(())).is_ok(), "the shadow refuses nothing");
/// }
/// assert_eq!(shadow.metrics().failed_acquisitions(), 1, "but counts what it would have refused");
/// ```
impl<A: Algorithm> Shadowed for Limiter<A> {
    type Config = A::Config;

    fn shadow_slot(&self) -> &ShadowSlot<Self> {
        &self.inner.shadow
    }

    fn shadowed_by(&self, config: A::Config) -> Self {
        let inner = &*self.inner;
        let origin = if A::refill_period(&config) == A::refill_period(&inner.config) {
            inner.state.origin()
        } else {
            inner.clock.now_nanos()
        };
        Self::build(
            Arc::clone(&inner.name),
            config,
            inner.clock.clone(),
            origin,
            true,
        )
    }

    fn is_shadow(&self) -> bool {
        self.inner.is_shadow
    }

    fn shadow_news(&self) -> Option<&ShadowNews> {
        Some(&self.inner.shadow_counts.news)
    }
}
