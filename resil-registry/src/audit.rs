//! Management requests counted by outcome: every attempt to change an
//! instance through an HTTP management endpoint (the actuator's), granted
//! or refused, for the counter `resil_management_requests_total{outcome}`.
//! The endpoint logs each attempt itself (with the remote address, never
//! the credentials); the registry keeps the counts, so they are in the
//! snapshot and can be published with the other metrics.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::registry::Registry;

/// How a management request was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ManagementOutcome {
    /// Authorized: it went ahead (and may still be a bad request).
    Granted,
    /// Refused with 401: no credentials, or credentials that do not
    /// authenticate.
    Unauthorized,
    /// Refused with 403: authenticated, but not allowed.
    Forbidden,
}

impl ManagementOutcome {
    /// Every outcome, in label order.
    pub const ALL: [ManagementOutcome; 3] = [
        ManagementOutcome::Granted,
        ManagementOutcome::Unauthorized,
        ManagementOutcome::Forbidden,
    ];

    /// The `outcome` label: `granted`, `unauthorized`, `forbidden`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ManagementOutcome::Granted => "granted",
            ManagementOutcome::Unauthorized => "unauthorized",
            ManagementOutcome::Forbidden => "forbidden",
        }
    }
}

impl fmt::Display for ManagementOutcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Management requests since the registry was built, by outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ManagementRequests {
    /// Authorized requests.
    pub granted: u64,
    /// Requests refused with 401.
    pub unauthorized: u64,
    /// Requests refused with 403.
    pub forbidden: u64,
}

impl ManagementRequests {
    /// The count of `outcome`.
    pub fn count(&self, outcome: ManagementOutcome) -> u64 {
        match outcome {
            ManagementOutcome::Granted => self.granted,
            ManagementOutcome::Unauthorized => self.unauthorized,
            ManagementOutcome::Forbidden => self.forbidden,
        }
    }
}

/// The registry's counters, one per outcome.
#[derive(Debug, Default)]
pub(crate) struct Audit {
    counts: [AtomicU64; 3],
}

impl Registry {
    /// Counts one management request answered with `outcome` (called by a
    /// management endpoint for every attempt, granted or refused).
    pub fn count_management_request(&self, outcome: ManagementOutcome) {
        self.inner.audit.counts[outcome as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// Management requests since the registry was built, by outcome
    /// (published as `resil_management_requests_total{outcome}`).
    pub fn management_requests(&self) -> ManagementRequests {
        let n = |o: ManagementOutcome| self.inner.audit.counts[o as usize].load(Ordering::Relaxed);
        ManagementRequests {
            granted: n(ManagementOutcome::Granted),
            unauthorized: n(ManagementOutcome::Unauthorized),
            forbidden: n(ManagementOutcome::Forbidden),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_outcome_is_counted_apart() {
        let registry = Registry::new();
        registry.count_management_request(ManagementOutcome::Granted);
        registry.count_management_request(ManagementOutcome::Forbidden);
        registry.count_management_request(ManagementOutcome::Forbidden);
        let counts = registry.management_requests();
        assert_eq!(
            ManagementOutcome::ALL.map(|o| (o.as_str(), counts.count(o))),
            [("granted", 1), ("unauthorized", 0), ("forbidden", 2)]
        );
    }
}
