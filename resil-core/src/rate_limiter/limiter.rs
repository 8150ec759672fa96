//! The rate limiter handle: acquire, wait, call.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::cycle::{Cycles, Fast, Grant, Refusal};
use super::{
    AcquireError, ExceedsLimit, RateLimiterConfig, RateLimiterEvent, RateLimiterEventKind,
    RateLimiterMetrics,
};
use crate::clock::{self, Clock, CoarseClock, SharedClock, SystemClock, COARSE_TICK};
use crate::cold_box::ColdBox;
use crate::deadline;
use crate::error::{ConfigError, DeadlineExceeded, Error, RequestNotPermitted, SharedName};
use crate::event::{EventPublisher, EventStream};
use crate::guarded::{Acquire, Guarded};

/// Resilience4j's `AtomicRateLimiter`: at most `limit_for_period` permits per
/// `limit_refresh_period` cycle, with reservation of later cycles' permits for
/// callers willing to wait up to `timeout_duration`.
///
/// A cheap `Clone` handle: clones share the same permits. Permits are per
/// instance, never per cluster (see the [module docs](super)).
///
/// ```
/// use std::time::Duration;
/// use resil_core::clock::ManualClock;
/// use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
/// use resil_core::Error;
///
/// let config = RateLimiterConfig::builder()
///     .limit_for_period(2)
///     .limit_refresh_period(Duration::from_secs(2))
///     .timeout_duration(Duration::ZERO)
///     .build()
///     .unwrap();
/// let clock = ManualClock::new();
/// let limiter = RateLimiter::with_clock("read", config, clock.clone());
///
/// let call = || limiter.call(|| Ok::<_, std::io::Error>("ok"));
/// assert!(call().is_ok());
/// assert!(call().is_ok());
/// assert!(matches!(call(), Err(Error::RequestNotPermitted(_))));
///
/// clock.advance(Duration::from_secs(2));
/// assert_eq!(limiter.available_permissions(), 2);
/// assert!(call().is_ok());
/// ```
#[derive(Clone)]
pub struct RateLimiter {
    inner: Arc<Inner>,
}

struct Inner {
    cycles: Cycles,
    clock: SharedClock,
    name: Arc<str>,
    /// The name every refusal carries (built once; see [`SharedName`]).
    refusal_name: SharedName,
    /// The configuration at creation; limit and timeout may change since.
    config: RateLimiterConfig,
    /// `timeout_duration` in nanoseconds (saturated), changeable at run time.
    timeout: AtomicU64,
    waiting: AtomicU32,
    events: EventPublisher<RateLimiterEvent>,
    /// Set once a call's types met a drain predicate written for others.
    warned_foreign: AtomicBool,
    /// Serialises `change_limit_for_period` (the schedule's single writer).
    changes: Mutex<()>,
}

/// The shortest refresh period [`RateLimiter::new`] times with the
/// [`CoarseClock`]: 50 coarse ticks, so the clock's error stays within 2 % of a
/// cycle.
pub const COARSE_PERIOD: std::time::Duration = COARSE_TICK.saturating_mul(50);

impl RateLimiter {
    /// A rate limiter named `name`, timed by the system's monotonic clock.
    ///
    /// The clock is chosen by the refresh period. Periods of at least
    /// [`COARSE_PERIOD`] (every per-second or per-minute quota) read the
    /// [`CoarseClock`]: one atomic load instead of a TSC read, and its ±1 ms
    /// error is at most 2 % of a cycle and always on the safe side (a coarse
    /// reading trails real time, so a new cycle's permits are handed out up to
    /// a millisecond late, never early, and computed waits are never short).
    /// Shorter periods read the [`SystemClock`] (nanoseconds).
    pub fn new(name: impl Into<Arc<str>>, config: RateLimiterConfig) -> Self {
        if config.limit_refresh_period() >= COARSE_PERIOD {
            Self::with_clock(name, config, CoarseClock)
        } else {
            Self::with_clock(name, config, SystemClock)
        }
    }

    /// A rate limiter timed by `clock` (a [`ManualClock`](crate::clock::ManualClock)
    /// in tests, a [`TokioClock`](crate::clock::TokioClock) under paused tokio time).
    /// Sync waits sleep through [`Clock::sleep`], async waits await
    /// [`Clock::sleep_async`].
    pub fn with_clock(
        name: impl Into<Arc<str>>,
        config: RateLimiterConfig,
        clock: impl Clock,
    ) -> Self {
        let clock = SharedClock::new(clock);
        let origin = clock.now_nanos();
        let name = name.into();
        let period = config.limit_refresh_period();
        RateLimiter {
            inner: Arc::new(Inner {
                cycles: Cycles::new(config.limit_for_period(), clock::nanos(period), origin),
                clock,
                refusal_name: SharedName::new(Arc::clone(&name)),
                name,
                timeout: AtomicU64::new(clock::nanos(config.timeout_duration())),
                config,
                waiting: AtomicU32::new(0),
                events: EventPublisher::default(),
                warned_foreign: AtomicBool::new(false),
                changes: Mutex::new(()),
            }),
        }
    }

