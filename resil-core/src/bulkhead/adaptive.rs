//! The adaptive bulkhead: a concurrency limit that follows measured latency
//! (Netflix concurrency-limits' `VegasLimit` on a `SimpleLimiter`).

use std::fmt;
use std::future::{Future, Pending};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::adaptive_config::AdaptiveBulkheadConfig;
use super::adaptive_event::{
    AdaptiveBulkheadEvent, AdaptiveBulkheadEventKind, AdaptiveBulkheadMetrics,
};
use super::sample_window::{Windowing, Windows};
use super::semaphore::Semaphore;
use super::vegas::Vegas;
use super::AcquireError;
use crate::clock::{self, Clock, SharedClock};
use crate::criticality::{share_from_percent, share_of, Criticality, Share};
use crate::error::{BulkheadFull, DeadlineExceeded, Error, SharedName};
use crate::event::{EventPublisher, EventStream};
use crate::guarded::{Acquire, Guarded};

/// A bulkhead whose limit is not configured but measured: it grows while
/// calls finish in about the smallest latency seen, and shrinks as soon as
/// latency shows they queue somewhere downstream.
///
/// The limit starts at [`initial_limit`](AdaptiveBulkheadConfig::initial_limit)
/// and stays within [`min_limit`](AdaptiveBulkheadConfig::min_limit)`..=`
/// [`max_limit`](AdaptiveBulkheadConfig::max_limit). Finished calls are
/// latency samples, gathered into windows (by default 1 s and at least 10
/// calls, as Netflix's `WindowedLimit`); each window's average latency
/// updates the Vegas estimator once:
///
/// * with `L` the limit, `rtt_noload` the smallest window latency seen and
///   `rtt` this window's, `queue = ceil(L × (1 − rtt_noload / rtt))` calls
///   are estimated to wait downstream;
/// * with `f = max(1, floor(log10 L))`: `queue <= f` grows the limit by
///   `6f`, `queue < 3f` by `f`; `queue > 6f` shrinks it by `f`; otherwise it
///   stays — all of this only for a window in which at least half the
///   limit's calls were in flight: a window with fewer changes nothing,
///   neither up nor down (Vegas' app-limited rule: the limit was not what
///   bounded the traffic, so lowering it would not relieve the downstream);
/// * a window holding a drop (a timeout) always shrinks the limit by `f`,
///   whatever was in flight, the first window included; its latency never
///   becomes the no-load latency (it measures the timeout). `VegasLimit`
///   would take a first window's timeout as its baseline and keep the
///   limit: resil keeps this one promise instead;
/// * `rtt_noload` is re-measured every 15 to 30 × `L` windows, so a
///   downstream that became slower for good is learnt.
///
/// The limit in force is [`limit`](Self::limit), a gauge.
///
/// ```
/// use resil_core::bulkhead::{AdaptiveBulkhead, AdaptiveBulkheadConfig};
/// use resil_core::clock::ManualClock;
/// use std::time::Duration;
///
/// let clock = ManualClock::new();
/// let inventory = AdaptiveBulkhead::with_clock(
///     "inventory",
///     AdaptiveBulkheadConfig::builder().initial_limit(10).build().unwrap(),
///     clock.clone(),
/// );
/// // Ten calls at once, each answered in 100 ms, for 2.5 s. The first
/// // second's window only measures the no-load latency; the next one shows
/// // no queueing, so the limit grows (by 6, Vegas' beta below 100).
/// for _ in 0..25 {
///     let permits: Vec<_> = (0..10).map(|_| inventory.try_acquire_permission().unwrap()).collect();
///     clock.advance(Duration::from_millis(100));
///     permits.into_iter().for_each(|p| p.record_success());
/// }
/// assert_eq!(inventory.limit(), 16);
/// assert_eq!(inventory.metrics().min_rtt(), Duration::from_millis(100));
/// ```
///
/// # Why Vegas
///
/// Of concurrency-limits' three algorithms, Vegas is the one whose signal is
/// the one this bulkhead promises: latency *relative to its minimum*. AIMD
/// shrinks only on drops (timeouts), so it lets a queue grow until calls
/// time out, which is exactly the latency it should prevent. Gradient2
/// compares short-term latency with a long-term average, which itself climbs
/// while a queue persists, so a lasting overload becomes its new normal.
/// Vegas compares with the smallest latency seen (re-probed now and then so
/// a downstream that became slower for good is learnt), needs no tuning
/// beyond its bounds, and decides in whole steps that tests can pin.
///
/// # Refusals, not waits
///
/// A call that finds every slot of the current limit taken is refused at once
/// with [`Error::BulkheadFull`], as Netflix's `SimpleLimiter` does: a queue in
/// front of the limit would add exactly the latency the limit exists to keep
/// out. Put a [`Retry`](crate::retry::Retry) around it to try again later.
/// Inside a [`deadline`](crate::deadline) whose budget is spent, calls are
/// refused with [`Error::DeadlineExceeded`] (not counted as rejections).
///
/// # Admission by criticality
///
/// Every acquire has a [`Criticality`]: the task's
/// ([`Criticality::current`], `CRITICAL` unless a scope set one), or the one
/// given to [`try_acquire_permission_as`](Self::try_acquire_permission_as).
/// As the slots in use rise, `SHEDDABLE` calls are refused first (by default
/// from half the limit on), then `SHEDDABLE_PLUS` (from 75 %), then
/// `CRITICAL` (at the limit); `CRITICAL_PLUS` calls still get their
/// guaranteed share (10 %) when the limit is full. The thresholds and shares
/// are [configuration](AdaptiveBulkheadConfig#admission-by-criticality);
/// refusals are counted per class
/// ([`rejected_calls_of`](AdaptiveBulkheadMetrics::rejected_calls_of)).
///
/// ```
/// use resil_core::bulkhead::{AdaptiveBulkhead, AdaptiveBulkheadConfig};
/// use resil_core::criticality::Criticality;
///
/// let b = AdaptiveBulkhead::new(
///     "checkout",
///     AdaptiveBulkheadConfig::builder().initial_limit(10).build().unwrap(),
/// );
/// let mut held = Vec::new();
/// for _ in 0..5 {
///     held.push(b.try_acquire_permission_as(Criticality::Sheddable).unwrap());
/// }
/// // Half the limit is busy: a prefetch is refused, a checkout is not.
/// assert!(b.try_acquire_permission_as(Criticality::Sheddable).is_err());
/// assert!(b.try_acquire_permission_as(Criticality::Critical).is_ok());
/// assert_eq!(b.metrics().rejected_calls_of(Criticality::Sheddable), 1);
/// ```
///
/// # What is a sample
///
/// A call that completes (`Ok` or its own `Err`) is a latency sample, as in
/// concurrency-limits. In [`call_async_nested`](Self::call_async_nested) a
/// [`Timeout`](crate::error::Timeout) from a time limiter inside is a *drop*,
/// which always shrinks the limit; another refusal from inside carries no
/// latency and is ignored, as are cancelled and panicked calls. A permit from
/// [`try_acquire_permission`](Self::try_acquire_permission) says which it was
/// with [`record_success`](AdaptivePermit::record_success) /
/// [`record_dropped`](AdaptivePermit::record_dropped); dropped without either,
/// it is ignored.
///
/// # Cost
///
/// Acquiring is the fixed bulkhead's one `fetch_add` plus a clock reading;
/// finishing is one clock reading, the estimator's update under a `try_lock`
/// (a sample that finds another thread updating is skipped rather than
/// waited for), and the `fetch_sub`. Nothing is allocated. A changed limit
/// resizes the slots under the waiter-queue lock.
#[derive(Clone)]
pub struct AdaptiveBulkhead {
    inner: Arc<AdaptiveInner>,
}

