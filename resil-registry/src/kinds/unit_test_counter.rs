//! A kind that exists only in this crate's unit tests: a counter of calls
//! that reports DEGRADED once it reaches its `limit`. It proves the claim
//! of the list (`kinds/mod.rs`): adding a kind is this one module and one
//! line in the list, and the registry then creates, snapshots, checks the
//! health of and publishes the metrics of instances of it with no other
//! change.

#![allow(unreachable_pub)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use resil_core::clock::SharedClock;
use resil_core::event::{EventPublisher, EventStream};
use resil_core::ConfigError;

use crate::config::apply::{Apply, Values};
use crate::config::bind::Bind;
use crate::config::render::Render;
use crate::config::schema::Val;
use crate::kind::Kind;
use crate::primitive::{Hooks, NoTwins, Primitive};
use crate::telemetry::describe::{Describe, Family, Metric, Notable, Telemetry};
use crate::telemetry::health::Status;

pub(crate) mod types;

use self::types::{Counter, CounterConfig, CounterConfigBuilder};

impl Counter {
    /// Counts one call.
    pub fn call(&self) {
        let n = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        self.events.publish_with(|| n);
    }
}

impl Primitive for Counter {
    type Config = CounterConfig;
    type Builder = CounterConfigBuilder;
    const KIND: Kind = Kind::UnitTestCounter;

    fn default_builder() -> CounterConfigBuilder {
        CounterConfigBuilder::default()
    }

    fn to_builder(config: &CounterConfig) -> CounterConfigBuilder {
        CounterConfigBuilder::default().limit(config.limit)
    }

    fn create(_name: Arc<str>, config: CounterConfig, _clock: Option<&SharedClock>) -> Self {
        Counter {
            config,
            count: Arc::new(AtomicU64::new(0)),
            events: Arc::new(EventPublisher::new(8)),
        }
    }

    fn config_of(&self) -> CounterConfig {
        self.config
    }
}

impl Hooks for Counter {
    type Settings = CounterConfigBuilder;
    type Twins = NoTwins;
}

impl Bind for CounterConfig {
    type Builder = CounterConfigBuilder;

    fn apply_bound(b: CounterConfigBuilder, _values: &Values) -> CounterConfigBuilder {
        b
    }

    fn render_bound(&self) -> Vec<(&'static str, Option<Val>)> {
        Vec::new()
    }
}

impl Apply for CounterConfig {
    fn builder_with(_values: &Values) -> CounterConfigBuilder {
        CounterConfigBuilder::default()
    }

    fn build(builder: CounterConfigBuilder) -> Result<Self, ConfigError> {
        match builder.limit {
            Some(0) => Err(ConfigError::new("limit", 0, "at least 1")),
            Some(limit) => Ok(CounterConfig { limit }),
            None => Ok(CounterConfig::default()),
        }
    }
}

impl Render for CounterConfig {
    const KIND: Kind = Kind::UnitTestCounter;

    fn found(&self) -> Vec<(&'static str, Option<Val>)> {
        Vec::new()
    }
}

impl Telemetry for Counter {
    fn metric_values(&self) -> Vec<Metric> {
        const CALLS: Family = Family::new("resil_unit_test_counter_calls", "Calls counted");
        vec![Metric::counter(
            CALLS,
            None,
            self.count.load(Ordering::Relaxed),
        )]
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        Vec::new()
    }

    fn health(&self) -> (Status, Option<String>) {
        let count = self.count.load(Ordering::Relaxed);
        if count >= self.config.limit {
            (Status::Degraded, Some(format!("{count} calls counted")))
        } else {
            (Status::Up, None)
        }
    }
}

/// A count is per-call news, never a log line of its own.
impl Notable for u64 {
    fn is_notable(&self) -> bool {
        false
    }
}

impl Describe for Counter {
    type Event = u64;

    fn subscribe_events(&self) -> EventStream<u64> {
        self.events.subscribe()
    }

    fn default_values() -> Vec<(&'static str, String)> {
        Vec::new()
    }
}

/// The facade's test recorder, which remembers every published value.
#[cfg(all(test, feature = "metrics"))]
#[path = "../../../tests/support/recorder.rs"]
#[allow(dead_code, unreachable_pub)]
mod recorder;

#[cfg(test)]
mod tests {
    use crate::telemetry::health::Status;
    use crate::{Kind, Registry};

    #[test]
    fn a_kind_added_by_one_module_and_one_line_gets_snapshot_health_and_metrics() {
        let registry = Registry::new();
        registry
            .configure_unit_test_counter("orders", |b| b.limit(2))
            .unwrap();
        let orders = registry.unit_test_counter("orders");
        orders.call();
        assert!(registry
            .configure_unit_test_counter("orders", |b| b.limit(0))
            .is_err());
        registry.unit_test_counter("payments");
        assert_eq!(registry.len(Kind::UnitTestCounter), 2);

        let snapshot = registry.snapshot();
        let o = snapshot.instance(Kind::UnitTestCounter, "orders").unwrap();
        assert_eq!(o.kind, "unit_test_counter");
        assert_eq!(o.metric("resil_unit_test_counter_calls", None), Some(1.0));
        assert_eq!(o.health, Status::Up);

        orders.call();
        let health = registry.health();
        assert_eq!(health.status, Status::Degraded);
        let c = health
            .components
            .iter()
            .find(|c| c.kind == "unit_test_counter" && c.name == "orders")
            .unwrap();
        assert_eq!(c.status, Status::Degraded);
        assert_eq!(c.reason.as_deref(), Some("2 calls counted"));

        #[cfg(feature = "metrics")]
        {
            let recorder = super::recorder::Remember::default();
            metrics::with_local_recorder(&recorder, || registry.publish_metrics());
            assert_eq!(
                recorder.get("resil_unit_test_counter_calls{name=orders}"),
                Some(2.0)
            );
            assert_eq!(
                recorder.get("resil_unit_test_counter_calls{name=payments}"),
                Some(0.0)
            );
        }
    }
}
