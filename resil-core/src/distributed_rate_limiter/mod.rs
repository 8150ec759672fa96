//! Distributed rate limiter: one quota in Redis shared by every instance of a service.
//!
//! The local [`RateLimiter`](crate::rate_limiter::RateLimiter) keeps its
//! permits in process memory: ten instances limited to 100 calls a second
//! admit about 1000 a second between them. A [`DistributedRateLimiter`] keeps
//! the quota in Redis instead; every process that uses the same key draws on
//! the same N permits. Each acquire is **one atomic Lua script** (one round
//! trip, `EVALSHA`; the script is re-loaded transparently after `SCRIPT FLUSH`
//! or a restart), so concurrent acquires from any number of processes can
//! never both take the last permit.
//!
//! Refusals are the local limiter's: `acquire*` returns
//! [`AcquireError`](crate::rate_limiter::AcquireError), `call`/`call_async`
//! return [`Error::RequestNotPermitted`](crate::Error::RequestNotPermitted), so
//! code that handles one limiter handles both.
//!
//! # What "N per interval" means
//!
//! N is `limit_for_period`, the interval T is `limit_refresh_period`, and
//! time is always the **Redis server's** clock (`TIME`, read inside the
//! script): client clocks never enter the decision, so skewed hosts share one
//! quota exactly as synchronised ones do.
//!
//! * [`Algorithm::SlidingWindow`] (default): **at most N grants in any window
//!   of length T**, whatever its start, across every client. Grants are
//!   counted in `buckets` time buckets of width w = T / `buckets`, and a
//!   bucket counts for as long as any of its grants could share a window of
//!   length T with a new one, so the bound is exact, never approximate. The
//!   price is on the other side: a permit comes back between T and T + w
//!   after it was taken (by default within 10 % of T late), never early.
//!   **Bursts:** the whole quota may go at once (N grants in one millisecond),
//!   after which nothing is granted until those grants' bucket leaves the
//!   window. State: one hash of at most `buckets + 1` small fields per limiter,
//!   whatever the traffic (plus the live total and the oldest bucket's end).
//! * [`Algorithm::Gcra`]: **one grant every T / N** (the emission interval,
//!   rounded up to a whole microsecond), with up to `burst` grants at once
//!   after an idle spell (`burst` defaults to N). The long-run rate is N per T;
//!   any window of length T holds at most `burst + N − 1` grants (the burst,
//!   then evenly paced grants), so with `burst = 1` it is at most N per
//!   window, evenly spread, and with the default burst up to 2N − 1 when a
//!   full burst is followed by a full window of paced grants. **Bursts:**
//!   bounded by `burst`, then grants are spaced out instead of refused all at
//!   once — the choice for smooth pacing. State: one short string per limiter,
//!   the smallest footprint when there are many keys (per user, per tenant).
//!
//! Several permits can be taken at once ([`DistributedRateLimiter::acquire_n_async`]),
//! up to N (sliding window) or `burst` (GCRA); more is refused with
//! [`AcquireError::ExceedsLimit`](crate::rate_limiter::AcquireError::ExceedsLimit)
//! because no wait could grant it.
//!
//! # What is different from Redisson's `RRateLimiter`
//!
//! * **No client clocks.** Redisson passes the client's wall clock to its
//!   script, so a host whose clock runs 5 s ahead releases permits 5 s early.
//!   Here the script reads `TIME`.
//! * **Bounded memory, no lost permits.** Redisson keeps one sorted-set member
//!   per grant (memory and work grow with the rate) and tells apart grants of
//!   the same millisecond by a random member (a collision loses a permit,
//!   Redisson issue #3804). Here grants are counts in time buckets
//!   (`HINCRBY`): nothing is keyed per grant.
//! * **No initialisation state.** The limits travel with every call: there is
//!   no stored configuration that can expire ("not initialized") or that a
//!   rate change must overwrite (which wipes the quota). Changing N applies
//!   to the grants already in the window.
//! * **Nothing left behind.** Every key carries a TTL refreshed on each grant,
//!   set to the moment its content stops mattering (about T + w for the
//!   sliding window, the time to the theoretical arrival time for GCRA): an
//!   idle limiter's key disappears by itself, and its absence means exactly
//!   "idle".
//!
//! The key is `{key_prefix}{name}:{algorithm}`, and each script touches that
//! one key only. The limiter connects to one Redis server (a primary; a
//! replica answers `READONLY`, which the failure policy handles).
//!
//! # Waiting
//!
//! When the permits are not free, the script answers how long until they
//! will be. The acquire sleeps that long on a tokio timer (no thread blocked)
//! plus up to 5 ms of jitter (so processes told the same time do not all ask
//! at once), asks again, and gives up at `timeout_duration` (or the task's
//! [deadline](crate::deadline)), refusing at once when the answer already
//! says the wait is too long. Within one process waiters take turns: only the
//! first asks Redis again, the others queue behind it, so a thousand waiting
//! tasks cost one script call per wake-up, not a thousand. Like Redisson,
//! there is no fairness across processes.
//!
//! # When Redis is slow or down
//!
//! Each script call may take at most `redis_timeout` (default 100 ms). When
//! it times out, the connection fails or Redis answers an error, the
//! [`FailurePolicy`] decides — fail-open, fail-closed (the default), or a local
//! fallback limiter of `ceil(N / expected_instances)` per T — and the decision
//! is counted in [`DistributedRateLimiterMetrics`] and published as a
//! [`DistributedRateLimiterEvent`] (a `BackendFailure` event naming the cause,
//! then a `FallbackAcquire` with the outcome).
//!
//! **A timed-out acquire is never retried blindly.** The script may have run
//! (and granted) even though its answer did not arrive in time; sending it
//! again could take the permits twice. The policy decides that acquire, once;
//! the next acquire asks Redis again, and the connection reconnects in the
//! background, so normal service resumes by itself when Redis is back.
//!
//! # Cost
//!
//! One round trip per acquire that finds its permits free; a sleep and one
//! more per wake-up otherwise. The script does a bounded amount of work
//! whatever the rate: the sliding window reads two fields of its hash (the
//! live total and the oldest bucket) and increments two, and reads every
//! bucket only when the oldest leaves the window (once per bucket width) or
//! when it refuses; GCRA reads and writes one string. The
//! bench `benches/redis_rate_limiter.rs` measures acquires per second, Redis
//! CPU per acquire and memory per limiter against a Redisson-style
//! sorted-set script on the same server.

mod backend;
mod config;
mod event;
mod gcra;
mod grant;
mod limiter;
mod local;
mod metrics;
mod policy;
mod script;
mod sliding;

pub use self::backend::BackendFailure;
pub use self::config::{
    Algorithm, DistributedRateLimiterConfig, DistributedRateLimiterConfigBuilder, FailurePolicy,
    MAX_BUCKETS, MAX_GCRA_TOLERANCE, MAX_LIMIT_REFRESH_PERIOD, MIN_LIMIT_REFRESH_PERIOD,
};
pub use self::event::{DistributedRateLimiterEvent, DistributedRateLimiterEventKind};
pub use self::grant::{DecidedBy, Grant};
pub use self::limiter::DistributedRateLimiter;
pub use self::metrics::DistributedRateLimiterMetrics;