/// The state every handle shares.
pub(crate) struct AdaptiveInner {
    sem: Semaphore,
    name: Arc<str>,
    refusal_name: SharedName,
    limit: AtomicU32,
    /// The estimator and the window feeding it, updated together.
    vegas: Mutex<(Windows, Vegas)>,
    rejected: AtomicU64,
    /// Refusals per class, indexed by [`Criticality::index`].
    rejected_by_class: [AtomicU64; 4],
    /// Per class: the share of the limit below which it is admitted, in
    /// 1/2^32ths.
    thresholds: [Share; 4],
    /// Per class: its guaranteed share in 1/2^32ths (0: none).
    guaranteed: [Share; 4],
    /// Per class with a guaranteed share: the slots it holds.
    class_held: [AtomicU32; 4],
    samples: AtomicU64,
    dropped: AtomicU64,
    min_rtt: AtomicU64,
    /// `min_rtt_threshold` in nanoseconds.
    min_rtt_threshold: u64,
    config: AdaptiveBulkheadConfig,
    clock: SharedClock,
    events: EventPublisher<AdaptiveBulkheadEvent>,
}

/// What a finished call tells the estimator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sample {
    Ignore,
    Success,
    Dropped,
}

/// A seed for the probe jitter that is the same for the same name, so runs
/// (and tests) are reproducible.
fn seed(name: &str) -> u64 {
    name.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

impl AdaptiveInner {
    /// A slot now for the task's class, or the refusal.
    #[inline]
    fn try_acquire_now(&self) -> Result<AdaptivePermit<'_>, AcquireError> {
        if crate::deadline::remaining().is_some_and(|left| left.is_zero()) {
            return Err(AcquireError::DeadlineExceeded(DeadlineExceeded::by_shared(
                &self.refusal_name,
            )));
        }
        self.try_acquire(Criticality::current())
            .map_err(AcquireError::Full)
    }

    /// A slot for a call of `class`: under its threshold, else within its
    /// guaranteed share, else refused.
    #[inline]
    fn try_acquire(&self, class: Criticality) -> Result<AdaptivePermit<'_>, BulkheadFull> {
        let c = class.index();
        let counted = self.guaranteed[c] != 0;
        if self.sem.try_acquire_share(self.thresholds[c]) {
            if counted {
                self.class_held[c].fetch_add(1, Ordering::Relaxed);
            }
            Ok(self.permitted(class, counted))
        } else if counted && self.try_guaranteed(c) {
            Ok(self.permitted(class, counted))
        } else {
            Err(self.rejected(c))
        }
    }

    /// Admits a call of class `c` that its threshold refused, if its class
    /// holds fewer slots than its guaranteed share of the current limit. The
    /// class count is raised first (by CAS, so racing callers never take more
    /// than the share), then a slot is taken past the limit.
    #[cold]
    fn try_guaranteed(&self, c: usize) -> bool {
        let share = share_of(self.limit.load(Ordering::Relaxed), self.guaranteed[c]);
        let held = &self.class_held[c];
        let mut now = held.load(Ordering::Relaxed);
        loop {
            if now >= share {
                return false;
            }
            match held.compare_exchange_weak(now, now + 1, Ordering::Relaxed, Ordering::Relaxed) {
                Ok(_) => break,
                Err(actual) => now = actual,
            }
        }
        if self.sem.acquire_over_limit() {
            true
        } else {
            held.fetch_sub(1, Ordering::Relaxed);
            false
        }
    }

    #[inline]
    fn permitted(&self, class: Criticality, counted: bool) -> AdaptivePermit<'_> {
        let inflight = self.sem.snapshot().0;
        self.events.publish_with(|| {
            AdaptiveBulkheadEvent::of(&self.name, AdaptiveBulkheadEventKind::CallPermitted)
        });
        AdaptivePermit {
            inner: self,
            start: self.clock.now_nanos(),
            inflight,
            sample: Sample::Ignore,
            class,
            counted,
        }
    }

    #[cold]
    fn rejected(&self, class: usize) -> BulkheadFull {
        self.rejected.fetch_add(1, Ordering::Relaxed);
        self.rejected_by_class[class].fetch_add(1, Ordering::Relaxed);
        self.events.publish_with(|| {
            AdaptiveBulkheadEvent::of(&self.name, AdaptiveBulkheadEventKind::CallRejected)
        });
        BulkheadFull::by(&self.refusal_name)
    }

    /// A permitted call ended: learn from it, then give its slot back.
    #[inline]
    fn finish(&self, start: u64, inflight: u32, sample: Sample, class: Option<Criticality>) {
        if sample != Sample::Ignore {
            self.learn(start, inflight, sample == Sample::Dropped);
        }
        if let Some(class) = class {
            self.class_held[class.index()].fetch_sub(1, Ordering::Relaxed);
        }
        self.sem.release();
        self.events.publish_with(|| {
            AdaptiveBulkheadEvent::of(&self.name, AdaptiveBulkheadEventKind::CallFinished)
        });
    }

    #[inline]
    fn learn(&self, start: u64, inflight: u32, dropped: bool) {
        let end = self.clock.now_nanos();
        let rtt = end.saturating_sub(start);
        // Checked before the lock: a call too fast to be a sample (a cache
        // hit) leaves the estimator's line alone.
        if rtt < self.min_rtt_threshold {
            return;
        }
        let Some(mut guard) = self.vegas.try_lock() else {
            return;
        };
        let (windows, vegas) = &mut *guard;
        self.samples.fetch_add(1, Ordering::Relaxed);
        if dropped {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        let Some(window) = windows.add(end, rtt, inflight, dropped) else {
            return;
        };
        let before = vegas.limit();
        let after = vegas.sample(window.avg_rtt, window.max_inflight, window.dropped);
        self.min_rtt.store(vegas.rtt_noload(), Ordering::Relaxed);
        if after != before {
            // Under the estimator's lock, so resizes happen in update order.
            self.limit.store(after, Ordering::Relaxed);
            self.sem.resize(after);
            drop(guard);
            self.limit_changed(before, after);
        }
    }

    #[cold]
    fn limit_changed(&self, from: u32, to: u32) {
        self.events.publish_with(|| {
            AdaptiveBulkheadEvent::of(
                &self.name,
                AdaptiveBulkheadEventKind::LimitChanged { from, to },
            )
        });
    }
}

