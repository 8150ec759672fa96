//! The guard: admit or refuse one inbound request.

use std::fmt;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::time::Duration;

use super::config::InboundGuardConfig;
use super::system::SystemSampler;
use super::window::{Totals, Window};
use crate::clock::{self, Clock, SharedClock};

/// Why the guard refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Overload {
    /// More requests in flight than `max-in-flight`.
    InFlight,
    /// More requests per second than `max-rps`.
    Rps,
    /// An average response time above `max-average-rt`.
    AverageRt,
    /// CPU usage above its threshold, and more in flight than the service
    /// completes (the BBR check).
    Cpu,
    /// Load above its threshold, and more in flight than the service
    /// completes (the BBR check).
    Load,
}

impl Overload {
    /// Every reason, in the order the guard checks them.
    pub const ALL: [Overload; 5] = [
        Overload::Rps,
        Overload::InFlight,
        Overload::AverageRt,
        Overload::Load,
        Overload::Cpu,
    ];

    /// A short stable label (`in_flight`, `rps`, `average_rt`, `cpu`, `load`):
    /// the `kind` of the refusal metric.
    pub const fn as_str(self) -> &'static str {
        match self {
            Overload::InFlight => "in_flight",
            Overload::Rps => "rps",
            Overload::AverageRt => "average_rt",
            Overload::Cpu => "cpu",
            Overload::Load => "load",
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// A refused request: the service is overloaded. Answer 503 with
/// `Retry-After: retry_after` (the tower layer does).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Overloaded {
    /// What was over its threshold.
    pub reason: Overload,
    /// How long the client should wait before trying again.
    pub retry_after: Duration,
}

impl Overloaded {
    /// `"overloaded"`: the refusal's classification, whatever the reason.
    pub const fn kind(&self) -> &'static str {
        "overloaded"
    }
}

impl fmt::Display for Overloaded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "service overloaded ({}); retry later",
            self.reason.as_str()
        )
    }
}

impl std::error::Error for Overloaded {}

/// What the guard saw: in flight now, its window's rates and response times,
/// the last CPU and load readings, and its refusals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct InboundGuardMetrics {
    /// Requests in flight now.
    pub in_flight: u32,
    /// Requests admitted per second over the window.
    pub admitted_rps: f64,
    /// Requests completed per second over the window.
    pub completed_rps: f64,
    /// The most requests completed per second in one bucket of the window
    /// (BBR's bottleneck bandwidth).
    pub max_completed_rps: f64,
    /// The smallest response time in the window (BBR's round-trip
    /// propagation time), `None` before a completion.
    pub min_rt: Option<Duration>,
    /// The average response time over the window (each response time
    /// summed in whole microseconds).
    pub average_rt: Option<Duration>,
    /// BBR's estimate of what the service holds without queueing:
    /// `max_completed_rps × min_rt` (the smallest response time floored as
    /// the check floors it), `None` before a completion. Under CPU or load
    /// pressure the guard refuses above it.
    pub estimated_in_flight: Option<f64>,
    /// The last CPU usage reading, in percent.
    pub cpu_usage: Option<f64>,
    /// The last load reading.
    pub load: Option<f64>,
    /// Requests admitted since the guard was made.
    pub admitted: u64,
    /// Requests refused since the guard was made, per reason (in
    /// [`Overload::ALL`]'s order).
    pub refused: [u64; 5],
}

impl InboundGuardMetrics {
    /// Requests refused for `reason`.
    pub fn refused_for(&self, reason: Overload) -> u64 {
        self.refused[reason.index()]
    }
}

