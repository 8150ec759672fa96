//! Injectable monotonic time.
//!
//! Every time-dependent decision in resil (sliding time windows, slow-call
//! timing, OPEN → HALF_OPEN waits, rate-limiter cycles, retry intervals) reads a
//! [`Clock`]. Production code uses [`SystemClock`] (TSC, nanoseconds) or, for
//! the circuit breaker's per-call timing, [`CoarseClock`] (one atomic load,
//! ±1 ms); tests use [`ManualClock`]
//! (time moves only when the test says so) or [`TokioClock`] (follows tokio's
//! clock, so `tokio::time::pause()` drives both timers and readings).
//!
//! Readings are `u64` nanoseconds since the clock's own fixed origin, so they fit
//! in one atomic and subtract without allocation. A `u64` of nanoseconds lasts
//! 584 years from the origin.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Once, OnceLock};
use std::time::Duration;

/// A source of monotonic time.
///
/// # Contract
///
/// * [`now_nanos`](Clock::now_nanos) never decreases, on any thread: a reading
///   taken after another (in happens-before order) is greater or equal.
/// * Callers subtract readings with a saturating subtraction, so a clock that
///   stalls is safe; a clock that goes backwards is a bug in the clock.
/// * [`sleep`](Clock::sleep) and [`sleep_async`](Clock::sleep_async) wait until
///   this clock has advanced by at least the given duration.
pub trait Clock: Send + Sync + fmt::Debug + 'static {
    /// Nanoseconds elapsed since this clock's fixed origin.
    fn now_nanos(&self) -> u64;

    /// A reading for decisions that must not come late (has a wait passed?
    /// when does the next cycle start?), taken on slow paths only. The default
    /// is [`now_nanos`](Clock::now_nanos); a coarse clock answers with a
    /// precise reading from the same origin, never smaller than its own.
    #[inline]
    fn precise_now_nanos(&self) -> u64 {
        self.now_nanos()
    }

    /// Blocks the current thread until `duration` has passed on this clock.
    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }

    /// Waits, without blocking a thread, until `duration` has passed on this clock.
    fn sleep_async(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        Box::pin(tokio::time::sleep(duration))
    }

    /// Parks the current thread until it is unparked or this clock reads at
    /// least `deadline` (nanoseconds); may return early (spuriously), so
    /// callers re-check in a loop. A blocking wait measured on this clock must
    /// park with this, not `std::thread::park_timeout`, so that a test clock
    /// ends it when *its* time passes, whether or not real time does. The
    /// default parks for the difference in real time.
    fn park_until(&self, deadline: u64) {
        let now = self.now_nanos();
        if now < deadline {
            std::thread::park_timeout(Duration::from_nanos(deadline - now));
        }
    }
}

/// The nanoseconds between two readings, saturating at zero.
#[inline]
pub fn elapsed(earlier: u64, later: u64) -> Duration {
    Duration::from_nanos(later.saturating_sub(earlier))
}

/// `Duration` → nanoseconds, saturating at `u64::MAX` (584 years).
#[inline]
pub fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// The process's monotonic clock, read from the CPU's time-stamp counter.
///
/// Calibrated by [`quanta`](https://docs.rs/quanta) once per process. On x86-64
/// with an invariant TSC (the case quanta detects and uses), a reading is one
/// `rdtsc`, inlined where the clock is read, plus a multiply and a shift;
/// elsewhere it is quanta's reading (the OS monotonic clock when the TSC is
/// unusable). Precision is nanoseconds; readings agree with
/// `std::time::Instant` to within the calibration error (well under 0.1 %),
/// which is far finer than any slow-call threshold.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

struct Tsc {
    clock: quanta::Clock,
    origin: u64,
    /// Nanoseconds per 2³² ticks when a reading is the TSC read inline; 0
    /// when quanta does not read the TSC (then every reading goes through it).
    scale: u64,
}

impl Tsc {
    /// Whether quanta's raw readings are the TSC itself: three readings of
    /// quanta each bracket a direct `rdtsc` (an OS clock's nanoseconds never
    /// would, being on another scale and origin).
    #[cfg(target_arch = "x86_64")]
    fn quanta_reads_the_tsc(clock: &quanta::Clock) -> bool {
        (0..3).all(|_| {
            let before = clock.raw();
            // SAFETY: `rdtsc` exists on every x86-64 CPU and has no
            // preconditions.
            let tsc = unsafe { core::arch::x86_64::_rdtsc() };
            let after = clock.raw();
            before <= tsc && tsc <= after
        })
    }

    #[cfg(not(target_arch = "x86_64"))]
    fn quanta_reads_the_tsc(_: &quanta::Clock) -> bool {
        false
    }