impl AdaptiveBulkhead {
    /// An adaptive bulkhead called `name`, timing calls on the system clock.
    pub fn new(name: impl Into<Arc<str>>, config: AdaptiveBulkheadConfig) -> Self {
        Self::with_clock(name, config, SharedClock::system())
    }

    /// An adaptive bulkhead timing calls on `clock` (tests inject a
    /// [`ManualClock`](crate::clock::ManualClock) or a
    /// [`TokioClock`](crate::clock::TokioClock) with paused time).
    pub fn with_clock(
        name: impl Into<Arc<str>>,
        config: AdaptiveBulkheadConfig,
        clock: impl Clock,
    ) -> Self {
        let name = name.into();
        let vegas = Vegas::new(
            config.initial_limit(),
            config.min_limit(),
            config.max_limit(),
            config.smoothing(),
            config.probe_multiplier(),
            seed(&name),
        );
        let windows = Windows::new(Windowing {
            min_window: clock::nanos(config.min_window_time()),
            max_window: clock::nanos(config.max_window_time()),
            window_size: config.window_size(),
            min_rtt_threshold: clock::nanos(config.min_rtt_threshold()),
        });
        AdaptiveBulkhead {
            inner: Arc::new(AdaptiveInner {
                sem: Semaphore::new(config.initial_limit(), true),
                refusal_name: SharedName::new(Arc::clone(&name)),
                name,
                limit: AtomicU32::new(config.initial_limit()),
                vegas: Mutex::new((windows, vegas)),
                rejected: AtomicU64::new(0),
                rejected_by_class: Default::default(),
                thresholds: Criticality::ALL.map(|c| share_from_percent(config.threshold(c))),
                guaranteed: Criticality::ALL
                    .map(|c| share_from_percent(config.guaranteed_share(c))),
                class_held: Default::default(),
                samples: AtomicU64::new(0),
                dropped: AtomicU64::new(0),
                min_rtt: AtomicU64::new(0),
                min_rtt_threshold: clock::nanos(config.min_rtt_threshold()),
                config,
                clock: SharedClock::new(clock),
                events: EventPublisher::default(),
            }),
        }
    }