/// One guard in front of every route of a service (Sentinel's system rules,
/// with its BBR check): it refuses inbound work when the service as a whole
/// is overloaded, before the work costs anything.
///
/// A request is refused, in this order, when:
///
/// 1. `max-rps` is set and the window's admitted rate would exceed it;
/// 2. `max-in-flight` is set and that many requests are in flight;
/// 3. `max-average-rt` is set and the window's average response time is above it;
/// 4. the load is above `load-threshold`, or 5. the CPU usage above
///    `cpu-usage-threshold` (default 80 %), **and** the BBR check fails: more
///    than one request already in flight and more than `max completed RPS ×
///    min RT` — more than the service completes in the time of its fastest
///    request, so the excess waits in a queue. (Sentinel's `checkBbr`, with
///    its window: the best bucket's completions per second, the smallest
///    response time; a response time of zero makes the estimate zero.)
///
/// The CPU and load readings come from [`record_system`](Self::record_system)
/// (tests inject them) or a sampler task
/// ([`spawn_system_sampler`](Self::spawn_system_sampler), cgroup v2 aware).
/// While none came, the CPU and load conditions are off.
///
/// # Cost
///
/// A decision with the default thresholds is one `fetch_add`, a clock
/// reading, plain loads of the thresholds and the CPU reading, and one
/// `fetch_add` to the window's bucket, found through a hint (no division);
/// the window is summed only when a rate, an average or the BBR check needs
/// it. The permit's drop is a clock reading, one `fetch_add` to the bucket
/// (its completions and summed response times share a word, summed to the
/// microsecond; the minimum is written only when it falls) and a
/// `fetch_sub`. Nothing is allocated, and the permit holds no reference
/// count of its own (where tower's `ConcurrencyLimit`'s
/// `OwnedSemaphorePermit` holds an `Arc`): the in-flight count keeps the
/// guard's state alive. The clock readings are one relaxed load each on the
/// [`CoarseClock`](crate::clock::CoarseClock) that [`new`](Self::new) and
/// the registry's guard time requests on (with Sentinel's 1 ms resolution;
/// a TSC read of the system clock costs about 14 ns on a virtual machine;
/// see `benches/overload.rs` for the figures).
#[derive(Clone)]
pub struct InboundGuard {
    inner: Shared,
}

/// A guard's state and its count: handles (the guard and its clones, a
/// system sampler's) in the high 32 bits of [`Inner::refs`], requests in
/// flight (each holding an [`InboundPermit`]) in the low 32. Admitting a
/// request is the one `fetch_add` that counts it in flight, so a permit
/// costs no reference count of its own; whoever lets go last (a handle or
/// a permit) frees the state.
struct Shared(NonNull<Inner>);

/// One handle in [`Inner::refs`].
const HANDLE: u64 = 1 << 32;

// SAFETY: a `Shared` is a counted shared reference to an `Inner`, which is
// `Send + Sync` (asserted below).
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

const _: () = {
    const fn send_sync<T: Send + Sync>() {}
    send_sync::<Inner>();
};

impl Shared {
    /// The state's first handle.
    fn new(inner: Inner) -> Self {
        inner.refs.store(HANDLE, Ordering::Relaxed);
        Shared(NonNull::from(Box::leak(Box::new(inner))))
    }

    /// Handles held now (this one included).
    fn handles(&self) -> u64 {
        self.refs.load(Ordering::Acquire) >> 32
    }
}

impl std::ops::Deref for Shared {
    type Target = Inner;

    #[inline]
    fn deref(&self) -> &Inner {
        // SAFETY: this handle keeps the state alive.
        unsafe { self.0.as_ref() }
    }
}

impl Clone for Shared {
    fn clone(&self) -> Self {
        self.refs.fetch_add(HANDLE, Ordering::Relaxed);
        Shared(self.0)
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        if self.refs.fetch_sub(HANDLE, Ordering::Release) == HANDLE {
            // The last handle, and no permit out.
            release(self.0);
        }
    }
}

/// Frees the state (its last handle or permit let go).
#[cold]
fn release(inner: NonNull<Inner>) {
    std::sync::atomic::fence(Ordering::Acquire);
    // SAFETY: made by `Shared::new` from a `Box`; nothing counts it any more.
    drop(unsafe { Box::from_raw(inner.as_ptr()) });
}

struct Inner {
    /// The configuration in force (read on slow paths; the hot path reads
    /// `rules`).
    config: parking_lot::Mutex<InboundGuardConfig>,
    clock: SharedClock,
    /// Handles and requests in flight (see [`Shared`]).
    refs: AtomicU64,
    window: Window,
    /// The last CPU usage in thousandths of a percent (`u32::MAX`: none).
    cpu: AtomicU32,
    /// The last load in thousandths (`u32::MAX`: none).
    load: AtomicU32,
    rules: Rules,
    /// The smallest response time BBR's estimate uses: the clock's step for
    /// the [`CoarseClock`](crate::clock::CoarseClock) (a request shorter
    /// than a step may read as zero, and would make the estimate zero), as
    /// Sentinel floors its millisecond minimum at 1 ms; zero otherwise.
    rt_floor: u64,
    refused: [AtomicU64; 5],
}

const NONE: u32 = u32::MAX;

