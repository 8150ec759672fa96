//! The distributed rate limiter handle: acquire, wait, call.

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::runtime::{Handle, Runtime, RuntimeFlavor};

use super::backend::{Backend, BackendFailure};
use super::config::{Algorithm, DistributedRateLimiterConfig};
use super::event::{DistributedRateLimiterEvent, DistributedRateLimiterEventKind};
use super::grant::{DecidedBy, Grant};
use super::lease::{HandOut, Leases};
use super::metrics::{Counters, DistributedRateLimiterMetrics, Waiting};
use super::policy::Policy;
use super::script::{Ask, Quota, Verdict};
use crate::clock::{self, Clock, SharedClock, SystemClock};
use crate::criticality::Criticality;
use crate::deadline;
use crate::error::{ConfigError, DeadlineExceeded, Error, RequestNotPermitted, SharedName};
use crate::event::{EventPublisher, EventStream};
use crate::rate_limiter::{AcquireError, ExceedsLimit};

/// A rate limiter whose quota lives in Redis and is shared by every process
/// that uses the same key: at most `limit_for_period` permits per
/// `limit_refresh_period` across all of them (see the [module docs](super)
/// for exactly what that means with each algorithm).
///
/// A cheap `Clone` handle. Refusals are the local limiter's:
/// [`AcquireError`] from `acquire*`, [`Error::RequestNotPermitted`] from
/// `call*`, so callers handle both limiters alike.
///
/// ```no_run
/// use std::time::Duration;
/// use resil_core::distributed_rate_limiter::{DistributedRateLimiter, DistributedRateLimiterConfig};
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let config = DistributedRateLimiterConfig::builder()
///     .redis_url("redis://127.0.0.1:6379/")
///     .limit_for_period(100)
///     .limit_refresh_period(Duration::from_secs(1))
///     .build()?;
/// let limiter = DistributedRateLimiter::new("payments", config)?;
/// let receipt = limiter
///     .call_async(async { Ok::<_, std::io::Error>("charged") })
///     .await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct DistributedRateLimiter {
    pub(crate) inner: Arc<Inner>,
}

pub(crate) struct Inner {
    pub(crate) name: Arc<str>,
    /// The name every refusal carries (built once; see [`SharedName`]).
    refusal_name: SharedName,
    pub(crate) config: DistributedRateLimiterConfig,
    backend: Backend,
    /// The limiter's own quota (a keyed family's keys have their own).
    own: Slot,
    pub(crate) clock: SharedClock,
    counters: Counters,
    events: EventPublisher<DistributedRateLimiterEvent>,
    /// Local permit leases, when `lease_size` > 0.
    leases: Option<Arc<Leases>>,
    /// A runtime for blocking acquires made outside any runtime.
    blocking: OnceLock<Runtime>,
}

impl DistributedRateLimiter {
    /// A limiter named `name` (its Redis key is
    /// `{key_prefix}{name}:{algorithm}`), timed by the system's monotonic clock.
    ///
    /// Nothing is sent to Redis until the first acquire, so the limiter can be
    /// built before Redis is reachable (acquires then follow the failure
    /// policy) and outside any runtime. Fails only if the URL cannot be used
    /// (the builder already checked it), naming `redis_url`.
    pub fn new(
        name: impl Into<Arc<str>>,
        config: DistributedRateLimiterConfig,
    ) -> Result<Self, ConfigError> {
        Self::with_clock(name, config, SystemClock)
    }

