//! Config versions: every config the registry applied (and every reload it
//! refused) is a [`ConfigVersion`] with a content hash, a time and a
//! source, in a bounded history; two versions diff as key-level changes,
//! and an earlier applied version can be applied again
//! ([`Registry::rollback`]). A wrong value that loads (a valid but wrong
//! threshold pushed to every replica) is undone without editing the file.

use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::SystemTime;

use parking_lot::{Condvar, Mutex};

use crate::config::FileConfig;
use crate::primitive::Primitive;
use crate::registry::Registry;
use crate::reload::{ReloadError, ReloadReport};
use crate::source::SourceStatus;
use crate::store::{for_each_kind, KindVisitor};

/// Versions kept by default (see [`RegistryBuilder::config_history`](crate::RegistryBuilder::config_history)).
pub const DEFAULT_CONFIG_HISTORY: usize = 32;

/// Where a config came from.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum VersionSource {
    /// A file, by its path (a reload, the watcher).
    File(PathBuf),
    /// The `RESIL_…` environment variables alone.
    Env,
    /// Text or a `FileConfig` built by the program (no file named).
    Code,
    /// An operator's management action (a rollback), with who asked.
    Management(String),
    /// A config source that pushes changes (etcd, …), by its name and key.
    Push(String),
}

impl fmt::Display for VersionSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VersionSource::File(path) => write!(f, "file {}", path.display()),
            VersionSource::Env => f.write_str("env"),
            VersionSource::Code => f.write_str("code"),
            VersionSource::Management(who) => write!(f, "management by {who}"),
            VersionSource::Push(from) => write!(f, "push from {from}"),
        }
    }
}

/// Whether a version was applied or refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum VersionStatus {
    /// Applied (it may since have been replaced by a later one).
    Applied,
    /// Refused: nothing was applied; every problem, as the reload said it.
    Refused(Vec<String>),
    /// Staged as a shadow trial ([`Registry::stage_shadow`]): valid, run
    /// beside the config in force, never applied itself (a promotion
    /// applies it as a new version).
    Shadow,
}

/// One config the registry was given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigVersion {
    /// Its number, from 1, in the order the registry was given them.
    pub id: u64,
    /// The content hash (FNV-1a, 16 hex digits) of its keys and values, so
    /// that the same settings written differently hash the same.
    pub hash: String,
    /// When it was applied or refused (wall clock).
    pub at: SystemTime,
    /// Where it came from.
    pub source: VersionSource,
    /// Applied or refused (with the problems).
    pub status: VersionStatus,
    /// For a rollback: the version it applied again.
    pub rollback_of: Option<u64>,
    /// For a promoted shadow trial: the staged version it applied.
    pub promoted_from: Option<u64>,
}

impl ConfigVersion {
    /// [`at`](Self::at) as ISO-8601 UTC with milliseconds
    /// (`2026-12-07T01:52:45.123Z`), as events write their time.
    pub fn at_iso8601(&self) -> String {
        crate::telemetry::ring::iso8601(self.at)
    }
}

/// One key that differs between two versions.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyChange {
    /// The full key path (`resilience4j.circuitbreaker.instances.a.sliding-window-size`).
    pub key: String,
    /// Its value in the first version; `None`: not set there.
    pub before: Option<String>,
    /// Its value in the second version; `None`: not set there.
    pub after: Option<String>,
}

/// Why a rollback or a diff could not be done.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum VersionError {
    /// No version with that number is kept (too old, or never existed).
    Unknown(u64),
    /// The version was refused: there is nothing to apply again.
    Refused(u64),
    /// The version no longer applies (an instance's code settings do not
    /// fit it any more); nothing changed.
    Reload(ReloadError),
}

impl fmt::Display for VersionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VersionError::Unknown(id) => write!(f, "no config version {id} is kept"),
            VersionError::Refused(id) => {
                write!(f, "config version {id} was refused: it cannot be applied")
            }
            VersionError::Reload(e) => write!(f, "rollback refused: {e}"),
        }
    }
}

impl std::error::Error for VersionError {}

