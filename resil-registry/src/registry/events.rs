//! The registry's events, and each instance's own events collected into its
//! ring of recent events: [`Publisher`], which the registry holds.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use resil_core::clock::{Clock, SharedClock};
use resil_core::event::{EventPublisher, EventStream};

use crate::event::{describe_event, is_notable, RegistryEvent, RegistryEventKind};
use crate::kind::Kind;
use crate::primitive::Primitive;
use crate::store::Entry;
use crate::telemetry::ring::{RecordedEvent, Ring};

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

    /// Moves the events the instance published since the last collection
    /// into its ring, logging transitions and rejections.
    pub(crate) fn drain<P: Primitive>(&self, entry: &Entry<P>) {
        let Some(capture) = &entry.capture else {
            return;
        };
        let events = capture.lock().drain();
        let at = std::time::Duration::from_nanos(self.clock.now_nanos());
        for event in events {
            let description = format!("{event:?}");
            if is_notable(&description) {
                tracing::info!(kind = %P::KIND, name = entry.slot.load_name(), event = %description, "instance event");
            }
            entry.slot.ring.push(RecordedEvent {
                at,
                source: "instance",
                description,
            });
        }
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
