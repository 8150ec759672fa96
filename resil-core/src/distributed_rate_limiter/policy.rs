//! The failure policy: who decides when Redis gives no verdict.

use std::sync::Arc;
use std::time::Duration;

use super::config::{DistributedRateLimiterConfig, FailurePolicy};
use super::grant::{DecidedBy, Grant};
use super::local::LocalWindow;
use crate::clock::{self, Clock, SharedClock};
use crate::criticality::{share_from_percent, share_of, Criticality, Share};
use crate::error::{RequestNotPermitted, SharedName};
use crate::rate_limiter::AcquireError;

/// The configured policy, with its local quota when it has one.
pub(crate) struct Policy {
    policy: FailurePolicy,
    /// The name every refusal carries (built once; see [`SharedName`]).
    name: SharedName,
    local: Option<LocalWindow>,
    /// The share of the local window a class may fill
    /// ([`Criticality::index`]), for the classes whose threshold is below
    /// 100: the same share of the local quota as of the shared one (taken
    /// of the window's share at each decision, which a keyed family's tier
    /// may change).
    class_shares: [Option<Share>; 4],
    clock: SharedClock,
}

impl Policy {
    pub(crate) fn new(
        name: &Arc<str>,
        config: &DistributedRateLimiterConfig,
        clock: SharedClock,
    ) -> Self {
        let policy = config.failure_policy();
        let local = match policy {
            FailurePolicy::LocalFallback { expected_instances } => Some(LocalWindow::new(
                share(config.limit_for_period(), expected_instances),
                config.limit_refresh_period(),
                config.buckets(),
            )),
            _ => None,
        };
        let class_shares = std::array::from_fn(|i| {
            let threshold = config.threshold(Criticality::ALL[i]);
            (threshold < 100.0).then(|| share_from_percent(threshold))
        });
        Policy {
            policy,
            name: SharedName::new(Arc::clone(name)),
            local,
            class_shares,
            clock,
        }
    }

    /// Whether the local fallback counts no grant now (forgetting it loses
    /// nothing).
    pub(crate) fn idle(&self, now: u64) -> bool {
        self.local.as_ref().is_none_or(|l| l.is_empty(now))
    }

    /// A new limit per period (a keyed family's tier): the local share
    /// follows it.
    pub(crate) fn retune(&self, config: &DistributedRateLimiterConfig) {
        if let (Some(local), FailurePolicy::LocalFallback { expected_instances }) =
            (&self.local, self.policy)
        {
            local.set_share(share(config.limit_for_period(), expected_instances));
        }
    }

    /// The local quota's permits per period, when the policy has one.
    pub(crate) fn local_limit(&self) -> Option<u32> {
        self.local.as_ref().map(LocalWindow::share)
    }

    /// Grants or refuses `permits` without Redis; the local fallback may
    /// reserve them at most `max_wait` ahead and sleep until then. More than
    /// the local share is refused as not permitted (the quota itself allows
    /// it; the fallback cannot grant it).
    pub(crate) async fn decide(
        &self,
        permits: u32,
        max_wait: Duration,
    ) -> Result<Grant, AcquireError> {
        match &self.local {
            Some(local) => {
                let now = self.clock.now_nanos();
                match local.take(now, permits, clock::nanos(max_wait), self.ceiling()) {
                    Some(0) => Ok(granted(DecidedBy::LocalFallback)),
                    Some(wait) => {
                        self.clock.sleep_async(Duration::from_nanos(wait)).await;
                        Ok(granted(DecidedBy::LocalFallback))
                    }
                    None => Err(self.refusal()),
                }
            }
            None => self.decide_now(permits),
        }
    }

    /// [`decide`](Self::decide) without waiting: the local quota grants only
    /// permits free right now.
    pub(crate) fn decide_now(&self, permits: u32) -> Result<Grant, AcquireError> {
        match (&self.local, self.policy) {
            (Some(local), _)
                if local
                    .take(self.clock.now_nanos(), permits, 0, self.ceiling())
                    .is_some() =>
            {
                Ok(granted(DecidedBy::LocalFallback))
            }
            (None, FailurePolicy::FailOpen) => Ok(granted(DecidedBy::FailOpen)),
            _ => Err(self.refusal()),
        }
    }

    /// The ceiling of the task's class in the local window, if it has one.
    #[inline]
    fn ceiling(&self) -> Option<u64> {
        let share = self.class_shares[Criticality::current().index()]?;
        Some(u64::from(share_of(self.local.as_ref()?.share(), share)))
    }

    fn refusal(&self) -> AcquireError {
        AcquireError::NotPermitted(RequestNotPermitted::by(&self.name))
    }
}

/// One process's share of `limit` among `expected_instances`: rounded down,
/// so that the expected instances together never grant more than the quota
/// in any window, and at least one (the config checks that each gets one).
fn share(limit: u32, expected_instances: u32) -> u32 {
    (limit / expected_instances.max(1)).max(1)
}

fn granted(decided_by: DecidedBy) -> Grant {
    Grant {
        decided_by,
        server_time_micros: None,
        remaining: None,
    }
}
