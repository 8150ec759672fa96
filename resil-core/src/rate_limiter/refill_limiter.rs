//! The refilling token bucket's handle: acquire, wait, call.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use super::cycle::{Grant, Refusal};
use super::limiter::{refused, wait_allowed, Waiting, COARSE_PERIOD};
use super::refill::Bucket;
use super::{
    AcquireError, ExceedsLimit, RateLimiterEvent, RateLimiterEventKind, RateLimiterMetrics,
    RefillRateLimiterConfig,
};
use crate::clock::{self, Clock, CoarseClock, SharedClock, SystemClock};
use crate::cold_box::ColdBox;
use crate::error::{Error, SharedName};
use crate::event::{EventPublisher, EventStream};
use crate::guarded::{Acquire, Guarded};

/// Resilience4j 2.x's `RefillRateLimiter`: a token bucket that gains one
/// permit every `limit_refresh_period / limit_for_period` and holds at most
/// `permit_capacity`, for smooth pacing without the burst a cycle boundary
/// allows.
///
/// With the cycle limiter ([`RateLimiter`](super::RateLimiter)), 10 permits a
/// second can mean 10 calls at 0.999 s and 10 more at 1.000 s; here a bucket of
/// capacity 10 that has been drained admits the next call 100 ms later, then
/// one every 100 ms. After an idle spell it admits a burst of at most
/// `permit_capacity`.
///
/// Waiting is as with the cycle limiter: a caller that finds no permit
/// reserves one due within its `timeout_duration` (and its
/// [deadline](crate::deadline)) and sleeps or awaits until then; otherwise it
/// is refused and consumes nothing. A cancelled async waiter gives its permits
/// back if nobody reserved behind it. More permits than `permit_capacity` at
/// once are refused outright ([`AcquireError::ExceedsLimit`]).
///
/// # Algorithm and cost
///
/// The state is one `AtomicU64`, the instant the bucket is full again (GCRA,
/// as governor uses): an acquire reads the clock once and does one
/// compare-and-swap; no lock, no allocation, no event built unless someone
/// [subscribed](Self::subscribe).
///
/// ```
/// use std::time::Duration;
/// use resil_core::clock::ManualClock;
/// use resil_core::rate_limiter::{RefillRateLimiter, RefillRateLimiterConfig};
///
/// let config = RefillRateLimiterConfig::builder()
///     .limit_for_period(10)
///     .limit_refresh_period(Duration::from_secs(1)) // one permit every 100 ms
///     .initial_permits(2)
///     .timeout_duration(Duration::ZERO)
///     .build()
///     .unwrap();
/// let clock = ManualClock::new();
/// let limiter = RefillRateLimiter::with_clock("partner", config, clock.clone());
///
/// assert!(limiter.try_acquire_permission(2));
/// assert!(!limiter.try_acquire_permission(1));
/// clock.advance(Duration::from_millis(100));
/// assert!(limiter.try_acquire_permission(1)); // one permit per 100 ms, no burst
/// assert!(!limiter.try_acquire_permission(1));
/// ```
#[derive(Clone)]
pub struct RefillRateLimiter {
    inner: Arc<Inner>,
}

struct Inner {
    bucket: Bucket,
    clock: SharedClock,
    name: Arc<str>,
    /// The name every refusal carries (built once; see [`SharedName`]).
    refusal_name: SharedName,
    config: RefillRateLimiterConfig,
    /// `timeout_duration` in nanoseconds (saturated), changeable at run time.
    timeout: AtomicU64,
    waiting: AtomicU32,
    events: EventPublisher<RateLimiterEvent>,
    /// Set once a call's types met a drain predicate written for others.
    warned_foreign: AtomicBool,
}

impl RefillRateLimiter {
    /// A refilling limiter named `name` on the system's monotonic clock: the
    /// coarse clock when a permit comes at most every [`COARSE_PERIOD`], as
    /// for [`RateLimiter::new`](super::RateLimiter::new), else nanoseconds.
    pub fn new(name: impl Into<Arc<str>>, config: RefillRateLimiterConfig) -> Self {
        if config.nanos_per_permit() >= COARSE_PERIOD {
            Self::with_clock(name, config, CoarseClock)
        } else {
            Self::with_clock(name, config, SystemClock)
        }
    }

