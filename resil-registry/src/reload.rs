//! Config files in the registry: building a registry from a file, and
//! reloading a running one.
//!
//! A reload validates everything first — the file itself (done by
//! [`FileConfig`]), every error-class name it uses against the names the
//! program registered, and the configuration every existing instance would
//! get with the new file plus its code settings — and applies nothing if any
//! part is invalid: the running instances keep working and the error lists
//! every problem. When it is valid, each instance whose file settings changed
//! is updated: a rate limiter's limit and timeout and a bulkhead's size and
//! wait through their own run-time setters (same instance, nothing lost),
//! every other change by building a new instance and installing it in the
//! handle's slot (one atomic swap per instance; every handle sees it on its
//! next use). Instances whose settings did not change are not touched.
//!
//! A Redis-backed rate limiter whose resolved settings change is replaced by
//! a new instance (its quota lives in Redis and carries on); a reload that
//! would move a running rate limiter between the local and the Redis backend
//! is refused.
//!
//! A replaced circuit breaker keeps its mode (FORCED_OPEN, DISABLED,
//! METRICS_ONLY, a manual override) but starts CLOSED with an empty window
//! otherwise, and the `Replaced` event says so (`state_carried_over: false`):
//! resil-core has no way yet to move a sliding window from one breaker to
//! another.

use std::fmt;
use std::panic::AssertUnwindSafe;
use std::path::Path;
use std::sync::{Arc, Weak};

use parking_lot::RwLockWriteGuard;

use crate::config::{ConfigFileError, FileConfig, Problem};
use crate::error::RegistryError;
use crate::event::RegistryEventKind;
use crate::handle::{Handle, Slot};
use crate::primitive::{Pending, Primitive, Twins};
use crate::registry::{plan, Registry};
use crate::shadow::{ShadowRun, TrialContext};
use crate::store::{for_each_kind, CodeSettings, KindVisitor};
use crate::versions::VersionSource;

/// Why a reload was refused. Nothing was applied.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ReloadError {
    /// The file is invalid (every problem with its key path), or uses error
    /// class names nobody registered.
    File(ConfigFileError),
    /// The file is valid, but some running instance's code settings do not
    /// fit it (each error names the instance).
    Instances(Vec<RegistryError>),
}

