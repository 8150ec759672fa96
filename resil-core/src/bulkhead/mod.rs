//! Semaphore bulkhead: cap how many calls run at once (Resilience4j `SemaphoreBulkhead`).
//!
//! A [`Bulkhead`] hands out at most `max_concurrent_calls` slots. A call that
//! finds none free waits up to `max_wait_duration` (Resilience4j's default is
//! not to wait) and is then refused with [`Error::BulkheadFull`] without running.
//! The call runs on the caller's own thread or task; for blocking work that must
//! leave the caller's threads, use the
//! [thread-pool bulkhead](crate::thread_pool_bulkhead) instead.
//!
//! ```
//! use std::time::Duration;
//! use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
//! use resil_core::Error;
//!
//! let reports = Bulkhead::new("reports", BulkheadConfig::builder()
//!     .max_concurrent_calls(2)
//!     .max_wait_duration(Duration::ZERO)
//!     .build()
//!     .unwrap());
//!
//! let held = [reports.try_acquire_permission().unwrap(), reports.try_acquire_permission().unwrap()];
//! assert_eq!(reports.available_concurrent_calls(), 0);
//! let third = reports.call(|| Ok::<_, ()>("never runs"));
//! assert!(matches!(third, Err(Error::BulkheadFull(_))));
//! drop(held);
//! assert_eq!(reports.call(|| Ok::<_, ()>(42)), Ok(42));
//! ```
//!
//! # The slot lives as long as the work
//!
//! [`call`](Bulkhead::call) holds its slot while the closure runs;
//! [`call_async`](Bulkhead::call_async) holds it inside the returned future,
//! from its first poll until it completes or is dropped. A sync `call` whose
//! closure merely *starts* async work (returns a future or spawns a task)
//! protects only the start: the slot is free again while the work still runs.
//! That is seed 003's `async` experiment; protect async work with `call_async`.
//! Release on success, error, panic and cancellation is one path: the permit's
//! `Drop`.
//!
//! # Fairness
//!
//! With `fair_call_handling_enabled` (Resilience4j's default, kept here) a freed
//! slot goes to the longest-waiting caller, and a newcomer never overtakes a
//! waiter. Without it, a newcomer arriving as a slot frees may take it (barging),
//! which saves a hand-off under heavy contention at the cost of ordering. Either
//! way waiters queue in FIFO order. Fairness costs nothing on the fast path: it
//! is one bit in the same atomic word.
//!
//! # Cost
//!
//! Acquiring a free slot is one `fetch_add` on a single `AtomicU64` (a caller
//! that finds no room undoes it); releasing is one `fetch_sub`. Two threads
//! sharing a bulkhead therefore pay one contended add and one contended sub
//! per call, and never a retried compare-and-swap. The waiter queue (a mutex-guarded FIFO) is only
//! touched when a call must wait or a release finds waiters. Nothing is
//! allocated on the fast path; a caller that waits allocates its queue node and
//! its timer.
//!
//! # Changing the limit at run time
//!
//! [`set_max_concurrent_calls`](Bulkhead::set_max_concurrent_calls) and
//! [`change_config`](Bulkhead::change_config) take effect at once and never
//! block. Raising the limit hands the new room to waiters immediately. Lowering
//! it revokes nothing: calls in flight keep their slots, and new calls wait or
//! are refused until the calls in flight drop below the new limit. Resilience4j
//! instead has the thread that changes the configuration take the surplus
//! permits with `acquireUninterruptibly`, blocking it until enough calls finish;
//! here the surplus simply evaporates as held slots are returned
//! ([`BulkheadMetrics::concurrent_calls`] may exceed the limit meanwhile).
//!
//! # Deadlines
//!
//! Inside [`deadline::within`](crate::deadline::within) the wait for a slot is
//! cut to the remaining budget; if that cut wait expires the call fails with
//! [`Error::DeadlineExceeded`] naming the bulkhead (not `BulkheadFull`: the
//! bulkhead might have had room within its own `max_wait_duration`). When the
//! budget is already spent, `call`, `call_async` and `acquire_permission` refuse
//! with `DeadlineExceeded` *even if a slot is free*: work started with no budget
//! left cannot finish, and the slot is better left to a caller that can use it.
//! Those refusals are not counted as rejections (the bulkhead was not full).
//! [`try_acquire_permission`](Bulkhead::try_acquire_permission) never waits and
//! ignores deadlines, like `tokio::sync::Semaphore::try_acquire`.
//!
//! # An adaptive limit
//!
//! [`AdaptiveBulkhead`] is the bulkhead kind whose limit is measured rather
//! than configured (Netflix concurrency-limits' Vegas): it grows while calls
//! finish in about the smallest latency seen and shrinks when latency shows
//! they queue downstream, within `min_limit..=max_limit`. It refuses at once
//! when full, never waits.
//!
//! # Runtime
//!
//! Async waits (a positive `max_wait_duration`) run on the injected clock's
//! timer: tokio's for the system clock, so they need a tokio runtime with time
//! enabled. Without a wait, `call_async` runs on any executor. A blocking `call`
//! that waits parks its thread: do not let it wait inside an async task.

