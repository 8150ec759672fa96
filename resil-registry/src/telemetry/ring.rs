//! The bounded ring of recent events kept per instance for the snapshot.

use std::collections::VecDeque;
use std::time::Duration;

use parking_lot::Mutex;

/// One remembered event.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct RecordedEvent {
    /// When, on the registry's clock (time since its origin).
    pub at: Duration,
    /// Who published it: `registry` (added, replaced, manual transitions,
    /// override expiry, reloads) or `instance` (the primitive's own events,
    /// when [`RegistryBuilder::record_instance_events`](crate::RegistryBuilder::record_instance_events) is on).
    pub source: &'static str,
    /// What happened.
    pub description: String,
}

/// A fixed-capacity ring: the oldest event goes when a new one arrives full.
#[derive(Debug)]
pub(crate) struct Ring {
    capacity: usize,
    events: Mutex<VecDeque<RecordedEvent>>,
}

impl Ring {
    pub(crate) fn new(capacity: usize) -> Ring {
        Ring {
            capacity: capacity.max(1),
            events: Mutex::new(VecDeque::new()),
        }
    }

    pub(crate) fn push(&self, event: RecordedEvent) {
        let mut events = self.events.lock();
        if events.len() == self.capacity {
            events.pop_front();
        }
        events.push_back(event);
    }

    pub(crate) fn to_vec(&self) -> Vec<RecordedEvent> {
        self.events.lock().iter().cloned().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ring_keeps_the_newest_events_up_to_its_capacity() {
        let ring = Ring::new(3);
        for i in 0..5 {
            ring.push(RecordedEvent {
                at: Duration::from_secs(i),
                source: "registry",
                description: i.to_string(),
            });
        }
        let kept: Vec<String> = ring.to_vec().into_iter().map(|e| e.description).collect();
        assert_eq!(kept, ["2", "3", "4"]);
    }
}
