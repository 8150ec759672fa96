//! The unit-test kind's types, apart from its impls: the list of kinds
//! names them, and they name nothing of the registry.
#![allow(unreachable_pub)]

use std::sync::atomic::AtomicU64;
use std::sync::Arc;

use resil_core::event::EventPublisher;

/// The counter's configuration: the count at which it is DEGRADED.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterConfig {
    pub(super) limit: u64,
}

impl Default for CounterConfig {
    fn default() -> Self {
        CounterConfig { limit: 3 }
    }
}

/// Its builder.
#[derive(Debug, Clone, Copy, Default)]
pub struct CounterConfigBuilder {
    pub(super) limit: Option<u64>,
}

impl CounterConfigBuilder {
    /// Sets the limit (at least 1).
    pub fn limit(self, limit: u64) -> Self {
        CounterConfigBuilder { limit: Some(limit) }
    }
}

/// A shared counter of calls.
#[derive(Debug, Clone)]
pub struct Counter {
    pub(super) config: CounterConfig,
    pub(super) count: Arc<AtomicU64>,
    pub(super) events: Arc<EventPublisher<u64>>,
}