    #[inline]
    fn now_nanos(&self) -> u64 {
        #[cfg(target_arch = "x86_64")]
        if self.scale != 0 {
            // SAFETY: as above.
            let ticks = unsafe { core::arch::x86_64::_rdtsc() }.saturating_sub(self.origin);
            return ((u128::from(ticks) * u128::from(self.scale)) >> 32) as u64;
        }
        self.clock.delta_as_nanos(self.origin, self.clock.raw())
    }
}

#[inline]
fn tsc() -> &'static Tsc {
    static TSC: OnceLock<Tsc> = OnceLock::new();
    TSC.get_or_init(|| {
        let clock = quanta::Clock::new();
        let origin = clock.raw();
        let scale = if Tsc::quanta_reads_the_tsc(&clock) {
            clock.delta_as_nanos(0, 1 << 32).max(1)
        } else {
            0
        };
        Tsc {
            clock,
            origin,
            scale,
        }
    })
}

impl Clock for SystemClock {
    #[inline]
    fn now_nanos(&self) -> u64 {
        tsc().now_nanos()
    }
}

/// How often the [`CoarseClock`] ticker refreshes its reading.
pub const COARSE_TICK: Duration = Duration::from_millis(1);

static COARSE_NOW: AtomicU64 = AtomicU64::new(0);
static COARSE_FALLBACK: AtomicBool = AtomicBool::new(false);

/// The system clock read through a process-wide ticker: a reading is one
/// relaxed atomic load (about a nanosecond, against ~9 ns for a TSC read on a
/// virtualised x86-64), at the price of precision.
///
/// One background thread per process (`resil-coarse-clock`, started by the
/// first reading and never stopped) stores a [`SystemClock`] reading every
/// [`COARSE_TICK`] (1 ms). Readings share `SystemClock`'s origin and never go
/// backwards.
///
/// # Precision
///
/// A reading trails the system clock by at most one tick plus however long the
/// OS delays the ticker thread, so a duration measured with two readings is
/// within about ±1 ms of the truth on a healthy machine (and can read short
/// while the machine is so overloaded that the ticker does not run). That is
/// ample for what the circuit breaker uses it for by default (slow-call
/// thresholds, open-state waits, one-second window buckets); pass
/// [`SystemClock`] to `with_clock` for nanosecond precision. If the ticker
/// thread cannot be spawned, every reading falls back to `SystemClock`.
#[derive(Debug, Clone, Copy, Default)]
pub struct CoarseClock;

impl Clock for CoarseClock {
    #[inline]
    fn now_nanos(&self) -> u64 {
        let now = COARSE_NOW.load(Ordering::Relaxed);
        if now != 0 {
            now
        } else {
            coarse_slow_path()
        }
    }

    #[inline]
    fn precise_now_nanos(&self) -> u64 {
        SystemClock.now_nanos()
    }
}

#[cold]
fn coarse_slow_path() -> u64 {
    static START: Once = Once::new();
    START.call_once(|| {
        COARSE_NOW.store(SystemClock.now_nanos().max(1), Ordering::Relaxed);
        let ticker = std::thread::Builder::new()
            .name("resil-coarse-clock".into())
            .spawn(|| loop {
                std::thread::sleep(COARSE_TICK);
                COARSE_NOW.fetch_max(SystemClock.now_nanos(), Ordering::Relaxed);
            });
        if ticker.is_err() {
            // Without a ticker the stored reading would never move: read the
            // system clock instead, every time.
            COARSE_FALLBACK.store(true, Ordering::Relaxed);
            COARSE_NOW.store(0, Ordering::Relaxed);
        }
    });
    if COARSE_FALLBACK.load(Ordering::Relaxed) {
        SystemClock.now_nanos()
    } else {
        COARSE_NOW.load(Ordering::Relaxed).max(1)
    }
}

/// A clock that moves only when told to: [`advance`](ManualClock::advance) or
/// [`set`](ManualClock::set). Clones share the same time.
///
/// Sleeping on a manual clock advances it by the sleep's duration and returns at
/// once, so code that sleeps (a sync retry's backoff) runs instantly in tests
/// while the elapsed time is still observable. Two tasks sleeping concurrently
/// each advance the clock, one after the other; for concurrent waits use
/// [`TokioClock`] with `tokio::time::pause()` instead.
///
/// ```
/// use std::time::Duration;
/// use resil_core::clock::{Clock, ManualClock};
///
/// let clock = ManualClock::new();
/// let t0 = clock.now_nanos();
/// clock.advance(Duration::from_millis(200));
/// assert_eq!(clock.now_nanos() - t0, 200_000_000);
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    now: Arc<AtomicU64>,
    /// Threads in [`Clock::park_until`], unparked whenever the time moves.
    parked: Arc<parking_lot::Mutex<Vec<std::thread::Thread>>>,
}

