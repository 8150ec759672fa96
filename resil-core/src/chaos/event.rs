//! What a fault-injection instance reports to its subscribers.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// Something a [`Chaos`](super::Chaos) instance did, delivered to every stream
/// from [`Chaos::subscribe`](super::Chaos::subscribe).
#[derive(Clone, PartialEq, Eq)]
pub struct ChaosEvent {
    name: Arc<str>,
    kind: ChaosEventKind,
    reason: Option<Arc<str>>,
}

/// The kinds of [`ChaosEvent`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ChaosEventKind {
    /// Injection was switched on, for `ttl` if given (with the reason).
    Enabled {
        /// How long it stays on, or `None` until switched off.
        ttl: Option<Duration>,
    },
    /// Injection was switched off by management.
    Disabled,
    /// Injection switched itself off: its TTL ran out.
    Expired,
    /// A call was delayed.
    LatencyInjected,
    /// A call was failed with an injected error instead of running.
    ErrorInjected,
    /// A call was answered with an injected value instead of running.
    ResultInjected,
}

impl ChaosEventKind {
    /// A short, stable label: `enabled`, `disabled`, `expired`,
    /// `latency_injected`, `error_injected`, `result_injected`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ChaosEventKind::Enabled { .. } => "enabled",
            ChaosEventKind::Disabled => "disabled",
            ChaosEventKind::Expired => "expired",
            ChaosEventKind::LatencyInjected => "latency_injected",
            ChaosEventKind::ErrorInjected => "error_injected",
            ChaosEventKind::ResultInjected => "result_injected",
        }
    }
}

impl fmt::Display for ChaosEventKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ChaosEvent {
    pub(crate) fn new(name: &Arc<str>, kind: ChaosEventKind, reason: Option<Arc<str>>) -> Self {
        ChaosEvent {
            name: Arc::clone(name),
            kind,
            reason,
        }
    }

    /// The instance's name.
    #[inline]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What happened.
    #[inline]
    pub fn kind(&self) -> ChaosEventKind {
        self.kind
    }

    /// Why injection was switched on or off, as management said.
    #[inline]
    pub fn reason(&self) -> Option<&str> {
        self.reason.as_deref()
    }
}

impl fmt::Debug for ChaosEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChaosEvent")
            .field("name", &&*self.name)
            .field("kind", &self.kind)
            .field("reason", &self.reason.as_deref())
            .finish()
    }
}

impl fmt::Display for ChaosEvent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "chaos '{}': {}", self.name, self.kind)?;
        if let Some(reason) = &self.reason {
            write!(f, " ({reason})")?;
        }
        Ok(())
    }
}

/// A snapshot of a [`Chaos`](super::Chaos) instance's counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ChaosMetrics {
    pub(crate) calls_while_enabled: u64,
    pub(crate) latencies_injected: u64,
    pub(crate) errors_injected: u64,
    pub(crate) results_injected: u64,
}

impl ChaosMetrics {
    /// Calls that passed while injection was on (calls while it is off are
    /// not counted: that path costs nothing).
    #[inline]
    pub fn calls_while_enabled(&self) -> u64 {
        self.calls_while_enabled
    }

    /// Calls delayed.
    #[inline]
    pub fn latencies_injected(&self) -> u64 {
        self.latencies_injected
    }

    /// Calls failed with an injected error.
    #[inline]
    pub fn errors_injected(&self) -> u64 {
        self.errors_injected
    }

    /// Calls answered with an injected value.
    #[inline]
    pub fn results_injected(&self) -> u64 {
        self.results_injected
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_formats_are_pinned() {
        let e = ChaosEvent::new(
            &Arc::from("inventory-query"),
            ChaosEventKind::Enabled {
                ttl: Some(Duration::from_secs(600)),
            },
            Some(Arc::from("drill 3: slow downstream")),
        );
        assert_eq!(
            e.to_string(),
            "chaos 'inventory-query': enabled (drill 3: slow downstream)"
        );
        assert_eq!(
            format!("{e:?}"),
            "ChaosEvent { name: \"inventory-query\", kind: Enabled { ttl: Some(600s) }, \
             reason: Some(\"drill 3: slow downstream\") }"
        );
        assert_eq!(ChaosEventKind::ErrorInjected.as_str(), "error_injected");
        assert_eq!(ChaosEventKind::Expired.to_string(), "expired");
    }
}
