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

impl Transition {
    /// The transition into a manual mode: FORCED_OPEN, DISABLED or
    /// METRICS_ONLY (any other state is none: CLOSED).
    pub(crate) const fn of_mode(mode: State) -> Transition {
        match mode {
            State::ForcedOpen => Transition::ForcedOpen,
            State::Disabled => Transition::Disabled,
            State::MetricsOnly => Transition::MetricsOnly,
            _ => Transition::Closed,
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
    /// FORCED_OPEN, DISABLED or METRICS_ONLY.
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

/// An operator's chaos switch in force: injection on (with a TTL) or off,
/// whatever the config file says, until its TTL or a release.
#[derive(Debug, Clone, PartialEq)]
pub struct ChaosSwitch {
    /// Whether the operator switched injection on (`true`) or off.
    pub enabled: bool,
    /// Why, as the operator said.
    pub reason: Arc<str>,
    /// When it was set, on the registry's clock.
    pub since: Duration,
    /// When it ends, on the registry's clock (only a switch on has one).
    pub until: Option<Duration>,
}

/// An operator's run-time settings in force on a rate limiter or a bulkhead
/// (`set_rate_limit`, `set_rate_limiter_timeout`, `set_bulkhead_size`): they
/// outlive every reload until released.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Tuning {
    /// A rate limiter's `limit-for-period`.
    pub limit_for_period: Option<u32>,
    /// A rate limiter's `timeout-duration`.
    pub timeout_duration: Option<Duration>,
    /// A bulkhead's `max-concurrent-calls`.
    pub max_concurrent_calls: Option<u32>,
}

/// The operators' switches in force, by instance, and the timer that
/// expires the breakers' TTLs. A reload or a `configure_*` that rebuilds or
/// updates an instance re-applies its switch before any call sees the new
/// instance (the kinds' `before_install` and `reassert` hooks).
#[derive(Default)]
pub struct Overrides {
    /// The override in force on each breaker that has one.
    pub(crate) by_name: Mutex<HashMap<Arc<str>, ManualOverride>>,
    /// The chaos switch in force on each chaos instance that has one.
    pub(crate) chaos: Mutex<HashMap<Arc<str>, ChaosSwitch>>,
    /// The run-time settings in force, by kind and name.
    pub(crate) tunings: Mutex<HashMap<(crate::kind::Kind, Arc<str>), Tuning>>,
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

    /// The chaos switch recorded for `name`, if any.
    pub(crate) fn chaos(&self, name: &str) -> Option<ChaosSwitch> {
        self.chaos.lock().get(name).cloned()
    }

    /// Forgets the chaos switches whose TTL has passed at `now` (the
    /// instances switched themselves off); how many.
    pub(crate) fn forget_expired_chaos(&self, now: Duration) -> usize {
        let mut switches = self.chaos.lock();
        let before = switches.len();
        switches.retain(|_, s| s.until.is_none_or(|u| u > now));
        before - switches.len()
    }

    /// The run-time settings in force on the `kind` called `name`.
    pub(crate) fn tuning(&self, kind: crate::kind::Kind, name: &str) -> Option<Tuning> {
        self.tunings
            .lock()
            .iter()
            .find(|((k, n), _)| *k == kind && &**n == name)
            .map(|(_, t)| *t)
    }

    /// The nearest TTL's end, on the registry's clock.
    pub(crate) fn next_deadline(&self) -> Option<Duration> {
        self.by_name.lock().values().filter_map(|o| o.until).min()
    }
}
