//! What a distributed rate limiter counted.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, Ordering};

use super::backend::BackendFailure;
use crate::criticality::Criticality;

/// A snapshot of a [`DistributedRateLimiter`](super::DistributedRateLimiter)'s
/// counters since it was created, taken by
/// [`metrics`](super::DistributedRateLimiter::metrics).
///
/// Unlike the local limiter's, these count every acquisition: each one costs a
/// network round trip, next to which a relaxed atomic add is free.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DistributedRateLimiterMetrics {
    pub(crate) successful_acquires: u64,
    pub(crate) failed_acquires: u64,
    pub(crate) fallback_grants: u64,
    pub(crate) fallback_refusals: u64,
    pub(crate) redis_timeouts: u64,
    pub(crate) redis_unavailable: u64,
    pub(crate) redis_errors: u64,
    pub(crate) redis_auth_failures: u64,
    pub(crate) cannot_block: u64,
    pub(crate) script_calls: u64,
    pub(crate) leases: u64,
    pub(crate) leased_permits: u64,
    pub(crate) lease_grants: u64,
    pub(crate) returned_permits: u64,
    pub(crate) number_of_waiting_tasks: u32,
    pub(crate) backend_failing: bool,
    pub(crate) last_remaining: Option<i64>,
    pub(crate) server_may_evict: Option<bool>,
    pub(crate) refused_by_class: [u64; 4],
}

impl DistributedRateLimiterMetrics {
    /// Acquisitions Redis granted.
    pub fn successful_acquires(&self) -> u64 {
        self.successful_acquires
    }

    /// Whether the last script call got no verdict from Redis (a timeout, a
    /// refused connection, an error reply): the failure policy is deciding
    /// until Redis answers again.
    pub fn backend_failing(&self) -> bool {
        self.backend_failing
    }

    /// The permits the quota had left after the last verdict Redis gave this
    /// process (what other processes took since is not seen); `None` before
    /// the first verdict.
    pub fn last_remaining(&self) -> Option<i64> {
        self.last_remaining
    }

    /// Acquisitions refused because the shared quota had no room within the
    /// wait allowed (or asked for more than one acquire may take).
    pub fn failed_acquires(&self) -> u64 {
        self.failed_acquires
    }

    /// Acquisitions the failure policy granted while Redis gave no verdict
    /// (fail-open, or the local fallback limiter had room).
    pub fn fallback_grants(&self) -> u64 {
        self.fallback_grants
    }

    /// Acquisitions the failure policy refused while Redis gave no verdict
    /// (fail-closed, or the local fallback limiter had no room).
    pub fn fallback_refusals(&self) -> u64 {
        self.fallback_refusals
    }

    /// Every decision the failure policy took: grants plus refusals.
    pub fn fallback_decisions(&self) -> u64 {
        self.fallback_grants + self.fallback_refusals
    }

    /// Script calls that got no answer within `redis_timeout`.
    pub fn redis_timeouts(&self) -> u64 {
        self.redis_timeouts
    }

    /// Script calls that found no connection (Redis down or unreachable).
    pub fn redis_unavailable(&self) -> u64 {
        self.redis_unavailable
    }

    /// Script calls Redis answered with an error.
    pub fn redis_errors(&self) -> u64 {
        self.redis_errors
    }

    /// Script calls Redis refused for the credentials (`WRONGPASS`, `NOAUTH`,
    /// `NOPERM`).
    pub fn redis_auth_failures(&self) -> u64 {
        self.redis_auth_failures
    }

    /// Whether the Redis server may evict the limiter's keys when its memory
    /// is full (`maxmemory` set with a `maxmemory-policy` other than
    /// `noeviction`; the keys all have a TTL, so `volatile-*` policies evict
    /// them first). An evicted key forgets the permits it counted, and up to
    /// a whole extra quota may then pass, even fail-closed. Learnt from
    /// `INFO memory` on connecting (a warning is logged through `tracing`
    /// too); `None` before the first connection or when the server does not
    /// say.
    pub fn server_may_evict(&self) -> Option<bool> {
        self.server_may_evict
    }

    /// Blocking acquires refused the round trip because they ran on a
    /// current-thread runtime's thread.
    pub fn cannot_block(&self) -> u64 {
        self.cannot_block
    }

    /// Script calls sent to Redis: one per acquire (a waiting acquire reserves
    /// its permit in that call and then only sleeps), or, with leases, one
    /// per lease (plus one per [`return_lease`](super::DistributedRateLimiter::return_lease)
    /// that had permits to give back).
    pub fn script_calls(&self) -> u64 {
        self.script_calls
    }

    /// Leases Redis granted this process (one script call each).
    pub fn leases(&self) -> u64 {
        self.leases
    }

    /// Permits those leases took from the shared quota, in all.
    pub fn leased_permits(&self) -> u64 {
        self.leased_permits
    }

    /// Acquisitions served from a lease (counted in
    /// [`successful_acquires`](Self::successful_acquires) too).
    pub fn lease_grants(&self) -> u64 {
        self.lease_grants
    }

    /// Permits of leases that Redis took back unused (given back with a
    /// refill or by [`return_lease`](super::DistributedRateLimiter::return_lease)).
    pub fn returned_permits(&self) -> u64 {
        self.returned_permits
    }

    /// Acquires waiting right now for their reserved permits (or, under the
    /// local fallback, for local permits).
    pub fn number_of_waiting_tasks(&self) -> u32 {
        self.number_of_waiting_tasks
    }

