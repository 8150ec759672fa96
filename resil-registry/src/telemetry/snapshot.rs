//! A serializable picture of every instance, for an HTTP endpoint to serve.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use super::describe::{MetricKind, Telemetry};
use super::health::{ComponentHealth, Health, Status};
use super::ring::RecordedEvent;
use std::sync::Arc;

use crate::handle::Handle;
use crate::kind::Kind;
use crate::primitive::{Primitive, Twins};
use crate::registry::plan::plan;
use crate::registry::resolve::{resolve_layers, Labelled};
use crate::registry::{
    Registry, DEFAULT_ALLOW_HEALTH_INDICATOR_TO_FAIL, DEFAULT_REGISTER_HEALTH_INDICATOR,
};
use crate::store::{for_each_kind, KindVisitor};

/// Every instance in the registry.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct Snapshot {
    /// Sorted by kind, then name.
    pub instances: Vec<InstanceSnapshot>,
    /// What the fallbacks of annotated fns did, per protected fn whose
    /// fallback ran (process-wide: see [`fallback`](crate::fallback)),
    /// sorted by the fn's path.
    pub fallbacks: Vec<FallbackSnapshot>,
    /// Management requests by outcome ([`Registry::management_requests`]).
    pub management_requests: crate::audit::ManagementRequests,
    /// The operators' switches in force, by kind, name and action
    /// ([`Registry::switches`]).
    pub switches: Vec<crate::telemetry::in_force::SwitchSnapshot>,
    /// The config version in force, where it came from, the reload counts
    /// and the followed config sources' reachability.
    pub config: crate::telemetry::in_force::ConfigSnapshot,
    /// The shadow trial running beside the config in force
    /// ([`Registry::shadow_trial`]).
    pub shadow: Option<crate::shadow::ShadowTrial>,
}

/// The fallback counters of one protected fn, as the snapshot shows them.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct FallbackSnapshot {
    /// The fn's path (`inventory::query_inventory`).
    pub name: &'static str,
    /// Results a fallback produced instead of the live call, by the cause
    /// that sent the call there (`call`, `call_not_permitted`, `timeout`, …);
    /// causes that never did are left out.
    pub degraded: Vec<(&'static str, u64)>,
    /// Fallbacks that failed themselves (their error reached the caller).
    pub failed: u64,
}

impl Snapshot {
    /// The instance of `kind` called `name`.
    pub fn instance(&self, kind: Kind, name: &str) -> Option<&InstanceSnapshot> {
        self.instances
            .iter()
            .find(|i| i.kind == kind.as_str() && i.name == name)
    }
}

/// One instance.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct InstanceSnapshot {
    /// `circuit_breaker`, `retry`, `bulkhead`, `thread_pool_bulkhead`,
    /// `rate_limiter`, `time_limiter`, `hedging`, `adaptive_bulkhead` or
    /// `chaos` ([`Kind::as_str`]).
    pub kind: &'static str,
    /// The instance name.
    pub name: String,
    /// Resilience4j's state name for a breaker; `ENABLED` or `DISABLED` for
    /// a chaos instance (its operator's reason and time left are in
    /// `health_reason`); `None` for the other kinds.
    pub state: Option<&'static str>,
    /// Its metrics, under Resilience4j's names.
    pub metrics: Vec<MetricSnapshot>,
    /// The effective configuration with where each value came from.
    pub config: Vec<ConfigValue>,
    /// Its tags.
    pub tags: BTreeMap<String, String>,
    /// A manual override in force (breakers only).
    pub manual_override: Option<OverrideSnapshot>,
    /// Its health: the one verdict [`Registry::health`], the actuator's
    /// health endpoint, its dashboard and its event stream all show (after
    /// `allow-health-indicator-to-fail`: an OPEN breaker not allowed to fail
    /// the summary is DEGRADED everywhere).
    pub health: Status,
    /// Why, when not UP (an operator's reason for a manual override).
    pub health_reason: Option<String>,
    /// Whether it takes part in the health summary
    /// (`register-health-indicator`).
    pub health_indicator: bool,
    /// Its notable events, oldest first: transitions, resets, manual
    /// overrides, reloads, chaos switches, recorded when they happened
    /// (bounded; per-call events never evict them).
    pub history: Vec<RecordedEvent>,
    /// Its recent per-call events, oldest first, when the registry records
    /// them ([`RegistryBuilder::record_instance_events`](crate::RegistryBuilder::record_instance_events); bounded).
    pub recent_events: Vec<RecordedEvent>,
}

