//! What the registry announces: instances added, removed and replaced.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use std::time::Duration;

use resil_core::event::{Event, EventKind, EventPublisher, EventStream};

use crate::config::duration::format_duration;
use crate::kind::Kind;
use crate::overrides::Transition;
use crate::telemetry::describe::Notable;
use crate::telemetry::ring::{FieldValue, RecordedEvent, Ring, WallClock};

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
    /// A shadow trial's news about this instance ([`Registry::stage_shadow`](crate::Registry::stage_shadow)):
    /// staged, a transition the staged settings would have made, promoted,
    /// discarded, or ended by a reload.
    Shadow {
        /// The staged config version.
        version: u64,
        /// `staged`, `would_transition`, `promoted`, `discarded` or `ended`.
        what: &'static str,
        /// In words (`would have moved CLOSED -> OPEN`, `promoted by alice`).
        detail: Arc<str>,
    },
    /// A notable event of the instance itself (a breaker's transition or
    /// reset, a chaos instance's expiry), published when it happened and
    /// recorded in the instance's history as shown.
    Instance(RecordedEvent),
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

impl RegistryEventKind {
    /// The event type as the instance's history and the actuator show it:
    /// `ADDED`, `REMOVED`, `REPLACED`, `RECONFIGURED`, `MANUAL_TRANSITION`,
    /// `ATTRIBUTE_CONFLICT`, `OVERRIDE_EXPIRED`, `CHAOS_SWITCHED`, or the
    /// instance's own event type.
    pub fn event_type(&self) -> &'static str {
        match self {
            RegistryEventKind::Added => "ADDED",
            RegistryEventKind::Removed => "REMOVED",
            RegistryEventKind::Replaced { .. } => "REPLACED",
            RegistryEventKind::Reconfigured { .. } => "RECONFIGURED",
            RegistryEventKind::ManualTransition { .. } => "MANUAL_TRANSITION",
            RegistryEventKind::AttributeConflict { .. } => "ATTRIBUTE_CONFLICT",
            RegistryEventKind::OverrideExpired { .. } => "OVERRIDE_EXPIRED",
            RegistryEventKind::ChaosSwitched { .. } => "CHAOS_SWITCHED",
            RegistryEventKind::Shadow { .. } => "SHADOW",
            RegistryEventKind::Instance(e) => e.event_type,
        }
    }

    /// What happened, in words (`manual transition to forced_open, reason:
    /// INC-7, ttl: 1m`).
    pub fn describe(&self) -> String {
        describe_event(self)
    }

    /// The structured fields: `cause` and `state_carried_over` of a
    /// replacement, `to`, `reason` and `ttl` (seconds) of a manual transition
    /// or chaos switch, …; an instance's event's own fields.
    pub fn fields(&self) -> Vec<(&'static str, FieldValue)> {
        let text = |s: &str| FieldValue::Text(s.to_owned());
        let ttl = |t: &Option<Duration>| t.map(|t| ("ttl", FieldValue::Number(t.as_secs_f64())));
        match self {
            RegistryEventKind::Added | RegistryEventKind::Removed => Vec::new(),
            RegistryEventKind::Replaced {
                cause,
                state_carried_over,
            } => vec![
                ("cause", text(cause)),
                (
                    "state_carried_over",
                    text(if *state_carried_over { "true" } else { "false" }),
                ),
            ],
            RegistryEventKind::Reconfigured { cause } => vec![("cause", text(cause))],
            RegistryEventKind::ManualTransition { to, reason, ttl: t } => {
                let mut out = vec![("to", text(to.as_str()))];
                out.extend(reason.as_deref().map(|r| ("reason", text(r))));
                out.extend(ttl(t));
                out
            }
            RegistryEventKind::AttributeConflict {
                first,
                second,
                keys,
            } => vec![
                ("first", text(first)),
                ("second", text(second)),
                ("keys", text(&keys.join(", "))),
            ],
            RegistryEventKind::OverrideExpired { to, reason } => {
                vec![("to", text(to.as_str())), ("reason", text(reason))]
            }
            RegistryEventKind::ChaosSwitched {
                enabled,
                reason,
                ttl: t,
            } => {
                let mut out = vec![
                    ("enabled", text(if *enabled { "true" } else { "false" })),
                    ("reason", text(reason)),
                ];
                out.extend(ttl(t));
                out
            }
            RegistryEventKind::Shadow {
                version,
                what,
                detail,
            } => vec![
                ("version", FieldValue::Number(*version as f64)),
                ("what", text(what)),
                ("detail", text(detail)),
            ],
            RegistryEventKind::Instance(e) => e.fields.clone(),
        }
    }
}

