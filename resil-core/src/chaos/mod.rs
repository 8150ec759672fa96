//! Fault injection for drills: latency, errors and results injected into
//! calls at a rate, switched on by management for a while and with a reason
//! (Polly's chaos strategies).
//!
//! A [`Chaos`] instance wraps calls like any other primitive. While it is
//! *disabled* (the default) it only forwards them: the check is one relaxed
//! atomic load, and the protected future is polled in place. While
//! *enabled*, each call draws against the rates of its
//! [`ChaosConfig`]: it may be delayed, failed with an injected error, or
//! answered with an injected value instead of running.
//!
//! Injection is switched like a breaker's forced states: by management, with a
//! reason and, usually, a TTL after which it switches itself off, so a drill
//! forgotten at 6 p.m. is over by the night.
//!
//! ```
//! use std::time::Duration;
//! use resil_core::chaos::{Chaos, ChaosConfig};
//! use resil_core::clock::ManualClock;
//! use resil_core::Error;
//!
//! let clock = ManualClock::new();
//! let chaos = Chaos::with_clock(
//!     "inventory-query",
//!     ChaosConfig::builder()
//!         .inject_error(1.0, || "injected: 503")
//!         .build()
//!         .unwrap(),
//!     clock.clone(),
//! );
//! assert_eq!(chaos.call(|| Ok::<_, &str>(7)), Ok(7), "off by default");
//!
//! chaos.enable_for(Duration::from_secs(600), "drill 2: the downstream fails");
//! assert_eq!(chaos.call(|| Ok::<_, &str>(7)), Err(Error::Call("injected: 503")));
//!
//! clock.advance(Duration::from_secs(600));
//! assert_eq!(chaos.call(|| Ok::<_, &str>(7)), Ok(7), "the TTL ran out");
//! assert!(!chaos.status().enabled());
//! ```
//!
//! # Order
//!
//! Chaos stands for the downstream, so it belongs **innermost**, around the
//! call itself: Retry( CircuitBreaker( RateLimiter( TimeLimiter( Bulkhead(
//! **Chaos**( call )))))). Every primitive then sees injected faults exactly as
//! it would see real ones: the time limiter times out an injected latency,
//! the breaker counts an injected error, a retry retries it, and an injected
//! delay holds its bulkhead slot.
//!
//! # Cost
//!
//! Disabled: one relaxed load per call, nothing allocated (measured in the
//! `chaos` bench next to the bare call). Enabled: a clock reading (for the
//! TTL), an atomic draw per fault, a counter; an injected latency allocates
//! its timer and an injected error or value is made by a boxed factory.

mod config;
mod event;
mod future;
mod injection;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

pub use self::config::{ChaosConfig, ChaosConfigBuilder};
pub use self::event::{ChaosEvent, ChaosEventKind, ChaosMetrics};
pub use self::injection::Injection;

use self::future::Injected;
use crate::clock::{self, Clock, SharedClock, SystemClock};
use crate::error::Error;
use crate::event::{EventPublisher, EventStream};

/// `until` while injection is off.
const OFF: u64 = 0;
/// `until` while injection is on with no expiry.
const FOREVER: u64 = u64::MAX;

/// A fault-injection instance: a cheap `Clone` handle.
///
/// Error and value types are chosen per call; faults are injected only into
/// calls whose types have a factory (see [`ChaosConfig`]).
#[derive(Clone)]
pub struct Chaos {
    inner: Arc<Inner>,
}

/// The state every handle shares.
pub(crate) struct Inner {
    name: Arc<str>,
    config: ChaosConfig,
    clock: SharedClock,
    /// [`OFF`], [`FOREVER`], or the clock reading at which injection ends.
    until: AtomicU64,
    /// Why injection was last switched; also serialises switching.
    reason: Mutex<Option<Arc<str>>>,
    /// The draws' state (splitmix64 over a shared counter).
    draws: AtomicU64,
    calls: AtomicU64,
    latencies: AtomicU64,
    errors: AtomicU64,
    results: AtomicU64,
    events: EventPublisher<ChaosEvent>,
}

/// What one call gets while injection is on.
pub(crate) struct Plan<T, E> {
    pub(crate) delay: Option<Duration>,
    pub(crate) outcome: Option<Result<T, E>>,
}

impl Inner {
    /// Whether injection is on: one relaxed load while it is off.
    #[inline(always)]
    fn active(&self) -> bool {
        let until = self.until.load(Ordering::Relaxed);
        until != OFF && self.still_active(until)
    }