mod acquire;
mod adaptive;
mod adaptive_config;
mod adaptive_event;
mod config;
mod event;
mod metrics;
mod permit;
mod sample_window;
mod semaphore;
mod shadow;
mod vegas;

use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

pub use self::acquire::AcquirePermission;
pub use self::adaptive::{AdaptiveBulkhead, AdaptivePermit};
pub use self::adaptive_config::{AdaptiveBulkheadConfig, AdaptiveBulkheadConfigBuilder};
pub use self::adaptive_event::{
    AdaptiveBulkheadEvent, AdaptiveBulkheadEventKind, AdaptiveBulkheadMetrics,
};
pub use self::config::{BulkheadConfig, BulkheadConfigBuilder, MAX_CONCURRENT_CALLS};
pub use self::event::{BulkheadEvent, BulkheadEventKind};
pub use self::metrics::BulkheadMetrics;
pub use self::permit::{AcquireError, BulkheadPermit};

use self::semaphore::Semaphore;
use crate::clock::{self, Clock, SharedClock};
use crate::cold_box::ColdBox;
use crate::criticality::{share_from_percent, Criticality, Share, FULL_SHARE};
use crate::error::{BulkheadFull, ConfigError, DeadlineExceeded, Error, SharedName};
use crate::event::{EventPublisher, EventStream};
use crate::guarded::{Acquire, Guarded};
use crate::shadow::ShadowSlot;
use crate::striped::Striped;

/// A semaphore bulkhead: at most `max_concurrent_calls` calls at once, others
/// wait up to `max_wait_duration` and are then refused with `BulkheadFull`.
///
/// A cheap `Clone` handle: clones share the same slots. See the
/// [module docs](self) for the semantics.
///
/// ```
/// use resil_core::bulkhead::{Bulkhead, BulkheadConfig};
/// use resil_core::Error;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let inventory = Bulkhead::new("inventory", BulkheadConfig::default());
/// let stock = inventory.call_async(async { Ok::<_, std::io::Error>(7) }).await;
/// assert_eq!(stock.unwrap(), 7);
/// assert_eq!(inventory.available_concurrent_calls(), 25);
/// # }
/// ```
#[derive(Clone)]
pub struct Bulkhead {
    inner: Arc<Inner>,
}

/// The state every handle shares.
pub(crate) struct Inner {
    sem: Semaphore,
    name: Arc<str>,
    /// The name every refusal carries (built once; see [`SharedName`]).
    refusal_name: SharedName,
    /// `max_wait_duration` in nanoseconds, read on the slow path.
    max_wait_nanos: AtomicU64,
    /// Rejections, per class ([`Criticality::index`]).
    rejected: [AtomicU64; 4],
    /// Each class's share of the slots (`FULL_SHARE`: all of them), from
    /// the config's thresholds.
    class_shares: [AtomicU64; 4],
    /// Slots handed out, counted per thread (every call that gets one).
    permitted: Striped<AtomicU64>,
    /// The configuration as last set; also serialises configuration changes.
    config: Mutex<BulkheadConfig>,
    clock: SharedClock,
    events: EventPublisher<BulkheadEvent>,
    /// Rejections since the last aggregated log line (see [`crate::log`]).
    refusals_logged: crate::log::RefusalLog,
    /// The shadow attached to this bulkhead (see [`crate::shadow`]).
    shadow: ShadowSlot<Bulkhead>,
    /// Whether this bulkhead is itself a shadow, and what only a shadow counts.
    is_shadow: bool,
    shadow_counts: shadow::ShadowCounts,
}

