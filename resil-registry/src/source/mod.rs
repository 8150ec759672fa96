//! Config sources: where a registry's config comes from and is followed
//! for changes. A [`ConfigSource`] runs on a thread of its own and hands
//! each new config to its [`Feed`]; the registry applies it as a reload
//! (a version, all or nothing) and keeps the last good config when one is
//! refused or the source cannot be reached. The watched file
//! (`FileSource`, feature `watch`) and etcd v3 (`EtcdSource`, feature
//! `etcd`) are the two implementations.

use std::path::Path;
use std::sync::{Arc, Weak};
use std::time::{Duration, SystemTime};

use crate::config::{ConfigFileError, FileConfig};
use crate::registry::{Inner, Registry};
use crate::reload::{ReloadError, ReloadReport};
use crate::versions::VersionSource;

#[cfg(feature = "etcd")]
mod etcd;
#[cfg(feature = "watch")]
mod file;

#[cfg(feature = "etcd")]
pub use self::etcd::{EtcdSource, DEFAULT_ETCD_RETRY};
#[cfg(feature = "watch")]
pub use self::file::{FileSource, WatchError};

/// Where a config comes from, followed for changes: a watched file, a key
/// prefix in etcd, … Implementations run until their [`Feed`] says the
/// registry is gone.
pub trait ConfigSource: Send + 'static {
    /// A label for logs, versions and [`Registry::config_sources`]
    /// (`file /etc/app/resil.yaml`, `etcd http://127.0.0.1:2379 /resil/`).
    fn name(&self) -> String;

    /// Follows the source: hands every new config to `feed` (the first one
    /// too), says when the source cannot be reached and when it can again,
    /// and returns once [`Feed::alive`] is false. Runs on a thread of its
    /// own: blocking is fine, and so is a runtime of its own.
    fn run(self: Box<Self>, feed: Feed);
}

/// Whether a followed source can be reached, as it last said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceStatus {
    /// The source's [`name`](ConfigSource::name).
    pub name: String,
    /// Whether it answered the last time it was asked.
    pub reachable: bool,
    /// Since when it is (un)reachable (wall clock).
    pub since: SystemTime,
    /// Why it cannot be reached (`None` while reachable).
    pub error: Option<String>,
}

/// What a [`ConfigSource`] hands its configs to: the registry (held
/// weakly, so a source never keeps a registry alive) and the source's
/// status.
pub struct Feed {
    registry: Weak<Inner>,
    name: String,
}

impl Feed {
    /// Whether the registry is still there (else the source returns).
    pub fn alive(&self) -> bool {
        self.registry.strong_count() > 0
    }

    fn registry(&self) -> Option<Registry> {
        self.registry.upgrade().map(|inner| Registry { inner })
    }

    /// Applies a config the source produced (or records why it could not be
    /// loaded) as a version whose source is a push from this source.
    /// `None` when the registry is gone.
    pub fn push(
        &self,
        file: Result<FileConfig, ConfigFileError>,
    ) -> Option<Result<ReloadReport, ReloadError>> {
        let registry = self.registry()?;
        let source = VersionSource::Push(self.name.clone());
        Some(match file {
            Ok(file) => registry.reload_from(file, source),
            Err(e) => {
                let result = Err(ReloadError::File(e));
                registry.record_refused(source, &result);
                result
            }
        })
    }

    /// Reloads the file at `path` (with the process environment), as
    /// [`Registry::reload_file`]. `None` when the registry is gone.
    pub fn reload_file(&self, path: &Path) -> Option<Result<ReloadReport, ReloadError>> {
        Some(self.registry()?.reload_file(path))
    }

    /// The source answers (again): logged once when it was unreachable.
    pub fn reachable(&self) {
        self.set(true, None);
    }

    /// The source cannot be reached: the registry keeps the config in
    /// force, and says so (one WARN line when it becomes unreachable, the
    /// status in [`Registry::config_sources`]).
    pub fn unreachable(&self, why: &str) {
        self.set(false, Some(why.to_owned()));
    }

    fn set(&self, reachable: bool, error: Option<String>) {
        let Some(registry) = self.registry() else {
            return;
        };
        let changed = registry
            .inner
            .versions
            .set_source(&self.name, reachable, error.clone());
        match (changed, reachable) {
            (false, _) => {}
            (true, true) => tracing::info!(
                target: "resil::config::source",
                source = %self.name,
                "config source reachable"
            ),
            (true, false) => tracing::warn!(
                target: "resil::config::source",
                source = %self.name,
                error = error.as_deref().unwrap_or(""),
                active_version = registry.active_config_version().unwrap_or(0),
                "config source unreachable: the config in force stays"
            ),
        }
    }
}

impl Registry {
    /// Follows `source` on a thread of its own: every config it produces is
    /// applied as a reload (a version; a refused one changes nothing), and
    /// its reachability shows in [`config_sources`](Self::config_sources).
    /// The thread ends with the registry.
    pub fn follow_source(&self, source: impl ConfigSource) -> std::io::Result<()> {
        let name = source.name();
        self.inner.versions.set_source(&name, true, None);
        let feed = Feed {
            registry: Arc::downgrade(&self.inner),
            name: name.clone(),
        };
        let source: Box<dyn ConfigSource> = Box::new(source);
        std::thread::Builder::new()
            .name("resil-config-source".into())
            .spawn(move || source.run(feed))?;
        tracing::info!(target: "resil::config::source", source = %name, "following a config source");
        Ok(())
    }

    /// Every source the registry follows, and whether it can be reached.
    pub fn config_sources(&self) -> Vec<SourceStatus> {
        self.inner.versions.sources()
    }

    /// Waits until the followed source `name` is (un)reachable as asked, at
    /// most `timeout`; whether it is.
    pub fn wait_for_source(&self, name: &str, reachable: bool, timeout: Duration) -> bool {
        self.inner.versions.wait_source(name, reachable, timeout)
    }
}