impl fmt::Display for ReloadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReloadError::File(e) if e.is_first_load() => {
                write!(f, "cannot load the configuration, nothing installed: {e}")
            }
            ReloadError::File(e) => write!(f, "reload refused, nothing changed: {e}"),
            ReloadError::Instances(errors) => {
                write!(f, "reload refused, nothing changed:")?;
                for e in errors {
                    write!(f, "\n  - {e}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for ReloadError {}

impl ReloadError {
    /// Every problem, one line each (as a refused version lists them).
    pub fn problems(&self) -> Vec<String> {
        match self {
            ReloadError::File(e) => e.problems().iter().map(ToString::to_string).collect(),
            ReloadError::Instances(errors) => errors.iter().map(ToString::to_string).collect(),
        }
    }
}

impl From<ConfigFileError> for ReloadError {
    fn from(e: ConfigFileError) -> Self {
        ReloadError::File(e)
    }
}

/// The one log line of a reload attempt (whoever made it: a program, the
/// file watcher, a push source, a rollback): INFO with what changed, or
/// WARN with every problem.
pub(crate) fn log_attempt(id: u64, source: &str, result: &Result<ReloadReport, ReloadError>) {
    match result {
        Ok(report) => tracing::info!(
            version = id,
            source,
            replaced = ?report.replaced,
            updated_in_place = ?report.updated_in_place,
            unchanged = report.unchanged,
            "config reloaded: version {id} from {source}"
        ),
        Err(ReloadError::File(e)) if e.is_first_load() => tracing::warn!(
            version = id,
            source,
            error = %e,
            "config cannot load, nothing installed: version {id} from {source}"
        ),
        Err(e) => tracing::warn!(
            version = id,
            source,
            error = %e,
            "config reload refused, nothing changed: version {id} from {source}"
        ),
    }
}

/// What a reload changed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReloadReport {
    /// Instances replaced by a new instance (`kind name`).
    pub replaced: Vec<String>,
    /// Instances changed in place through their run-time setters.
    pub updated_in_place: Vec<String>,
    /// How many existing instances the reload left untouched.
    pub unchanged: usize,
}

/// A value built from the loaded file ([`Registry::follow_file`]), rebuilt
/// from each newly installed file.
pub(crate) type Follower = Box<dyn Follow>;

/// What a reload asks of a [`Follower`].
pub(crate) trait Follow: Send + Sync {
    /// Whether a handle to the value is left (else it is forgotten).
    fn alive(&self) -> bool;
    /// Builds the value from `file` and installs it if it differs.
    fn rebuild(&self, file: &FileConfig);
}

/// A [`Follow`] of values of type `T`, built by `F`, in a slot its handles
/// hold (the follower holds it weakly: dropping the handles drops the value).
struct Following<T, F> {
    slot: Weak<Slot<T>>,
    build: F,
}

impl<T, F> Follow for Following<T, F>
where
    T: PartialEq + Send + Sync,
    F: Fn(&FileConfig) -> T + Send + Sync,
{
    fn alive(&self) -> bool {
        self.slot.strong_count() > 0
    }

    fn rebuild(&self, file: &FileConfig) {
        let Some(slot) = self.slot.upgrade() else {
            return;
        };
        match std::panic::catch_unwind(AssertUnwindSafe(|| (self.build)(file))) {
            Ok(value) if *slot.load() != value => slot.replace(value),
            Ok(_) => {}
            Err(_) => tracing::error!(
                name = slot.load_name(),
                "rebuilding a value from the reloaded config file panicked; the previous value stays"
            ),
        }
    }
}

/// A reload validated under the reload lock, holding every kind's settings
/// lock and the changes it makes ([`Registry::validate_locked`]).
pub(crate) struct Validated<'a> {
    kinds: Vec<Box<dyn KindReload + 'a>>,
}

impl Validated<'_> {
    /// Starts a shadow of each changed instance of a kind that has shadows
    /// (the instance runs its new settings beside the old ones, see
    /// [`crate::shadow`]); the changed instances of other kinds (`kind
    /// name`) go to `not_trialled`.
    pub(crate) fn start_shadows(
        &mut self,
        registry: &Registry,
        trial: &TrialContext,
        runs: &mut Vec<Box<dyn ShadowRun>>,
        not_trialled: &mut Vec<String>,
    ) {
        for kind in &mut self.kinds {
            kind.start_shadows(registry, trial, runs, not_trialled);
        }
    }
}

/// One instance's change, validated, waiting to be applied.
struct Change<P: Primitive> {
    name: String,
    config: P::Config,
}

impl Registry {
    /// A registry configured by TOML text (feature `toml`).
    ///
    /// Error-class names in the file must be `resil::Error` kinds here (no
    /// error type is registered yet); to use your own, build the registry,
    /// [`register_error_class`](Self::register_error_class), then
    /// [`reload`](Self::reload).
    #[cfg(feature = "toml")]
    pub fn from_toml_str(s: &str) -> Result<Registry, ConfigFileError> {
        Registry::from_file_config(FileConfig::from_toml_str(s)?)
    }

    /// A registry configured by YAML text (feature `yaml`); see
    /// [`from_toml_str`](Self::from_toml_str).
    #[cfg(feature = "yaml")]
    pub fn from_yaml_str(s: &str) -> Result<Registry, ConfigFileError> {
        Registry::from_file_config(FileConfig::from_yaml_str(s)?)
    }

    /// A registry configured by a `.toml`, `.yaml`, `.yml` or `.properties`
    /// file (each format behind its cargo feature); see
    /// [`FileConfig::from_file`].
    pub fn from_file(path: impl AsRef<Path>) -> Result<Registry, ConfigFileError> {
        Registry::from_file_config(FileConfig::from_file(path)?)
    }

