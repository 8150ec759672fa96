//! Resolving an instance's configuration: the file's entry, its error-name
//! lists, then the code settings of its config chain and its own.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use crate::config::FileConfig;
use crate::error::RegistryError;
use crate::kind::Primitive;
use crate::store::{CodeFn, CodeSettings, Store};

use super::plan::plan;
use super::Registry;

impl Registry {
    /// The default configuration, when `name` is one nothing configures (no
    /// code setting, no file entry, no code config) and the file's default
    /// entry has no error lists: resolved once per file, then cloned. The
    /// registry bench creates 100 000 names this way.
    pub(super) fn cached_default<P: Primitive>(
        &self,
        store: &Store<P>,
        file: &Arc<FileConfig>,
        code: &CodeSettings<P::Builder>,
        name: &str,
    ) -> Option<(P::Config, Option<usize>)> {
        let section = P::section(file);
        if !code.configs.is_empty()
            || code.instances.contains_key(name)
            || section.instance(name).is_some()
            || section.config(name).is_some()
            || !P::error_lists(section.default_config()).is_empty()
        {
            return None;
        }
        if let Some(cached) = store.cached_default(file) {
            return Some(cached);
        }
        let (config, ring) = self.resolve_full::<P>(file, code, name).ok()?;
        store.cache_default(file, config.clone(), ring);
        Some((config, ring))
    }

    /// Resolves every existing instance of kind `P`: all or the first error.
    pub(super) fn resolve_all<P: Primitive>(
        &self,
        code: &CodeSettings<P::Builder>,
    ) -> Result<Vec<(String, P::Config)>, RegistryError> {
        let file = self.file();
        let names: Vec<String> = self
            .store::<P>()
            .entries
            .iter()
            .map(|e| e.key().to_string())
            .collect();
        names
            .into_iter()
            .map(|n| self.resolve::<P>(&file, code, &n).map(|c| (n, c)))
            .collect()
    }

    /// The loaded config file.
    pub(crate) fn file(&self) -> Arc<FileConfig> {
        Arc::clone(&self.inner.file.read())
    }

    /// Resolves the configuration of instance `name`: the config file's entry
    /// for it (with its error-name lists as predicates), then the code
    /// settings of every config in its chain (root first), then its own code
    /// settings.
    pub(crate) fn resolve<P: Primitive>(
        &self,
        file: &FileConfig,
        code: &CodeSettings<P::Builder>,
        name: &str,
    ) -> Result<P::Config, RegistryError> {
        self.resolve_full::<P>(file, code, name)
            .map(|(config, _)| config)
    }

    /// As `resolve`, plus the size of the ring of recent events the file asks for.
    pub(super) fn resolve_full<P: Primitive>(
        &self,
        file: &FileConfig,
        code: &CodeSettings<P::Builder>,
        name: &str,
    ) -> Result<(P::Config, Option<usize>), RegistryError> {
        let plan = plan::<P>(file, code, name)?;
        let ring_capacity = plan.entry.event_consumer_buffer_size();
        let mut builder = P::file_builder(plan.entry);
        for (names, list) in P::error_lists(plan.entry) {
            if !list.is_predicate() {
                self.check_error_names(names.names(), names.path())?;
            }
            builder = P::apply_error_list(&self.inner.classes, builder, list, names.names());
        }
        let applied = |b: P::Builder, f: &CodeFn<P::Builder>, at: &str| {
            catch_unwind(AssertUnwindSafe(|| f(b))).map_err(|_| RegistryError::SettingsPanicked {
                kind: P::KIND,
                name: at.to_owned(),
            })
        };
        for config in &plan.chain {
            if let Some(c) = code.configs.get(config) {
                for f in &c.settings {
                    builder = applied(builder, f, config)?;
                }
            }
        }
        if let Some(f) = plan.settings {
            builder = applied(builder, f, name)?;
        }
        let config = P::build(builder).map_err(|source| RegistryError::InvalidConfig {
            kind: P::KIND,
            name: name.to_owned(),
            source,
        })?;
        Ok((config, ring_capacity))
    }
}
