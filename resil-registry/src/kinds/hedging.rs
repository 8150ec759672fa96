//! Hedging (Polly's hedging strategy; not in Resilience4j): its file
//! options, its `hedge-errors` list and its metrics, under resil's own
//! prefix: `resil_hedging_calls{kind=won_by_primary|won_by_hedge|all_failed|cancelled}`
//! (every call ends in exactly one) and
//! `resil_hedging_hedges{kind=started|budget_refused}`.

use resil_core::event::EventStream;
use resil_core::hedging::{Hedging, HedgingConfig, HedgingConfigBuilder};

use super::primitive;
use super::{bind, plain_options};
use crate::classes::{ErrorClasses, ErrorList};
use crate::config::resolved::{ErrorNames, Resolved};
use crate::kind::Kind;
use crate::primitive::{Hooks, NoTwins};
use crate::telemetry::describe::{describe_config, Describe, Family, Metric, Telemetry};

primitive!(Hedging: HedgingConfig => HedgingConfigBuilder, Kind::Hedging);

impl Hooks for Hedging {
    type Settings = HedgingConfigBuilder;
    type Twins = NoTwins;

    fn error_lists(entry: &Resolved<HedgingConfig>) -> Vec<(ErrorNames<'_>, ErrorList)> {
        entry
            .names_of("hedge-errors")
            .map(|names| (names, ErrorList::HedgeOn))
            .into_iter()
            .collect()
    }

    fn apply_error_list(
        classes: &ErrorClasses,
        builder: HedgingConfigBuilder,
        list: ErrorList,
        names: &[String],
    ) -> HedgingConfigBuilder {
        classes.apply_hedging(builder, list, names)
    }
}

bind! {
    HedgingConfig => HedgingConfigBuilder {
        "max-hedged-attempts" => U32: max_hedged_attempts,
        "delay" => Duration: delay,
    }
}

plain_options!(HedgingConfig => HedgingConfigBuilder, Kind::Hedging);

const CALLS: Family = Family::new(
    "resil_hedging_calls",
    "Hedged calls that ended, by how (kind): won by the primary, won by a hedge, all attempts failed, cancelled",
);
const HEDGES: Family = Family::new(
    "resil_hedging_hedges",
    "Hedges started, and hedges the budget refused (kind)",
);

impl Telemetry for Hedging {
    fn metric_values(&self) -> Vec<Metric> {
        let m = self.metrics();
        vec![
            Metric::counter(CALLS, Some("won_by_primary"), m.won_by_primary()),
            Metric::counter(CALLS, Some("won_by_hedge"), m.won_by_hedge()),
            Metric::counter(CALLS, Some("all_failed"), m.all_failed()),
            Metric::counter(CALLS, Some("cancelled"), m.cancelled()),
            Metric::counter(HEDGES, Some("started"), m.hedges_started()),
            Metric::counter(HEDGES, Some("budget_refused"), m.budget_refused()),
        ]
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        describe_config(self.config())
    }
}

impl Describe for Hedging {
    type Event = resil_core::hedging::HedgingEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    fn default_values() -> Vec<(&'static str, String)> {
        describe_config(&HedgingConfig::default())
    }
}
