//! What telemetry reads from each kind: its state, its metrics, its effective
//! configuration as key/value pairs, and its health. The trait and the
//! metric type; each kind's impl is in its module (`kinds/`).

use resil_core::event::EventStream;

use crate::config::render::{rendered, Render};

use super::health::Status;

/// What a metric value is: a count of what happened since the instance was
/// created, or a reading of what it holds now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MetricKind {
    /// Cumulative: only ever grows (published as a counter).
    Counter,
    /// A reading of now: may go up and down (published as a gauge).
    Gauge,
}

/// The unit of a metric value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A number of calls, permits, threads, …
    Count,
    /// Seconds (the name ends in `_seconds`).
    Seconds,
    /// A percentage, or -1 while not yet computed.
    Percent,
}

/// One metric of one instance: Resilience4j's name (without its
/// `resilience4j_` prefix), an optional `kind` label, what it is, its unit
/// and its value.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Metric {
    /// The name (`circuitbreaker_calls`; `resil_…` for resil's own kinds).
    pub name: &'static str,
    /// The `kind` label, where Resilience4j has one.
    pub tag: Option<&'static str>,
    /// Counter or gauge.
    pub kind: MetricKind,
    /// Its unit.
    pub unit: Unit,
    /// The value.
    pub value: f64,
}

impl Metric {
    /// A cumulative count.
    pub(crate) fn counter(name: &'static str, tag: Option<&'static str>, value: u64) -> Metric {
        Metric {
            name,
            tag,
            kind: MetricKind::Counter,
            unit: Unit::Count,
            value: value as f64,
        }
    }

    /// A count held now.
    pub(crate) fn gauge(name: &'static str, tag: Option<&'static str>, value: f64) -> Metric {
        Metric {
            name,
            tag,
            kind: MetricKind::Gauge,
            unit: Unit::Count,
            value,
        }
    }

    /// A percentage held now (-1 while below the minimum number of calls).
    pub(crate) fn percent(name: &'static str, value: f64) -> Metric {
        Metric {
            unit: Unit::Percent,
            ..Metric::gauge(name, None, value)
        }
    }

    /// A duration held now, in seconds.
    pub(crate) fn seconds(name: &'static str, value: f64) -> Metric {
        Metric {
            unit: Unit::Seconds,
            ..Metric::gauge(name, None, value)
        }
    }
}

/// What telemetry reads of one instance now: its state, metrics, effective
/// configuration and health. Object-safe, so instances that are not a
/// registry kind of their own (the rate limiter's Redis-backed twins) are
/// shown by the same code.
pub trait Telemetry {
    /// Resilience4j's state name, for kinds that have states (none by
    /// default).
    fn state_label(&self) -> Option<&'static str> {
        None
    }
    /// The metrics, under Resilience4j's names (without the `resilience4j_` prefix).
    fn metric_values(&self) -> Vec<Metric>;
    /// The effective configuration, with the keys a config file uses.
    fn config_values(&self) -> Vec<(&'static str, String)>;
    /// Health from the instance's own point of view, with the reason (UP by
    /// default, for kinds that have nothing to report).
    fn health(&self) -> (Status, Option<String>) {
        (Status::Up, None)
    }
}

/// Whether an event deserves a log line of its own: the event's type says,
/// never its `Debug` text. resil-core's events answer with their kind's
/// [`is_notable`](resil_core::event::EventKind::is_notable) (`event.rs`): a
/// change of the instance itself (a transition, a reset, a limit), never a
/// per-call event.
pub trait Notable {
    /// Whether an operator must see it.
    fn is_notable(&self) -> bool;
}

/// What telemetry needs from a primitive beyond a reading of now: its own
/// events, and its configuration's defaults.
pub trait Describe: Telemetry {
    /// The primitive's own event type.
    type Event: Notable + std::fmt::Debug + Clone + Send + 'static;
    /// A subscription to the primitive's own events.
    fn subscribe_events(&self) -> EventStream<Self::Event>;
    /// The configuration values of Resilience4j's defaults, same keys.
    fn default_values() -> Vec<(&'static str, String)>
    where
        Self: Sized;
}

/// The configuration values of any kind's config, with the keys a config
/// file uses.
pub(crate) fn describe_config<C: Render>(config: &C) -> Vec<(&'static str, String)> {
    rendered(config)
}