    /// A limiter whose *local* timing reads `clock`: how long an acquire has
    /// waited, its sleeps, and the local fallback limiter. The quota itself is
    /// always timed by the Redis server's clock, whatever `clock` says.
    pub fn with_clock(
        name: impl Into<Arc<str>>,
        config: DistributedRateLimiterConfig,
        clock: impl Clock,
    ) -> Result<Self, ConfigError> {
        let backend = Backend::new(&config)?;
        let name: Arc<str> = name.into();
        let clock = SharedClock::new(clock);
        Ok(DistributedRateLimiter {
            inner: Arc::new(Inner {
                own: Slot::new(Quota::new(&name, &config), &name, &config, clock.clone()),
                backend,
                clock,
                counters: Counters::default(),
                events: EventPublisher::default(),
                leases: (config.lease_size() > 0).then(|| {
                    Arc::new(Leases::new(
                        config.lease_size(),
                        clock::nanos(config.lease_ttl()),
                    ))
                }),
                blocking: OnceLock::new(),
                refusal_name: SharedName::new(Arc::clone(&name)),
                name,
                config,
            }),
        })
    }

    /// The name given at creation.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The configuration.
    pub fn config(&self) -> &DistributedRateLimiterConfig {
        &self.inner.config
    }

    /// The Redis key holding this limiter's state.
    pub fn key(&self) -> &str {
        self.inner.own.quota.key()
    }

    /// The local fallback limiter's permits per period, when the failure
    /// policy is [`LocalFallback`](super::FailurePolicy::LocalFallback).
    pub fn local_fallback_limit(&self) -> Option<u32> {
        self.inner.own.policy.local_limit()
    }

    /// A snapshot of the counters.
    pub fn metrics(&self) -> DistributedRateLimiterMetrics {
        let mut m = self.inner.counters.snapshot();
        m.server_may_evict = self.inner.backend.server_may_evict();
        m
    }

    /// Every acquisition from now on, and every failure-policy decision.
    pub fn subscribe(&self) -> EventStream<DistributedRateLimiterEvent> {
        self.inner.events.subscribe()
    }

    /// Permits of this process's lease not handed out yet (0 with leases off).
    pub fn leased_permits(&self) -> u32 {
        self.inner.leases.as_ref().map_or(0, |l| l.left())
    }

    /// Gives the permits of this process's lease that were not handed out
    /// back to Redis now, in one round trip (with leases on; a no-op
    /// otherwise), and returns how many Redis took back. Without this call
    /// they go back with the next refill, or, when no acquire comes, stay
    /// counted until they leave the window; call it when a process stops
    /// (a graceful shutdown) so that others can use them at once.
    ///
    /// GCRA takes a lease back only while nothing was granted after it (see
    /// the [module docs](super#local-permit-leases)); its permits otherwise
    /// stay spent.
    pub async fn return_lease(&self) -> u32 {
        self.inner.return_lease().await
    }

    /// Awaits one permit: [`acquire_n_async(1)`](Self::acquire_n_async).
    pub async fn acquire_async(&self) -> Result<Grant, AcquireError> {
        self.acquire_n_async(1).await
    }

    /// Awaits `permits` permits, waiting on a timer (no thread blocked) for
    /// them to come back, up to `timeout_duration` and the task's
    /// [deadline](crate::deadline).
    ///
    /// Always one script call, or none when this process's
    /// [lease](super#local-permit-leases) has the permits (leases on, and
    /// `permits` at most `lease_size`). When the permits are not free, the script
    /// *reserves* them at the earliest time they can be granted (as
    /// Resilience4j's `AtomicRateLimiter` does), if that is within the wait
    /// allowed, and the acquire then sleeps once, on a timer, until then: it
    /// never asks Redis again, and no acquire asking later, from any process,
    /// is granted before it. Refused, consuming nothing, with
    /// [`AcquireError::NotPermitted`] when the permits cannot be had within
    /// `timeout_duration`, [`AcquireError::DeadlineExceeded`] when they cannot
    /// before the deadline, or [`AcquireError::ExceedsLimit`] when more are
    /// asked for than one acquire may take ([`max_permits`](DistributedRateLimiterConfig::max_permits)).
    /// Zero permits ask whether one is free (waiting as one would) and take
    /// none.
    ///
    /// When Redis does not answer within `redis_timeout`, or fails, the
    /// failure policy decides, once, within the wait still allowed: a
    /// timed-out script may still have granted the permits, so it is never
    /// sent again for this acquire. An acquire is decided within
    /// `timeout_duration + redis_timeout`.
    ///
    /// Dropping the future gives nothing back: permits Redis already granted
    /// or reserved count against the quota, as a call that was sent counts
    /// against a remote service.
    pub async fn acquire_n_async(&self, permits: u32) -> Result<Grant, AcquireError> {
        self.inner.acquire_bounded(&self.inner.own, permits).await
    }

