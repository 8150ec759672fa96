//! The config file watcher (feature `watch`): reloads the registry's file
//! when it changes, in the way Kubernetes changes a mounted ConfigMap.
//!
//! The kubelet never writes the file: it writes a new timestamped
//! directory, points a `..data_tmp` symlink at it and renames that over
//! `..data` (an atomic swap), and the file the program opened is a symlink
//! through `..data`. A watcher on the file's inode sees nothing. So this
//! one watches the **directory** (every entry, whatever event the OS
//! reports: create, rename, remove, modify), waits until the burst has been
//! quiet for the debounce, then reads the file again through its path —
//! symlinks resolved anew — and reloads once if its bytes changed. A
//! refused file changes nothing (a reload is all or nothing) and is listed
//! as a refused version; the next change is tried again.
//!
//! Each attempt is one log line (target `resil::config::watch`: INFO when
//! applied, WARN when refused, with the version and the problems), one
//! version in [`Registry::config_versions`] and one count in
//! [`Registry::config_reloads`] (`resil_config_reloads_total{result}`).
//! [`Registry::follow_file`] values are rebuilt by the same reload: the
//! watcher is one more way in, not a second loader.

use std::time::Duration;

/// The watcher's default debounce: a burst of events quiet for this long
/// makes one reload.
pub const DEFAULT_WATCH_DEBOUNCE: Duration = Duration::from_millis(500);

/// Whether the registry watches the files it loads, and the watcher once
/// started.
pub(crate) struct WatchState {
    /// The builder's `watch_config`.
    pub(crate) enabled: bool,
    /// The builder's `watch_debounce`.
    #[cfg_attr(not(feature = "watch"), allow(dead_code))]
    pub(crate) debounce: Option<Duration>,
    #[cfg(feature = "watch")]
    running: parking_lot::Mutex<Option<imp::Watching>>,
}

impl WatchState {
    pub(crate) fn new(enabled: bool, debounce: Option<Duration>) -> WatchState {
        WatchState {
            enabled,
            debounce,
            #[cfg(feature = "watch")]
            running: parking_lot::Mutex::new(None),
        }
    }
}

/// Whether a loaded file asks to be watched (`resil.config.watch`).
pub(crate) fn file_asks(file: &crate::FileConfig) -> bool {
    file.property(crate::config::http::WATCH_KEY) == Some("true")
}

#[cfg(feature = "watch")]
pub use self::imp::WatchError;

#[cfg(feature = "watch")]
mod imp {
    use std::fmt;
    use std::path::{Path, PathBuf};
    use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
    use std::sync::{Arc, Weak};
    use std::time::Duration;

    use notify::{RecursiveMode, Watcher};

    use super::DEFAULT_WATCH_DEBOUNCE;
    use crate::config::http::WATCH_DEBOUNCE_KEY;
    use crate::config::parse_duration;
    use crate::registry::{Inner, Registry};
    use crate::versions::VersionStatus;

    /// Why a file cannot be watched.
    #[derive(Debug)]
    #[non_exhaustive]
    pub enum WatchError {
        /// The path has no parent directory to watch.
        NoDirectory(PathBuf),
        /// The OS refused the watch (the directory is missing, the inotify
        /// limit is reached, …).
        Notify(PathBuf, notify::Error),
    }