impl Inner {
    #[inline]
    fn max_wait(&self) -> Duration {
        Duration::from_nanos(self.max_wait_nanos.load(Ordering::Relaxed))
    }

    /// A slot was taken: wrap it and tell subscribers.
    #[inline]
    fn permitted(&self) -> BulkheadPermit<'_> {
        self.permitted.increment();
        self.events
            .publish_with(|| BulkheadEvent::of(&self.name, BulkheadEventKind::CallPermitted));
        let shadow = if self.shadow.is_set() {
            self.shadow_admit()
        } else {
            None
        };
        BulkheadPermit::new(self, shadow)
    }

    /// A held slot ends (the permit's `Drop`).
    #[inline]
    fn finish(&self) {
        self.sem.release();
        self.events
            .publish_with(|| BulkheadEvent::of(&self.name, BulkheadEventKind::CallFinished));
    }

    /// No slot within the wait: count it, tell subscribers, say why.
    #[cold]
    fn rejected(&self, cut_by_deadline: bool) -> AcquireError {
        if cut_by_deadline {
            self.count_rejection();
            AcquireError::DeadlineExceeded(DeadlineExceeded::by_shared(&self.refusal_name))
        } else {
            AcquireError::Full(self.rejected_full())
        }
    }

    /// No free slot and no wait: count it, tell subscribers.
    #[cold]
    fn rejected_full(&self) -> BulkheadFull {
        if self.shadow.is_set() {
            self.shadow_refused();
        }
        self.count_rejection();
        BulkheadFull::by(&self.refusal_name)
    }

    fn count_rejection(&self) {
        self.rejected[Criticality::current().index()].fetch_add(1, Ordering::Relaxed);
        self.refusals_logged
            .refused("bulkhead", &self.name, "calls rejected", &self.clock);
        self.events
            .publish_with(|| BulkheadEvent::of(&self.name, BulkheadEventKind::CallRejected));
    }

    /// The non-waiting start of every acquisition: `Some` outcome if the
    /// deadline is spent or a slot is free, `None` if the caller must wait.
    // Always inlined, like the poll it starts: its result would otherwise
    // come back through memory and stall on store forwarding when read.
    #[inline(always)]
    fn try_acquire_now(&self) -> Option<Result<BulkheadPermit<'_>, AcquireError>> {
        if let Some(spent) = self.deadline_spent() {
            return Some(Err(spent));
        }
        if let Some(share) = self.class_share() {
            return Some(self.try_acquire_share(share).map_err(AcquireError::Full));
        }
        if self.sem.try_acquire() {
            return Some(Ok(self.permitted()));
        }
        None
    }

    /// The task's class's share of the slots, when it is not all of them.
    #[inline]
    fn class_share(&self) -> Option<Share> {
        let share = self.class_shares[Criticality::current().index()].load(Ordering::Relaxed);
        (share < FULL_SHARE).then_some(share)
    }

    /// A slot within `share` now, or a refusal (never a wait).
    #[cold]
    fn try_acquire_share(&self, share: Share) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        if self.sem.try_acquire_share(share) {
            Ok(self.permitted())
        } else {
            Err(self.rejected_full())
        }
    }

    /// Puts `config`'s thresholds in force.
    fn set_shares(&self, config: &BulkheadConfig) {
        for class in Criticality::ALL {
            let t = config.threshold(class);
            let share = if t >= 100.0 {
                FULL_SHARE
            } else {
                share_from_percent(t)
            };
            self.class_shares[class.index()].store(share, Ordering::Relaxed);
        }
    }

    /// `Some` refusal if the task's deadline is already spent.
    #[inline]
    fn deadline_spent(&self) -> Option<AcquireError> {
        match crate::deadline::remaining() {
            Some(left) if left.is_zero() => Some(AcquireError::DeadlineExceeded(
                DeadlineExceeded::by_shared(&self.refusal_name),
            )),
            _ => None,
        }
    }
}