impl ManualClock {
    /// A manual clock reading zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// Moves the clock forward by `duration` (saturating).
    pub fn advance(&self, duration: Duration) {
        let by = nanos(duration);
        let _ = self
            .now
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |t| {
                Some(t.saturating_add(by))
            });
        self.unpark_all();
    }

    /// Wakes every thread parked on this clock (after the time moved), so each
    /// re-checks its deadline.
    fn unpark_all(&self) {
        for thread in self.parked.lock().iter() {
            thread.unpark();
        }
    }

    /// Sets the clock to `since_origin`, if that is not earlier than now (a clock
    /// never goes backwards; an earlier value is ignored).
    pub fn set(&self, since_origin: Duration) {
        self.now.fetch_max(nanos(since_origin), Ordering::AcqRel);
        self.unpark_all();
    }

    /// The time since the origin.
    pub fn elapsed(&self) -> Duration {
        Duration::from_nanos(self.now_nanos())
    }
}

impl Clock for ManualClock {
    #[inline]
    fn now_nanos(&self) -> u64 {
        self.now.load(Ordering::Acquire)
    }

    fn sleep(&self, duration: Duration) {
        self.advance(duration);
    }

    fn sleep_async(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        self.advance(duration);
        Box::pin(std::future::ready(()))
    }

    /// Parks until unparked or until [`advance`](Self::advance) /
    /// [`set`](Self::set) moves the time to `deadline` or later; real time
    /// passing alone never ends it.
    fn park_until(&self, deadline: u64) {
        let me = std::thread::current();
        self.parked.lock().push(me.clone());
        // Registered before this check, and the time is stored before the
        // parked list is read: an advance either shows here or unparks us.
        if self.now_nanos() < deadline {
            std::thread::park();
        }
        let mut parked = self.parked.lock();
        if let Some(at) = parked.iter().position(|t| t.id() == me.id()) {
            parked.swap_remove(at);
        }
    }
}

/// A clock that reads tokio's time, so `tokio::time::pause()` and
/// `tokio::time::advance()` move it together with tokio's timers.
///
/// Its origin is the moment it was created.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    origin: tokio::time::Instant,
}

impl TokioClock {
    /// A clock whose origin is tokio's `Instant::now()`.
    pub fn new() -> Self {
        TokioClock {
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for TokioClock {
    fn now_nanos(&self) -> u64 {
        nanos(tokio::time::Instant::now().saturating_duration_since(self.origin))
    }

    /// Sleeping a thread cannot advance paused tokio time, so inside a runtime
    /// with paused time this advances nothing and returns: prefer
    /// [`sleep_async`](Clock::sleep_async) with a `TokioClock`.
    fn sleep(&self, duration: Duration) {
        std::thread::sleep(duration);
    }

    /// Parks until unparked or until tokio's clock reaches `deadline`: with a
    /// runtime current (a `spawn_blocking` thread has one), a timer task on it
    /// unparks this thread, so paused time moved by `tokio::time::advance`
    /// ends the wait. Without a runtime, parks for the difference in real time.
    fn park_until(&self, deadline: u64) {
        let now = self.now_nanos();
        if now >= deadline {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            std::thread::park_timeout(Duration::from_nanos(deadline - now));
            return;
        };
        let me = std::thread::current();
        let at = self.origin + Duration::from_nanos(deadline);
        let timer = handle.spawn(async move {
            tokio::time::sleep_until(at).await;
            me.unpark();
        });
        std::thread::park();
        timer.abort();
    }
}

/// A cheaply cloneable handle to any [`Clock`], with no dynamic dispatch for
/// [`SystemClock`] (the hot path of every primitive reads it).
#[derive(Clone, Default)]
pub struct SharedClock(Repr);

#[derive(Clone, Default)]
enum Repr {
    #[default]
    System,
    Coarse,
    Custom(Arc<dyn Clock>),
}

impl SharedClock {
    /// Wraps `clock`.
    pub fn new<C: Clock>(clock: C) -> Self {
        if let Some(shared) = (&clock as &dyn std::any::Any).downcast_ref::<SharedClock>() {
            return shared.clone();
        }
        let id = std::any::TypeId::of::<C>();
        if id == std::any::TypeId::of::<SystemClock>() {
            return SharedClock(Repr::System);
        }
        if id == std::any::TypeId::of::<CoarseClock>() {
            return SharedClock(Repr::Coarse);
        }
        SharedClock(Repr::Custom(Arc::new(clock)))
    }

    /// The system clock.
    pub fn system() -> Self {
        SharedClock(Repr::System)
    }

    /// The coarse (1 ms) clock.
    pub fn coarse() -> Self {
        SharedClock(Repr::Coarse)
    }

    /// Whether this is the [`CoarseClock`]: its readings move in steps of
    /// [`COARSE_TICK`], so a shorter duration may read as zero.
    pub fn is_coarse(&self) -> bool {
        matches!(self.0, Repr::Coarse)
    }
}

impl fmt::Debug for SharedClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Repr::System => fmt::Debug::fmt(&SystemClock, f),
            Repr::Coarse => fmt::Debug::fmt(&CoarseClock, f),
            Repr::Custom(c) => fmt::Debug::fmt(c, f),
        }
    }
}

