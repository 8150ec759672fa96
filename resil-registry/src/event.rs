//! What the registry announces: instances added, removed and replaced.

use std::sync::Arc;

use std::time::Duration;

use crate::kind::Kind;
use crate::overrides::Transition;

/// One change to the registry's set of instances.
#[derive(Debug, Clone, PartialEq)]
pub struct RegistryEvent {
    /// Position in the registry's event order: strictly increasing, so events
    /// about one name are seen in the order they happened. Only delivered
    /// events are numbered: with nobody subscribed, nothing is counted.
    pub seq: u64,
    /// The kind of the instance.
    pub kind: Kind,
    /// The instance name.
    pub name: Arc<str>,
    /// What happened.
    pub what: RegistryEventKind,
}

/// What happened to the instance.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RegistryEventKind {
    /// Created (by a first look-up, a config file or a reload).
    Added,
    /// Removed by name; handles still holding it keep the last instance.
    Removed,
    /// A new instance with a new configuration took its place; every handle
    /// now sees it.
    Replaced {
        /// Why (`configure`, `reload`, `replace`).
        cause: Arc<str>,
        /// Whether the state and sliding window carried over (a breaker whose
        /// window shape did not change); `false` means it starts afresh (a
        /// breaker starts CLOSED with an empty window).
        state_carried_over: bool,
    },
    /// The same instance took a new configuration through its run-time
    /// setters (a rate limiter's limit or timeout, a bulkhead's size).
    Reconfigured {
        /// Why (`reload`).
        cause: Arc<str>,
    },
    /// An operator transitioned a breaker by name.
    ManualTransition {
        /// The transition.
        to: Transition,
        /// The reason given (forced-open and disabled).
        reason: Option<Arc<str>>,
        /// How long the manual mode lasts before reverting by itself.
        ttl: Option<Duration>,
    },
    /// A second resil attribute gave the instance other literal settings than
    /// the first one did; they were not applied (an error, also traced).
    AttributeConflict {
        /// The site whose settings are in force.
        first: &'static str,
        /// The site whose settings were refused.
        second: &'static str,
        /// The keys the sites disagree on.
        keys: Vec<String>,
    },
    /// A manual override's TTL passed: the breaker went back to its previous mode.
    OverrideExpired {
        /// The transition that ended the override.
        to: Transition,
        /// The reason the override was set with.
        reason: Arc<str>,
    },
    /// An operator switched a chaos instance's fault injection on or off
    /// ([`Registry::enable_chaos`](crate::Registry::enable_chaos),
    /// [`Registry::disable_chaos`](crate::Registry::disable_chaos)). Its
    /// expiry is the instance's own `Expired` event, in its recent events.
    ChaosSwitched {
        /// On or off.
        enabled: bool,
        /// Why, as the operator said.
        reason: Arc<str>,
        /// How long it stays on (`None`: until switched off).
        ttl: Option<Duration>,
    },
}

/// The line an event leaves in an instance's ring.
pub(crate) fn describe_event(what: &RegistryEventKind) -> String {
    match what {
        RegistryEventKind::Added => "added".to_owned(),
        RegistryEventKind::Removed => "removed".to_owned(),
        RegistryEventKind::Replaced {
            cause,
            state_carried_over,
        } => format!(
            "replaced by {cause} ({})",
            if *state_carried_over {
                "state carried over"
            } else {
                "fresh state"
            }
        ),
        RegistryEventKind::Reconfigured { cause } => format!("reconfigured in place by {cause}"),
        RegistryEventKind::ManualTransition { to, reason, ttl } => format!(
            "manual transition to {to}{}{}",
            reason
                .as_deref()
                .map(|r| format!(", reason: {r}"))
                .unwrap_or_default(),
            ttl.map(|t| format!(", ttl: {t:?}")).unwrap_or_default()
        ),
        RegistryEventKind::OverrideExpired { to, reason } => {
            format!("manual override ({reason}) expired: back to {to}")
        }
        RegistryEventKind::ChaosSwitched {
            enabled,
            reason,
            ttl,
        } => format!(
            "chaos injection switched {}, reason: {reason}{}",
            if *enabled { "on" } else { "off" },
            ttl.map(|t| format!(", ttl: {t:?}")).unwrap_or_default()
        ),
        RegistryEventKind::AttributeConflict {
            first,
            second,
            keys,
        } => format!(
            "the attribute at {second} gives other settings ({}) than the one at {first}: not applied",
            keys.join(", ")
        ),
    }
}

/// Whether an instance event is worth a log line (transitions, rejections).
pub(crate) fn is_notable(description: &str) -> bool {
    [
        "StateTransition",
        "NotPermitted",
        "Rejected",
        "Timeout",
        "Full",
    ]
    .iter()
    .any(|w| description.contains(w))
}