    /// Acquisitions refused for requests of `class` (the task's
    /// [`Criticality`] when it asked), whoever refused: Redis, or the
    /// failure policy while Redis gave no verdict. They add up to
    /// [`failed_acquires`](Self::failed_acquires) +
    /// [`fallback_refusals`](Self::fallback_refusals).
    pub fn failed_acquires_of(&self, class: Criticality) -> u64 {
        self.refused_by_class[class.index()]
    }
}

#[derive(Debug)]
pub(crate) struct Counters {
    successful: AtomicU64,
    failed: AtomicU64,
    fallback_grants: AtomicU64,
    fallback_refusals: AtomicU64,
    timeouts: AtomicU64,
    unavailable: AtomicU64,
    errors: AtomicU64,
    auth: AtomicU64,
    cannot_block: AtomicU64,
    script_calls: AtomicU64,
    leases: AtomicU64,
    leased_permits: AtomicU64,
    lease_grants: AtomicU64,
    returned_permits: AtomicU64,
    pub(crate) waiting: AtomicU32,
    failing: AtomicBool,
    /// `i64::MIN` until the first verdict.
    remaining: AtomicI64,
    /// Refusals (Redis's and the failure policy's) by the task's class.
    refused_by_class: [AtomicU64; 4],
}

impl Default for Counters {
    fn default() -> Self {
        Counters {
            successful: AtomicU64::new(0),
            failed: AtomicU64::new(0),
            fallback_grants: AtomicU64::new(0),
            fallback_refusals: AtomicU64::new(0),
            timeouts: AtomicU64::new(0),
            unavailable: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            auth: AtomicU64::new(0),
            cannot_block: AtomicU64::new(0),
            script_calls: AtomicU64::new(0),
            leases: AtomicU64::new(0),
            leased_permits: AtomicU64::new(0),
            lease_grants: AtomicU64::new(0),
            returned_permits: AtomicU64::new(0),
            waiting: AtomicU32::new(0),
            failing: AtomicBool::new(false),
            remaining: AtomicI64::new(i64::MIN),
            refused_by_class: Default::default(),
        }
    }
}

fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

impl Counters {
    pub(crate) fn acquired(&self, granted: bool) {
        if granted {
            bump(&self.successful);
        } else {
            bump(&self.failed);
            self.refused_by_class();
        }
    }

    /// One refusal of the task's class.
    fn refused_by_class(&self) {
        bump(&self.refused_by_class[Criticality::current().index()]);
    }

    pub(crate) fn script_call(&self) {
        bump(&self.script_calls);
    }

    pub(crate) fn leased(&self, permits: u32) {
        bump(&self.leases);
        self.leased_permits
            .fetch_add(u64::from(permits), Ordering::Relaxed);
    }

    pub(crate) fn lease_grant(&self) {
        bump(&self.lease_grants);
    }

    pub(crate) fn returned(&self, permits: u32) {
        if permits > 0 {
            self.returned_permits
                .fetch_add(u64::from(permits), Ordering::Relaxed);
        }
    }

    /// Redis gave a verdict.
    pub(crate) fn verdict(&self, remaining: i64) {
        if self.failing.load(Ordering::Relaxed) {
            self.failing.store(false, Ordering::Relaxed);
        }
        self.remaining.store(remaining, Ordering::Relaxed);
    }

    pub(crate) fn failure(&self, failure: BackendFailure) {
        if failure != BackendFailure::CannotBlock {
            self.failing.store(true, Ordering::Relaxed);
        }
        bump(match failure {
            BackendFailure::Timeout => &self.timeouts,
            BackendFailure::Unavailable => &self.unavailable,
            BackendFailure::Error => &self.errors,
            BackendFailure::Auth => &self.auth,
            BackendFailure::CannotBlock => &self.cannot_block,
        });
    }

    pub(crate) fn fallback(&self, granted: bool) {
        if granted {
            bump(&self.fallback_grants);
        } else {
            bump(&self.fallback_refusals);
            self.refused_by_class();
        }
    }

    pub(crate) fn snapshot(&self) -> DistributedRateLimiterMetrics {
        let load = |c: &AtomicU64| c.load(Ordering::Relaxed);
        DistributedRateLimiterMetrics {
            successful_acquires: load(&self.successful),
            failed_acquires: load(&self.failed),
            fallback_grants: load(&self.fallback_grants),
            fallback_refusals: load(&self.fallback_refusals),
            redis_timeouts: load(&self.timeouts),
            redis_unavailable: load(&self.unavailable),
            redis_errors: load(&self.errors),
            redis_auth_failures: load(&self.auth),
            cannot_block: load(&self.cannot_block),
            script_calls: load(&self.script_calls),
            leases: load(&self.leases),
            leased_permits: load(&self.leased_permits),
            lease_grants: load(&self.lease_grants),
            returned_permits: load(&self.returned_permits),
            number_of_waiting_tasks: self.waiting.load(Ordering::Relaxed),
            backend_failing: self.failing.load(Ordering::Relaxed),
            last_remaining: match self.remaining.load(Ordering::Relaxed) {
                i64::MIN => None,
                n => Some(n),
            },
            server_may_evict: None,
            refused_by_class: self.refused_by_class.each_ref().map(load),
        }
    }
}

/// Counts a task in `number_of_waiting_tasks` while it lives (so a cancelled
/// or panicking waiter is uncounted too).
pub(crate) struct Waiting<'a>(&'a AtomicU32);

impl<'a> Waiting<'a> {
    pub(crate) fn enter(count: &'a AtomicU32) -> Self {
        count.fetch_add(1, Ordering::Relaxed);
        Waiting(count)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