    /// Takes one permit, blocking the thread: [`acquire_n(1)`](Self::acquire_n).
    pub fn acquire(&self) -> Result<Grant, AcquireError> {
        self.acquire_n(1)
    }

    /// [`acquire_n_async`](Self::acquire_n_async) for sync code: blocks the
    /// thread until it is decided.
    ///
    /// Outside any runtime it runs on a one-worker runtime the limiter starts
    /// on first use; on a multi-thread runtime's worker it uses
    /// `block_in_place`. A current-thread runtime's thread cannot be blocked
    /// without stopping the I/O it would wait for: there the failure policy
    /// decides at once (counted as [`BackendFailure::CannotBlock`]); use the
    /// async methods in async code.
    pub fn acquire_n(&self, permits: u32) -> Result<Grant, AcquireError> {
        match Handle::try_current() {
            Ok(handle) => match handle.runtime_flavor() {
                RuntimeFlavor::CurrentThread => self.inner.cannot_block(&self.inner.own, permits),
                _ => tokio::task::block_in_place(|| {
                    handle.block_on(self.inner.acquire_bounded(&self.inner.own, permits))
                }),
            },
            Err(_) => match self.inner.blocking_runtime() {
                Some(rt) => rt.block_on(self.inner.acquire_bounded(&self.inner.own, permits)),
                None => self.inner.cannot_block(&self.inner.own, permits),
            },
        }
    }

    /// Runs `f` once it has a permit, blocking the thread while it waits (see
    /// [`acquire_n`](Self::acquire_n)). Refused with
    /// [`Error::RequestNotPermitted`] or [`Error::DeadlineExceeded`]; `f` then
    /// does not run.
    pub fn call<T, E, F>(&self, f: F) -> Result<T, Error<E>>
    where
        F: FnOnce() -> Result<T, E>,
    {
        let _ = self.acquire()?;
        f().map_err(Error::Call)
    }

    /// Awaits `fut` once it has a permit; `fut` is not polled before. Refused
    /// as [`call`](Self::call).
    pub async fn call_async<T, E, F>(&self, fut: F) -> Result<T, Error<E>>
    where
        F: Future<Output = Result<T, E>>,
    {
        let _ = self.acquire_async().await?;
        fut.await.map_err(Error::Call)
    }
}

/// What one quota keeps: its Redis key and script, and its failure policy
/// (with the local fallback's own window). A limiter has one; a keyed family
/// one per key.
pub(crate) struct Slot {
    pub(crate) quota: Quota,
    pub(crate) policy: Policy,
    /// The most permits one acquire may ask for (a keyed family's key may
    /// have its own limit).
    max_permits: AtomicU32,
}

impl Slot {
    pub(crate) fn new(
        quota: Quota,
        name: &Arc<str>,
        config: &DistributedRateLimiterConfig,
        clock: SharedClock,
    ) -> Self {
        Slot {
            quota,
            policy: Policy::new(name, config, clock),
            max_permits: AtomicU32::new(config.max_permits()),
        }
    }

    /// `config`'s limits from now on (same algorithm and Redis key): what a
    /// keyed family's tier gives a key that exists.
    pub(crate) fn retune(&self, config: &DistributedRateLimiterConfig) {
        self.quota.retune(config);
        self.policy.retune(config);
        self.max_permits
            .store(config.max_permits(), Ordering::Relaxed);
    }
}

