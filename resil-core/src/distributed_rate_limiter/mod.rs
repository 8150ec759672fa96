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
//! A waiting acquire **reserves** its permits in its one script call, as the
//! local limiter and Resilience4j's `AtomicRateLimiter` do: the script finds
//! the earliest time the permits can be granted after every earlier grant
//! and reservation, and if that is within `timeout_duration` (and the task's
//! [deadline](crate::deadline)) books them then and answers how long to
//! wait. The acquire sleeps that long on a tokio timer (no thread blocked)
//! and returns granted: it never asks Redis again, and no acquire asking
//! later, from any process, is granted before it. When the earliest time is
//! too far, it is refused at once, having taken nothing. So every waiter
//! whose wait fits its timeout is served, in the order Redis saw them, and a
//! thousand waiting tasks cost a thousand script calls in all, not per
//! wake-up. A waiting acquire that is dropped loses its reservation (the
//! permits count as used), as in Resilience4j.
//!
//! Zero permits (`acquire_n_async(0)`) ask whether one permit is free (or
//! wait until it would be) and take none.
//!
//! # When Redis is slow or down
//!
//! Each script call, connecting included, may take at most `redis_timeout`
//! (default 100 ms). A refused connection, a wrong password, a host that does
//! not resolve or a server that does not speak Redis is reported at once
//! ([`BackendFailure::Unavailable`] or [`BackendFailure::Auth`]), with its
//! cause in the event ([`DistributedRateLimiterEvent::cause`]), never as a
//! timeout; while a reconnect backs off (20 ms doubling to 500 ms) further
//! acquires get the same answer without trying. When a call times out, the
//! connection fails or Redis answers an error, the [`FailurePolicy`] decides
//! — fail-open, fail-closed (the default), or a local fallback quota of
//! `floor(N / expected_instances)` per T (a local sliding window, with the
//! same reservations, so the expected instances together never grant more
//! than N in any window) — within the wait the acquire has left, so every
//! acquire is decided within `timeout_duration + redis_timeout`. The
//! decision is counted in [`DistributedRateLimiterMetrics`] and published as
//! a [`DistributedRateLimiterEvent`] (a `BackendFailure` event naming the
//! cause, then a `FallbackAcquire` with the outcome). An acquire of more
//! permits than the local share (but within N) is refused as
//! `NotPermitted`: the quota allows it, the fallback cannot grant it.
//!
//! **One deadline per acquire.** `timeout_duration + redis_timeout` (less
//! before the task's deadline) covers the whole acquire: connecting or
//! reconnecting, a script reload after `NOSCRIPT`, a turn behind this
//! process's lease refill, the policy's own wait. Past it, whatever is in
//! flight is dropped and the policy decides at once, without waiting.
//!
//! **A timed-out acquire is never retried blindly.** The script may have run
//! (and granted) even though its answer did not arrive in time; sending it
//! again could take the permits twice. The policy decides that acquire, once;
//! the next acquire asks Redis again, and the connection reconnects in the
//! background, so normal service resumes by itself when Redis is back.
//!
//! # Where the bound ends
//!
//! The bound holds while Redis keeps the key. It does not survive:
//!
//! * **Eviction.** The key carries a TTL, so a server with `maxmemory` and a
//!   `volatile-*` policy evicts it first when memory is full (and `allkeys-*`
//!   may), and an evicted key forgets its grants: up to a further N pass at
//!   once, again after each eviction, even fail-closed. On connecting the
//!   limiter reads `INFO memory`; a server that may evict is reported by
//!   [`DistributedRateLimiterMetrics::server_may_evict`] and a `tracing`
//!   warning. Give the limiter a server with `maxmemory-policy noeviction`.
//! * **Lost state.** A restart without persistence, a failover to a replica
//!   that had not received the latest writes, or a `FLUSHALL` forgets the
//!   window: a window spanning it may hold up to 2N (one N before, one
//!   after).
//! * **The local fallback.** Each instance grants at most `floor(N /
//!   expected_instances)` per window while Redis is down, so as many
//!   instances as expected stay within N; more instances than expected grant
//!   their share each. Redis does not see those grants, so a window spanning
//!   the recovery may hold up to 2N (the local shares, then Redis's N).

