//! The failure policy: who decides when Redis gives no verdict.

use std::sync::Arc;

use super::config::{DistributedRateLimiterConfig, FailurePolicy};
use super::grant::{DecidedBy, Grant};
use crate::clock::SharedClock;
use crate::error::{RequestNotPermitted, SharedName};
use crate::rate_limiter::{AcquireError, RateLimiter, RateLimiterConfig};

/// The configured policy, with its local limiter when it has one.
pub(crate) struct Policy {
    policy: FailurePolicy,
    /// The name every refusal carries (built once; see [`SharedName`]).
    name: SharedName,
    local: Option<RateLimiter>,
}

impl Policy {
    pub(crate) fn new(
        name: &Arc<str>,
        config: &DistributedRateLimiterConfig,
        clock: SharedClock,
    ) -> Self {
        let policy = config.failure_policy();
        let local = match policy {
            FailurePolicy::LocalFallback { expected_instances } => {
                let share = config
                    .limit_for_period()
                    .div_ceil(expected_instances.max(1))
                    .max(1);
                let local = RateLimiterConfig::builder()
                    .limit_for_period(share)
                    .limit_refresh_period(config.limit_refresh_period())
                    .timeout_duration(config.timeout_duration())
                    .build()
                    // The distributed config allows at most one permit per
                    // microsecond; the local one allows one per nanosecond.
                    .expect("a valid distributed quota is a valid local quota");
                Some(RateLimiter::with_clock(Arc::clone(name), local, clock))
            }
            _ => None,
        };
        Policy {
            policy,
            name: SharedName::new(Arc::clone(name)),
            local,
        }
    }

    pub(crate) fn policy(&self) -> FailurePolicy {
        self.policy
    }

    /// The local limiter's permits per period, when the policy has one.
    pub(crate) fn local_limit(&self) -> Option<u32> {
        self.local.as_ref().map(|l| l.config().limit_for_period())
    }

    /// Grants or refuses `permits` without Redis; the local fallback limiter
    /// may wait for a permit up to `timeout_duration`.
    pub(crate) async fn decide(&self, permits: u32) -> Result<Grant, AcquireError> {
        match &self.local {
            Some(local) => local
                .acquire_permission_async(permits)
                .await
                .map(|()| granted(DecidedBy::LocalFallback)),
            None => self.decide_now(permits),
        }
    }

    /// [`decide`](Self::decide) without waiting: the local limiter grants only
    /// permits free right now.
    pub(crate) fn decide_now(&self, permits: u32) -> Result<Grant, AcquireError> {
        match (&self.local, self.policy) {
            (Some(local), _) if local.try_acquire_permission(permits) => {
                Ok(granted(DecidedBy::LocalFallback))
            }
            (None, FailurePolicy::FailOpen) => Ok(granted(DecidedBy::FailOpen)),
            _ => Err(AcquireError::NotPermitted(RequestNotPermitted::by(
                &self.name,
            ))),
        }
    }
}

fn granted(decided_by: DecidedBy) -> Grant {
    Grant {
        decided_by,
        server_time_micros: None,
        remaining: None,
    }
}
