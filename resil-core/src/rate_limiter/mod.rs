//! Rate limiters: Resilience4j's `AtomicRateLimiter` (cycle-based permits with
//! reservation, [`RateLimiter`]) and its 2.x `RefillRateLimiter` (a refilling
//! token bucket for smooth pacing, [`RefillRateLimiter`]). Both are one
//! handle, [`Limiter`], over their algorithm's state ([`Cycles`],
//! [`Bucket`]): they acquire, wait, call, drain and publish the same way.
//!
//! Time is cut into cycles of `limit_refresh_period`, counted on the injected
//! monotonic clock from the limiter's creation. Each cycle grants
//! `limit_for_period` permits; permits left unused are not carried over (a long
//! idle refills only up to the limit, never beyond). A caller that finds no
//! permit left may *reserve* one of a later cycle if the wait until that cycle
//! starts fits its `timeout_duration`: the permit is counted at once
//! ([`available_permissions`](RateLimiter::available_permissions) goes
//! negative) and the caller sleeps (sync) or awaits a timer (async) until its
//! cycle begins. A caller whose wait would exceed the timeout is refused with
//! [`Error::RequestNotPermitted`](crate::Error::RequestNotPermitted) and
//! consumes nothing. This is seed 000 §十六's algorithm, with Resilience4j's
//! defaults (50 permits per 500 ns, timeout 5 s).
//!
//! ```
//! use std::time::Duration;
//! use resil_core::clock::ManualClock;
//! use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig};
//!
//! // 1 permit per second; a caller may wait up to 3 s for a later cycle's permit.
//! let config = RateLimiterConfig::builder()
//!     .limit_for_period(1)
//!     .limit_refresh_period(Duration::from_secs(1))
//!     .timeout_duration(Duration::from_secs(3))
//!     .build()
//!     .unwrap();
//! let clock = ManualClock::new();
//! let limiter = RateLimiter::with_clock("billing", config, clock.clone());
//!
//! assert_eq!(limiter.reserve_permission(1), Ok(Duration::ZERO));
//! assert_eq!(limiter.reserve_permission(1), Ok(Duration::from_secs(1)));
//! assert_eq!(limiter.available_permissions(), -1);
//! ```
//!
//! # Per instance, not per cluster
//!
//! Permits live in this process's memory. Ten instances of a service each
//! limited to 100 calls a second admit about 1000 a second between them, and
//! skewed traffic leaves some instances refusing while others have permits to
//! spare. A quota shared by every instance needs a central store (seed 000
//! §十六, seed 003 "速率、突发与并发分别计算").
//!
//! # Rate is not concurrency
//!
//! A rate limiter counts calls *started* per cycle, not calls in flight: when
//! the downstream slows from 50 ms to 500 ms, the same rate keeps ten times as
//! many calls open. Put a [bulkhead](crate::bulkhead) around the call to bound
//! concurrency.
//!
//! # Algorithm and cost
//!
//! The whole state is one `AtomicU64`, updated by a `compare_exchange_weak`
//! loop: the number of the next permit to hand out, with cycle `c` owning
//! permits `[c × limit, (c + 1) × limit)`. It is Resilience4j's
//! `(activeCycle, activePermissions)` pair folded into one number that never
//! wraps, so an idle limiter of any age refills correctly (details in the
//! `cycle` module's source). An acquire that finds a permit reads the clock
//! once, compares it with a cached cycle (no division), and does one CAS: no
//! lock, no allocation, no event built unless someone
//! [subscribed](RateLimiter::subscribe). On x86-64 the clock read (`rdtsc`)
//! is most of the cost, as it is for governor; permits are exact, so every
//! acquire reads the clock.
//! The packing limits the rate to one permit per nanosecond (10⁹ a second),
//! which keeps the counter from wrapping for 584 years; the builder rejects
//! faster rates.
//!
//! # Cancellation and deadlines
//!
//! Inside a [`deadline`](crate::deadline), a reservation whose wait would not
//! end before the deadline is refused *before* reserving, with
//! [`Error::DeadlineExceeded`](crate::Error::DeadlineExceeded). An async caller
//! dropped while it waits for its reserved permit gives the permit back if no
//! later caller has reserved behind it; otherwise the permit stays consumed —
//! later callers were already told to wait behind it, exactly as Resilience4j,
//! which cannot give reservations back at all.

mod config;
pub(crate) mod cycle;
mod drain;
mod event;
mod handle;
mod limiter;
mod metrics;
mod refill;
mod refill_config;
mod refill_limiter;
mod refusal;

pub use self::config::{RateLimiterConfig, RateLimiterConfigBuilder, MAX_LIMIT_REFRESH_PERIOD};
pub use self::cycle::Cycles;
pub use self::event::{RateLimiterEvent, RateLimiterEventKind};
pub use self::handle::{Algorithm, Limiter, COARSE_PERIOD};
pub use self::limiter::RateLimiter;
pub use self::metrics::RateLimiterMetrics;
pub use self::refill::Bucket;
pub use self::refill_config::{RefillRateLimiterConfig, RefillRateLimiterConfigBuilder};
pub use self::refill_limiter::RefillRateLimiter;
pub use self::refusal::{AcquireError, ExceedsLimit};