impl Bulkhead {
    /// A bulkhead called `name` on the system clock.
    pub fn new(name: impl Into<Arc<str>>, config: BulkheadConfig) -> Self {
        Self::with_clock(name, config, SharedClock::system())
    }

    /// A bulkhead whose waits are timed on `clock` (tests inject
    /// [`TokioClock`](crate::clock::TokioClock) with paused tokio time, or
    /// [`ManualClock`](crate::clock::ManualClock) for blocking waits).
    pub fn with_clock(
        name: impl Into<Arc<str>>,
        config: BulkheadConfig,
        clock: impl Clock,
    ) -> Self {
        Self::build(name.into(), config, SharedClock::new(clock), false)
    }

    fn build(name: Arc<str>, config: BulkheadConfig, clock: SharedClock, is_shadow: bool) -> Self {
        let bulkhead = Bulkhead {
            inner: Arc::new(Inner {
                sem: Semaphore::new(
                    config.max_concurrent_calls(),
                    config.fair_call_handling_enabled(),
                ),
                refusal_name: SharedName::new(Arc::clone(&name)),
                name,
                max_wait_nanos: AtomicU64::new(clock::nanos(config.max_wait_duration())),
                rejected: Default::default(),
                class_shares: Default::default(),
                permitted: Striped::default(),
                config: Mutex::new(config),
                clock,
                events: EventPublisher::default(),
                refusals_logged: crate::log::RefusalLog::new(),
                shadow: ShadowSlot::default(),
                is_shadow,
                shadow_counts: shadow::ShadowCounts::default(),
            }),
        };
        bulkhead.inner.set_shares(&config);
        bulkhead
    }

    /// The instance name, carried by every rejection and event.
    #[inline]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The configuration in force (including run-time changes).
    pub fn config(&self) -> BulkheadConfig {
        *self.inner.config.lock()
    }

    /// Runs `f` in a slot, waiting (parking this thread) up to
    /// `max_wait_duration` for one.
    ///
    /// Refused calls never run: `Err(Error::BulkheadFull)`, or
    /// `Err(Error::DeadlineExceeded)` when the task's deadline is spent or ran
    /// out while waiting. `f`'s own error comes back as `Error::Call`. The slot
    /// is released when `f` returns or panics.
    ///
    /// Only the closure's run is protected: if it starts async work and returns
    /// a future or a task handle, the slot is free again while that work runs.
    /// Use [`call_async`](Self::call_async) for async work.
    #[inline]
    pub fn call<T, E>(&self, f: impl FnOnce() -> Result<T, E>) -> Result<T, Error<E>> {
        let _permit = self.inner.acquire_blocking()?;
        f().map_err(Error::Call)
    }