impl Inner {
    /// The longest an acquire may take before it is decided:
    /// `timeout_duration` (or less, before the task's deadline) plus
    /// `redis_timeout`.
    pub(crate) fn bound(&self) -> Duration {
        let timeout = self.config.timeout_duration();
        let max_wait = match deadline::remaining() {
            Some(left) => left.saturating_sub(Duration::from_nanos(1)).min(timeout),
            None => timeout,
        };
        max_wait.saturating_add(self.config.redis_timeout())
    }

    /// [`acquire`](Self::acquire) under one deadline for the whole acquire:
    /// reconnects, a script reload after `NOSCRIPT`, a wait for this
    /// process's turn (leases) and the failure policy's own wait all fit in
    /// [`bound`](Self::bound). Past it, whatever is still in flight is
    /// dropped (a round trip that may still grant counts as spent, as a
    /// timed-out one always does) and the failure policy decides at once.
    pub(crate) async fn acquire_bounded(
        self: &Arc<Self>,
        slot: &Slot,
        permits: u32,
    ) -> Result<Grant, AcquireError> {
        let bound = self.bound();
        match tokio::time::timeout(bound, self.acquire(slot, permits)).await {
            Ok(decided) => decided,
            Err(_) => self.overran(slot, permits, bound),
        }
    }

    /// The acquire's deadline passed before it was decided.
    #[cold]
    fn overran(&self, slot: &Slot, permits: u32, bound: Duration) -> Result<Grant, AcquireError> {
        let failure = BackendFailure::Timeout;
        self.counters.failure(failure);
        let cause: Arc<str> = Arc::from(format!(
            "not decided within {bound:?} (timeout-duration + redis-timeout): \
             the policy decides at once"
        ));
        tracing::debug!(
            limiter = &*self.name,
            cause = &*cause,
            "the distributed rate limiter's acquire ran out of time"
        );
        self.events.publish_with(|| {
            DistributedRateLimiterEvent::failure(
                &self.name,
                DistributedRateLimiterEventKind::BackendFailure(failure),
                permits,
                &cause,
            )
        });
        let decision = slot.policy.decide_now(permits);
        self.decided(permits, decision)
    }

    pub(crate) async fn acquire(
        self: &Arc<Self>,
        slot: &Slot,
        permits: u32,
    ) -> Result<Grant, AcquireError> {
        let max = slot.max_permits.load(Ordering::Relaxed);
        if permits > max {
            self.publish(DistributedRateLimiterEventKind::FailedAcquire, permits);
            self.counters.acquired(false);
            let field = match self.config.algorithm() {
                Algorithm::SlidingWindow => "limit_for_period",
                Algorithm::Gcra => "burst",
            };
            return Err(AcquireError::ExceedsLimit(ExceedsLimit::bounded_by(
                &self.refusal_name,
                permits,
                max,
                field,
            )));
        }
        let start = self.clock.now_nanos();
        if let Some(ceiling) = self.config.class_ceiling(Criticality::current(), max) {
            return self.acquire_within(slot, permits, ceiling).await;
        }
        let timeout = self.config.timeout_duration();
        // A wait that ends at the deadline leaves no time for the call.
        let budget = deadline::remaining().map(|left| left.saturating_sub(Duration::from_nanos(1)));
        let max_wait = budget.map_or(timeout, |b| b.min(timeout));
        // Leases are the limiter's own quota's (a keyed family's keys ask
        // Redis each time).
        if let Some(leases) = self
            .leases
            .as_ref()
            .filter(|_| std::ptr::eq(slot, &self.own))
        {
            if permits <= leases.size {
                return self
                    .acquire_leased(leases, permits, start, budget, max_wait)
                    .await;
            }
        }
        let verdict = match self.ask(&slot.quota, Ask::plain(permits, max_wait)).await {
            Ok(v) => v,
            Err(failure) => {
                // Within the wait still allowed: the round trip used some.
                let spent = clock::elapsed(start, self.clock.now_nanos());
                return self
                    .fall_back(slot, permits, failure, max_wait.saturating_sub(spent))
                    .await;
            }
        };
        self.conclude(permits, verdict, budget).await
    }

