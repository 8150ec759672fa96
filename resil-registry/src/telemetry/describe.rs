//! What telemetry reads from each kind: its state, its metrics, its effective
//! configuration as key/value pairs, and its health. The trait and the
//! metric type; each kind's impl is in its module (`kinds/`).

use resil_core::event::EventStream;

use crate::config::render::{rendered, Render};

use super::health::Status;

/// What a metric is: a count of what happened since the instance was
/// created, a reading of what it holds now, or a timer of the calls it made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
#[cfg_attr(feature = "serde", serde(rename_all = "lowercase"))]
pub enum MetricKind {
    /// Cumulative: only ever grows (Prometheus: `<name>_total`).
    Counter,
    /// A reading of now: may go up and down.
    Gauge,
    /// Cumulative count and summed duration of calls, their decaying maximum
    /// and, when enabled, a histogram (Prometheus: `<name>_seconds_count`,
    /// `_sum`, `_max`, `_bucket`), as Micrometer publishes a `Timer`.
    Timer,
}

impl MetricKind {
    /// `counter`, `gauge`, `timer`.
    pub const fn as_str(self) -> &'static str {
        match self {
            MetricKind::Counter => "counter",
            MetricKind::Gauge => "gauge",
            MetricKind::Timer => "timer",
        }
    }
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

/// A metric's name (Resilience4j's, without its `resilience4j_` prefix and
/// without the suffixes Prometheus adds; `resil_…` for resil's own kinds)
/// and what it means. Each kind's module declares its families.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Family {
    /// The name (`circuitbreaker_calls`).
    pub name: &'static str,
    /// What it measures (Prometheus `# HELP`, Actuator's `description`).
    pub help: &'static str,
}

impl Family {
    /// A family called `name` that measures `help`.
    pub(crate) const fn new(name: &'static str, help: &'static str) -> Family {
        Family { name, help }
    }
}

/// A timer's reading beyond its count: the summed and the largest duration
/// in seconds, and the cumulative histogram buckets when enabled.
#[derive(Debug, Clone, PartialEq)]
pub struct TimerValue {
    /// The summed duration of every call counted, in seconds.
    pub sum: f64,
    /// The longest call of the last one to two minutes, in seconds.
    pub max: f64,
    /// `(upper bound in seconds, calls at or under it)`, cumulative; `None`
    /// while the histogram is off.
    pub buckets: Option<Vec<(f64, u64)>>,
}

/// One metric of one instance: its family, an optional label, what it is,
/// its unit and its value.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// The name (`circuitbreaker_calls`; `resil_…` for resil's own kinds).
    pub name: &'static str,
    /// What it measures.
    pub help: &'static str,
    /// The label's key: `kind` (Resilience4j's usual one) or `state` (the
    /// breaker's state gauge).
    pub tag_key: &'static str,
    /// The label's value, where the metric has one.
    pub tag: Option<&'static str>,
    /// Counter, gauge or timer.
    pub kind: MetricKind,
    /// Its unit.
    pub unit: Unit,
    /// The value (a timer's: its count).
    pub value: f64,
    /// A timer's sum, max and buckets.
    pub timer: Option<TimerValue>,
}

impl Metric {
    fn of(family: Family, tag: Option<&'static str>, kind: MetricKind, value: f64) -> Metric {
        Metric {
            name: family.name,
            help: family.help,
            tag_key: "kind",
            tag,
            kind,
            unit: Unit::Count,
            value,
            timer: None,
        }
    }

    /// A cumulative count.
    pub(crate) fn counter(family: Family, tag: Option<&'static str>, value: u64) -> Metric {
        Metric::of(family, tag, MetricKind::Counter, value as f64)
    }

    /// A count held now.
    pub(crate) fn gauge(family: Family, tag: Option<&'static str>, value: f64) -> Metric {
        Metric::of(family, tag, MetricKind::Gauge, value)
    }

    /// A percentage held now (-1 while below the minimum number of calls).
    pub(crate) fn percent(family: Family, value: f64) -> Metric {
        Metric {
            unit: Unit::Percent,
            ..Metric::gauge(family, None, value)
        }
    }

    /// A duration held now, in seconds.
    pub(crate) fn seconds(family: Family, value: f64) -> Metric {
        Metric {
            unit: Unit::Seconds,
            ..Metric::gauge(family, None, value)
        }
    }

    /// A call timer's reading.
    pub(crate) fn timer(
        family: Family,
        tag: Option<&'static str>,
        timer: &resil_core::circuit_breaker::CallTimer,
    ) -> Metric {
        Metric {
            unit: Unit::Seconds,
            timer: Some(TimerValue {
                sum: timer.total().as_secs_f64(),
                max: timer.max().as_secs_f64(),
                buckets: timer.buckets().map(|b| {
                    b.iter()
                        .map(|&(bound, count)| (bound.as_secs_f64(), count))
                        .collect()
                }),
            }),
            ..Metric::of(family, tag, MetricKind::Timer, timer.count() as f64)
        }
    }

    /// The same metric under label key `key` (`state`).
    pub(crate) fn keyed(self, key: &'static str) -> Metric {
        Metric {
            tag_key: key,
            ..self
        }
    }

    /// The name Prometheus shows, before any suffix: `resilience4j_` and the
    /// name (`resil_…` names as they are), and `_seconds` for a timer.
    pub fn base_name(&self) -> String {
        let mut name = if self.name.starts_with("resil_") {
            self.name.to_owned()
        } else {
            format!("resilience4j_{}", self.name)
        };
        if self.kind == MetricKind::Timer {
            name.push_str("_seconds");
        }
        name
    }

    /// The name Micrometer gives the meter (`resilience4j.circuitbreaker.calls`),
    /// as Actuator's `/actuator/metrics` lists it.
    pub fn dotted_name(&self) -> String {
        let name = self.name.strip_prefix("resil_").map_or_else(
            || format!("resilience4j.{}", self.name),
            |rest| format!("resil.{rest}"),
        );
        name.replace('_', ".")
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