    /// On, unless its TTL has run out (then it switches itself off).
    #[cold]
    fn still_active(&self, until: u64) -> bool {
        if until == FOREVER || self.clock.now_nanos() < until {
            return true;
        }
        let _switching = self.reason.lock();
        if self
            .until
            .compare_exchange(until, OFF, Ordering::AcqRel, Ordering::Relaxed)
            .is_ok()
        {
            tracing::info!(
                target: "resil::chaos",
                name = &*self.name,
                "chaos '{}': fault injection expired",
                self.name
            );
            self.events.publish_notable_with(|| {
                ChaosEvent::with_detail(&self.name, ChaosEventKind::Expired, None)
            });
        }
        false
    }

    /// A uniform draw in `[0, 1)`.
    fn draw(&self) -> f64 {
        let mut z = self
            .draws
            .fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed)
            .wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Draws this call's faults.
    #[cold]
    pub(crate) fn plan<T: 'static, E: 'static>(&self) -> Plan<T, E> {
        self.calls.fetch_add(1, Ordering::Relaxed);
        let c = &self.config;
        let delay = (c.latency_rate() > 0.0 && self.draw() < c.latency_rate()).then(|| {
            self.latencies.fetch_add(1, Ordering::Relaxed);
            self.publish(ChaosEventKind::LatencyInjected);
            c.latency()
        });
        let mut outcome = None;
        if let Some(f) = c.error_for::<E>() {
            if f.rate > 0.0 && self.draw() < f.rate {
                outcome = f.make::<E>().map(Err);
                self.errors.fetch_add(1, Ordering::Relaxed);
                self.publish(ChaosEventKind::ErrorInjected);
            }
        }
        if outcome.is_none() {
            if let Some(f) = c.result_for::<T>() {
                if f.rate > 0.0 && self.draw() < f.rate {
                    outcome = f.make::<T>().map(Ok);
                    self.results.fetch_add(1, Ordering::Relaxed);
                    self.publish(ChaosEventKind::ResultInjected);
                }
            }
        }
        Plan { delay, outcome }
    }

    fn publish(&self, kind: ChaosEventKind) {
        self.events
            .publish_with(|| ChaosEvent::with_detail(&self.name, kind, None));
    }

    pub(crate) fn clock_sleep(&self, delay: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        self.clock.sleep_async(delay)
    }

    fn switch(&self, until: u64, kind: ChaosEventKind, reason: Arc<str>) {
        let mut current = self.reason.lock();
        *current = Some(Arc::clone(&reason));
        self.until.store(until, Ordering::Release);
        drop(current);
        self.events
            .publish_notable_with(|| ChaosEvent::with_detail(&self.name, kind, Some(reason)));
    }
}

/// Whether a [`Chaos`] instance injects, why, and for how long still.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChaosStatus {
    enabled: bool,
    reason: Option<Arc<str>>,
    expires_in: Option<Duration>,
}

impl ChaosStatus {
    /// Whether faults are being injected now.
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// Why injection was last switched on or off (`None` if it never was).
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }

    /// How long injection stays on; `None` when off or on with no TTL.
    pub fn expires_in(&self) -> Option<Duration> {
        self.expires_in
    }
}

impl Chaos {
    /// An instance timing TTLs and injected latency on the system clock.
    pub fn new(name: impl Into<Arc<str>>, config: ChaosConfig) -> Self {
        Self::with_clock(name, config, SystemClock)
    }

    /// An instance reading `clock` (tests inject a
    /// [`ManualClock`](crate::clock::ManualClock) or a
    /// [`TokioClock`](crate::clock::TokioClock) with paused time).
    pub fn with_clock(name: impl Into<Arc<str>>, config: ChaosConfig, clock: impl Clock) -> Self {
        let seed = config.seed().unwrap_or_else(|| fastrand::u64(..));
        let until = if config.enabled() { FOREVER } else { OFF };
        Chaos {
            inner: Arc::new(Inner {
                name: name.into(),
                config,
                clock: SharedClock::new(clock),
                until: AtomicU64::new(until),
                reason: Mutex::new(None),
                draws: AtomicU64::new(seed),
                calls: AtomicU64::new(0),
                latencies: AtomicU64::new(0),
                errors: AtomicU64::new(0),
                results: AtomicU64::new(0),
                events: EventPublisher::default(),
            }),
        }
    }

    /// The instance name.
    #[inline]
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The configuration (what is injected while enabled).
    #[inline]
    pub fn config(&self) -> &ChaosConfig {
        &self.inner.config
    }

