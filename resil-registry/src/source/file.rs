//! The watched config file (feature `watch`): a [`ConfigSource`] that
//! reloads the registry's file when it changes, in the way Kubernetes
//! changes a mounted ConfigMap.
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
//! Each attempt is one log line (the reload's: INFO when applied, WARN when
//! refused, with the version, the source and the problems), one
//! version in [`Registry::config_versions`](crate::Registry::config_versions)
//! and one count in [`Registry::config_reloads`](crate::Registry::config_reloads)
//! (`resil_config_reloads_total{result}`).
//! [`Registry::follow_file`](crate::Registry::follow_file) values are
//! rebuilt by the same reload: the watcher is one more way in, not a second
//! loader.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

use super::{ConfigSource, Feed};

/// How often a quiet watcher checks whether its registry is gone.
const IDLE_CHECK: Duration = Duration::from_secs(1);

/// Why a file cannot be watched.
#[derive(Debug)]
#[non_exhaustive]
pub enum WatchError {
    /// The path has no parent directory to watch.
    NoDirectory(PathBuf),
    /// The OS refused the watch (the directory is missing, the inotify
    /// limit is reached, …).
    Notify(PathBuf, notify::Error),
    /// The watcher's thread could not start.
    Thread(std::io::Error),
}

impl fmt::Display for WatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchError::NoDirectory(p) => {
                write!(f, "cannot watch `{}`: it has no directory", p.display())
            }
            WatchError::Notify(p, e) => write!(f, "cannot watch `{}`: {e}", p.display()),
            WatchError::Thread(e) => write!(f, "cannot start the config watcher: {e}"),
        }
    }
}

impl std::error::Error for WatchError {}

/// A config file followed through its directory's events.
pub struct FileSource {
    path: PathBuf,
    debounce: Duration,
    events: Receiver<notify::Result<notify::Event>>,
    /// Kept alive while the source runs: dropping it ends the OS watch.
    _watcher: notify::RecommendedWatcher,
    seen: Option<u64>,
}

impl fmt::Debug for FileSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileSource")
            .field("path", &self.path)
            .field("debounce", &self.debounce)
            .finish_non_exhaustive()
    }
}

impl FileSource {
    /// Watches the directory of the file at `path` (now: an error here is
    /// the caller's to see), reloading it after `debounce` of quiet.
    pub fn new(path: impl AsRef<Path>, debounce: Duration) -> Result<FileSource, WatchError> {
        let path = path.as_ref().to_path_buf();
        let dir = match path.parent() {
            Some(d) if d.as_os_str().is_empty() => PathBuf::from("."),
            Some(d) => d.to_path_buf(),
            None => return Err(WatchError::NoDirectory(path)),
        };
        let (tx, events) = channel();
        let mut watcher = notify::recommended_watcher(move |event| {
            let _ = tx.send(event);
        })
        .map_err(|e| WatchError::Notify(path.clone(), e))?;
        watcher
            .watch(&dir, RecursiveMode::NonRecursive)
            .map_err(|e| WatchError::Notify(dir.clone(), e))?;
        let seen = fingerprint(&path);
        Ok(FileSource {
            path,
            debounce,
            events,
            _watcher: watcher,
            seen,
        })
    }

    /// The file it follows.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waits for the next burst of events to end; `false` when the
    /// registry is gone.
    fn next_burst(&self, feed: &Feed) -> bool {
        loop {
            match self.events.recv_timeout(IDLE_CHECK) {
                Ok(_) => break,
                Err(RecvTimeoutError::Timeout) if feed.alive() => {}
                Err(_) => return false,
            }
        }
        // Whatever the OS reported, wait until the burst is over.
        loop {
            match self.events.recv_timeout(self.debounce) {
                Ok(_) => {}
                Err(RecvTimeoutError::Timeout) => return feed.alive(),
                Err(RecvTimeoutError::Disconnected) => return false,
            }
        }
    }
}

impl ConfigSource for FileSource {
    fn name(&self) -> String {
        format!("file {}", self.path.display())
    }

    fn run(mut self: Box<Self>, feed: Feed) {
        while self.next_burst(&feed) {
            let now = fingerprint(&self.path);
            if now == self.seen {
                continue;
            }
            self.seen = now;
            // The reload writes the attempt's one log line.
            if feed.reload_file(&self.path).is_none() {
                return;
            }
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
