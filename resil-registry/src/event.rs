//! What the registry announces: instances added, removed and replaced.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use std::time::Duration;

use resil_core::clock::{Clock, SharedClock};
use resil_core::event::{Event, EventKind, EventPublisher, EventStream};

use crate::kind::Kind;
use crate::overrides::Transition;
use crate::telemetry::describe::Notable;
use crate::telemetry::ring::{RecordedEvent, Ring};

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

/// Publishes the registry's events (instances added, removed, replaced,
/// switched) in order, numbered, with the registry's clock.
pub struct Publisher {
    events: EventPublisher<RegistryEvent>,
    seq: AtomicU64,
    clock: SharedClock,
}

impl Publisher {
    /// A publisher timing its recorded events with `clock`.
    pub(crate) fn new(clock: SharedClock) -> Publisher {
        Publisher {
            events: EventPublisher::default(),
            seq: AtomicU64::new(0),
            clock,
        }
    }

    /// A subscription to every event from now on.
    pub(crate) fn subscribe(&self) -> EventStream<RegistryEvent> {
        self.events.subscribe()
    }

    /// Publishes `Added` for a new instance. Takes the name by reference:
    /// dropping a moved clone (an atomic decrement right after the stores
    /// that built the instance) cost a tenth of creating 100 000 instances,
    /// so it is cloned only when someone listens.
    pub(crate) fn publish_added(&self, kind: Kind, name: &Arc<str>) {
        if self.events.is_active() || tracing::enabled!(tracing::Level::DEBUG) {
            self.publish(kind, Arc::clone(name), RegistryEventKind::Added, None);
        }
    }

    /// Publishes `what` happened to instance `name` of `kind`, and records
    /// it in the instance's `ring` when given.
    pub(crate) fn publish(
        &self,
        kind: Kind,
        name: Arc<str>,
        what: RegistryEventKind,
        ring: Option<&Ring>,
    ) {
        // Nobody to tell (the common case for an `Added`): return before
        // `what` is read, whose copy stalled on the stores that built it.
        if ring.is_none() && !self.events.is_active() && !tracing::enabled!(tracing::Level::DEBUG) {
            return;
        }
        tracing::debug!(kind = %kind, name = &*name, event = ?what, "registry");
        if let Some(ring) = ring {
            ring.push(RecordedEvent {
                at: std::time::Duration::from_nanos(self.clock.now_nanos()),
                source: "registry",
                description: describe_event(&what),
            });
        }
        // Numbered only when someone listens: a locked add per creation
        // waits for every store the creation made, which cost a tenth of
        // creating 100 000 instances with nobody subscribed.
        self.events.publish_with(|| RegistryEvent {
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
            kind,
            name,
            what,
        });
    }
}

/// resil-core's events say themselves whether they are notable.
impl<K: EventKind> Notable for Event<K> {
    fn is_notable(&self) -> bool {
        Event::is_notable(self)
    }
}