    /// The instance name, carried by every rejection and event.
    #[inline]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The configuration (its bounds; the limit itself is [`limit`](Self::limit)).
    #[inline]
    pub fn config(&self) -> AdaptiveBulkheadConfig {
        self.inner.config
    }

    /// The limit in force: a gauge that follows the measured latency.
    #[inline]
    pub fn limit(&self) -> u32 {
        self.inner.limit.load(Ordering::Relaxed)
    }

    /// Free slots under the current limit right now.
    #[inline]
    pub fn available_concurrent_calls(&self) -> u32 {
        let (in_use, max) = self.inner.sem.snapshot();
        max.saturating_sub(in_use)
    }

    /// A snapshot of the limit, slots, rejections and samples.
    pub fn metrics(&self) -> AdaptiveBulkheadMetrics {
        let i = &*self.inner;
        AdaptiveBulkheadMetrics {
            limit: i.limit.load(Ordering::Relaxed),
            in_use: i.sem.snapshot().0,
            rejected: i.rejected.load(Ordering::Relaxed),
            rejected_by_class: i
                .rejected_by_class
                .each_ref()
                .map(|r| r.load(Ordering::Relaxed)),
            samples: i.samples.load(Ordering::Relaxed),
            dropped: i.dropped.load(Ordering::Relaxed),
            min_rtt: Duration::from_nanos(i.min_rtt.load(Ordering::Relaxed)),
        }
    }

