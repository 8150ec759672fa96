//! What a fault-injection instance reports to its subscribers.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::event::{Event, EventKind};

/// Something a [`Chaos`](super::Chaos) instance did, delivered to every stream
/// from [`Chaos::subscribe`](super::Chaos::subscribe).
pub type ChaosEvent = Event<ChaosEventKind>;

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
    /// Why injection was switched on or off, as management said.
    #[inline]
    pub fn reason(&self) -> Option<&str> {
        self.detail().as_deref()
    }
}

/// The detail is the reason ([`ChaosEvent::reason`]).
impl EventKind for ChaosEventKind {
    type Detail = Option<Arc<str>>;
    const EVENT: &'static str = "ChaosEvent";
    const SOURCE: &'static str = "chaos";

    /// `ENABLED`, `DISABLED`, `EXPIRED`, `LATENCY_INJECTED`,
    /// `ERROR_INJECTED`, `RESULT_INJECTED`.
    fn label(&self) -> &'static str {
        match self {
            ChaosEventKind::Enabled { .. } => "ENABLED",
            ChaosEventKind::Disabled => "DISABLED",
            ChaosEventKind::Expired => "EXPIRED",
            ChaosEventKind::LatencyInjected => "LATENCY_INJECTED",
            ChaosEventKind::ErrorInjected => "ERROR_INJECTED",
            ChaosEventKind::ResultInjected => "RESULT_INJECTED",
        }
    }

    /// Injection switched on, off, or expiring; not a fault injected into a
    /// call.
    fn is_notable(&self) -> bool {
        matches!(
            self,
            ChaosEventKind::Enabled { .. } | ChaosEventKind::Disabled | ChaosEventKind::Expired
        )
    }

    fn fmt_line(&self, reason: &Option<Arc<str>>, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, ": {self}")?;
        if let Some(reason) = reason {
            write!(f, " ({reason})")?;
        }
        Ok(())
    }

    fn fmt_detail(reason: &Option<Arc<str>>, out: &mut fmt::DebugStruct<'_, '_>) {
        out.field("reason", &reason.as_deref());
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
        let e = ChaosEvent::with_detail(
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
        assert_eq!(e.label(), "ENABLED");
        assert!(e.is_notable());
        assert!(!ChaosEventKind::ErrorInjected.is_notable());
    }
}