    /// An acquire by a class below its threshold: one script call with the
    /// class's `ceiling`, granted now or refused (never a reservation, never
    /// a lease: see [`threshold`](DistributedRateLimiterConfig::threshold));
    /// without a verdict, the failure policy decides at once, its local
    /// window applying the class's share.
    #[cold]
    async fn acquire_within(
        &self,
        slot: &Slot,
        permits: u32,
        ceiling: u32,
    ) -> Result<Grant, AcquireError> {
        match self.ask(&slot.quota, Ask::within(permits, ceiling)).await {
            Ok(verdict) if verdict.granted => Ok(self.granted(permits, verdict)),
            Ok(_) => Err(self.not_permitted(permits)),
            Err(_) => {
                let decision = slot.policy.decide_now(permits);
                self.decided(permits, decision)
            }
        }
    }

    /// Redis's verdict on an acquire of `permits` that is not a lease: a
    /// grant (after the reserved wait) or a refusal.
    async fn conclude(
        &self,
        permits: u32,
        verdict: Verdict,
        budget: Option<Duration>,
    ) -> Result<Grant, AcquireError> {
        let timeout = self.config.timeout_duration();
        if !verdict.granted {
            if budget.is_some_and(|b| verdict.wait > b && verdict.wait <= timeout) {
                let late = DeadlineExceeded::by_shared(&self.refusal_name);
                return Err(self.refused(permits, AcquireError::DeadlineExceeded(late)));
            }
            return Err(self.not_permitted(permits));
        }
        if !verdict.wait.is_zero() {
            // Reserved: the permits are this acquire's at the end of the wait.
            let _waiting = Waiting::enter(&self.counters.waiting);
            self.clock.sleep_async(verdict.wait).await;
        }
        Ok(self.granted(permits, verdict))
    }

    /// With leases on: from the lease in hand, or one refill (giving back
    /// what is left of the lease and taking a new one, or reserving when
    /// nothing is free now), taking turns with this process's other acquires.
    async fn acquire_leased(
        self: &Arc<Self>,
        leases: &Arc<Leases>,
        permits: u32,
        start: u64,
        budget: Option<Duration>,
        max_wait: Duration,
    ) -> Result<Grant, AcquireError> {
        // Bounded, so that a queue behind slow refills is still decided
        // within `timeout_duration + redis_timeout`.
        let turn_limit = max_wait.saturating_add(self.config.redis_timeout());
        let Ok(turn) = tokio::time::timeout(turn_limit, leases.turn.lock()).await else {
            return self.turn_timed_out(permits, turn_limit);
        };
        loop {
            if let Some(out) = leases.take(self.clock.now_nanos(), permits, None) {
                drop(turn);
                return Ok(self.leased(permits, out));
            }
            if !leases.refilling() {
                break;
            }
            // An acquire that started this refill was dropped; its lease
            // lands here.
            leases.refill_ended().await;
        }
        let now = self.clock.now_nanos();
        let spent = clock::elapsed(start, now);
        let max_wait = max_wait.saturating_sub(spent);
        let closed = Duration::from_nanos(leases.closed_for(now));
        if closed > max_wait {
            // Redis refused the last refill and said when permits come
            // back: an acquire that cannot wait that long is refused as
            // Redis would refuse it, without asking.
            drop(turn);
            let timeout = self.config.timeout_duration();
            if budget.is_some_and(|b| closed > b && closed <= timeout) {
                let late = DeadlineExceeded::by_shared(&self.refusal_name);
                return Err(self.refused(permits, AcquireError::DeadlineExceeded(late)));
            }
            return Err(self.not_permitted(permits));
        }
        let (back, refilling) = leases.start_refill();
        let ask = Ask {
            permits,
            max_wait,
            lease: leases.size,
            back,
            ceiling: 0,
        };
        // In a task of its own: dropping this acquire does not cancel a
        // round trip that may take permits, and the lease it brings is
        // installed for the next in turn.
        let this = Arc::clone(self);
        let refill = async move {
            let outcome = this.ask(&this.own.quota, ask).await;
            let generation = match &outcome {
                Ok(v) if v.granted && v.wait.is_zero() && v.taken > 0 => {
                    this.counters.leased(v.taken);
                    Some(refilling.landed(this.clock.now_nanos(), v))
                }
                _ => None,
            };
            drop(refilling);
            (outcome, generation)
        };
        let (outcome, generation) = match Handle::try_current() {
            Ok(handle) => match handle.spawn(refill).await {
                Ok(done) => done,
                // The runtime is shutting down (the task's guard cleared the
                // refill): no verdict.
                Err(_) => (Err(BackendFailure::Error), None),
            },
            Err(_) => refill.await,
        };
        match (outcome, generation) {
            (Ok(_), Some(generation)) => {
                let out = leases.take(self.clock.now_nanos(), permits, Some(generation));
                drop(turn);
                match out {
                    Some(out) => Ok(self.leased(permits, out)),
                    None => {
                        debug_assert!(false, "a refill's lease holds its acquire's permits");
                        Err(self.not_permitted(permits))
                    }
                }
            }
            (Ok(verdict), None) => {
                // Until one permit comes back, no acquire can be granted
                // (a refusal of more says less: fewer may come back sooner).
                if !verdict.granted && permits <= 1 {
                    leases.closed(self.clock.now_nanos(), clock::nanos(verdict.wait));
                }
                drop(turn);
                self.conclude(permits, verdict, budget).await
            }
            (Err(failure), _) => {
                // The lease was retired: served from until spent, its rest
                // (if the give-back did not arrive) stays spent.
                drop(turn);
                let spent = clock::elapsed(start, self.clock.now_nanos());
                self.fall_back(&self.own, permits, failure, max_wait.saturating_sub(spent))
                    .await
            }
        }
    }