    /// Subscribes to permitted / rejected / finished / limit-changed events.
    pub fn subscribe(&self) -> EventStream<AdaptiveBulkheadEvent> {
        self.inner.events.subscribe()
    }

    /// Takes a free slot now for the task's [`Criticality`], or refuses with
    /// `BulkheadFull`; never waits and does not consult the task's deadline.
    /// Say how the call went with the permit's `record_*` methods; a permit
    /// merely dropped is ignored.
    #[inline]
    pub fn try_acquire_permission(&self) -> Result<AdaptivePermit<'_>, BulkheadFull> {
        self.inner.try_acquire(Criticality::current())
    }

    /// [`try_acquire_permission`](Self::try_acquire_permission) for a call of
    /// `class`, whatever the task's.
    #[inline]
    pub fn try_acquire_permission_as(
        &self,
        class: Criticality,
    ) -> Result<AdaptivePermit<'_>, BulkheadFull> {
        self.inner.try_acquire(class)
    }

    /// Takes a free slot under the plain limit, ignoring criticality (no
    /// threshold, no guaranteed share): the bulkhead as it admits without
    /// classes, and the baseline the class check is measured against.
    #[inline]
    pub fn try_acquire_permission_unclassified(&self) -> Result<AdaptivePermit<'_>, BulkheadFull> {
        if self.inner.sem.try_acquire() {
            Ok(self.inner.permitted(Criticality::Critical, false))
        } else {
            Err(self.inner.rejected(Criticality::Critical.index()))
        }
    }

    /// Runs `f` in a slot, or refuses at once (`BulkheadFull`, or
    /// `DeadlineExceeded` when the task's deadline is spent). Its latency is a
    /// sample whether it returns `Ok` or `Err`; a panic is ignored (and the
    /// slot released).
    #[inline]
    pub fn call<T, E>(&self, f: impl FnOnce() -> Result<T, E>) -> Result<T, Error<E>> {
        let permit = self.inner.try_acquire_now()?;
        let out = f();
        permit.record_success();
        out.map_err(Error::Call)
    }

    /// Runs the future `work` in a slot taken on the first poll, or refuses at
    /// once without polling it. The slot is held until `work` completes or the
    /// future is dropped (a cancelled call is no sample).
    #[inline]
    pub fn call_async<F, T, E>(
        &self,
        work: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + use<'_, F, T, E>
    where
        F: Future<Output = Result<T, E>>,
    {
        Guarded::new(
            work,
            move || self.acquire_for_call(),
            |permit: AdaptivePermit<'_>, result: Result<T, E>| {
                permit.record_success();
                result.map_err(Error::Call)
            },
        )
    }

    /// [`call_async`](Self::call_async) around a future that is itself
    /// protected: one flat `resil::Error<E>`. An inner `Timeout` is a drop
    /// (the limit shrinks), another inner refusal is ignored.
    #[inline]
    pub fn call_async_nested<F, T, E>(
        &self,
        work: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + use<'_, F, T, E>
    where
        F: Future<Output = Result<T, Error<E>>>,
    {
        Guarded::new(
            work,
            move || self.acquire_for_call(),
            |permit: AdaptivePermit<'_>, result: Result<T, Error<E>>| {
                match &result {
                    Err(Error::Timeout(_)) => permit.record_dropped(),
                    Err(e) if e.is_rejection() => drop(permit),
                    _ => permit.record_success(),
                }
                result
            },
        )
    }

    #[inline(always)]
    #[allow(clippy::type_complexity)]
    fn acquire_for_call(
        &self,
    ) -> Result<
        Acquire<AdaptivePermit<'_>, Pending<Result<AdaptivePermit<'_>, AcquireError>>>,
        AcquireError,
    > {
        self.inner.try_acquire_now().map(Acquire::Now)
    }
}