/// The thresholds as the hot path reads them: atomics, so that
/// [`InboundGuard::reconfigure`] changes them in place while requests pass.
struct Rules {
    /// CPU and load thresholds in thousandths (`u32::MAX`: off).
    cpu_over: AtomicU32,
    load_over: AtomicU32,
    /// `max-in-flight` (`u32::MAX`: off; no count of requests in flight
    /// reaches it).
    max_in_flight: AtomicU32,
    /// Whether `max-rps` or `max-average-rt` is set: a decision sums the
    /// window.
    window_rules: AtomicBool,
    /// `max-rps` as `f64` bits (0: off).
    max_rps: AtomicU64,
    /// `max-average-rt` in nanoseconds (0: off).
    max_average_rt: AtomicU64,
    /// `retry-after` in nanoseconds.
    retry_after: AtomicU64,
}

impl Rules {
    fn new(config: &InboundGuardConfig) -> Rules {
        let rules = Rules {
            cpu_over: AtomicU32::new(NONE),
            load_over: AtomicU32::new(NONE),
            max_in_flight: AtomicU32::new(u32::MAX),
            window_rules: AtomicBool::new(false),
            max_rps: AtomicU64::new(0),
            max_average_rt: AtomicU64::new(0),
            retry_after: AtomicU64::new(0),
        };
        rules.set(config);
        rules
    }

    fn set(&self, c: &InboundGuardConfig) {
        let r = Ordering::Relaxed;
        self.cpu_over.store(
            c.cpu_usage_threshold()
                .map_or(NONE, |p| milli(f64::from(p))),
            r,
        );
        self.load_over
            .store(c.load_threshold().map_or(NONE, milli), r);
        self.max_in_flight
            .store(c.max_in_flight().unwrap_or(u32::MAX), r);
        self.max_rps.store(c.max_rps().map_or(0, f64::to_bits), r);
        self.max_average_rt
            .store(c.max_average_rt().map_or(0, clock::nanos), r);
        self.retry_after.store(clock::nanos(c.retry_after()), r);
        self.window_rules
            .store(c.max_rps().is_some() || c.max_average_rt().is_some(), r);
    }
}

fn milli(v: f64) -> u32 {
    (v * 1000.0).clamp(0.0, f64::from(NONE - 1)) as u32
}

impl InboundGuard {
    /// A guard timing requests on the [`CoarseClock`](crate::clock::CoarseClock):
    /// Sentinel's own 1 ms resolution, one relaxed load per reading instead
    /// of a TSC read (two of which were most of a decision's cost on a
    /// virtual machine). A request shorter than a tick reads as 0 ms, so
    /// BBR's smallest response time is floored at one tick, as Sentinel
    /// floors its minimum at 1 ms. For nanosecond timing pass
    /// [`SystemClock`](crate::clock::SystemClock) to
    /// [`with_clock`](Self::with_clock).
    pub fn new(config: InboundGuardConfig) -> Self {
        Self::with_clock(config, SharedClock::coarse())
    }

    /// A guard timing requests on `clock` (a
    /// [`ManualClock`](crate::clock::ManualClock) in tests).
    pub fn with_clock(config: InboundGuardConfig, clock: impl Clock) -> Self {
        InboundGuard {
            inner: Shared::new(Inner::new(config, SharedClock::new(clock))),
        }
    }

    /// The guard of the whole process, on `clock`: its state is never freed
    /// (it lives as long as the process, like a `static`). A request costs
    /// what it costs on [`with_clock`](Self::with_clock)'s guard (a permit
    /// holds no reference count of either); the difference is that this
    /// one's [system sampler](Self::spawn_system_sampler) runs until the
    /// runtime ends. Make it once (each call leaks one guard's state, a few
    /// hundred bytes) and clone it.
    pub fn process_wide(config: InboundGuardConfig, clock: impl Clock) -> Self {
        let inner = Shared::new(Inner::new(config, SharedClock::new(clock)));
        // A handle never dropped: the state is never freed.
        std::mem::forget(inner.clone());
        InboundGuard { inner }
    }

    /// The configuration in force.
    pub fn config(&self) -> InboundGuardConfig {
        *self.inner.config.lock()
    }

    /// Puts `config`'s thresholds in force while requests pass (a reloaded
    /// config file's): the counts, the window and the readings stay. The
    /// window's shape (`window`, `window-buckets`) cannot change in place:
    /// if `config` changes it, nothing changes and the answer is `false`.
    pub fn reconfigure(&self, config: InboundGuardConfig) -> bool {
        let mut current = self.inner.config.lock();
        if current.window() != config.window()
            || current.window_buckets() != config.window_buckets()
        {
            return false;
        }
        self.inner.rules.set(&config);
        *current = config;
        true
    }