impl InstanceSnapshot {
    /// The value of metric `name` (with the `kind` label, if it has one).
    pub fn metric(&self, name: &str, kind: Option<&str>) -> Option<f64> {
        self.metrics
            .iter()
            .find(|m| m.name == name && m.kind == kind)
            .map(|m| m.value)
    }

    /// The effective value of config key `key` and its source.
    pub fn config_value(&self, key: &str) -> Option<&ConfigValue> {
        self.config.iter().find(|c| c.key == key)
    }
}

/// One metric value.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct MetricSnapshot {
    /// Resilience4j's name, without the `resilience4j_` prefix; the kinds
    /// Resilience4j lacks (hedging, chaos) give their whole `resil_…` name.
    pub name: &'static str,
    /// The value of its label (`kind`, or `state` for the breaker's state
    /// gauge), for metrics that have one.
    pub kind: Option<&'static str>,
    /// The label's key: `kind` or `state`.
    pub label: &'static str,
    /// Counter, gauge or timer.
    #[cfg_attr(feature = "serde", serde(rename = "type"))]
    pub metric_type: MetricKind,
    /// What it measures.
    pub description: &'static str,
    /// The value (a timer's: its count).
    pub value: f64,
    /// A timer's summed duration, in seconds.
    pub total_seconds: Option<f64>,
    /// A timer's longest call of the last one to two minutes, in seconds.
    pub max_seconds: Option<f64>,
}

/// One effective configuration value.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ConfigValue {
    /// The key as a config file writes it (`failure-rate-threshold`).
    pub key: &'static str,
    /// The value as a config file writes it.
    pub value: String,
    /// Where it came from: `default` (Resilience4j's default), `code` (set by
    /// `configure_*` or a code config), or, for a value from a config file,
    /// the file's own provenance (`config \`name\``, `instance`, `env \`VAR\``).
    pub source: String,
    /// Where the value in force is written: `resil.yaml:14
    /// resilience4j.retry.instances.inventory.max-attempts`, `env RESIL_…`,
    /// `attribute at src/inventory.rs:12`, `code`, or `default`.
    pub location: String,
}

/// A manual override, as the snapshot shows it.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct OverrideSnapshot {
    /// `FORCED_OPEN` or `DISABLED`.
    pub mode: &'static str,
    /// The mode it returns to.
    pub previous: &'static str,
    /// The operator's reason.
    pub reason: String,
    /// Since when, on the registry's clock.
    pub since: Duration,
    /// Until when, on the registry's clock (`None`: until an operator ends it).
    pub until: Option<Duration>,
}

impl Registry {
    /// Publishes every instance's metrics under Resilience4j's names through
    /// the `metrics` facade, plus `resil_registry_refused_instances{kind}`,
    /// the cardinality guard's refusals. Runs due override expiries and
    /// collects instance events first.
    #[cfg(feature = "metrics")]
    pub fn publish_metrics(&self) {
        super::metrics::publish(self);
    }