    /// Waiting for this process's turn took longer than the acquire may:
    /// the refills ahead got no timely answer, so the policy decides now.
    #[cold]
    fn turn_timed_out(&self, permits: u32, waited: Duration) -> Result<Grant, AcquireError> {
        let failure = BackendFailure::Timeout;
        self.counters.failure(failure);
        let cause: Arc<str> = Arc::from(format!(
            "no turn within {waited:?}: the lease refills ahead of it got no timely answer"
        ));
        self.events.publish_with(|| {
            DistributedRateLimiterEvent::failure(
                &self.name,
                DistributedRateLimiterEventKind::BackendFailure(failure),
                permits,
                &cause,
            )
        });
        let decision = self.own.policy.decide_now(permits);
        self.decided(permits, decision)
    }

    fn leased(&self, permits: u32, out: HandOut) -> Grant {
        self.counters.acquired(true);
        self.counters.lease_grant();
        self.publish(DistributedRateLimiterEventKind::SuccessfulAcquire, permits);
        Grant {
            decided_by: DecidedBy::Lease,
            server_time_micros: Some(out.server_time_micros),
            remaining: None,
        }
    }

    async fn return_lease(&self) -> u32 {
        let Some(leases) = &self.leases else {
            return 0;
        };
        let _turn = leases.turn.lock().await;
        while leases.refilling() {
            leases.refill_ended().await;
        }
        let back = leases.retire();
        if back.permits == 0 {
            return 0;
        }
        let ask = Ask {
            back,
            ..Ask::plain(0, Duration::ZERO)
        };
        self.ask(&self.own.quota, ask)
            .await
            .map_or(0, |v| v.returned)
    }

