//! A health summary like Actuator's circuit-breaker health indicator.
//!
//! Each instance reports UP, DEGRADED or DOWN from its own state (a breaker:
//! CLOSED/DISABLED/METRICS_ONLY are UP, HALF_OPEN is DEGRADED, OPEN and
//! FORCED_OPEN are DOWN; a full bulkhead or a rate limiter with waiting callers
//! is DEGRADED), with the reason. The summary is the worst component.
//! An instance can opt out of the summary
//! ([`Registry::set_health_indicator`](crate::Registry::set_health_indicator)),
//! or be kept from failing it
//! ([`Registry::allow_health_indicator_to_fail`](crate::Registry::allow_health_indicator_to_fail)
//! `false`: its DOWN counts as DEGRADED, as Resilience4j reports `CIRCUIT_OPEN`
//! instead of `DOWN`).

use std::fmt;

/// A health status, worst last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "UPPERCASE"))]
pub enum Status {
    /// Working normally.
    Up,
    /// Working, with reduced capacity or while probing.
    Degraded,
    /// Refusing calls.
    Down,
}

impl Status {
    /// `UP`, `DEGRADED`, `DOWN`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Status::Up => "UP",
            Status::Degraded => "DEGRADED",
            Status::Down => "DOWN",
        }
    }
}

impl fmt::Display for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One instance's health.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ComponentHealth {
    /// The kind (`circuit_breaker`, …).
    pub kind: &'static str,
    /// The instance name.
    pub name: String,
    /// Resilience4j's state name, for kinds that have states (as the
    /// snapshot shows it).
    pub state: Option<&'static str>,
    /// Its status (after `allow-health-indicator-to-fail`): the same verdict
    /// the snapshot, the dashboard and the event stream show.
    pub status: Status,
    /// Why, when not UP.
    pub reason: Option<String>,
}

/// The registry's health: the worst component, and every component that
/// takes part.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Health {
    /// The summary status.
    pub status: Status,
    /// `kind name: reason` of every component that is not UP, joined by `; `.
    pub reason: Option<String>,
    /// Every instance that takes part, sorted by kind and name.
    pub components: Vec<ComponentHealth>,
}

impl Health {
    pub(crate) fn of(mut components: Vec<ComponentHealth>) -> Health {
        components.sort_by(|a, b| (a.kind, &a.name).cmp(&(b.kind, &b.name)));
        let status = components
            .iter()
            .map(|c| c.status)
            .max()
            .unwrap_or(Status::Up);
        let reasons: Vec<String> = components
            .iter()
            .filter(|c| c.status != Status::Up)
            .map(|c| {
                format!(
                    "{} `{}`: {}",
                    c.kind,
                    c.name,
                    c.reason.as_deref().unwrap_or(c.status.as_str())
                )
            })
            .collect();
        Health {
            status,
            reason: (!reasons.is_empty()).then(|| reasons.join("; ")),
            components,
        }
    }
}