/// The line an event leaves in an instance's history.
fn describe_event(what: &RegistryEventKind) -> String {
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
            ttl.map(|t| format!(", ttl: {}", format_duration(t)))
                .unwrap_or_default()
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
            ttl.map(|t| format!(", ttl: {}", format_duration(t)))
                .unwrap_or_default()
        ),
        RegistryEventKind::AttributeConflict {
            first,
            second,
            keys,
        } => format!(
            "the attribute at {second} gives other settings ({}) than the one at {first}: not applied",
            keys.join(", ")
        ),
        RegistryEventKind::Shadow {
            version, detail, ..
        } => format!("shadow trial of config version {version}: {detail}"),
        RegistryEventKind::Instance(e) => e.description.clone(),
    }
}

/// Publishes the registry's events (instances added, removed, replaced,
/// switched) in order, numbered, with the registry's clock.
pub struct Publisher {
    events: EventPublisher<RegistryEvent>,
    seq: AtomicU64,
    wall: WallClock,
}

impl Publisher {
    /// A publisher timing its recorded events with `wall`.
    pub(crate) fn new(wall: WallClock) -> Publisher {
        Publisher {
            events: EventPublisher::default(),
            seq: AtomicU64::new(0),
            wall,
        }
    }

    /// The registry's wall clock.
    pub(crate) fn wall(&self) -> &WallClock {
        &self.wall
    }

    /// Records an instance's notable `event` in its `history` now and tells
    /// subscribers at once (an SSE stream pushes it as it happens). Called
    /// by the instance's tap, on the thread where it happened.
    pub(crate) fn instance_event<E: Notable>(
        &self,
        kind: Kind,
        name: &Arc<str>,
        event: &E,
        history: &Ring,
    ) {
        let recorded = self.wall.record(
            "instance",
            event.event_type(),
            event.describe(),
            event.fields(),
        );
        history.push(recorded.clone());
        self.events.publish_with(|| RegistryEvent {
            seq: self.seq.fetch_add(1, Ordering::Relaxed),
            kind,
            name: Arc::clone(name),
            what: RegistryEventKind::Instance(recorded),
        });
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
    /// it in the instance's history `ring` when given. Logged at INFO
    /// (DEBUG for an instance added or removed).
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
        let event_type = what.event_type();
        if matches!(what, RegistryEventKind::Added | RegistryEventKind::Removed) {
            tracing::debug!(target: "resil::registry", kind = %kind, name = &*name, event_type, "{kind} '{name}': {}", describe_event(&what));
        } else {
            tracing::info!(target: "resil::registry", kind = %kind, name = &*name, event_type, "{kind} '{name}': {}", describe_event(&what));
        }
        if let Some(ring) = ring {
            ring.push(self.wall.record(
                "registry",
                event_type,
                describe_event(&what),
                what.fields(),
            ));
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

/// resil-core's events say themselves whether they are notable, their type
/// (`label`), their words (`Display`) and their fields.
impl<K: EventKind> Notable for Event<K> {
    fn is_notable(&self) -> bool {
        Event::is_notable(self)
    }

    fn event_type(&self) -> &'static str {
        self.label()
    }

    fn describe(&self) -> String {
        self.to_string()
    }

    fn fields(&self) -> Vec<(&'static str, FieldValue)> {
        let mut out = Vec::new();
        self.visit_fields(&mut |k, v| out.push((k, FieldValue::from(v))));
        out
    }
}
