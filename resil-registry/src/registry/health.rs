//! Which instances take part in the health summary, and which may fail it.

use crate::primitive::Primitive;

use super::plan::plan;
use super::Registry;

/// Whether an instance takes part in [`Registry::health`] unless its
/// `register-health-indicator` says otherwise: yes, so the summary shows every
/// instance's state.
pub const DEFAULT_REGISTER_HEALTH_INDICATOR: bool = true;

/// Whether an instance may turn [`Registry::health`] DOWN unless its
/// `allow-health-indicator-to-fail` says otherwise: no. An OPEN breaker means
/// a *downstream* is failing; an orchestrator reading DOWN would take this
/// service out of rotation (or restart it), turning the downstream's outage
/// into this service's. Such an instance shows DEGRADED instead; opt in per
/// instance where a dependency really is essential (a readiness check).
pub const DEFAULT_ALLOW_HEALTH_INDICATOR_TO_FAIL: bool = false;

impl Registry {
    /// Whether the instance of kind `P` called `name` takes part in the
    /// health summary ([`DEFAULT_REGISTER_HEALTH_INDICATOR`]: yes).
    /// Resilience4j's `register-health-indicator`; set here, it wins over the
    /// config file's key.
    pub fn set_health_indicator<P: Primitive>(&self, name: &str, enabled: bool) {
        let mut code = self.store::<P>().code.write();
        code.instances
            .entry(name.to_owned())
            .or_default()
            .health_indicator = Some(enabled);
    }

    /// Whether the instance's DOWN may make the summary DOWN
    /// ([`DEFAULT_ALLOW_HEALTH_INDICATOR_TO_FAIL`]: no, it shows DEGRADED, so
    /// a downstream's outage never takes this service out of rotation).
    /// Resilience4j's `allow-health-indicator-to-fail`; set here, it wins
    /// over the config file's key.
    pub fn allow_health_indicator_to_fail<P: Primitive>(&self, name: &str, allow: bool) {
        let mut code = self.store::<P>().code.write();
        code.instances
            .entry(name.to_owned())
            .or_default()
            .allow_health_indicator_to_fail = Some(allow);
    }

    /// `(takes part, may fail)` for an instance: code
    /// ([`set_health_indicator`](Self::set_health_indicator),
    /// [`allow_health_indicator_to_fail`](Self::allow_health_indicator_to_fail))
    /// over the file's `register-health-indicator` and
    /// `allow-health-indicator-to-fail`, over the defaults: every instance
    /// takes part, and none may fail ([`DEFAULT_ALLOW_HEALTH_INDICATOR_TO_FAIL`]).
    pub(crate) fn health_settings<P: Primitive>(&self, name: &str) -> (bool, bool) {
        let code = self.store::<P>().code.read();
        let i = code.instances.get(name);
        let file = self.file();
        let entry = plan::<P>(&file, &code, name).ok().map(|p| p.entry);
        (
            i.and_then(|i| i.health_indicator)
                .or_else(|| entry.and_then(|e| e.register_health_indicator()))
                .unwrap_or(DEFAULT_REGISTER_HEALTH_INDICATOR),
            i.and_then(|i| i.allow_health_indicator_to_fail)
                .or_else(|| entry.and_then(|e| e.allow_health_indicator_to_fail()))
                .unwrap_or(DEFAULT_ALLOW_HEALTH_INDICATOR_TO_FAIL),
        )
    }
}
