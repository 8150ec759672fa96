//! Watching the registry's config file: the builder's switch and the file
//! keys that turn the watcher on ([`FileSource`](crate::source::FileSource)
//! does the watching, feature `watch`).

use std::time::Duration;

/// The watcher's default debounce: a burst of events quiet for this long
/// makes one reload.
pub const DEFAULT_WATCH_DEBOUNCE: Duration = Duration::from_millis(500);

/// Whether the registry watches the files it loads, and which it watches.
pub(crate) struct WatchState {
    /// The builder's `watch_config`.
    pub(crate) enabled: bool,
    /// The builder's `watch_debounce`.
    #[cfg_attr(not(feature = "watch"), allow(dead_code))]
    pub(crate) debounce: Option<Duration>,
    #[cfg(feature = "watch")]
    watched: parking_lot::Mutex<Option<std::path::PathBuf>>,
}

impl WatchState {
    pub(crate) fn new(enabled: bool, debounce: Option<Duration>) -> WatchState {
        WatchState {
            enabled,
            debounce,
            #[cfg(feature = "watch")]
            watched: parking_lot::Mutex::new(None),
        }
    }
}

/// Whether a loaded file asks to be watched (`resil.config.watch`).
pub(crate) fn file_asks(file: &crate::FileConfig) -> bool {
    file.property(crate::config::WATCH_KEY) == Some("true")
}

#[cfg(feature = "watch")]
mod imp {
    use std::path::{Path, PathBuf};

    use super::DEFAULT_WATCH_DEBOUNCE;
    use crate::config::{parse_duration, WATCH_DEBOUNCE_KEY};
    use crate::registry::Registry;
    use crate::source::{FileSource, WatchError};

    impl Registry {
        /// Watches the config file at `path` and reloads it (with the
        /// process environment, as [`reload_file`](Self::reload_file))
        /// whenever its content changes: a [`FileSource`] followed by
        /// [`follow_source`](Self::follow_source) (the directory is
        /// watched, not the file, so a Kubernetes ConfigMap's `..data`
        /// swap is seen; a burst of events makes one reload after the
        /// debounce; a refused file keeps the config in force). The
        /// debounce is the file's `resil.config.watch-debounce`, else the
        /// builder's [`watch_debounce`](crate::RegistryBuilder::watch_debounce),
        /// else [`DEFAULT_WATCH_DEBOUNCE`]. The watcher stops with the
        /// registry.
        ///
        /// [`RegistryBuilder::watch_config`](crate::RegistryBuilder::watch_config)
        /// or the file key `resil.config.watch: true` call this for the
        /// file a registry loads with `reload_file`.
        pub fn watch_file(&self, path: impl AsRef<Path>) -> Result<(), WatchError> {
            let path = path.as_ref().to_path_buf();
            let debounce = self
                .file()
                .property(WATCH_DEBOUNCE_KEY)
                .and_then(|d| parse_duration(d).ok())
                .or(self.inner.watch.debounce)
                .unwrap_or(DEFAULT_WATCH_DEBOUNCE);
            let source = FileSource::new(&path, debounce)?;
            self.follow_source(source).map_err(WatchError::Thread)?;
            *self.inner.watch.watched.lock() = Some(path);
            Ok(())
        }

        /// The file the watcher follows, if one runs.
        pub fn watched_file(&self) -> Option<PathBuf> {
            self.inner.watch.watched.lock().clone()
        }

        /// Starts watching `path` after it loaded, when the builder or the
        /// file asks and it is not watched yet.
        pub(crate) fn watch_if_asked(&self, path: &Path) {
            let asked = self.inner.watch.enabled || super::file_asks(&self.file());
            if !asked || self.watched_file().is_some() {
                return;
            }
            if let Err(e) = self.watch_file(path) {
                tracing::error!(target: "resil::config::watch", error = %e, "config file not watched");
            }
        }
    }
}