    /// Collects every instance's own events into its ring now (see
    /// [`RegistryBuilder::record_instance_events`](crate::RegistryBuilder::record_instance_events)).
    pub fn collect_instance_events(&self) {
        struct Collect<'a>(&'a Registry);
        impl KindVisitor for Collect<'_> {
            fn visit<P: Primitive>(&mut self) {
                for entry in self.0.store::<P>().entries.iter() {
                    entry.drain(self.0.inner.events.wall());
                }
            }
        }
        for_each_kind(&mut Collect(self));
    }

    /// A picture of every instance: kind, name, state, metrics, effective
    /// configuration with provenance, tags, manual override, health and
    /// recent events. Runs due override expiries first.
    pub fn snapshot(&self) -> Snapshot {
        self.run_due_overrides();
        struct Collect<'a> {
            registry: &'a Registry,
            instances: Vec<InstanceSnapshot>,
        }
        impl KindVisitor for Collect<'_> {
            fn visit<P: Primitive>(&mut self) {
                let start = self.instances.len();
                self.registry.snapshot_kind::<P>(&mut self.instances);
                let twins = &self.registry.store::<P>().twins;
                if twins.len() > 0 {
                    self.registry.snapshot_twins::<P>(&mut self.instances);
                    // Beside the kind's own instances, all in name order.
                    self.instances[start..].sort_by(|a, b| a.name.cmp(&b.name));
                }
            }
        }
        let mut collect = Collect {
            registry: self,
            instances: Vec::new(),
        };
        for_each_kind(&mut collect);
        let instances = collect.instances;
        let fallbacks = crate::fallback::all()
            .into_iter()
            .map(|(name, m)| FallbackSnapshot {
                name,
                degraded: m.by_cause().map(|(k, n)| (k.as_str(), n)).collect(),
                failed: m.failed(),
            })
            .collect();
        Snapshot {
            instances,
            fallbacks,
            management_requests: self.management_requests(),
            switches: self.switch_snapshots(),
            config: self.config_snapshot(),
            shadow: self.shadow_trial(),
        }
    }

    /// The twins of kind `P` (the rate limiter's Redis-backed limiters,
    /// whose config shows `backend = redis`), under `P`'s kind.
    fn snapshot_twins<P: Primitive>(&self, out: &mut Vec<InstanceSnapshot>) {
        let twins = &self.store::<P>().twins;
        for name in twins.names() {
            twins.with(&name, &mut |instance| {
                out.push(self.twin_snapshot::<P>(&name, instance));
            });
        }
    }

    /// One twin of kind `P` as the snapshot shows it.
    fn twin_snapshot<P: Primitive>(
        &self,
        name: &str,
        instance: &dyn Telemetry,
    ) -> InstanceSnapshot {
        {
            // The keys it shares with `P` resolve as `P`'s instance of the
            // same name; its own keys come from the file alone.
            let quota = self.labelled::<P>(name);
            let file = self.file_sources::<P>(name);
            let config = instance
                .config_values()
                .into_iter()
                .map(|(key, value)| {
                    let (source, location) = match (quota.value(key), file.get(key)) {
                        (Some(v), _) if v == value => quota.label(key),
                        (Some(_), _) => ("code".to_owned(), "set at run time".to_owned()),
                        (None, Some(source)) => (source.clone(), source.clone()),
                        (None, None) => ("default".to_owned(), "default".to_owned()),
                    };
                    ConfigValue {
                        key,
                        value,
                        source,
                        location,
                    }
                })
                .collect();
            let verdict = self.verdict::<P>(name, instance);
            InstanceSnapshot {
                kind: P::KIND.as_str(),
                state: instance.state_label(),
                metrics: metric_snapshots(instance),
                config,
                tags: self.tags::<P>(name),
                manual_override: None,
                health: verdict.status,
                health_reason: verdict.reason,
                health_indicator: verdict.takes_part,
                history: Vec::new(),
                recent_events: Vec::new(),
                name: name.to_owned(),
            }
        }
    }

    fn snapshot_kind<P: Primitive>(&self, out: &mut Vec<InstanceSnapshot>) {
        for name in self.names::<P>() {
            // Take what the entry holds and let its shard go before reading
            // settings: locks are always taken settings first, then shard.
            let (handle, history, recent_events) = {
                let Some(entry) = self.store::<P>().entries.get(name.as_str()) else {
                    continue;
                };
                entry.drain(self.inner.events.wall());
                (
                    Handle::from_slot(Arc::clone(&entry.slot)),
                    entry.slot.history.to_vec(),
                    entry.slot.ring.to_vec(),
                )
            };
            let instance: &P = &handle;
            let labels = self.labelled::<P>(&name);
            let config = instance
                .config_values()
                .into_iter()
                .map(|(key, value)| {
                    // The resolved value is the running one unless an
                    // operator changed it in place (a limit, a timeout).
                    let (source, location) = if labels.value(key) == Some(value.as_str()) {
                        labels.label(key)
                    } else {
                        ("code".to_owned(), "set at run time".to_owned())
                    };
                    ConfigValue {
                        key,
                        value,
                        source,
                        location,
                    }
                })
                .collect();
            let verdict = self.verdict::<P>(&name, instance);
            let manual_override = match P::KIND {
                Kind::CircuitBreaker => self.inner.overrides.get(&name).map(|o| OverrideSnapshot {
                    mode: o.mode.as_str(),
                    previous: o.previous.as_str(),
                    reason: o.reason.to_string(),
                    since: o.since,
                    until: o.until,
                }),
                _ => None,
            };
            out.push(InstanceSnapshot {
                kind: P::KIND.as_str(),
                state: instance.state_label(),
                metrics: metric_snapshots(instance),
                config,
                tags: self.tags::<P>(&name),
                manual_override,
                health: verdict.status,
                health_reason: verdict.reason,
                health_indicator: verdict.takes_part,
                history,
                recent_events,
                name,
            });
        }
    }

    /// The registry's health summary: every instance that takes part (see
    /// [`set_health_indicator`](Self::set_health_indicator)), and the worst
    /// status among them with the reasons.
    pub fn health(&self) -> Health {
        self.run_due_overrides();
        struct Collect<'a> {
            registry: &'a Registry,
            components: Vec<ComponentHealth>,
        }
        impl KindVisitor for Collect<'_> {
            fn visit<P: Primitive>(&mut self) {
                self.registry.health_kind::<P>(&mut self.components);
                self.registry.health_twins::<P>(&mut self.components);
            }
        }
        let mut collect = Collect {
            registry: self,
            components: Vec::new(),
        };
        for_each_kind(&mut collect);
        let mut components = collect.components;
        components.extend(super::inbound::health(self));
        Health::of(components)
    }

    /// The health of the twins of kind `P`, under `P`'s kind and its
    /// instance's health settings.
    fn health_twins<P: Primitive>(&self, out: &mut Vec<ComponentHealth>) {
        let twins = &self.store::<P>().twins;
        for name in twins.names() {
            twins.with(&name, &mut |instance| {
                let verdict = self.verdict::<P>(&name, instance);
                if verdict.takes_part {
                    out.push(ComponentHealth {
                        kind: P::KIND.as_str(),
                        name: name.clone(),
                        state: instance.state_label(),
                        status: verdict.status,
                        reason: verdict.reason,
                    });
                }
            });
        }
    }

    fn health_kind<P: Primitive>(&self, out: &mut Vec<ComponentHealth>) {
        // Names first, so no shard lock is held while settings are read.
        for name in self.names::<P>() {
            let Some(handle) = self.find::<P>(&name) else {
                continue;
            };
            let instance: &P = &handle;
            let verdict = self.verdict::<P>(&name, instance);
            if verdict.takes_part {
                out.push(ComponentHealth {
                    kind: P::KIND.as_str(),
                    state: instance.state_label(),
                    name,
                    status: verdict.status,
                    reason: verdict.reason,
                });
            }
        }
    }

    /// The one health verdict on instance `name` of kind `P` that every
    /// reader shows ([`health`](Self::health), [`snapshot`](Self::snapshot),
    /// and through them the actuator's health, dashboard and event stream):
    /// the instance's own status and reason, an operator's reason for a
    /// breaker's manual override, and DOWN shown as DEGRADED unless the
    /// instance may fail the summary (`allow-health-indicator-to-fail`).
    pub(crate) fn verdict<P: Primitive>(
        &self,
        name: &str,
        instance: &(impl Telemetry + ?Sized),
    ) -> Verdict {
        let (takes_part, allow_fail) = self.health_settings::<P>(name);
        let (mut status, mut reason) = instance.health();
        if P::KIND == Kind::CircuitBreaker {
            if let Some(o) = self.inner.overrides.get(name) {
                reason = Some(format!("{} by an operator: {}", o.mode, o.reason));
            }
        }
        if status == Status::Down && !allow_fail {
            status = Status::Degraded;
        }
        Verdict {
            status,
            reason: if status == Status::Up { None } else { reason },
            takes_part,
        }
    }

    // Which instances take part in the health summary, and which may fail it.

    /// Whether the instance of kind `P` called `name` takes part in the
    /// health summary ([`DEFAULT_REGISTER_HEALTH_INDICATOR`](crate::DEFAULT_REGISTER_HEALTH_INDICATOR): yes).
    /// Resilience4j's `register-health-indicator`; set here, it wins over the
    /// config file's key.
    pub fn set_health_indicator<P: Primitive>(&self, name: &str, enabled: bool) {
        let mut code = self.store::<P>().code.write();
        code.instances
            .entry(name.to_owned())
            .or_default()
            .health_indicator = Some(enabled);
    }

    /// Whether the instance's DOWN may make the summary DOWN
    /// ([`DEFAULT_ALLOW_HEALTH_INDICATOR_TO_FAIL`](crate::DEFAULT_ALLOW_HEALTH_INDICATOR_TO_FAIL): no, it shows DEGRADED, so
    /// a downstream's outage never takes this service out of rotation).
    /// Resilience4j's `allow-health-indicator-to-fail`; set here, it wins
    /// over the config file's key.
    pub fn allow_health_indicator_to_fail<P: Primitive>(&self, name: &str, allow: bool) {
        let mut code = self.store::<P>().code.write();
        code.instances
            .entry(name.to_owned())
            .or_default()
            .allow_health_indicator_to_fail = Some(allow);
    }

    /// `(takes part, may fail)` for an instance: code
    /// ([`set_health_indicator`](Self::set_health_indicator),
    /// [`allow_health_indicator_to_fail`](Self::allow_health_indicator_to_fail))
    /// over the file's `register-health-indicator` and
    /// `allow-health-indicator-to-fail`, over the defaults: every instance
    /// takes part, and none may fail ([`DEFAULT_ALLOW_HEALTH_INDICATOR_TO_FAIL`](crate::DEFAULT_ALLOW_HEALTH_INDICATOR_TO_FAIL)).
    pub(crate) fn health_settings<P: Primitive>(&self, name: &str) -> (bool, bool) {
        let code = self.store::<P>().code.read();
        let i = code.instances.get(name);
        let file = self.file();
        let entry = plan::<P>(&file, &code, name).ok().map(|p| p.entry);
        (
            i.and_then(|i| i.health_indicator)
                .or_else(|| entry.and_then(|e| e.register_health_indicator()))
                .unwrap_or(DEFAULT_REGISTER_HEALTH_INDICATOR),
            i.and_then(|i| i.allow_health_indicator_to_fail)
                .or_else(|| entry.and_then(|e| e.allow_health_indicator_to_fail()))
                .unwrap_or(DEFAULT_ALLOW_HEALTH_INDICATOR_TO_FAIL),
        )
    }

    // Where each configuration value of an instance came from.

    /// Which layer set each configuration value of instance `name`,
    /// recorded while resolving it again (see [`Labelled`]).
    pub(crate) fn labelled<P: Primitive>(&self, name: &str) -> Labelled<'static> {
        let site = self
            .inner
            .sites
            .lock()
            .get(&(P::KIND, name.to_owned()))
            .copied();
        let mut labelled = Labelled::new::<P>(site);
        let code = self.store::<P>().code.read();
        let file = self.file();
        let _ = resolve_layers::<P>(&self.inner.classes, &file, &code, name, &mut labelled);
        labelled
    }

    /// Where each key the file sets for instance `name` of kind `P` came
    /// from (`instance`, a config's name, an env variable); keys the file
    /// leaves unset are absent.
    pub(crate) fn file_sources<P: Primitive>(&self, name: &str) -> HashMap<String, String> {
        let code = self.store::<P>().code.read();
        let file = self.file();
        let Ok(plan) = plan::<P>(&file, &code, name) else {
            return HashMap::new();
        };
        plan.entry
            .provenance()
            .into_iter()
            .filter(|p| p.path.is_some())
            .map(|p| (p.key, p.source.to_string()))
            .collect()
    }
}

/// One instance's health as every reader shows it ([`Registry::verdict`]).
pub(crate) struct Verdict {
    pub(crate) status: Status,
    pub(crate) reason: Option<String>,
    /// Whether it takes part in the summary.
    pub(crate) takes_part: bool,
}

/// An instance's metrics as the snapshot shows them.
fn metric_snapshots(instance: &(impl Telemetry + ?Sized)) -> Vec<MetricSnapshot> {
    instance
        .metric_values()
        .into_iter()
        .map(|m| MetricSnapshot {
            name: m.name,
            kind: m.tag,
            label: m.tag_key,
            metric_type: m.kind,
            description: m.help,
            value: m.value,
            total_seconds: m.timer.as_ref().map(|t| t.sum),
            max_seconds: m.timer.as_ref().map(|t| t.max),
        })
        .collect()
}