    /// Records a CPU usage (percent) and a load reading; `None` leaves the
    /// previous one.
    pub fn record_system(&self, cpu_usage: Option<f64>, load: Option<f64>) {
        if let Some(cpu) = cpu_usage {
            self.inner.cpu.store(milli(cpu), Ordering::Relaxed);
        }
        if let Some(load) = load {
            self.inner.load.store(milli(load), Ordering::Relaxed);
        }
    }

    /// Samples the CPU usage and load every `every` on a tokio task (cgroup
    /// v2 aware, see [`SystemSampler`]); the task ends at its first tick
    /// after the guard's last other handle is dropped.
    pub fn spawn_system_sampler(&self, every: Duration) -> tokio::task::JoinHandle<()> {
        let guard = self.clone();
        let mut sampler = SystemSampler::new();
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            loop {
                tick.tick().await;
                if guard.inner.handles() == 1 {
                    // Nobody else holds the guard (nor can get it back).
                    return;
                }
                let reading = sampler.sample(guard.inner.clock.now_nanos());
                guard.record_system(reading.cpu_usage, reading.load);
            }
        })
    }

    /// Admits a request (the permit counts it in flight until dropped, and
    /// times it), or refuses it.
    #[inline]
    pub fn try_enter(&self) -> Result<InboundPermit, Overloaded> {
        let i = &*self.inner;
        // In flight, and a count of the state for the permit (see `Shared`).
        let before = i.refs.fetch_add(1, Ordering::Acquire) as u32;
        let now = i.clock.now_nanos();
        if let Err(reason) = i.check(before, now) {
            // Never the last count: this guard is a handle.
            i.refs.fetch_sub(1, Ordering::Release);
            return Err(i.refuse(reason));
        }
        i.window.pass(now);
        Ok(InboundPermit {
            inner: self.inner.0,
            start: now,
            sample: true,
        })
    }

    /// The rule that would refuse a request arriving now, if any (nothing is
    /// counted or changed): what a health check reports while the guard
    /// sheds.
    pub fn would_refuse(&self) -> Option<Overload> {
        let i = &*self.inner;
        i.check(i.in_flight(), i.clock.now_nanos()).err()
    }

    /// A snapshot of what the guard measures.
    pub fn metrics(&self) -> InboundGuardMetrics {
        let i = &*self.inner;
        let now = i.clock.now_nanos();
        let t = i.window.totals(now);
        let reading = |v: u32| (v != NONE).then(|| f64::from(v) / 1000.0);
        InboundGuardMetrics {
            in_flight: i.in_flight(),
            admitted_rps: t.passed as f64 / i.window.seconds(),
            completed_rps: t.completed as f64 / i.window.seconds(),
            max_completed_rps: t.max_completed as f64 / i.window.bucket_seconds(),
            min_rt: (t.min_rt != u64::MAX).then(|| Duration::from_nanos(t.min_rt)),
            average_rt: (t.completed > 0).then(|| Duration::from_nanos(t.rt_sum / t.completed)),
            estimated_in_flight: (t.min_rt != u64::MAX).then(|| i.estimate(&t)),
            cpu_usage: reading(i.cpu.load(Ordering::Relaxed)),
            load: reading(i.load.load(Ordering::Relaxed)),
            admitted: i.window.passed_total(),
            refused: i.refused.each_ref().map(|r| r.load(Ordering::Relaxed)),
        }
    }
}

impl Inner {
    fn new(config: InboundGuardConfig, clock: SharedClock) -> Inner {
        let bucket = clock::nanos(config.window()) / u64::from(config.window_buckets());
        Inner {
            rt_floor: if clock.is_coarse() {
                clock::nanos(clock::COARSE_TICK)
            } else {
                0
            },
            clock,
            refs: AtomicU64::new(0),
            window: Window::new(config.window_buckets(), bucket),
            cpu: AtomicU32::new(NONE),
            load: AtomicU32::new(NONE),
            rules: Rules::new(&config),
            refused: Default::default(),
            config: parking_lot::Mutex::new(config),
        }
    }

    /// Requests in flight now.
    fn in_flight(&self) -> u32 {
        self.refs.load(Ordering::Relaxed) as u32
    }