    /// Runs the future `work` in a slot, waiting (without blocking a thread) up
    /// to `max_wait_duration` for one.
    ///
    /// Nothing happens until the returned future is polled; the slot is taken
    /// on its first poll and held until `work` completes or the future is
    /// dropped. A refused `work` is dropped without being polled.
    ///
    /// `work` is stored once and polled in place: the returned future is
    /// `work` plus the permit and the (empty unless waiting) wait state.
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
            |permit: BulkheadPermit<'_>, result: Result<T, E>| {
                drop(permit);
                result.map_err(Error::Call)
            },
        )
    }

    /// [`call_async`](Self::call_async) around a future that is itself
    /// protected (it returns `Result<T, resil::Error<E>>`): one flat
    /// `resil::Error<E>`, an inner refusal staying a refusal. Polls `work` in
    /// place, as `call_async` does, so a hand-composed stack pays no extra
    /// layer for the flattening.
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
            |permit: BulkheadPermit<'_>, result: Result<T, Error<E>>| {
                drop(permit);
                result
            },
        )
    }

    /// A slot for a `call_async*` future's first poll: the fast path inline,
    /// so an uncontended call builds no wait state. The wait state is boxed:
    /// only a waiting call pays for it (it allocates its waiter and timer
    /// anyway), and every layer around a call carries a pointer instead.
    #[inline(always)]
    #[allow(clippy::type_complexity)]
    fn acquire_for_call(
        &self,
    ) -> Result<Acquire<BulkheadPermit<'_>, ColdBox<AcquirePermission<'_>>>, AcquireError> {
        match self.inner.try_acquire_now() {
            Some(ready) => ready.map(Acquire::Now),
            None => Ok(Acquire::Wait(ColdBox::pin(self.acquire_permission()))),
        }
    }

    /// Takes a free slot now, or refuses with `BulkheadFull`; never waits.
    ///
    /// When fair, a slot is never taken ahead of callers already waiting. Does
    /// not consult the task's deadline (it never waits).
    #[inline]
    pub fn try_acquire_permission(&self) -> Result<BulkheadPermit<'_>, BulkheadFull> {
        if let Some(share) = self.inner.class_share() {
            return self.inner.try_acquire_share(share);
        }
        if self.inner.sem.try_acquire() {
            Ok(self.inner.permitted())
        } else {
            Err(self.inner.rejected_full())
        }
    }

    /// Waits, without blocking a thread, up to `max_wait_duration` (cut to the
    /// task's deadline) for a slot. Cancellation-safe: see
    /// [`AcquirePermission`].
    #[inline]
    pub fn acquire_permission(&self) -> AcquirePermission<'_> {
        AcquirePermission::new(&self.inner)
    }

    /// Free slots right now (zero while more are held than a lowered limit
    /// allows).
    #[inline]
    pub fn available_concurrent_calls(&self) -> u32 {
        let (in_use, max) = self.inner.sem.snapshot();
        max.saturating_sub(in_use)
    }

    /// A snapshot of slots, waiters and rejections.
    pub fn metrics(&self) -> BulkheadMetrics {
        let (in_use, max) = self.inner.sem.snapshot();
        BulkheadMetrics {
            in_use,
            max,
            waiting: self.inner.sem.waiting(),
            rejected: self
                .inner
                .rejected
                .each_ref()
                .map(|r| r.load(Ordering::Relaxed)),
            permitted: self.inner.permitted.sum(),
        }
    }

    /// Subscribes to permitted / rejected / finished events.
    pub fn subscribe(&self) -> EventStream<BulkheadEvent> {
        self.inner.events.subscribe()
    }

    /// Changes the limit at run time without disturbing calls in flight: see
    /// [Changing the limit at run time](self#changing-the-limit-at-run-time).
    pub fn set_max_concurrent_calls(&self, max_concurrent_calls: u32) -> Result<(), ConfigError> {
        let mut config = self.inner.config.lock();
        let next = config
            .to_builder()
            .max_concurrent_calls(max_concurrent_calls)
            .build()?;
        self.apply(&mut config, next);
        Ok(())
    }

    /// Replaces the whole configuration at run time: the limit (as
    /// [`set_max_concurrent_calls`](Self::set_max_concurrent_calls)), the wait
    /// (for calls that start waiting from now on) and fairness. Never blocks on
    /// calls in flight.
    pub fn change_config(&self, config: BulkheadConfig) {
        let mut current = self.inner.config.lock();
        self.apply(&mut current, config);
    }

    fn apply(&self, current: &mut BulkheadConfig, next: BulkheadConfig) {
        self.inner
            .max_wait_nanos
            .store(clock::nanos(next.max_wait_duration()), Ordering::Relaxed);
        self.inner.sem.set_fair(next.fair_call_handling_enabled());
        self.inner.set_shares(&next);
        if next.max_concurrent_calls() != current.max_concurrent_calls() {
            self.inner.sem.resize(next.max_concurrent_calls());
        }
        *current = next;
    }
}

impl fmt::Debug for Bulkhead {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (in_use, max) = self.inner.sem.snapshot();
        f.debug_struct("Bulkhead")
            .field("name", &&*self.inner.name)
            .field("max_concurrent_calls", &max)
            .field("concurrent_calls", &in_use)
            .field("waiting_calls", &self.inner.sem.waiting())
            .finish()
    }
}

#[cfg(test)]
mod tests;