/// Reload attempts by result, for `resil_config_reloads_total{result}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "serde", derive(serde::Serialize))]
pub struct ConfigReloads {
    /// Reloads that applied a config.
    pub applied: u64,
    /// Reloads refused (nothing changed).
    pub refused: u64,
}

struct Kept {
    version: ConfigVersion,
    /// The applied config (for a diff and a rollback); `None` if refused.
    file: Option<Arc<FileConfig>>,
    /// Its keys and values.
    keys: BTreeMap<String, String>,
}

/// The registry's bounded history and its counters.
pub(crate) struct History {
    cap: usize,
    next: AtomicU64,
    kept: Mutex<VecDeque<Kept>>,
    /// Notified whenever a version is recorded.
    recorded: Condvar,
    active: AtomicU64,
    applied: AtomicU64,
    refused: AtomicU64,
    /// The followed sources' reachability.
    sources: Mutex<Vec<SourceStatus>>,
    /// Notified whenever a source's reachability changes.
    source_changed: Condvar,
}

impl History {
    pub(crate) fn new(cap: usize) -> History {
        History {
            cap: cap.max(1),
            next: AtomicU64::new(1),
            kept: Mutex::new(VecDeque::new()),
            recorded: Condvar::new(),
            active: AtomicU64::new(0),
            applied: AtomicU64::new(0),
            refused: AtomicU64::new(0),
            sources: Mutex::new(Vec::new()),
            source_changed: Condvar::new(),
        }
    }

    /// Sets the source `name`'s reachability; whether it changed.
    pub(crate) fn set_source(&self, name: &str, reachable: bool, error: Option<String>) -> bool {
        let mut sources = self.sources.lock();
        let changed = match sources.iter_mut().find(|s| s.name == name) {
            Some(s) if s.reachable == reachable => {
                s.error = error;
                false
            }
            Some(s) => {
                s.reachable = reachable;
                s.since = SystemTime::now();
                s.error = error;
                true
            }
            None => {
                sources.push(SourceStatus {
                    name: name.to_owned(),
                    reachable,
                    since: SystemTime::now(),
                    error,
                });
                true
            }
        };
        drop(sources);
        self.source_changed.notify_all();
        changed
    }

    pub(crate) fn sources(&self) -> Vec<SourceStatus> {
        self.sources.lock().clone()
    }

    pub(crate) fn wait_source(
        &self,
        name: &str,
        reachable: bool,
        timeout: std::time::Duration,
    ) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        let mut sources = self.sources.lock();
        let done =
            |s: &Vec<SourceStatus>| s.iter().any(|s| s.name == name && s.reachable == reachable);
        while !done(&sources) {
            if self
                .source_changed
                .wait_until(&mut sources, deadline)
                .timed_out()
            {
                return done(&sources);
            }
        }
        true
    }

    /// The number the next version will get (stable under the reload lock).
    pub(crate) fn peek_next(&self) -> u64 {
        self.next.load(Ordering::Acquire)
    }

    fn push(&self, kept: Kept) {
        let mut all = self.kept.lock();
        all.push_back(kept);
        while all.len() > self.cap {
            // The active version is never dropped while another can go.
            let active = self.active.load(Ordering::Acquire);
            let victim = all.iter().position(|k| k.version.id != active).unwrap_or(0);
            all.remove(victim);
        }
        drop(all);
        self.recorded.notify_all();
    }
}

/// The keys and values `file` sets, by full key path (defaults left out;
/// credentials in URLs masked).
pub(crate) fn keys_of(file: &FileConfig) -> BTreeMap<String, String> {
    struct Keys<'a> {
        file: &'a FileConfig,
        out: BTreeMap<String, String>,
    }
    impl KindVisitor for Keys<'_> {
        fn visit<P: Primitive>(&mut self) {
            let section = P::section(self.file);
            let entries = std::iter::once(section.default_config())
                .chain(section.config_names().filter_map(|n| section.config(n)))
                .chain(section.instances().map(|(_, r)| r));
            for entry in entries {
                for p in entry.provenance() {
                    if let (Some(path), Some(value)) = (p.path, p.value) {
                        self.out.insert(path, masked(&value));
                    }
                }
            }
        }
    }
    let mut keys = Keys {
        file,
        out: BTreeMap::new(),
    };
    for_each_kind(&mut keys);
    keys.out
}

