//! What the snapshot says is in force besides the instances: the operators'
//! switches, the config version and where it came from, the followed config
//! sources' reachability, and a running shadow trial.

use crate::registry::Registry;
use crate::telemetry::ring::iso8601;
use crate::versions::VersionStatus;

/// One operator switch in force, as the snapshot shows it
/// ([`Registry::switches`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SwitchSnapshot {
    /// The instance's kind ([`Kind::as_str`](crate::Kind::as_str)).
    pub kind: &'static str,
    /// The instance's name.
    pub name: String,
    /// What was switched (`force_open`, `chaos_on`, `rate_limit 5`, …).
    pub action: String,
    /// Why, as the operator said.
    pub reason: String,
    /// Milliseconds left before it ends by itself; `None`: until released.
    pub ttl_left_ms: Option<u64>,
}

/// The config in force and its sources, as the snapshot shows them.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ConfigSnapshot {
    /// The version in force ([`Registry::active_config_version`]); `None`
    /// before any config was applied.
    pub version: Option<u64>,
    /// Its content hash.
    pub hash: Option<String>,
    /// Where it came from (`file /etc/app/application.yaml`, `management by
    /// alice`, `push from etcd …`).
    pub source: Option<String>,
    /// Since when it is in force (ISO-8601 UTC).
    pub since: Option<String>,
    /// For a rollback: the version it applied again.
    pub rollback_of: Option<u64>,
    /// For a promoted shadow trial: the staged version.
    pub promoted_from: Option<u64>,
    /// Reload attempts since start: applied.
    pub reloads_applied: u64,
    /// Reload attempts since start: refused (nothing changed).
    pub reloads_refused: u64,
    /// The followed config sources (the watched file, etcd, …) and whether
    /// each can be reached.
    pub sources: Vec<SourceSnapshot>,
}

/// One followed config source.
#[derive(Debug, Clone, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct SourceSnapshot {
    /// Its name (`file /etc/app/application.yaml`, `etcd http://…/app/`).
    pub name: String,
    /// Whether it answered the last time it was asked.
    pub reachable: bool,
    /// Since when it is (un)reachable (ISO-8601 UTC).
    pub since: String,
    /// Why it cannot be reached.
    pub error: Option<String>,
}

impl Registry {
    /// The switches in force, for the snapshot.
    pub(crate) fn switch_snapshots(&self) -> Vec<SwitchSnapshot> {
        self.switches()
            .into_iter()
            .map(|s| SwitchSnapshot {
                kind: s.action.kind().as_str(),
                name: s.name,
                action: s.action.to_string(),
                reason: s.reason,
                ttl_left_ms: s.ttl.map(|t| t.as_millis() as u64),
            })
            .collect()
    }

    /// The config in force and its sources, for the snapshot.
    pub(crate) fn config_snapshot(&self) -> ConfigSnapshot {
        let reloads = self.config_reloads();
        let active = self.active_config_version();
        let version = active.and_then(|id| {
            self.config_versions()
                .into_iter()
                .find(|v| v.id == id && v.status == VersionStatus::Applied)
        });
        ConfigSnapshot {
            version: active,
            hash: version.as_ref().map(|v| v.hash.clone()),
            source: version.as_ref().map(|v| v.source.to_string()),
            since: version.as_ref().map(|v| v.at_iso8601()),
            rollback_of: version.as_ref().and_then(|v| v.rollback_of),
            promoted_from: version.as_ref().and_then(|v| v.promoted_from),
            reloads_applied: reloads.applied,
            reloads_refused: reloads.refused,
            sources: self
                .config_sources()
                .into_iter()
                .map(|s| SourceSnapshot {
                    name: s.name,
                    reachable: s.reachable,
                    since: iso8601(s.since),
                    error: s.error,
                })
                .collect(),
        }
    }
}
