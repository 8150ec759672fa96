//! Chaos (fault injection for drills; not in Resilience4j): its file
//! options, the injections a file may name, how an operator's switch
//! survives a rebuild, its health and metrics.
//!
//! Metrics: `resil_chaos_injections{kind=latency|error|result}`,
//! `resil_chaos_calls` (calls made while enabled) and `resil_chaos_enabled`
//! (1 while injecting). Its state is `ENABLED` or `DISABLED`; enabled, it is
//! DEGRADED with a reason (never DOWN), so a drill left on is visible in
//! every health check without taking the service out of rotation.

use std::sync::Arc;
use std::time::Duration;

use resil_core::chaos::{Chaos, ChaosConfig, ChaosConfigBuilder, ChaosStatus};
use resil_core::event::EventStream;

use super::bind;
use super::primitive;
use crate::classes::{ErrorClasses, ErrorList, Injections};
use crate::config::apply::{duration, f64_of, Apply, Values};
use crate::config::bind::Bind;
use crate::config::duration::format_duration;
use crate::config::render::Render;
use crate::config::resolved::{ErrorNames, Resolved};
use crate::config::schema::Val;
use crate::event::RegistryEventKind;
use crate::handle::Handle;
use crate::kind::Kind;
use crate::overrides::{ChaosSwitch, Overrides};
use crate::primitive::{Hooks, NoTwins};
use crate::telemetry::describe::{describe_config, Describe, Family, Metric, Telemetry};
use crate::telemetry::health::Status;

primitive!(Chaos: ChaosConfig => ChaosConfigBuilder, Kind::Chaos);

impl Hooks for Chaos {
    type Settings = ChaosConfigBuilder;
    type Twins = NoTwins;

    /// An operator's switch, on (with its TTL and reason) or off, survives
    /// a reload or a `configure_chaos` whatever they change, the file's
    /// `enabled` included: a drill is not ended by a config change, and an
    /// operator's "stop injecting" is not undone by one. A switch on whose
    /// TTL ran out (the instance switched itself off) is forgotten, and the
    /// new instance follows its settings.
    fn before_install(
        overrides: &Overrides,
        name: &str,
        previous: &Self,
        next: &Self,
        _carried: bool,
    ) {
        let Some(switch) = overrides.chaos(name) else {
            return;
        };
        if !switch.enabled {
            next.disable(switch.reason);
            return;
        }
        let status = previous.status();
        match (status.enabled(), switch.until, status.expires_in()) {
            (false, _, _) => {
                overrides.chaos.lock().remove(name);
            }
            (true, Some(_), Some(left)) => next.enable_for(left, switch.reason),
            (true, _, _) => next.enable(switch.reason),
        }
    }

    fn error_lists(entry: &Resolved<ChaosConfig>) -> Vec<(ErrorNames<'_>, ErrorList)> {
        let mut lists = Vec::new();
        for (key, rate_key, list) in [
            (
                "errors",
                "error-rate",
                ErrorList::ChaosErrors as fn(u64) -> ErrorList,
            ),
            ("results", "result-rate", ErrorList::ChaosResults),
        ] {
            if let Some(names) = entry.names_of(key) {
                lists.push((names, list(entry.f64_of(rate_key).unwrap_or(0.0).to_bits())));
            }
        }
        lists
    }

    /// Adds the registered injections `names` stand for, at the list's rate.
    /// An unknown name adds nothing (loading the file reported it).
    fn apply_error_list(
        classes: &ErrorClasses,
        builder: ChaosConfigBuilder,
        list: ErrorList,
        names: &[String],
    ) -> ChaosConfigBuilder {
        let rate = match list {
            ErrorList::ChaosErrors(bits) | ErrorList::ChaosResults(bits) => f64::from_bits(bits),
            _ => return builder,
        };
        names
            .iter()
            .filter_map(|n| classes.injections.find(list.is_chaos_result(), n))
            .fold(builder, |b, apply| apply(b, rate))
    }
}

/// Registers an error a chaos instance may inject under `name`, for
/// `errors` lists; a later one of the same name replaces it.
pub(crate) fn register_error<E: 'static>(
    injections: &Injections<ChaosConfigBuilder>,
    name: &str,
    make: impl Fn() -> E + Send + Sync + 'static,
) {
    let make = Arc::new(make);
    injections.register(
        name,
        false,
        Arc::new(move |b: ChaosConfigBuilder, rate| {
            let make = Arc::clone(&make);
            b.inject_error(rate, move || make())
        }),
    );
}

/// Registers a successful value a chaos instance may return instead of
/// calling the downstream under `name`, for `results` lists.
pub(crate) fn register_result<T: 'static>(
    injections: &Injections<ChaosConfigBuilder>,
    name: &str,
    make: impl Fn() -> T + Send + Sync + 'static,
) {
    let make = Arc::new(make);
    injections.register(
        name,
        true,
        Arc::new(move |b: ChaosConfigBuilder, rate| {
            let make = Arc::clone(&make);
            b.inject_result(rate, move || make())
        }),
    );
}

/// Whether `chaos` is injecting, why, and for how long more.
pub(crate) fn status(chaos: &Handle<Chaos>) -> ChaosStatus {
    chaos.status()
}

