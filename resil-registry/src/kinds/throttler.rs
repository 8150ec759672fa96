//! The adaptive client-side throttler (Google SRE book; not in
//! Resilience4j): its file options (`resilience4j.throttler`), health and
//! metrics, under resil's own prefix: `resil_throttler_calls{kind=not_permitted}`
//! (calls refused locally), and the window's gauges
//! `resil_throttler_window_calls{kind=requests|accepts}` and
//! `resil_throttler_rejection_probability`.

use resil_core::event::EventStream;
use resil_core::throttler::{Throttler, ThrottlerConfig, ThrottlerConfigBuilder};

use super::primitive;
use super::{bind, plain_options};
use crate::kind::Kind;
use crate::primitive::{Hooks, NoTwins};
use crate::telemetry::describe::{describe_config, Describe, Family, Metric, Telemetry};
use crate::telemetry::health::Status;

primitive!(Throttler: ThrottlerConfig => ThrottlerConfigBuilder, Kind::Throttler);

impl Hooks for Throttler {
    type Settings = ThrottlerConfigBuilder;
    type Twins = NoTwins;
}

bind! {
    ThrottlerConfig => ThrottlerConfigBuilder {
        "accepts-multiplier" => F64: accepts_multiplier,
        "sliding-window-duration" => Duration: sliding_window_duration,
        "max-rejection-probability" => F64: max_rejection_probability,
    }
}

plain_options!(ThrottlerConfig => ThrottlerConfigBuilder, Kind::Throttler);

const CALLS: Family = Family::new(
    "resil_throttler_calls",
    "Calls the throttler refused locally (kind)",
);
const WINDOW: Family = Family::new(
    "resil_throttler_window_calls",
    "Requests and calls the downstream accepted in the throttler's sliding window (kind)",
);
const PROBABILITY: Family = Family::new(
    "resil_throttler_rejection_probability",
    "The probability that the throttler refuses the next call locally, in percent",
);

impl Telemetry for Throttler {
    fn metric_values(&self) -> Vec<Metric> {
        let m = self.metrics();
        vec![
            Metric::counter(CALLS, Some("not_permitted"), m.not_permitted_calls()),
            Metric::gauge(WINDOW, Some("requests"), m.requests() as f64),
            Metric::gauge(WINDOW, Some("accepts"), m.accepts() as f64),
            Metric::percent(PROBABILITY, m.rejection_probability() * 100.0),
        ]
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        describe_config(self.config())
    }

    /// DEGRADED while the throttler refuses calls (the downstream refuses
    /// more than `1 − 1/K` of what it sees): the dependency is overloaded,
    /// this service is not down.
    fn health(&self) -> (Status, Option<String>) {
        let m = self.metrics();
        if m.rejection_probability() > 0.0 {
            (
                Status::Degraded,
                Some(format!(
                    "refusing {:.1}% of calls locally: the downstream accepted {} of {} requests",
                    m.rejection_probability() * 100.0,
                    m.accepts(),
                    m.requests()
                )),
            )
        } else {
            (Status::Up, None)
        }
    }
}

impl Describe for Throttler {
    type Event = resil_core::throttler::ThrottlerEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    fn default_values() -> Vec<(&'static str, String)> {
        describe_config(&ThrottlerConfig::default())
    }
}