    /// A refilling limiter timed by `clock`.
    pub fn with_clock(
        name: impl Into<Arc<str>>,
        config: RefillRateLimiterConfig,
        clock: impl Clock,
    ) -> Self {
        let clock = SharedClock::new(clock);
        let origin = clock.now_nanos();
        let name = name.into();
        RefillRateLimiter {
            inner: Arc::new(Inner {
                bucket: Bucket::new(
                    config.permit_capacity(),
                    config.initial_permits(),
                    clock::nanos(config.nanos_per_permit()).max(1),
                    origin,
                ),
                clock,
                refusal_name: SharedName::new(Arc::clone(&name)),
                name,
                timeout: AtomicU64::new(clock::nanos(config.timeout_duration())),
                config,
                waiting: AtomicU32::new(0),
                events: EventPublisher::default(),
                warned_foreign: AtomicBool::new(false),
            }),
        }
    }

    /// The name given at creation.
    #[inline]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The configuration at creation (its `timeout_duration` as changed since).
    pub fn config(&self) -> RefillRateLimiterConfig {
        self.inner.config.clone().with_timeout(Duration::from_nanos(
            self.inner.timeout.load(Ordering::Relaxed),
        ))
    }

    /// Permits in the bucket now; negative while reservations wait for
    /// permits still to come.
    pub fn available_permissions(&self) -> i64 {
        self.inner.bucket.available(self.inner.precise_now())
    }

    /// A snapshot of the permits and the waiting callers.
    pub fn metrics(&self) -> RateLimiterMetrics {
        RateLimiterMetrics {
            available_permissions: self.available_permissions(),
            number_of_waiting_threads: self.inner.waiting.load(Ordering::Relaxed),
        }
    }

    /// Every acquisition (and drain) from now on.
    pub fn subscribe(&self) -> EventStream<RateLimiterEvent> {
        self.inner.events.subscribe()
    }

    /// Runs `f` once it has a permit, sleeping the thread (through the clock)
    /// for a reserved one up to `timeout_duration`; refused as
    /// [`RateLimiter::call`](super::RateLimiter::call).
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

    /// Awaits `fut` once it has a permit, awaiting the clock's timer for a
    /// reserved one; `fut` is not polled before. Dropping the returned future
    /// while it waits gives the permit back if nobody reserved behind it.
    ///
    /// `fut` is stored once and polled in place: the returned future is `fut`
    /// plus a few words, and a permit in the bucket now builds no wait state.
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

    /// One permit for a `call_async` future's first poll: at once, or a boxed
    /// wait for a reserved one (only a waiting call pays for its wait state).
    #[inline]
    #[allow(clippy::type_complexity)]
    fn acquire_for_call(
        &self,
    ) -> Result<
        Acquire<(), ColdBox<impl Future<Output = Result<(), AcquireError>> + '_>>,
        AcquireError,
    > {
        let grant = self.inner.reserve(1)?;
        Ok(if grant.wait == 0 {
            Acquire::Now(())
        } else {
            Acquire::Wait(ColdBox::pin(self.wait_reserved(grant)))
        })
    }

    /// Takes `permits` only if they are in the bucket now: never waits,
    /// never reserves. `false` consumed nothing.
    #[inline]
    pub fn try_acquire_permission(&self, permits: u32) -> bool {
        let inner = &*self.inner;
        let granted = inner.bucket.acquire(permits, inner.now(), || 0).is_ok()
            || inner
                .bucket
                .acquire(permits, inner.precise_now(), || 0)
                .is_ok();
        inner.publish(granted, permits);
        granted
    }

    /// Takes `permits`, sleeping the thread (through the clock) until they are
    /// due if they are not in the bucket now. Refuses at once, consuming
    /// nothing, when the wait would exceed `timeout_duration` or the task's
    /// deadline, or `permits` exceeds `permit_capacity`.
    #[inline]
    pub fn acquire_permission(&self, permits: u32) -> Result<(), AcquireError> {
        let grant = self.inner.reserve(permits)?;
        if grant.wait > 0 {
            let _waiting = Waiting::enter(&self.inner.waiting);
            self.inner.clock.sleep(Duration::from_nanos(grant.wait));
        }
        Ok(())
    }

