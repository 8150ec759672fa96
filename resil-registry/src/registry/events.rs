//! The registry's events, and each instance's own events collected into its
//! ring of recent events.

use std::sync::atomic::Ordering;
use std::sync::Arc;

use resil_core::clock::Clock;
use resil_core::event::EventStream;

use crate::event::{describe_event, is_notable, RegistryEvent, RegistryEventKind};
use crate::kind::Kind;
use crate::primitive::Primitive;
use crate::store::{for_each_kind, Entry, KindVisitor};
use crate::telemetry::ring::{RecordedEvent, Ring};

use super::Registry;

impl Registry {
    /// Subscribes to the registry's events (instances added, removed,
    /// replaced), delivered in order.
    pub fn subscribe(&self) -> EventStream<RegistryEvent> {
        self.inner.events.subscribe()
    }

    /// Moves the events the instance published since the last collection
    /// into its ring, logging transitions and rejections.
    pub(crate) fn drain_instance_events<P: Primitive>(&self, entry: &Entry<P>) {
        let Some(capture) = &entry.capture else {
            return;
        };
        let events = capture.lock().drain();
        let at = std::time::Duration::from_nanos(self.inner.ttl_clock.now_nanos());
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

    /// Collects every instance's own events into its ring now (see
    /// [`RegistryBuilder::record_instance_events`](crate::RegistryBuilder::record_instance_events)).
    pub fn collect_instance_events(&self) {
        struct Collect<'a>(&'a Registry);
        impl KindVisitor for Collect<'_> {
            fn visit<P: Primitive>(&mut self) {
                for entry in self.0.store::<P>().entries.iter() {
                    self.0.drain_instance_events(&entry);
                }
            }
        }
        for_each_kind(&mut Collect(self));
    }

    /// Publishes `Added` for a new instance. Takes the name by reference:
    /// dropping a moved clone (an atomic decrement right after the stores
    /// that built the instance) cost a tenth of creating 100 000 instances,
    /// so it is cloned only when someone listens.
    pub(crate) fn publish_added(&self, kind: Kind, name: &Arc<str>) {
        if self.inner.events.is_active() || tracing::enabled!(tracing::Level::DEBUG) {
            self.publish(kind, Arc::clone(name), RegistryEventKind::Added, None);
        }
    }

    pub(crate) fn publish(
        &self,
        kind: Kind,
        name: Arc<str>,
        what: RegistryEventKind,
        ring: Option<&Ring>,
    ) {
        // Nobody to tell (the common case for an `Added`): return before
        // `what` is read, whose copy stalled on the stores that built it.
        if ring.is_none()
            && !self.inner.events.is_active()
            && !tracing::enabled!(tracing::Level::DEBUG)
        {
            return;
        }
        tracing::debug!(kind = %kind, name = &*name, event = ?what, "registry");
        if let Some(ring) = ring {
            ring.push(RecordedEvent {
                at: std::time::Duration::from_nanos(self.inner.ttl_clock.now_nanos()),
                source: "registry",
                description: describe_event(&what),
            });
        }
        // Numbered only when someone listens: a locked add per creation
        // waits for every store the creation made, which cost a tenth of
        // creating 100 000 instances with nobody subscribed.
        self.inner.events.publish_with(|| RegistryEvent {
            seq: self.inner.seq.fetch_add(1, Ordering::Relaxed),
            kind,
            name,
            what,
        });
    }
}