//! # Per key
//!
//! [`KeyedDistributedRateLimiter`] keeps one such quota per key (a tenant, a
//! user, an IP), the key inside the Redis key as a hash tag
//! (`{key_prefix}{name}:{<key>}:{algorithm}`, one Cluster slot per key),
//! on one connection, with each key's conservative local quota under
//! `LocalFallback` held in a keyed family's bounded memory.
//!
//! # Local permit leases
//!
//! Off by default. With [`lease_size`](DistributedRateLimiterConfig::lease_size)
//! L > 0, an acquire that finds this process's lease empty asks Redis for a
//! **lease**: in the same one script call, if its permits are free now and no
//! reservation is queued, the script takes up to L permits at once (what the
//! window has left, at least the acquire's own) and this process hands them
//! out to its next acquires without a round trip. Both algorithms lease: the
//! sliding window counts the lease in the bucket of its grant, GCRA moves
//! the theoretical arrival time on by L emission intervals.
//!
//! * **The bound.** A process holds at most one lease at a time (a new one
//!   is asked for only once the last is spent, too small or expired, and
//!   what is left of it goes back in that same call), so permits granted
//!   before a window and handed out in it are at most L per process: with P
//!   processes, **any window of T admits at most N + P × L** (sliding) or
//!   `burst` + N − 1 + P × L (GCRA), and exactly the bounds above with
//!   leases off. The long-run rate stays N per T: every leased permit was
//!   counted by Redis.
//! * **Give-back and expiry.** A lease's permits are handed out for at most
//!   [`lease_ttl`](DistributedRateLimiterConfig::lease_ttl) (default, and at
//!   most, T) after it arrived; what is left then, or when an acquire needs
//!   more than is left, goes back to Redis with the next refill (no extra
//!   round trip), or at once with
//!   [`return_lease`](DistributedRateLimiter::return_lease) (for a graceful
//!   shutdown). The sliding window takes them off their bucket while it
//!   still counts. GCRA takes them back only while nothing was granted after
//!   the lease: moving the arrival time back past a later grant could undo
//!   an idle spell's reset and admit beyond the bound, so then they stay
//!   spent (fewer grants, never more). A process that stops acquiring and
//!   never returns its lease keeps up to L permits counted until they leave
//!   the window.
//! * **Cancellation and panics.** The refill runs in a task of its own: an
//!   acquire dropped while it is in flight does not cancel a round trip that
//!   may take permits, and the lease it brings lands for the next acquire in
//!   line. Nothing is held while user code runs (a permit handed out is
//!   spent), so a panicking call leaves the lease as it was.
//! * **Refusals.** A refused refill says when a permit comes back; until
//!   then this process refuses, without a round trip, the acquires that
//!   cannot wait that long (the same answer Redis would give, except that a
//!   lease another process gives back meanwhile is not seen: a little more
//!   refused, never more granted).
//! * **Waiting and fairness.** Acquires of one process take turns (first
//!   come, first served) for the lease and its refills. A waiting acquire
//!   that finds no lease and nothing free reserves its own permits as
//!   without leases, and a lease is never granted while a reservation is
//!   queued, so reserved waiters are served in the order Redis saw them and
//!   no lease overtakes them. What changes: permits already leased to a
//!   process go to that process's callers, in their order, even while
//!   another process's waiter waits — at most L per process, and they do
//!   not delay that waiter (its time was computed with them counted).
//! * **The failure policy.** A lease in hand keeps serving while Redis is
//!   slow or down (its permits were counted), until it is spent or expires;
//!   then the refill fails and the policy decides that acquire as without
//!   leases. What was left of the retired lease stays spent if the give-back
//!   did not arrive. Waiting for this process's turn is bounded by
//!   `timeout_duration + redis_timeout`; past it the policy decides at once.
//! * **Which acquires lease.** Acquires of 1 ..= L permits (0 asks whether
//!   the lease has one). Larger ones go to Redis as without leases.
//!
//! Leases trade precision for round trips: at a load of many acquires a
//! second per process, one round trip serves up to L acquires (measured with
//! 3 processes and L = 10: a tenth of the round trips, a quarter of the
//! Redis CPU and of the p99 latency per acquire; see docs/distributed-rate-limiter.md), at the
//! price of up to P × L extra permits in a window. Choose L as
//! a small fraction of N / P (for N = 3000 per second and 3 processes, L =
//! 10 costs at most 1 % over the limit). A saturated GCRA quota frees one
//! permit per emission interval, so its leases then hold one permit each and
//! save nothing: GCRA leases pay off only while traffic is below the rate.
//!
//! # Cost
//!
//! One round trip per acquire, waiting or not (a waiting one then sleeps);
//! with leases, one per lease.
//! Concurrent acquires of one limiter (and its clones) share one multiplexed
//! connection and pipeline on it: none waits for another's reply. The script
//! does a bounded amount of work whatever the rate: the sliding window reads
//! three fields of its hash (the live total, the oldest bucket, the latest
//! reservation) and increments two, and reads every bucket only when the
//! oldest leaves the window (once per bucket width), when it refuses or when
//! it reserves; GCRA reads and writes one string. The
//! bench `benches/redis_rate_limiter.rs` measures acquires per second, Redis
//! CPU per acquire and memory per limiter against a Redisson-style
//! sorted-set script on the same server.

mod backend;
mod config;
mod event;
mod gcra;
mod grant;
mod keyed;
mod lease;
mod limiter;
mod local;
mod metrics;
mod policy;
mod script;
mod sliding;

pub use self::backend::BackendFailure;
pub use self::config::{
    Algorithm, DistributedRateLimiterConfig, DistributedRateLimiterConfigBuilder, FailurePolicy,
    Topology, MAX_BUCKETS, MAX_GCRA_TOLERANCE, MAX_LIMIT_REFRESH_PERIOD, MIN_LIMIT_REFRESH_PERIOD,
};
pub use self::event::{DistributedRateLimiterEvent, DistributedRateLimiterEventKind};
pub use self::grant::{DecidedBy, Grant};
pub use self::keyed::{DistributedKeyHandle, KeyedDistributedRateLimiter};
pub use self::limiter::DistributedRateLimiter;
pub use self::metrics::DistributedRateLimiterMetrics;
