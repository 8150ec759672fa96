//! The thread-pool bulkhead: its file options, health and metrics. It reads
//! no clock (its keep-alive is a real condition-variable wait), so the
//! registry's clock does not apply.

use std::sync::Arc;

use resil_core::clock::SharedClock;
use resil_core::event::EventStream;
use resil_core::thread_pool_bulkhead::{
    ThreadPoolBulkhead, ThreadPoolBulkheadConfig, ThreadPoolBulkheadConfigBuilder,
};

use super::{bind, plain_options};
use crate::kind::Kind;
use crate::primitive::{Hooks, NoTwins, Primitive};
use crate::telemetry::describe::{describe_config, Describe, Family, Metric, Telemetry};
use crate::telemetry::health::Status;

impl Primitive for ThreadPoolBulkhead {
    type Config = ThreadPoolBulkheadConfig;
    type Builder = ThreadPoolBulkheadConfigBuilder;
    const KIND: Kind = Kind::ThreadPoolBulkhead;

    fn default_builder() -> ThreadPoolBulkheadConfigBuilder {
        ThreadPoolBulkheadConfig::builder()
    }

    fn to_builder(c: &ThreadPoolBulkheadConfig) -> ThreadPoolBulkheadConfigBuilder {
        ThreadPoolBulkheadConfig::builder()
            .core_thread_pool_size(c.core_thread_pool_size())
            .max_thread_pool_size(c.max_thread_pool_size())
            .queue_capacity(c.queue_capacity())
            .keep_alive_duration(c.keep_alive_duration())
    }

    fn create(
        name: Arc<str>,
        config: ThreadPoolBulkheadConfig,
        _clock: Option<&SharedClock>,
    ) -> Self {
        ThreadPoolBulkhead::new(name, config)
    }

    fn config_of(&self) -> ThreadPoolBulkheadConfig {
        self.config().clone()
    }
}

impl Hooks for ThreadPoolBulkhead {
    type Settings = ThreadPoolBulkheadConfigBuilder;
    type Twins = NoTwins;
}

bind! {
    ThreadPoolBulkheadConfig => ThreadPoolBulkheadConfigBuilder {
        "core-thread-pool-size" => Usize: core_thread_pool_size,
        "max-thread-pool-size" => Usize: max_thread_pool_size,
        "queue-capacity" => Usize: queue_capacity,
        "keep-alive-duration" => Duration: keep_alive_duration,
    }
}

plain_options!(ThreadPoolBulkheadConfig => ThreadPoolBulkheadConfigBuilder, Kind::ThreadPoolBulkhead);

const ACTIVE: Family = Family::new(
    "bulkhead_active_thread_count",
    "Threads of the pool running a task",
);
const AVAILABLE: Family = Family::new(
    "bulkhead_available_thread_count",
    "Threads the pool can still start or hand a task to (max minus active)",
);
const SIZE: Family = Family::new("bulkhead_thread_pool_size", "Threads in the pool now");
const CORE_SIZE: Family = Family::new(
    "bulkhead_core_thread_pool_size",
    "The pool's core number of threads",
);
const MAX_SIZE: Family = Family::new(
    "bulkhead_max_thread_pool_size",
    "The pool's maximum number of threads",
);
const QUEUE_DEPTH: Family = Family::new("bulkhead_queue_depth", "Tasks waiting in the queue");
const QUEUE_CAPACITY: Family = Family::new("bulkhead_queue_capacity", "The queue's capacity");
const CALLS: Family = Family::new(
    "bulkhead_thread_pool_calls",
    "Tasks the thread-pool bulkhead accepted or refused (kind) because the pool and queue were full",
);

impl Telemetry for ThreadPoolBulkhead {
    fn metric_values(&self) -> Vec<Metric> {
        let m = self.metrics();
        let max = m.maximum_thread_pool_size();
        let active = m.active_thread_count();
        vec![
            Metric::gauge(ACTIVE, None, active as f64),
            Metric::gauge(AVAILABLE, None, max.saturating_sub(active) as f64),
            Metric::gauge(SIZE, None, m.thread_pool_size() as f64),
            Metric::gauge(CORE_SIZE, None, m.core_thread_pool_size() as f64),
            Metric::gauge(MAX_SIZE, None, max as f64),
            Metric::gauge(QUEUE_DEPTH, None, m.queue_depth() as f64),
            Metric::gauge(QUEUE_CAPACITY, None, m.queue_capacity() as f64),
            Metric::counter(CALLS, Some("permitted"), m.permitted_calls()),
            Metric::counter(CALLS, Some("rejected"), m.rejected_calls()),
        ]
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        describe_config(self.config())
    }

    fn health(&self) -> (Status, Option<String>) {
        let m = self.metrics();
        if m.remaining_queue_capacity() == 0 && m.queue_capacity() > 0 {
            (Status::Degraded, Some("the queue is full".to_owned()))
        } else {
            (Status::Up, None)
        }
    }
}

impl Describe for ThreadPoolBulkhead {
    type Event = resil_core::thread_pool_bulkhead::ThreadPoolBulkheadEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    fn default_values() -> Vec<(&'static str, String)> {
        describe_config(&ThreadPoolBulkheadConfig::default())
    }
}