/// An operator switches `chaos` on (for `ttl`, when given), recorded in
/// `overrides` at `now` so that a rebuild keeps it: what the registry then
/// announces.
pub(crate) fn enable(
    overrides: &Overrides,
    now: Duration,
    chaos: &Chaos,
    name: &str,
    ttl: Option<Duration>,
    reason: &str,
) -> RegistryEventKind {
    overrides.chaos.lock().insert(
        name.into(),
        ChaosSwitch {
            enabled: true,
            reason: reason.into(),
            since: now,
            until: ttl.map(|t| now.saturating_add(t)),
        },
    );
    match ttl {
        Some(ttl) => chaos.enable_for(ttl, reason),
        None => chaos.enable(reason),
    }
    tracing::warn!(kind = "chaos", name, reason, ttl = ?ttl, "fault injection switched on");
    RegistryEventKind::ChaosSwitched {
        enabled: true,
        reason: reason.into(),
        ttl,
    }
}

/// An operator switches `chaos` off (also one its file enabled), recorded
/// in `overrides` at `now` so that a rebuild keeps it off: what the
/// registry then announces.
pub(crate) fn disable(
    overrides: &Overrides,
    now: Duration,
    chaos: &Chaos,
    name: &str,
    reason: &str,
) -> RegistryEventKind {
    overrides.chaos.lock().insert(
        name.into(),
        ChaosSwitch {
            enabled: false,
            reason: reason.into(),
            since: now,
            until: None,
        },
    );
    chaos.disable(reason);
    tracing::info!(kind = "chaos", name, reason, "fault injection switched off");
    RegistryEventKind::ChaosSwitched {
        enabled: false,
        reason: reason.into(),
        ttl: None,
    }
}

bind! {
    ChaosConfig => ChaosConfigBuilder {
        "enabled" => Bool: enabled,
    }
}

impl Apply for ChaosConfig {
    /// `errors` and `results` (with their rates) are added by the registry,
    /// which holds the registered injections.
    fn builder_with(v: &Values) -> ChaosConfigBuilder {
        let mut b = Self::apply_bound(ChaosConfig::builder(), v);
        let rate = f64_of(v, "latency-rate");
        let latency = duration(v, "latency");
        if rate.is_some() || latency.is_some() {
            b = b.inject_latency(rate.unwrap_or(0.0), latency.unwrap_or(Duration::ZERO));
        }
        b
    }

    fn build(builder: ChaosConfigBuilder) -> Result<Self, resil_core::ConfigError> {
        builder.build()
    }
}

impl Render for ChaosConfig {
    const KIND: Kind = Kind::Chaos;

    fn found(&self) -> Vec<(&'static str, Option<Val>)> {
        // One builder call sets both (`inject_latency(rate, latency)`).
        let mut out = self.render_bound();
        out.extend([
            ("latency-rate", Some(Val::F64(self.latency_rate()))),
            ("latency", Some(Val::Duration(self.latency()))),
        ]);
        out
    }
}

const INJECTIONS: Family = Family::new(
    "resil_chaos_injections",
    "Faults chaos injected, by what (kind): latency, an error, a replaced result",
);
const CALLS: Family = Family::new(
    "resil_chaos_calls",
    "Calls that passed the chaos instance while it was enabled",
);
const ENABLED: Family = Family::new(
    "resil_chaos_enabled",
    "Whether chaos injection is on (1) or off (0)",
);

impl Telemetry for Chaos {
    fn state_label(&self) -> Option<&'static str> {
        Some(if self.status().enabled() {
            "ENABLED"
        } else {
            "DISABLED"
        })
    }

    fn metric_values(&self) -> Vec<Metric> {
        let m = self.metrics();
        let enabled = self.status().enabled();
        vec![
            Metric::counter(INJECTIONS, Some("latency"), m.latencies_injected()),
            Metric::counter(INJECTIONS, Some("error"), m.errors_injected()),
            Metric::counter(INJECTIONS, Some("result"), m.results_injected()),
            Metric::counter(CALLS, None, m.calls_while_enabled()),
            Metric::gauge(ENABLED, None, if enabled { 1.0 } else { 0.0 }),
        ]
    }

    fn config_values(&self) -> Vec<(&'static str, String)> {
        describe_config(self.config())
    }

    fn health(&self) -> (Status, Option<String>) {
        let status = self.status();
        if !status.enabled() {
            return (Status::Up, None);
        }
        let why = status
            .reason()
            .map_or_else(|| "by the config file".to_owned(), |r| format!("`{r}`"));
        let until = status.expires_in().map_or_else(
            || "until switched off".to_owned(),
            |left| {
                format!(
                    "for {} more",
                    format_duration(Duration::from_millis(left.as_millis() as u64))
                )
            },
        );
        (
            Status::Degraded,
            Some(format!("chaos injection ENABLED {why}, {until}")),
        )
    }
}

impl Describe for Chaos {
    type Event = resil_core::chaos::ChaosEvent;

    fn subscribe_events(&self) -> EventStream<Self::Event> {
        self.subscribe()
    }

    const TAPS_NOTABLE: bool = true;

    fn tap_notable(&self, tap: resil_core::event::NotableTap<Self::Event>) {
        Chaos::tap_notable(self, tap);
    }

    fn default_values() -> Vec<(&'static str, String)> {
        describe_config(&ChaosConfig::default())
    }
}