    /// Switches injection on until [`disable`](Self::disable)d.
    pub fn enable(&self, reason: impl Into<Arc<str>>) {
        self.inner.switch(
            FOREVER,
            ChaosEventKind::Enabled { ttl: None },
            reason.into(),
        );
    }

    /// Switches injection on for `ttl` (on this instance's clock), after which
    /// it switches itself off; a later call replaces the TTL.
    pub fn enable_for(&self, ttl: Duration, reason: impl Into<Arc<str>>) {
        let until = self
            .inner
            .clock
            .now_nanos()
            .saturating_add(clock::nanos(ttl))
            .max(1);
        self.inner.switch(
            until,
            ChaosEventKind::Enabled { ttl: Some(ttl) },
            reason.into(),
        );
    }

    /// Switches injection off.
    pub fn disable(&self, reason: impl Into<Arc<str>>) {
        self.inner
            .switch(OFF, ChaosEventKind::Disabled, reason.into());
    }

    /// Whether injection is on, why, and for how long still.
    pub fn status(&self) -> ChaosStatus {
        let enabled = self.inner.active();
        let reason = self.inner.reason.lock().clone();
        let until = self.inner.until.load(Ordering::Acquire);
        let expires_in = (enabled && until != FOREVER && until != OFF)
            .then(|| clock::elapsed(self.inner.clock.now_nanos(), until));
        ChaosStatus {
            enabled,
            reason,
            expires_in,
        }
    }

    /// A snapshot of the counters.
    pub fn metrics(&self) -> ChaosMetrics {
        let get = |c: &AtomicU64| c.load(Ordering::Relaxed);
        let i = &*self.inner;
        ChaosMetrics {
            calls_while_enabled: get(&i.calls),
            latencies_injected: get(&i.latencies),
            errors_injected: get(&i.errors),
            results_injected: get(&i.results),
        }
    }

    /// Every event published from now on.
    pub fn subscribe(&self) -> EventStream<ChaosEvent> {
        self.inner.events.subscribe()
    }

    /// Sets the tap that sees injection switched on, off or expiring
    /// synchronously, subscribed or not (see
    /// [`EventPublisher::tap_notable`](crate::event::EventPublisher::tap_notable));
    /// injected faults never reach it. `false` if a tap is set already.
    pub fn tap_notable(&self, tap: impl Fn(&ChaosEvent) + Send + Sync + 'static) -> bool {
        self.inner.events.tap_notable(tap)
    }

    /// Runs `f`, or (while enabled) delays it on the clock's blocking
    /// [`sleep`](Clock::sleep), or answers with an injected outcome without
    /// running it.
    #[inline]
    pub fn call<T: 'static, E: 'static>(
        &self,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, Error<E>> {
        if !self.inner.active() {
            return f().map_err(Error::Call);
        }
        self.call_enabled(f)
    }

    #[cold]
    #[inline(never)]
    fn call_enabled<T: 'static, E: 'static>(
        &self,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, Error<E>> {
        let plan = self.inner.plan::<T, E>();
        if let Some(delay) = plan.delay {
            self.inner.clock.sleep(delay);
        }
        match plan.outcome {
            Some(outcome) => outcome.map_err(Error::Call),
            None => f().map_err(Error::Call),
        }
    }

    /// Runs the future `work`, deciding on its first poll: while disabled it
    /// is polled in place; while enabled it may first wait out an injected
    /// latency (on the clock's timer), or be dropped unpolled for an injected
    /// outcome.
    #[inline]
    pub fn call_async<F, T, E>(
        &self,
        work: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + use<'_, F, T, E>
    where
        F: Future<Output = Result<T, E>>,
        T: 'static,
        E: 'static,
    {
        Injected::new(&self.inner, work, |out: Result<T, E>| {
            out.map_err(Error::Call)
        })
    }

    /// [`call_async`](Self::call_async) around a future that is itself
    /// protected (it returns `Result<T, resil::Error<E>>`); an injected error
    /// is `Error::Call(e)` from the factory for `E`.
    #[inline]
    pub fn call_async_nested<F, T, E>(
        &self,
        work: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + use<'_, F, T, E>
    where
        F: Future<Output = Result<T, Error<E>>>,
        T: 'static,
        E: 'static,
    {
        Injected::new(&self.inner, work, |out: Result<T, Error<E>>| out)
    }
}

impl fmt::Debug for Chaos {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Chaos")
            .field("name", &&*self.inner.name)
            .field("status", &self.status())
            .field("config", &self.inner.config)
            .finish()
    }
}