    /// Every rule, in Sentinel's order; `in_flight` excludes this request.
    #[inline]
    fn check(&self, in_flight: u32, now: u64) -> Result<(), Overload> {
        let rules = &self.rules;
        if rules.window_rules.load(Ordering::Relaxed) {
            self.check_window(in_flight, now)?;
        }
        if in_flight >= rules.max_in_flight.load(Ordering::Relaxed) {
            return Err(Overload::InFlight);
        }
        // An unset threshold is `NONE` (no reading exceeds it); an absent
        // reading is `NONE` too, hence the second comparison.
        let load = self.load.load(Ordering::Relaxed);
        if load > rules.load_over.load(Ordering::Relaxed)
            && load != NONE
            && !self.bbr(in_flight, now)
        {
            return Err(Overload::Load);
        }
        let cpu = self.cpu.load(Ordering::Relaxed);
        if cpu > rules.cpu_over.load(Ordering::Relaxed) && cpu != NONE && !self.bbr(in_flight, now)
        {
            return Err(Overload::Cpu);
        }
        Ok(())
    }

    #[cold]
    fn check_window(&self, _in_flight: u32, now: u64) -> Result<(), Overload> {
        let t = self.window.totals(now);
        // Off is 0 for both (no set threshold is 0).
        let max_rps = f64::from_bits(self.rules.max_rps.load(Ordering::Relaxed));
        if max_rps > 0.0 && (t.passed + 1) as f64 / self.window.seconds() > max_rps {
            return Err(Overload::Rps);
        }
        let max_rt = self.rules.max_average_rt.load(Ordering::Relaxed);
        if max_rt > 0 && t.completed > 0 && t.rt_sum / t.completed > max_rt {
            return Err(Overload::AverageRt);
        }
        Ok(())
    }

    /// Sentinel's `checkBbr`: admit unless more than one request is in
    /// flight and more than the window's best completion rate × its fastest
    /// response time.
    #[cold]
    fn bbr(&self, in_flight: u32, now: u64) -> bool {
        if in_flight <= 1 {
            return true;
        }
        let t = self.window.totals(now);
        if t.min_rt == u64::MAX {
            // Nothing completed yet: no estimate to hold the load against.
            return true;
        }
        f64::from(in_flight) <= self.estimate(&t)
    }

    /// BBR's estimate over `t` (which holds a completion): the best
    /// bucket's completions per second × the smallest response time.
    fn estimate(&self, t: &Totals) -> f64 {
        let max_rps = t.max_completed as f64 / self.window.bucket_seconds();
        max_rps * (t.min_rt.max(self.rt_floor) as f64 / 1e9)
    }

    #[cold]
    fn refuse(&self, reason: Overload) -> Overloaded {
        self.refused[reason.index()].fetch_add(1, Ordering::Relaxed);
        Overloaded {
            reason,
            retry_after: Duration::from_nanos(self.rules.retry_after.load(Ordering::Relaxed)),
        }
    }
}

impl fmt::Debug for InboundGuard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InboundGuard")
            .field("config", &*self.inner.config.lock())
            .field("in_flight", &self.inner.in_flight())
            .finish()
    }
}

/// An admitted request: in flight until dropped, when its response time is
/// recorded as a completion (a panicked or cancelled request too, so the
/// in-flight count never leaks) — unless [`refused`](Self::refused) says it
/// was refused further in.
#[must_use = "the request leaves the in-flight count as soon as the permit is dropped"]
pub struct InboundPermit {
    /// The guard's state, counted in flight (see `Shared`).
    inner: NonNull<Inner>,
    start: u64,
    sample: bool,
}

// SAFETY: a permit is a counted shared reference to an `Inner`, which is
// `Send + Sync`.
unsafe impl Send for InboundPermit {}
// SAFETY: as above.
unsafe impl Sync for InboundPermit {}

impl InboundPermit {
    /// The request was refused further in (a bulkhead, a rate limiter: a
    /// 503 or 429): it leaves the in-flight count without counting as a
    /// completion, as a blocked entry in Sentinel records neither success
    /// nor response time. A refusal takes no time, so counting it would
    /// drag the smallest response time, and with it BBR's estimate, to
    /// zero.
    pub fn refused(mut self) {
        self.sample = false;
    }
}

impl Drop for InboundPermit {
    #[inline]
    fn drop(&mut self) {
        // SAFETY: this permit's count in flight keeps the state alive.
        let i = unsafe { self.inner.as_ref() };
        if self.sample {
            let now = i.clock.now_nanos();
            i.window.complete(now, now.saturating_sub(self.start));
        }
        if i.refs.fetch_sub(1, Ordering::Release) == 1 {
            // The last permit, and no handle left.
            release(self.inner);
        }
    }
}

