//! Which instances take part in the health summary, and which may fail it.

/// Whether an instance takes part in [`Registry::health`](crate::Registry::health) unless its
/// `register-health-indicator` says otherwise: yes, so the summary shows every
/// instance's state.
pub const DEFAULT_REGISTER_HEALTH_INDICATOR: bool = true;

/// Whether an instance may turn [`Registry::health`](crate::Registry::health) DOWN unless its
/// `allow-health-indicator-to-fail` says otherwise: no. An OPEN breaker means
/// a *downstream* is failing; an orchestrator reading DOWN would take this
/// service out of rotation (or restart it), turning the downstream's outage
/// into this service's. Such an instance shows DEGRADED instead; opt in per
/// instance where a dependency really is essential (a readiness check).
pub const DEFAULT_ALLOW_HEALTH_INDICATOR_TO_FAIL: bool = false;