    /// The name given at creation.
    #[inline]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The configuration in force, including run-time changes of the limit
    /// (the one for cycles after the current) and of the timeout.
    pub fn config(&self) -> RateLimiterConfig {
        self.inner
            .config
            .clone()
            .with_dynamic(self.inner.cycles.limit(), self.timeout_duration())
    }

    fn timeout_duration(&self) -> Duration {
        Duration::from_nanos(self.inner.timeout.load(Ordering::Relaxed))
    }

    /// Permits still free in the current cycle; negative while permits of later
    /// cycles are reserved (Resilience4j `availablePermissions`).
    pub fn available_permissions(&self) -> i64 {
        self.inner.cycles.available(self.inner.now())
    }

    /// How long until one permit comes free: zero while the current cycle
    /// has one, else the time to the start of the first cycle not already
    /// taken by reservations (Resilience4j's `nanosToWait`). What an HTTP
    /// server puts in `Retry-After` when the limiter refuses a request.
    pub fn time_to_next_permit(&self) -> Duration {
        Duration::from_nanos(self.inner.cycles.wait_for_next(self.inner.precise_now()))
    }

    /// A snapshot of the permits and the waiting callers.
    pub fn metrics(&self) -> RateLimiterMetrics {
        RateLimiterMetrics {
            available_permissions: self.available_permissions(),
            number_of_waiting_threads: self.inner.waiting.load(Ordering::Relaxed),
        }
    }