impl fmt::Debug for InboundPermit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InboundPermit")
            .field("start", &self.start)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_times_requests_on_the_coarse_clock_and_with_clock_on_the_one_given() {
        // One relaxed load per reading instead of a TSC read: the default
        // guard's two readings per request were most of its cost.
        let guard = InboundGuard::new(InboundGuardConfig::default());
        assert!(guard.inner.clock.is_coarse());
        assert_eq!(guard.inner.rt_floor, clock::nanos(clock::COARSE_TICK));
        let exact =
            InboundGuard::with_clock(InboundGuardConfig::default(), crate::clock::SystemClock);
        assert!(!exact.inner.clock.is_coarse());
        assert_eq!(exact.inner.rt_floor, 0);
    }

    #[test]
    fn on_the_coarse_clock_bbr_floors_the_smallest_response_time_at_one_tick() {
        // Requests shorter than the coarse clock's 1 ms step read as 0 ms:
        // BBR's estimate would be 0 and admit one request at a time. The
        // floor keeps it at best-bucket RPS × 1 ms, as Sentinel floors its
        // millisecond minimum at 1 ms. Any other clock has no floor.
        let coarse = Inner::new(InboundGuardConfig::default(), SharedClock::coarse());
        let exact = Inner::new(InboundGuardConfig::default(), SharedClock::system());
        for inner in [&coarse, &exact] {
            for _ in 0..3000 {
                inner.window.complete(5_000_000, 0);
            }
        }
        let t = coarse.window.totals(5_000_000);
        // 3000 completions in one 100 ms bucket: 30 000 per second, × 1 ms.
        assert!((coarse.estimate(&t) - 30.0).abs() < 1e-9);
        assert_eq!(exact.estimate(&exact.window.totals(5_000_000)), 0.0);
        assert!(coarse.bbr(30, 5_000_000));
        assert!(!coarse.bbr(31, 5_000_000));
        assert!(!exact.bbr(2, 5_000_000));
    }

    /// A clock whose drop can be seen: it lives in the guard's state.
    #[derive(Debug)]
    struct Watched(#[allow(dead_code)] std::sync::Arc<()>);

    impl Clock for Watched {
        fn now_nanos(&self) -> u64 {
            0
        }
    }

    #[test]
    fn the_guards_state_is_freed_by_whoever_lets_go_last_a_handle_or_a_permit() {
        let alive = std::sync::Arc::new(());
        let guard = InboundGuard::with_clock(
            InboundGuardConfig::default(),
            Watched(std::sync::Arc::clone(&alive)),
        );
        let copy = guard.clone();
        let permit = guard.try_enter().unwrap();
        drop(guard);
        drop(copy);
        // The permit outlived every handle: the state waits for it.
        assert_eq!(std::sync::Arc::strong_count(&alive), 2);
        drop(permit);
        assert_eq!(std::sync::Arc::strong_count(&alive), 1);

        let guard = InboundGuard::with_clock(
            InboundGuardConfig::default(),
            Watched(std::sync::Arc::clone(&alive)),
        );
        drop(guard.try_enter().unwrap());
        assert_eq!(std::sync::Arc::strong_count(&alive), 2);
        drop(guard);
        assert_eq!(std::sync::Arc::strong_count(&alive), 1);

        // A process-wide guard's state is never freed.
        let guard = InboundGuard::process_wide(
            InboundGuardConfig::default(),
            Watched(std::sync::Arc::clone(&alive)),
        );
        drop(guard.try_enter().unwrap());
        drop(guard);
        assert_eq!(std::sync::Arc::strong_count(&alive), 2);
    }

    #[tokio::test(start_paused = true)]
    async fn the_system_sampler_ends_at_its_first_tick_after_the_last_other_handle_goes() {
        let guard = InboundGuard::with_clock(
            InboundGuardConfig::default(),
            crate::clock::TokioClock::new(),
        );
        let sampler = guard.spawn_system_sampler(Duration::from_millis(10));
        tokio::time::sleep(Duration::from_millis(25)).await;
        assert!(!sampler.is_finished(), "the guard is still held");
        drop(guard);
        tokio::time::timeout(Duration::from_millis(15), sampler)
            .await
            .expect("the sampler ended at its next tick")
            .unwrap();
    }
}