impl Clock for SharedClock {
    #[inline]
    fn now_nanos(&self) -> u64 {
        match &self.0 {
            Repr::System => SystemClock.now_nanos(),
            Repr::Coarse => CoarseClock.now_nanos(),
            Repr::Custom(c) => c.now_nanos(),
        }
    }

    #[inline]
    fn precise_now_nanos(&self) -> u64 {
        match &self.0 {
            Repr::System | Repr::Coarse => SystemClock.now_nanos(),
            Repr::Custom(c) => c.precise_now_nanos(),
        }
    }

    fn sleep(&self, duration: Duration) {
        match &self.0 {
            Repr::System | Repr::Coarse => SystemClock.sleep(duration),
            Repr::Custom(c) => c.sleep(duration),
        }
    }

    fn sleep_async(&self, duration: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        match &self.0 {
            Repr::System | Repr::Coarse => SystemClock.sleep_async(duration),
            Repr::Custom(c) => c.sleep_async(duration),
        }
    }

    fn park_until(&self, deadline: u64) {
        match &self.0 {
            Repr::System | Repr::Coarse => SystemClock.park_until(deadline),
            Repr::Custom(c) => c.park_until(deadline),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_clock_never_goes_backwards_and_tracks_std_instant() {
        let clock = SharedClock::system();
        let std_start = std::time::Instant::now();
        let start = clock.now_nanos();
        let mut last = start;
        for _ in 0..10_000 {
            let now = clock.now_nanos();
            assert!(now >= last, "system clock went backwards");
            last = now;
        }
        let ours = elapsed(start, clock.now_nanos());
        let theirs = std_start.elapsed();
        // Both measured the same loop; ours must not exceed std's by more than
        // calibration error plus the two readings' own cost.
        assert!(
            ours <= theirs + Duration::from_millis(5),
            "{ours:?} vs {theirs:?}"
        );
    }

    #[test]
    fn an_inline_tsc_reading_falls_between_two_of_quantas_own() {
        let tsc = tsc();
        for _ in 0..10_000 {
            let before = tsc.clock.delta_as_nanos(tsc.origin, tsc.clock.raw());
            let ours = tsc.now_nanos();
            let after = tsc.clock.delta_as_nanos(tsc.origin, tsc.clock.raw());
            // The two conversions round differently by at most a few
            // nanoseconds this close to the origin.
            assert!(
                before <= ours + 10 && ours <= after + 10,
                "{before} <= {ours} <= {after} (scale {})",
                tsc.scale
            );
        }
    }

    #[test]
    fn the_coarse_clock_never_goes_backwards_and_never_runs_ahead_of_the_system_clock() {
        let coarse = SharedClock::coarse();
        let mut last = coarse.now_nanos();
        for _ in 0..10_000 {
            let now = coarse.now_nanos();
            assert!(now >= last, "coarse clock went backwards");
            assert!(now <= coarse.precise_now_nanos(), "coarse clock ran ahead");
            last = now;
        }
    }

    #[test]
    fn a_manual_clock_moves_only_when_advanced_and_clones_share_it() {
        let clock = ManualClock::new();
        let shared = SharedClock::new(clock.clone());
        assert_eq!(shared.now_nanos(), 0);
        clock.advance(Duration::from_secs(3));
        assert_eq!(shared.now_nanos(), 3_000_000_000);
        clock.set(Duration::from_secs(1));
        assert_eq!(
            clock.elapsed(),
            Duration::from_secs(3),
            "set never moves back"
        );
        shared.sleep(Duration::from_millis(500));
        assert_eq!(clock.elapsed(), Duration::from_millis(3500));
    }

    #[test]
    fn elapsed_saturates_instead_of_underflowing() {
        assert_eq!(elapsed(10, 5), Duration::ZERO);
        assert_eq!(nanos(Duration::MAX), u64::MAX);
    }

    #[tokio::test(start_paused = true)]
    async fn a_tokio_clock_follows_paused_tokio_time() {
        let clock = SharedClock::new(TokioClock::new());
        let t0 = clock.now_nanos();
        clock.sleep_async(Duration::from_secs(2)).await;
        assert_eq!(elapsed(t0, clock.now_nanos()), Duration::from_secs(2));
    }
}