    /// Loads the file at `path` (with the `RESIL_…` overrides and `${…}`
    /// placeholders from `vars`) and installs it, as
    /// [`reload`](Self::reload) does, reporting **every** problem in one
    /// error: the file's own (unknown keys, bad values, …) together with the
    /// error-class and predicate names no registered type answers to, which
    /// `FileConfig::from_file` followed by `reload` could only report once
    /// the file's own problems were fixed.
    pub fn reload_file_with_env<I, K, V>(
        &self,
        path: impl AsRef<Path>,
        vars: I,
    ) -> Result<ReloadReport, ReloadError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let path = path.as_ref();
        let (file, mut problems) = match FileConfig::load_file_all(path, vars) {
            Ok(loaded) => loaded,
            Err(e) => {
                let e = Err(ReloadError::File(self.first_load_marked(e)));
                self.record_refused(VersionSource::File(path.to_path_buf()), &e);
                return e;
            }
        };
        if problems.is_empty() {
            let report = self.reload(file)?;
            self.after_file_loaded(path);
            return Ok(report);
        }
        struct Names<'a> {
            registry: &'a Registry,
            file: &'a FileConfig,
            problems: &'a mut Vec<Problem>,
        }
        impl KindVisitor for Names<'_> {
            fn visit<P: Primitive>(&mut self) {
                self.registry
                    .check_file_names::<P>(self.file, self.problems);
            }
        }
        for_each_kind(&mut Names {
            registry: self,
            file: &file,
            problems: &mut problems,
        });
        let mut e = ConfigFileError::new(problems);
        e.sort();
        let e = ReloadError::File(self.first_load_marked(e.with_origin(path)));
        let _one_at_a_time = self.inner.reload_lock.lock();
        let source = VersionSource::File(path.to_path_buf());
        let e = Err(e);
        self.record_version(Some(&Arc::new(file)), source, &e, None, None);
        e
    }

    /// Starts the watcher when the builder or the loaded file asks for one.
    fn after_file_loaded(&self, path: &Path) {
        #[cfg(feature = "watch")]
        self.watch_if_asked(path);
        #[cfg(not(feature = "watch"))]
        if self.inner.watch.enabled || crate::watch::file_asks(&self.file()) {
            tracing::warn!(
                path = %path.display(),
                "the config file asks to be watched, but resil was built without feature `watch`"
            );
        }
    }

    /// [`reload_file_with_env`](Self::reload_file_with_env) with the process
    /// environment.
    pub fn reload_file(&self, path: impl AsRef<Path>) -> Result<ReloadReport, ReloadError> {
        self.reload_file_with_env(path, std::env::vars())
    }

    /// `e`, marked as found by the first load when no file was installed yet.
    fn first_load_marked(&self, e: ConfigFileError) -> ConfigFileError {
        if self.inner.loaded.load(std::sync::atomic::Ordering::Acquire) {
            e
        } else {
            e.on_first_load()
        }
    }

    /// A registry configured by a loaded [`FileConfig`].
    pub fn from_file_config(file: FileConfig) -> Result<Registry, ConfigFileError> {
        let registry = Registry::new();
        match registry.reload(file) {
            Ok(_) => Ok(registry),
            Err(ReloadError::File(e)) => Err(e),
            Err(ReloadError::Instances(errors)) => {
                unreachable!("a new registry has no instances, yet: {errors:?}")
            }
        }
    }

    /// Installs `file` as the registry's configuration (the first load, or a
    /// reload of a running registry). All or nothing.
    ///
    /// Validated first: the file itself (by [`FileConfig`]), every
    /// error-class name it uses against the registered ones, and the
    /// configuration every existing instance would get with the new file plus
    /// its code settings. On any error nothing is applied, the running
    /// instances keep working, and the error lists every problem.
    ///
    /// Then each instance whose file settings changed is updated: a rate
    /// limiter's limit and timeout and a bulkhead's configuration through
    /// their run-time setters (same instance, nothing lost); any other change
    /// by building a new instance and swapping it into the handles' slot (one
    /// atomic swap per instance). Unchanged instances are not touched. A
    /// replaced breaker whose window keeps its type and size carries its
    /// state and window over; with another shape it keeps only its mode
    /// (FORCED_OPEN, DISABLED, METRICS_ONLY, a manual override) and starts
    /// CLOSED with an empty window; its `Replaced` event says which
    /// (`state_carried_over`).
    ///
    /// Every attempt is a [`ConfigVersion`](crate::ConfigVersion) in
    /// [`config_versions`](Self::config_versions) (a refused one with its
    /// problems) and one count in [`config_reloads`](Self::config_reloads);
    /// the source is the file's path, or [`VersionSource::Code`] for text.
    pub fn reload(&self, file: FileConfig) -> Result<ReloadReport, ReloadError> {
        let source = match file.origin() {
            Some(path) => VersionSource::File(path.to_path_buf()),
            None => VersionSource::Code,
        };
        self.reload_from(file, source)
    }

    /// [`reload`](Self::reload), recording `source` as where the config
    /// came from (a push source, the environment, …).
    pub fn reload_from(
        &self,
        file: FileConfig,
        source: VersionSource,
    ) -> Result<ReloadReport, ReloadError> {
        self.reload_versioned(file, source, None, None)
    }

    /// Applies `file`, the staged version `staged` of a shadow trial, as a
    /// new version from management by `who`.
    pub(crate) fn reload_promoted(
        &self,
        file: FileConfig,
        who: &str,
        staged: u64,
    ) -> Result<ReloadReport, ReloadError> {
        tracing::warn!(target: "resil::shadow", version = staged, who, "shadow trial promotion");
        self.reload_versioned(
            file,
            VersionSource::Management(who.to_owned()),
            None,
            Some(staged),
        )
    }

    /// A reload recorded as a version (`rollback_of`: the version a
    /// rollback applies again; `promoted_from`: the shadow trial a
    /// promotion applies). An applied reload ends a running shadow trial.
    pub(crate) fn reload_versioned(
        &self,
        file: FileConfig,
        source: VersionSource,
        rollback_of: Option<u64>,
        promoted_from: Option<u64>,
    ) -> Result<ReloadReport, ReloadError> {
        let _one_at_a_time = self.inner.reload_lock.lock();
        let keys = Arc::new(file.clone());
        let result = self.install_locked(file);
        let applied = result.is_ok().then(|| self.file());
        let recorded = applied.as_ref().unwrap_or(&keys);
        let id = self.record_version(Some(recorded), source, &result, rollback_of, promoted_from);
        if result.is_ok() {
            self.end_shadow_trial(id);
        }
        result
    }

    /// The reload itself, under the reload lock.
    fn install_locked(&self, file: FileConfig) -> Result<ReloadReport, ReloadError> {
        let mut kinds = self.validate_locked(&file)?.kinds;

        *self.inner.file.write() = Arc::new(file);
        self.inner
            .loaded
            .store(true, std::sync::atomic::Ordering::Release);
        let mut report = ReloadReport::default();
        for kind in &mut kinds {
            kind.apply(self, &mut report);
        }
        self.reassert_rate_twins();
        struct Count<'a>(&'a Registry, usize);
        impl KindVisitor for Count<'_> {
            fn visit<P: Primitive>(&mut self) {
                let store = self.0.store::<P>();
                self.1 += store.entries.len() + store.twins.len();
            }
        }
        let mut count = Count(self, 0);
        for_each_kind(&mut count);
        let existing = count.1;
        report.unchanged = existing - report.replaced.len() - report.updated_in_place.len();
        // The settings guards are released here, after every change is in.
        drop(kinds);
        let file = self.file();
        let mut followers = self.inner.followers.lock();
        followers.retain(|f| f.alive());
        for follower in followers.iter() {
            follower.rebuild(&file);
        }
        drop(followers);
        self.retune_inbound_guard(&file);
        self.refresh_keyed();
        Ok(report)
    }

    /// Validates `file` as a reload of the running registry, under the
    /// reload lock; applies nothing. The result holds every kind's settings
    /// lock, for writing, and the changes found: no instance is created, and
    /// no code setting changes, until it is dropped or applied.
    pub(crate) fn validate_locked(&self, file: &FileConfig) -> Result<Validated<'_>, ReloadError> {
        // Every kind's settings, for writing: no instance is created, and no
        // code setting changes, between validation and application.
        struct Lock<'a> {
            registry: &'a Registry,
            kinds: Vec<Box<dyn KindReload + 'a>>,
        }
        impl<'a> KindVisitor for Lock<'a> {
            fn visit<P: Primitive>(&mut self) {
                self.kinds.push(Box::new(Staged::<'a, P> {
                    code: self.registry.store::<P>().code.write(),
                    changes: Vec::new(),
                    twins: Default::default(),
                }));
            }
        }
        let mut locked = Lock {
            registry: self,
            kinds: Vec::new(),
        };
        for_each_kind(&mut locked);
        let mut kinds = locked.kinds;

        let old = self.file();
        let mut problems = Vec::new();
        let mut errors = Vec::new();
        for kind in &mut kinds {
            kind.validate(self, &old, file, &mut problems, &mut errors);
        }
        if !problems.is_empty() {
            let mut e = ConfigFileError::new(problems);
            if let Some(origin) = file.origin() {
                e = e.with_origin(origin);
            }
            let e = self.first_load_marked(e);
            return Err(ReloadError::File(e));
        }
        if !errors.is_empty() {
            return Err(ReloadError::Instances(errors));
        }
        Ok(Validated { kinds })
    }

    /// A handle to a value built from the registry's config file by `build`:
    /// built now from the file in force, and rebuilt from the new file by
    /// every reload that installs one (a refused reload changes nothing).
    /// Like an instance's [`Handle`], each dereference is one atomic load and
    /// sees the value most recently installed, so a handle cached anywhere
    /// (a tower layer, a `static`) follows the file. resil-web's
    /// `HttpClassifier::follow` builds a classifier this way from the file's
    /// `resil.http` keys.
    ///
    /// A rebuilt value equal to the current one is not installed. A replaced
    /// value is retired, not freed, until the last handle is dropped (see
    /// [`Handle`]). Once every handle is dropped, the registry forgets
    /// `build` (at the next reload or `follow_file`). `build` runs under the
    /// registry's reload lock, so it must not load or reload a file itself;
    /// if it panics during a reload, the previous value stays and the panic
    /// is logged.
    ///
    /// ```
    /// # #[cfg(feature = "yaml")] {
    /// use resil_registry::config::FileConfig;
    /// use resil_registry::Registry;
    ///
    /// let registry = Registry::new();
    /// let size = registry.follow_file("cache-size", |file| {
    ///     file.property("app.cache.size").and_then(|v| v.parse::<u32>().ok()).unwrap_or(100)
    /// });
    /// assert_eq!(*size, 100);
    /// registry.reload(FileConfig::from_yaml_str("app.cache.size: 250").unwrap()).unwrap();
    /// assert_eq!(*size, 250);
    /// # }
    /// ```
    pub fn follow_file<T>(
        &self,
        name: &str,
        build: impl Fn(&FileConfig) -> T + Send + Sync + 'static,
    ) -> Handle<T>
    where
        T: PartialEq + Send + Sync + 'static,
    {
        // No reload between the first build and the follower's registration.
        let _one_at_a_time = self.inner.reload_lock.lock();
        let slot = Slot::shared(name.into(), build(&self.file()), 0);
        let mut followers = self.inner.followers.lock();
        // Forget the values nothing holds any more: the list is as long as
        // the values in use, however many were built and dropped.
        followers.retain(|f| f.alive());
        followers.push(Box::new(Following {
            slot: Arc::downgrade(&slot),
            build,
        }));
        drop(followers);
        Handle::from_slot(slot)
    }

    /// Every error-class name the file uses (in every entry, used or not)
    /// must be registered.
    fn check_file_names<P: Primitive>(&self, file: &FileConfig, problems: &mut Vec<Problem>) {
        let known = self.inner.classes.names();
        let known_refs: Vec<&str> = known.iter().map(String::as_str).collect();
        let section = P::section(file);
        let entries = std::iter::once(section.default_config())
            .chain(section.config_names().filter_map(|n| section.config(n)))
            .chain(section.instances().map(|(_, r)| r));
        for entry in entries {
            for (names, list) in P::error_lists(entry) {
                for (index, name) in names.names().iter().enumerate() {
                    if !self.inner.classes.knows(list, name) {
                        let p = if list.is_chaos() {
                            Problem::unknown_chaos_injection(
                                names.path(),
                                name,
                                &self.inner.classes.injections.names(list.is_chaos_result()),
                            )
                        } else if list.is_predicate() {
                            Problem::unknown_predicate(
                                names.path(),
                                name,
                                &self.inner.classes.predicate_names(),
                            )
                        } else {
                            Problem::unknown_error_class(names.path(), index, name, &known_refs)
                        };
                        if !problems.iter().any(|q| q.to_string() == p.to_string()) {
                            problems.push(p);
                        }
                    }
                }
            }
        }
    }

    /// The changes `new` makes to existing instances of kind `P`, each
    /// validated; errors collected.
    fn validate<P: Primitive>(
        &self,
        old: &FileConfig,
        new: &FileConfig,
        code: &CodeSettings<P::Builder>,
        errors: &mut Vec<RegistryError>,
    ) -> Vec<Change<P>> {
        let mut changes = Vec::new();
        for name in self.names::<P>() {
            let changed = match (plan::<P>(old, code, &name), plan::<P>(new, code, &name)) {
                (Ok(a), Ok(b)) => {
                    a.entry.path() != b.entry.path()
                        || !a.entry.same_settings(b.entry)
                        // The `resil.http` sets classify the instance's
                        // registered error types (breakers and retries):
                        // with none registered, they change no predicate.
                        || (self.inner.classes.any_registered()
                            && old.http().instance(&name) != new.http().instance(&name))
                }
                _ => true,
            };
            if !changed {
                continue;
            }
            match self.resolve::<P>(new, code, &name) {
                Ok(config) => changes.push(Change { name, config }),
                Err(e) => errors.push(e),
            }
        }
        changes
    }

    fn apply<P: Primitive>(&self, changes: Vec<Change<P>>, report: &mut ReloadReport) {
        for Change { name, config } in changes {
            let Some(handle) = self.find::<P>(&name) else {
                continue;
            };
            let label = format!("{} {name}", P::KIND);
            if handle.update_in_place(&config) {
                handle.reassert(&self.inner.overrides, &name);
                let entry = self.store::<P>().entries.get(name.as_str());
                self.inner.events.publish(
                    P::KIND,
                    name.as_str().into(),
                    RegistryEventKind::Reconfigured {
                        cause: "reload".into(),
                    },
                    entry.as_ref().map(|e| &e.slot.history),
                );
                report.updated_in_place.push(label);
                continue;
            }
            self.replace_with::<P>(&name, config, "reload");
            report.replaced.push(label);
        }
    }
}