impl fmt::Debug for AdaptiveBulkhead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (in_use, _) = self.inner.sem.snapshot();
        f.debug_struct("AdaptiveBulkhead")
            .field("name", &&*self.inner.name)
            .field("limit", &self.limit())
            .field("concurrent_calls", &in_use)
            .field("config", &self.inner.config)
            .finish()
    }
}

/// A slot in an [`AdaptiveBulkhead`], timed from when it was taken.
///
/// Give it back with [`record_success`](Self::record_success) (the call
/// completed: its latency is a sample) or [`record_dropped`](Self::record_dropped)
/// (it timed out: the limit shrinks). Dropping it without either (a
/// cancelled or panicked call) releases the slot and teaches nothing.
#[must_use = "the slot is released as soon as the permit is dropped"]
pub struct AdaptivePermit<'a> {
    inner: &'a AdaptiveInner,
    start: u64,
    inflight: u32,
    sample: Sample,
    class: Criticality,
    /// Whether the class's held count was raised (it has a guaranteed share).
    counted: bool,
}

impl AdaptivePermit<'_> {
    /// The class this slot was admitted as.
    #[inline]
    pub fn criticality(&self) -> Criticality {
        self.class
    }

    /// The call completed (with a value or its own error): its latency is a
    /// sample for the limit.
    #[inline]
    pub fn record_success(mut self) {
        self.sample = Sample::Success;
    }

    /// The call was dropped for taking too long (a timeout): the limit shrinks.
    #[inline]
    pub fn record_dropped(mut self) {
        self.sample = Sample::Dropped;
    }

    /// The name of the bulkhead this slot belongs to.
    pub fn bulkhead_name(&self) -> &str {
        &self.inner.name
    }
}

impl Drop for AdaptivePermit<'_> {
    #[inline]
    fn drop(&mut self) {
        let class = self.counted.then_some(self.class);
        self.inner
            .finish(self.start, self.inflight, self.sample, class);
    }
}

impl fmt::Debug for AdaptivePermit<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdaptivePermit")
            .field("bulkhead", &&*self.inner.name)
            .field("inflight", &self.inflight)
            .field("criticality", &self.class)
            .finish()
    }
}
