//! What an operator asks of a breaker by name ([`Transition`]), the manual
//! modes in force ([`ManualOverride`]) and the registry's table of them
//! ([`Overrides`]). Plain data, below every module that uses it: the events
//! name transitions, the registry holds the table, `manage` drives it.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Condvar, Mutex};
use resil_core::circuit_breaker::State;

/// A transition an operator can ask of a breaker by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Transition {
    /// To CLOSED (a fresh window).
    Closed,
    /// To OPEN, for the configured wait.
    Open,
    /// To HALF_OPEN.
    HalfOpen,
    /// To FORCED_OPEN: every call refused until an operator (or the TTL) ends it.
    ForcedOpen,
    /// To DISABLED: every call passes, nothing is recorded.
    Disabled,
    /// To METRICS_ONLY: every call passes and is recorded, thresholds never open.
    MetricsOnly,
    /// Back to CLOSED with every count cleared.
    Reset,
}

impl Transition {
    /// The label used in events and logs (`forced_open`, `reset`, …).
    pub const fn as_str(self) -> &'static str {
        match self {
            Transition::Closed => "closed",
            Transition::Open => "open",
            Transition::HalfOpen => "half_open",
            Transition::ForcedOpen => "forced_open",
            Transition::Disabled => "disabled",
            Transition::MetricsOnly => "metrics_only",
            Transition::Reset => "reset",
        }
    }
}

impl fmt::Display for Transition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A manual mode in force on a breaker (for the snapshot).
#[derive(Debug, Clone, PartialEq)]
pub struct ManualOverride {
    /// FORCED_OPEN or DISABLED.
    pub mode: State,
    /// The mode the breaker returns to when the TTL expires.
    pub previous: State,
    /// Why, as the operator said.
    pub reason: Arc<str>,
    /// When it was set, on the registry's clock (time since the clock's origin).
    pub since: Duration,
    /// When it expires, on the registry's clock; `None`: never by itself.
    pub until: Option<Duration>,
}

/// The breakers under a manual override, and the timer that expires them.
#[derive(Default)]
pub struct Overrides {
    /// The override in force on each breaker that has one.
    pub(crate) by_name: Mutex<HashMap<Arc<str>, ManualOverride>>,
    /// Whether the timer thread runs (at most one per registry).
    pub(crate) timer_running: AtomicBool,
    /// How many overrides the timer thread expired (tests wait on it).
    pub(crate) timer_expired: Mutex<usize>,
    /// Notified when the timer thread expired some.
    pub(crate) timer_progress: Condvar,
}

impl Overrides {
    /// The override in force on `name`, if any.
    pub(crate) fn get(&self, name: &str) -> Option<ManualOverride> {
        self.by_name.lock().get(name).cloned()
    }

    /// The nearest TTL's end, on the registry's clock.
    pub(crate) fn next_deadline(&self) -> Option<Duration> {
        self.by_name.lock().values().filter_map(|o| o.until).min()
    }
}