/// One kind's part of a reload: its settings lock, held from validation to
/// application, and what validation found to change.
trait KindReload {
    /// Checks the file's error names and collects this kind's changes.
    fn validate(
        &mut self,
        registry: &Registry,
        old: &FileConfig,
        new: &FileConfig,
        problems: &mut Vec<Problem>,
        errors: &mut Vec<RegistryError>,
    );

    /// Applies the validated changes (the new file is in force).
    fn apply(&mut self, registry: &Registry, report: &mut ReloadReport);

    /// Starts shadows of the validated changes instead of applying them.
    fn start_shadows(
        &mut self,
        registry: &Registry,
        trial: &TrialContext,
        runs: &mut Vec<Box<dyn ShadowRun>>,
        not_trialled: &mut Vec<String>,
    );
}

struct Staged<'a, P: Primitive> {
    code: RwLockWriteGuard<'a, CodeSettings<P::Builder>>,
    changes: Vec<Change<P>>,
    /// The twins' rebuilds (the rate limiter's Redis-backed ones).
    twins: Pending<P>,
}

impl<P: Primitive> KindReload for Staged<'_, P> {
    fn validate(
        &mut self,
        registry: &Registry,
        old: &FileConfig,
        new: &FileConfig,
        problems: &mut Vec<Problem>,
        errors: &mut Vec<RegistryError>,
    ) {
        registry.check_file_names::<P>(new, problems);
        self.changes = registry.validate::<P>(old, new, &self.code, errors);
        // The kind's own names, only for a kind whose twins ask.
        let local = || registry.names::<P>();
        let twins = &registry.store::<P>().twins;
        let classes = &registry.inner.classes;
        self.twins = twins.reloaded(classes, old, new, &self.code, &local, errors);
    }

    fn apply(&mut self, registry: &Registry, report: &mut ReloadReport) {
        registry.apply::<P>(std::mem::take(&mut self.changes), report);
        let twins = &registry.store::<P>().twins;
        let pending = std::mem::take(&mut self.twins);
        let replaced = twins.install(pending, &registry.inner.events, "reload");
        report.replaced.extend(replaced);
    }

    fn start_shadows(
        &mut self,
        registry: &Registry,
        trial: &TrialContext,
        runs: &mut Vec<Box<dyn ShadowRun>>,
        not_trialled: &mut Vec<String>,
    ) {
        for Change { name, config } in &self.changes {
            let started = registry
                .find::<P>(name)
                .and_then(|handle| P::start_shadow(&handle, config, trial));
            match started {
                Some(run) => runs.push(run),
                None => not_trialled.push(format!("{} {name}", P::KIND)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attempts(n: &str) -> FileConfig {
        FileConfig::from_env([("RESIL_RETRY_INSTANCES_A_MAX_ATTEMPTS", n)]).unwrap()
    }

    fn max_attempts(file: &FileConfig) -> u32 {
        file.retry().for_name("a").config().max_attempts()
    }

    #[test]
    fn a_followed_value_changes_only_when_the_file_changes_it() {
        let registry = Registry::new();
        let value = registry.follow_file("a", max_attempts);
        assert_eq!(*value, 3, "resil-core's default before any file");
        registry.reload(attempts("2")).unwrap();
        assert_eq!(*value, 2);
        assert_eq!(value.retired_instances(), 1);
        registry.reload(attempts("2")).unwrap();
        assert_eq!(
            value.retired_instances(),
            1,
            "an equal value is not installed"
        );
    }

    #[test]
    fn a_panicking_build_keeps_the_previous_value_and_the_reload_goes_through() {
        let registry = Registry::new();
        let value = registry.follow_file("a", |file| {
            let n = max_attempts(file);
            assert!(n != 5, "five is refused by this build");
            n
        });
        let report = registry.reload(attempts("5"));
        assert!(report.is_ok());
        assert_eq!(*value, 3);
        assert_eq!(registry.retry("a").config().max_attempts(), 5);
        registry.reload(attempts("4")).unwrap();
        assert_eq!(*value, 4, "the follower is still there");
    }

    #[test]
    fn values_nothing_holds_are_forgotten() {
        let registry = Registry::new();
        for _ in 0..10 {
            drop(registry.follow_file("a", max_attempts));
        }
        let kept = registry.follow_file("a", max_attempts);
        assert_eq!(registry.inner.followers.lock().len(), 1);
        let clone = kept.clone();
        drop(kept);
        registry.reload(attempts("2")).unwrap();
        assert_eq!(*clone, 2, "a clone keeps the value followed");
        drop(clone);
        registry.reload(attempts("3")).unwrap();
        assert!(registry.inner.followers.lock().is_empty());
    }
}