    /// [`acquire_permission`](Self::acquire_permission) for async code.
    /// Dropping the future while it waits gives the reservation back if it is
    /// still the latest one.
    pub async fn acquire_permission_async(&self, permits: u32) -> Result<(), AcquireError> {
        let grant = self.inner.reserve(permits)?;
        if grant.wait > 0 {
            self.wait_reserved(grant).await?;
        }
        Ok(())
    }

    /// Waits out a reservation made for `grant`; dropped before the end, it
    /// gives the reservation back if it is still the latest one.
    async fn wait_reserved(&self, grant: Grant) -> Result<(), AcquireError> {
        let reserved = Reserved {
            inner: &self.inner,
            grant,
            used: false,
            _waiting: Waiting::enter(&self.inner.waiting),
        };
        self.inner
            .clock
            .sleep_async(Duration::from_nanos(grant.wait))
            .await;
        reserved.used();
        Ok(())
    }

    /// Reserves `permits` without waiting and returns how long the caller must
    /// wait before using them (zero if they are in the bucket now); refuses as
    /// [`acquire_permission`](Self::acquire_permission).
    pub fn reserve_permission(&self, permits: u32) -> Result<Duration, AcquireError> {
        self.inner
            .reserve(permits)
            .map(|grant| Duration::from_nanos(grant.wait))
    }

    /// Empties the bucket (Resilience4j `drainPermissions`): the next permit
    /// comes one interval from now. Reservations already made are kept.
    pub fn drain_permissions(&self) {
        self.inner.drain();
    }

    /// Changes `timeout_duration` for acquisitions that start after the change.
    pub fn change_timeout_duration(&self, timeout_duration: Duration) {
        self.inner
            .timeout
            .store(clock::nanos(timeout_duration), Ordering::Relaxed);
    }
}

impl Inner {
    #[inline]
    fn now(&self) -> u64 {
        self.clock.now_nanos()
    }

    fn precise_now(&self) -> u64 {
        self.clock.precise_now_nanos()
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
    /// deadline; consumes nothing on refusal. The immediate path reads the
    /// (possibly coarse) clock; a wait or a refusal is decided on a precise
    /// reading, as the cycle limiter does.
    #[inline]
    fn reserve(&self, permits: u32) -> Result<Grant, AcquireError> {
        match self.bucket.acquire(permits, self.now(), || 0) {
            Ok(grant) => {
                self.publish(true, permits);
                Ok(grant)
            }
            Err(_) => self.reserve_slow(permits),
        }
    }

    #[inline(never)]
    fn reserve_slow(&self, permits: u32) -> Result<Grant, AcquireError> {
        let mut limits = None;
        let outcome = self.bucket.acquire(permits, self.precise_now(), || {
            wait_allowed(&self.timeout, &mut limits)
        });
        self.publish(outcome.is_ok(), permits);
        outcome.map_err(|refusal| match refusal {
            Refusal::ExceedsLimit { limit } => AcquireError::ExceedsLimit(ExceedsLimit::capacity(
                &self.refusal_name,
                permits,
                limit,
            )),
            refusal => refused(&self.refusal_name, permits, refusal, limits),
        })
    }

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
        let drained = self.bucket.drain(self.precise_now());
        self.events.publish_with(|| {
            RateLimiterEvent::with_detail(&self.name, RateLimiterEventKind::Drained, drained)
        });
    }
}

impl fmt::Debug for RefillRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RefillRateLimiter")
            .field("name", &&*self.inner.name)
            .field("config", &self.inner.config)
            .field("capacity", &self.inner.bucket.capacity())
            .field("available_permissions", &self.available_permissions())
            .finish()
    }
}

/// A reservation an async caller waits for; dropped unused (the future was
/// cancelled), it gives its permits back if they are still the latest taken.
struct Reserved<'a> {
    inner: &'a Inner,
    grant: Grant,
    used: bool,
    _waiting: Waiting<'a>,
}

impl Reserved<'_> {
    fn used(mut self) {
        self.used = true;
    }
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        if !self.used {
            self.inner.bucket.give_back(&self.grant);
        }
    }
}