/// `value` with the password of a `scheme://user:password@host` URL masked.
fn masked(value: &str) -> String {
    let Some((scheme, rest)) = value.split_once("://") else {
        return value.to_owned();
    };
    let Some((credentials, host)) = rest.split_once('@') else {
        return value.to_owned();
    };
    match credentials.split_once(':') {
        Some((user, _)) => format!("{scheme}://{user}:***@{host}"),
        None => value.to_owned(),
    }
}

/// FNV-1a over every key and value, in key order.
fn hash_of(keys: &BTreeMap<String, String>) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for (k, v) in keys {
        for b in k.bytes().chain([0]).chain(v.bytes()).chain([0]) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    format!("{h:016x}")
}

/// Key-level changes from `a` to `b`, in key order.
fn diff(a: &BTreeMap<String, String>, b: &BTreeMap<String, String>) -> Vec<KeyChange> {
    let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
    keys.sort();
    keys.dedup();
    keys.into_iter()
        .filter(|k| a.get(*k) != b.get(*k))
        .map(|k| KeyChange {
            key: k.clone(),
            before: a.get(k).cloned(),
            after: b.get(k).cloned(),
        })
        .collect()
}

impl Registry {
    /// Records the outcome of one reload of `file` from `source`: a version
    /// in the history, one count and one log line (written before waiters
    /// are told). Called under the reload lock.
    pub(crate) fn record_version(
        &self,
        file: Option<&Arc<FileConfig>>,
        source: VersionSource,
        result: &Result<ReloadReport, ReloadError>,
        rollback_of: Option<u64>,
        promoted_from: Option<u64>,
    ) -> u64 {
        let history = &self.inner.versions;
        let keys = file.map(|f| keys_of(f)).unwrap_or_default();
        let outcome = match result {
            Ok(_) => Ok(()),
            Err(e) => Err(e.problems()),
        };
        let applied = outcome.is_ok();
        let id = history.next.fetch_add(1, Ordering::AcqRel);
        crate::reload::log_attempt(id, &source.to_string(), result);
        let (status, file) = match outcome {
            Ok(()) => {
                history.applied.fetch_add(1, Ordering::Relaxed);
                history.active.store(id, Ordering::Release);
                (VersionStatus::Applied, file.filter(|_| applied).cloned())
            }
            Err(problems) => {
                history.refused.fetch_add(1, Ordering::Relaxed);
                (VersionStatus::Refused(problems), None)
            }
        };
        history.push(Kept {
            version: ConfigVersion {
                id,
                hash: hash_of(&keys),
                at: self.inner.events.wall().now().1,
                source,
                status,
                rollback_of,
                promoted_from,
            },
            file,
            keys,
        });
        id
    }

    /// Records `file`, staged as a shadow trial from `source`: a version
    /// with status [`VersionStatus::Shadow`] (not counted as a reload, not
    /// active). Called under the reload lock.
    pub(crate) fn record_staged(&self, file: &Arc<FileConfig>, source: VersionSource) -> u64 {
        let history = &self.inner.versions;
        let keys = keys_of(file);
        let id = history.next.fetch_add(1, Ordering::AcqRel);
        history.push(Kept {
            version: ConfigVersion {
                id,
                hash: hash_of(&keys),
                at: self.inner.events.wall().now().1,
                source,
                status: VersionStatus::Shadow,
                rollback_of: None,
                promoted_from: None,
            },
            file: Some(Arc::clone(file)),
            keys,
        });
        id
    }

    /// The config of the kept version `id`, unless it was refused.
    pub(crate) fn kept_file(&self, id: u64) -> Result<Arc<FileConfig>, VersionError> {
        let kept = self.inner.versions.kept.lock();
        let found = kept
            .iter()
            .find(|k| k.version.id == id)
            .ok_or(VersionError::Unknown(id))?;
        found.file.clone().ok_or(VersionError::Refused(id))
    }