    /// Every acquisition from now on, successful or not.
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
    /// With [`drain_permissions_on_result`](super::RateLimiterConfigBuilder::drain_permissions_on_result)
    /// set, an outcome it accepts drains the cycle's free permits.
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
    ) -> impl Future<Output = Result<T, Error<E>>> + use<'_, T, E, F>
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
    ) -> impl Future<Output = Result<T, Error<E>>> + use<'_, T, E, F>
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

    /// One permit for a `call_async*` future's first poll: at once, or a
    /// wait for a reserved one. Boxed: only a waiting call pays for its wait
    /// state (it allocates a timer anyway), every other call's future stays a
    /// pointer smaller.
    #[inline]
    #[allow(clippy::type_complexity)]
    fn acquire_for_call(
        &self,
    ) -> Result<
        Acquire<(), ColdBox<impl Future<Output = Result<(), AcquireError>> + '_>>,
        AcquireError,
    > {
        // The common case returns without building a `Grant`: the result
        // stays two words, in registers.
        if self.inner.take_now(1) {
            return Ok(Acquire::Now(()));
        }
        let grant = self.inner.reserve_slow(1)?;
        Ok(if grant.wait == 0 {
            Acquire::Now(())
        } else {
            Acquire::Wait(ColdBox::pin(self.wait_for(grant)))
        })
    }

    /// Drains the current cycle's free permits (Resilience4j
    /// `drainPermissions`): acquisitions wait for, or are refused until, the
    /// next cycle. Reservations already made are kept.
    pub fn drain_permissions(&self) {
        self.inner.drain();
    }

    /// Takes `permits` only if they are free in the current cycle: never waits,
    /// never reserves. `false` consumed nothing.
    #[inline]
    pub fn try_acquire_permission(&self, permits: u32) -> bool {
        let inner = &*self.inner;
        let granted = match inner.cycles.acquire_fast(permits, || inner.now()) {
            Fast::Granted => true,
            Fast::Slow { .. } => inner
                .cycles
                .acquire_at(permits, inner.precise_now(), || 0)
                .is_ok(),
        };
        inner.publish(granted, permits);
        granted
    }

    /// Takes `permits`, sleeping the thread (through the clock) until a reserved
    /// cycle starts if they are not free now (Resilience4j `acquirePermission`).
    /// Refuses at once, consuming nothing, when the wait would exceed
    /// `timeout_duration` or the task's deadline, or `permits` exceeds
    /// `limit_for_period`.
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

    /// Changes `limit_for_period` at run time (Resilience4j
    /// `changeLimitForPeriod`).
    ///
    /// The current cycle keeps the permits it has; every later cycle grants the
    /// new limit. Reservations already made keep the wake-up time they were
    /// given, and the permits they took are counted against the cycles that
    /// follow, under the new limit. Resilience4j applies a new limit at the next
    /// refill as well; the one difference is that when nobody acquired during
    /// the current cycle before the change, Resilience4j refills the current
    /// cycle to the new limit, while here it keeps the old one. An acquire
    /// racing with the change may still lay out its permits with the old limit.
    ///
    /// The new limit is validated like the builder's (`1..=` one permit per
    /// nanosecond of the period).
    pub fn change_limit_for_period(&self, limit_for_period: u32) -> Result<(), ConfigError> {
        RateLimiterConfig::check_limit(limit_for_period, self.inner.config.limit_refresh_period())?;
        let _serial = self.inner.changes.lock();
        self.inner
            .cycles
            .change_limit(limit_for_period, self.inner.now());
        Ok(())
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

impl Inner {
    /// Applies `drain_permissions_on_result` to a finished call.
    #[inline]
    fn on_result<T: 'static, E: 'static>(&self, result: &Result<T, E>) {
        if let Some(drain) = self.config.drain_on_result() {
            if drain.drains(result, &self.name, &self.warned_foreign) {
                self.drain();
            }
        }
    }

    #[cold]
    fn drain(&self) {
        let drained = self.cycles.drain(self.precise_now());
        self.events.publish_with(|| {
            RateLimiterEvent::with_detail(&self.name, RateLimiterEventKind::Drained, drained)
        });
    }

    /// A reading of the limiter's clock.
    #[inline]
    fn now(&self) -> u64 {
        self.clock.now_nanos()
    }

    /// A reading for the slow path, where a refusal or a wait is decided: on
    /// the coarse clock it is the precise one, so a caller that waited out a
    /// cycle is never refused because the coarse reading lags.
    fn precise_now(&self) -> u64 {
        self.clock.precise_now_nanos()
    }

    #[inline(never)]
    fn sleep(&self, nanos: u64) {
        let _waiting = Waiting::enter(&self.waiting);
        self.clock.sleep(Duration::from_nanos(nanos));
    }

    #[inline]
    fn publish(&self, granted: bool, permits: u32) {
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
        if self.take_now(permits) {
            Ok(Grant::NOW)
        } else {
            self.reserve_slow(permits)
        }
    }

    /// Takes `permits` if the current cycle has them free (and publishes the
    /// grant); `false` leaves everything to [`reserve_slow`](Self::reserve_slow).
    #[inline]
    fn take_now(&self, permits: u32) -> bool {
        match self.cycles.acquire_fast(permits, || self.now()) {
            Fast::Granted => {
                self.publish(true, permits);
                true
            }
            Fast::Slow { .. } => false,
        }
    }

    /// [`reserve`](Self::reserve) when the fast path could not grant: reads
    /// the precise time and takes the full path.
    #[inline]
    fn reserve_slow(&self, permits: u32) -> Result<Grant, AcquireError> {
        self.reserve_at(permits, self.precise_now())
    }

    #[inline(never)]
    fn reserve_at(&self, permits: u32, now: u64) -> Result<Grant, AcquireError> {
        // Both limits are read only when a wait is needed: the deadline is a
        // task-local look-up the immediate path does not pay for.
        let mut limits = None;
        let outcome = self
            .cycles
            .acquire_at(permits, now, || wait_allowed(&self.timeout, &mut limits));
        self.publish(outcome.is_ok(), permits);
        outcome.map_err(|refusal| self.refused(permits, refusal, limits))
    }

    #[cold]
    fn refused(&self, permits: u32, refusal: Refusal, limits: Option<(u64, u64)>) -> AcquireError {
        refused(&self.refusal_name, permits, refusal, limits)
    }
}

/// The wait a reservation may take: the timeout, cut to the task's deadline.
/// Records `(timeout, budget)` in `limits` for [`refused`].
pub(super) fn wait_allowed(timeout: &AtomicU64, limits: &mut Option<(u64, u64)>) -> u64 {
    let timeout = timeout.load(Ordering::Relaxed);
    // A wait that ends at the deadline leaves no time for the call.
    let budget =
        deadline::remaining().map_or(u64::MAX, |left| clock::nanos(left).saturating_sub(1));
    *limits = Some((timeout, budget));
    timeout.min(budget)
}

/// The error for a refused acquisition: a wait within the timeout refused only
/// because of the deadline is `DeadlineExceeded`.
#[cold]
pub(super) fn refused(
    name: &SharedName,
    permits: u32,
    refusal: Refusal,
    limits: Option<(u64, u64)>,
) -> AcquireError {
    match refusal {
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

impl fmt::Debug for RateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimiter")
            .field("name", &&*self.inner.name)
            .field("config", &self.config())
            .field("available_permissions", &self.available_permissions())
            .finish()
    }
}

/// Counts a caller in `number_of_waiting_threads` while it lives.
pub(super) struct Waiting<'a>(&'a AtomicU32);

impl<'a> Waiting<'a> {
    pub(super) fn enter(count: &'a AtomicU32) -> Self {
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
struct Reserved<'a> {
    inner: &'a Inner,
    grant: Grant,
    used: bool,
    _waiting: Waiting<'a>,
}

impl<'a> Reserved<'a> {
    fn new(inner: &'a Inner, grant: Grant) -> Self {
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

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        if !self.used {
            self.inner.cycles.give_back(&self.grant);
        }
    }
}