    /// One script call, counted; a failure is counted and published too.
    async fn ask(&self, quota: &Quota, ask: Ask) -> Result<Verdict, BackendFailure> {
        self.counters.script_call();
        let permits = ask.permits;
        match self.backend.run(quota, ask).await {
            Ok(verdict) => {
                self.counters.verdict(verdict.remaining);
                self.counters.returned(verdict.returned);
                Ok(verdict)
            }
            Err(failure) => {
                self.counters.failure(failure.kind);
                let kind = DistributedRateLimiterEventKind::BackendFailure(failure.kind);
                tracing::debug!(
                    limiter = &*self.name,
                    failure = failure.kind.as_str(),
                    cause = &*failure.cause,
                    "the distributed rate limiter got no verdict from Redis"
                );
                self.events.publish_with(|| {
                    DistributedRateLimiterEvent::failure(&self.name, kind, permits, &failure.cause)
                });
                Err(failure.kind)
            }
        }
    }

    fn granted(&self, permits: u32, verdict: Verdict) -> Grant {
        self.counters.acquired(true);
        self.publish(DistributedRateLimiterEventKind::SuccessfulAcquire, permits);
        Grant {
            decided_by: DecidedBy::Redis,
            server_time_micros: Some(verdict.server_time_micros),
            remaining: Some(verdict.remaining),
        }
    }

    #[cold]
    fn not_permitted(&self, permits: u32) -> AcquireError {
        let refusal = RequestNotPermitted::by(&self.refusal_name);
        self.refused(permits, AcquireError::NotPermitted(refusal))
    }

    #[cold]
    fn refused(&self, permits: u32, err: AcquireError) -> AcquireError {
        self.counters.acquired(false);
        self.publish(DistributedRateLimiterEventKind::FailedAcquire, permits);
        err
    }

    /// Redis gave no verdict: the policy decides, once.
    #[cold]
    async fn fall_back(
        &self,
        slot: &Slot,
        permits: u32,
        _failure: BackendFailure,
        max_wait: Duration,
    ) -> Result<Grant, AcquireError> {
        let decision = slot.policy.decide(permits, max_wait).await;
        self.decided(permits, decision)
    }

    fn decided(
        &self,
        permits: u32,
        decision: Result<Grant, AcquireError>,
    ) -> Result<Grant, AcquireError> {
        let granted = decision.is_ok();
        self.counters.fallback(granted);
        self.publish(
            DistributedRateLimiterEventKind::FallbackAcquire {
                policy: self.config.failure_policy(),
                granted,
            },
            permits,
        );
        decision
    }

    #[cold]
    pub(crate) fn cannot_block(&self, slot: &Slot, permits: u32) -> Result<Grant, AcquireError> {
        // A lease in hand needs no round trip (for a class that may use one).
        let own =
            std::ptr::eq(slot, &self.own) && self.config.threshold(Criticality::current()) >= 100.0;
        if let Some(leases) = self.leases.as_ref().filter(|l| own && permits <= l.size) {
            if let Ok(_turn) = leases.turn.try_lock() {
                if let Some(out) = leases.take(self.clock.now_nanos(), permits, None) {
                    return Ok(self.leased(permits, out));
                }
            }
        }
        let failure = BackendFailure::CannotBlock;
        self.counters.failure(failure);
        self.publish(
            DistributedRateLimiterEventKind::BackendFailure(failure),
            permits,
        );
        let decision = slot.policy.decide_now(permits);
        self.decided(permits, decision)
    }

    pub(crate) fn blocking_runtime(&self) -> Option<&Runtime> {
        if let Some(rt) = self.blocking.get() {
            return Some(rt);
        }
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("resil-redis-limiter")
            .enable_all()
            .build()
            .ok()?;
        Some(self.blocking.get_or_init(|| rt))
    }

    fn publish(&self, kind: DistributedRateLimiterEventKind, permits: u32) {
        self.events
            .publish_with(|| DistributedRateLimiterEvent::acquisition(&self.name, kind, permits));
    }
}

impl fmt::Debug for DistributedRateLimiter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DistributedRateLimiter")
            .field("name", &&*self.inner.name)
            .field("key", &self.inner.own.quota.key())
            .field("config", &self.inner.config)
            .finish()
    }
}
