//! What a granted acquire tells its caller.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Who granted the permits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DecidedBy {
    /// The shared quota in Redis.
    Redis,
    /// [`FailurePolicy::FailOpen`](super::FailurePolicy::FailOpen), because
    /// Redis gave no verdict.
    FailOpen,
    /// The [local fallback limiter](super::FailurePolicy::LocalFallback),
    /// because Redis gave no verdict.
    LocalFallback,
    /// A local permit lease: permits Redis granted this process in one batch
    /// (see [`lease_size`](super::DistributedRateLimiterConfig::lease_size)),
    /// handed out without a round trip.
    Lease,
}

/// Permits granted by [`acquire`](super::DistributedRateLimiter::acquire) and
/// its siblings. There is nothing to give back: a permit counts against the
/// quota for its interval whether or not it is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    pub(crate) decided_by: DecidedBy,
    pub(crate) server_time_micros: Option<u64>,
    pub(crate) remaining: Option<i64>,
}

impl Grant {
    /// Who granted.
    pub fn decided_by(&self) -> DecidedBy {
        self.decided_by
    }

    /// Redis's clock when it granted (`TIME` inside the script; for a lease,
    /// when it granted the lease), for audit trails that must agree across
    /// hosts; `None` when the failure policy granted.
    pub fn server_time(&self) -> Option<SystemTime> {
        self.server_time_micros
            .map(|us| UNIX_EPOCH + Duration::from_micros(us))
    }

    /// [`server_time`](Self::server_time) in microseconds since the Unix epoch.
    pub fn server_time_micros(&self) -> Option<u64> {
        self.server_time_micros
    }

    /// Permits the shared quota could still grant at once right after this
    /// grant (as Redis saw it); `None` when the failure policy or a lease
    /// granted.
    pub fn remaining(&self) -> Option<i64> {
        self.remaining
    }
}