    /// Records a config that could not even be loaded from `source` as a
    /// refused version.
    pub(crate) fn record_refused(
        &self,
        source: VersionSource,
        result: &Result<ReloadReport, ReloadError>,
    ) {
        if result.is_ok() {
            return;
        }
        let _one_at_a_time = self.inner.reload_lock.lock();
        self.record_version(None, source, result, None, None);
    }

    /// Every version kept, oldest first (at most
    /// [`config_history`](crate::RegistryBuilder::config_history) of them;
    /// the one in force is never dropped).
    pub fn config_versions(&self) -> Vec<ConfigVersion> {
        let kept = self.inner.versions.kept.lock();
        kept.iter().map(|k| k.version.clone()).collect()
    }

    /// The number of the version in force (`None` before any config was
    /// applied).
    pub fn active_config_version(&self) -> Option<u64> {
        match self.inner.versions.active.load(Ordering::Acquire) {
            0 => None,
            id => Some(id),
        }
    }

    /// The keys that differ from version `from` to version `to` (a refused
    /// version has no keys: diff it against nothing).
    pub fn config_diff(&self, from: u64, to: u64) -> Result<Vec<KeyChange>, VersionError> {
        let kept = self.inner.versions.kept.lock();
        let find = |id: u64| {
            kept.iter()
                .find(|k| k.version.id == id)
                .ok_or(VersionError::Unknown(id))
        };
        Ok(diff(&find(from)?.keys, &find(to)?.keys))
    }

    /// Applies the earlier applied version `id` again, as a new version
    /// whose source is management by `who` (every reload rule holds: all or
    /// nothing, operator switches kept). An authorization check belongs to
    /// the caller (the actuator's management endpoint does it).
    pub fn rollback(&self, id: u64, who: &str) -> Result<ReloadReport, VersionError> {
        let file = self.kept_file(id)?;
        tracing::warn!(version = id, who, "config rollback");
        self.reload_versioned(
            (*file).clone(),
            VersionSource::Management(who.to_owned()),
            Some(id),
            None,
        )
        .map_err(VersionError::Reload)
    }

    /// Waits until version `id` has been recorded (applied or refused), at
    /// most `timeout`; whether it was. A program (or a test) that changed
    /// a watched file or a pushed config waits for the reload this way.
    pub fn wait_for_config_version(&self, id: u64, timeout: std::time::Duration) -> bool {
        let history = &self.inner.versions;
        let deadline = std::time::Instant::now() + timeout;
        let mut kept = history.kept.lock();
        let done = |kept: &VecDeque<Kept>| kept.back().is_some_and(|k| k.version.id >= id);
        while !done(&kept) {
            if history.recorded.wait_until(&mut kept, deadline).timed_out() {
                return done(&kept);
            }
        }
        true
    }

    /// Reload attempts since the registry was built, by result.
    pub fn config_reloads(&self) -> ConfigReloads {
        let h = &self.inner.versions;
        ConfigReloads {
            applied: h.applied.load(Ordering::Relaxed),
            refused: h.refused.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_url_password_is_masked_and_other_values_are_kept() {
        assert_eq!(
            masked("redis://app:s3cret@localhost:6379/0"),
            "redis://app:***@localhost:6379/0"
        );
        assert_eq!(masked("redis://localhost"), "redis://localhost");
        assert_eq!(masked("10s"), "10s");
    }

    #[test]
    fn the_diff_lists_changed_added_and_removed_keys_in_order() {
        let a: BTreeMap<String, String> = [("a", "1"), ("b", "2")]
            .map(|(k, v)| (k.into(), v.into()))
            .into();
        let b: BTreeMap<String, String> = [("b", "3"), ("c", "4")]
            .map(|(k, v)| (k.into(), v.into()))
            .into();
        let d = diff(&a, &b);
        let got: Vec<_> = d
            .iter()
            .map(|c| (c.key.as_str(), c.before.as_deref(), c.after.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                ("a", Some("1"), None),
                ("b", Some("2"), Some("3")),
                ("c", None, Some("4"))
            ]
        );
        assert_ne!(hash_of(&a), hash_of(&b));
        assert_eq!(hash_of(&a), hash_of(&a.clone()));
    }
}