    impl fmt::Display for WatchError {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            match self {
                WatchError::NoDirectory(p) => {
                    write!(f, "cannot watch `{}`: it has no directory", p.display())
                }
                WatchError::Notify(p, e) => write!(f, "cannot watch `{}`: {e}", p.display()),
            }
        }
    }

    impl std::error::Error for WatchError {}

    /// A running watcher: dropping it (with the registry) stops the thread.
    pub(super) struct Watching {
        path: PathBuf,
        _watcher: notify::RecommendedWatcher,
    }

    impl Registry {
        /// Watches the config file at `path` and reloads it (with the
        /// process environment, as [`reload_file`](Self::reload_file))
        /// whenever its content changes: see the module docs of the
        /// watcher (the directory is watched, not the file, so a
        /// Kubernetes ConfigMap's `..data` swap is seen; a burst of events
        /// makes one reload after `debounce`; a refused file keeps the
        /// config in force). Replaces an earlier watch. The debounce is
        /// the file's `resil.config.watch-debounce`, else the builder's
        /// [`watch_debounce`](crate::RegistryBuilder::watch_debounce), else
        /// [`DEFAULT_WATCH_DEBOUNCE`]. The watcher stops with the registry.
        ///
        /// [`RegistryBuilder::watch_config`](crate::RegistryBuilder::watch_config)
        /// or the file key `resil.config.watch: true` call this for the
        /// file a registry loads with `reload_file`.
        pub fn watch_file(&self, path: impl AsRef<Path>) -> Result<(), WatchError> {
            let path = path.as_ref().to_path_buf();
            let dir = match path.parent() {
                Some(d) if d.as_os_str().is_empty() => PathBuf::from("."),
                Some(d) => d.to_path_buf(),
                None => return Err(WatchError::NoDirectory(path)),
            };
            let debounce = self
                .file()
                .property(WATCH_DEBOUNCE_KEY)
                .and_then(|d| parse_duration(d).ok())
                .or(self.inner.watch.debounce)
                .unwrap_or(DEFAULT_WATCH_DEBOUNCE);
            let (tx, rx) = channel();
            let mut watcher = notify::recommended_watcher(move |event| {
                let _ = tx.send(event);
            })
            .map_err(|e| WatchError::Notify(path.clone(), e))?;
            watcher
                .watch(&dir, RecursiveMode::NonRecursive)
                .map_err(|e| WatchError::Notify(dir.clone(), e))?;
            let seen = fingerprint(&path);
            let weak = Arc::downgrade(&self.inner);
            let thread_path = path.clone();
            std::thread::Builder::new()
                .name("resil-config-watch".into())
                .spawn(move || follow(weak, rx, thread_path, debounce, seen))
                .map_err(|e| WatchError::Notify(path.clone(), notify::Error::io(e)))?;
            tracing::info!(
                target: "resil::config::watch",
                path = %path.display(),
                directory = %dir.display(),
                debounce = ?debounce,
                "watching the config file"
            );
            *self.inner.watch.running.lock() = Some(Watching {
                path,
                _watcher: watcher,
            });
            Ok(())
        }

        /// The file the watcher follows, if one runs.
        pub fn watched_file(&self) -> Option<PathBuf> {
            self.inner
                .watch
                .running
                .lock()
                .as_ref()
                .map(|w| w.path.clone())
        }

        /// Starts watching `path` after it loaded, when the builder or the
        /// file asks and it is not watched yet.
        pub(crate) fn watch_if_asked(&self, path: &Path) {
            let asked = self.inner.watch.enabled || super::file_asks(&self.file());
            if !asked || self.watched_file().as_deref() == Some(path) {
                return;
            }
            if let Err(e) = self.watch_file(path) {
                tracing::error!(target: "resil::config::watch", error = %e, "config file not watched");
            }
        }
    }

    /// What the file holds now, through every symlink: its bytes' hash, or
    /// `None` when it cannot be read.
    fn fingerprint(path: &Path) -> Option<u64> {
        let bytes = std::fs::read(path).ok()?;
        let mut h: u64 = 0xcbf2_9ce4_8422_2325;
        for b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        Some(h)
    }

    /// The watcher thread: one reload per quiet burst whose file content
    /// changed; exits when the registry (and so the watcher) is gone.
    fn follow(
        registry: Weak<Inner>,
        events: Receiver<notify::Result<notify::Event>>,
        path: PathBuf,
        debounce: Duration,
        mut seen: Option<u64>,
    ) {
        while events.recv().is_ok() {
            // Whatever the OS reported, wait until the burst is over.
            loop {
                match events.recv_timeout(debounce) {
                    Ok(_) => {}
                    Err(RecvTimeoutError::Timeout) => break,
                    Err(RecvTimeoutError::Disconnected) => return,
                }
            }
            let now = fingerprint(&path);
            if now == seen {
                continue;
            }
            seen = now;
            let Some(inner) = registry.upgrade() else {
                return;
            };
            let registry = Registry { inner };
            attempt(&registry, &path);
        }
    }

    /// One reload of `path`: one log line.
    fn attempt(registry: &Registry, path: &Path) {
        let result = registry.reload_file(path);
        let version = registry.config_versions().last().cloned();
        let id = version.as_ref().map_or(0, |v| v.id);
        match (result, version.map(|v| v.status)) {
            (Ok(report), _) => tracing::info!(
                target: "resil::config::watch",
                path = %path.display(),
                version = id,
                replaced = report.replaced.len(),
                updated_in_place = report.updated_in_place.len(),
                "config file changed: applied as version {id}"
            ),
            (Err(_), Some(VersionStatus::Refused(problems))) => tracing::warn!(
                target: "resil::config::watch",
                path = %path.display(),
                version = id,
                problems = ?problems,
                "config file changed: refused as version {id}, the config in force stays"
            ),
            (Err(e), _) => tracing::warn!(
                target: "resil::config::watch",
                path = %path.display(),
                error = %e,
                "config file changed: refused, the config in force stays"
            ),
        }
    }
}
