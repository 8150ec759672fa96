//! Resolving an instance's configuration: the file's entry, its error-name
//! lists, then the code settings of its config chain and its own.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

use std::collections::HashMap;

use crate::config::{FileConfig, FileGives, Resolved};
use crate::error::RegistryError;
use crate::primitive::Primitive;
use crate::store::{CodeFn, CodeSettings, Store};

use crate::classes::ErrorClasses;

use super::plan::plan;
use super::AttributeSite;

/// The default configuration, when `name` is one nothing configures (no
/// code setting, no file entry, no code config) and the file's default
/// entry has no error lists: resolved once per file, then cloned. The
/// registry bench creates 100 000 names this way.
pub(crate) fn cached_default<P: Primitive>(
    classes: &ErrorClasses,
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
    let (config, ring) = resolve_layers::<P>(classes, file, code, name, &mut ()).ok()?;
    store.cache_default(file, config.clone(), ring);
    Some((config, ring))
}

/// The one resolution of instance `name`: the file's entry (defaults,
/// `default`, the base-config chain, the named config, the instance,
/// profile documents and env, merged by the file loader with each value's
/// source), its error-name lists (names of `classes`), then the code
/// settings of each config in the chain (root first) and the instance's
/// own (attribute literals and `configure_*`). `layers` sees the builder
/// after each layer. Returns the configuration and the size of the ring of
/// recent events the file asks for.
pub(crate) fn resolve_layers<P: Primitive>(
    classes: &ErrorClasses,
    file: &FileConfig,
    code: &CodeSettings<P::Builder>,
    name: &str,
    layers: &mut impl Layers<P>,
) -> Result<(P::Config, Option<usize>), RegistryError> {
    let plan = plan::<P>(file, code, name)?;
    let ring_capacity = plan.entry.event_consumer_buffer_size();
    let mut builder = P::file_builder(plan.entry);
    for (names, list) in P::error_lists(plan.entry) {
        if !list.is_predicate() {
            classes.check(names.names(), names.path())?;
        }
        builder = P::apply_error_list(classes, builder, list, names.names());
    }
    builder = P::apply_http(classes, builder, file, name);
    layers.file(plan.entry, &builder);
    let panicked = |at: &str| RegistryError::SettingsPanicked {
        kind: P::KIND,
        name: at.to_owned(),
    };
    // Code defaults: beneath the file's values, so they see what it gives.
    if let Some(f) = code.instances.get(name).and_then(|i| i.defaults.as_ref()) {
        let gives = FileGives::of(plan.entry);
        builder =
            catch_unwind(AssertUnwindSafe(|| f(builder, &gives))).map_err(|_| panicked(name))?;
        layers.code(&builder, None);
    }
    let applied = |b: P::Builder, f: &CodeFn<P::Builder>, at: &str| {
        catch_unwind(AssertUnwindSafe(|| f(b))).map_err(|_| panicked(at))
    };
    for config in &plan.chain {
        if let Some(c) = code.configs.get(config) {
            for f in &c.settings {
                builder = applied(builder, f, config)?;
            }
            layers.code(&builder, Some(config));
        }
    }
    if let Some(f) = plan.settings {
        builder = applied(builder, f, name)?;
        layers.code(&builder, None);
    }
    let config = P::build(builder).map_err(|source| RegistryError::InvalidConfig {
        kind: P::KIND,
        name: name.to_owned(),
        source,
    })?;
    Ok((config, ring_capacity))
}

/// What a resolution tells about its layers. Creating an instance tells
/// nothing (`()`, which compiles away); the snapshot asks which layer set
/// each value ([`Labelled`]).
pub(crate) trait Layers<P: Primitive> {
    /// The builder after the config file's layer: `entry` holds each file
    /// value with where it was written.
    fn file(&mut self, _entry: &Resolved<P::Config>, _builder: &P::Builder) {}

    /// The builder after a code layer: the code config `config`, or the
    /// instance's own settings (`None`).
    fn code(&mut self, _builder: &P::Builder, _config: Option<&str>) {}
}

impl<P: Primitive> Layers<P> for () {}

/// Each value's layer, recorded while resolving: every value starts as
/// `default`; the file's layer labels the keys it sets with their source
/// and line; a code layer labels the keys whose value it changed.
pub(crate) struct Labelled<'a> {
    values: Vec<(&'static str, String)>,
    labels: HashMap<&'static str, (String, String)>,
    /// The attribute call site of the instance, if one set its literals.
    site: Option<&'a AttributeSite>,
}

impl<'a> Labelled<'a> {
    pub(crate) fn new<P: Primitive>(site: Option<&'a AttributeSite>) -> Labelled<'a> {
        Labelled {
            values: P::default_values(),
            labels: HashMap::new(),
            site,
        }
    }

    /// `(source, location)` of the value in force for `key`.
    pub(crate) fn label(&self, key: &str) -> (String, String) {
        self.labels
            .get(key)
            .cloned()
            .unwrap_or_else(|| ("default".to_owned(), "default".to_owned()))
    }

    /// The resolved value of `key`, as the snapshot writes it.
    pub(crate) fn value(&self, key: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| v.as_str())
    }

    /// Renders `builder` and labels every key whose value changed with
    /// `label`. A builder that does not build yet (a later layer completes
    /// it) leaves the labels to that layer.
    fn advance<P: Primitive>(
        &mut self,
        builder: &P::Builder,
        mut label: impl FnMut(&'static str) -> (String, String),
    ) {
        let Ok(config) = P::build(builder.clone()) else {
            return;
        };
        let now = crate::config::rendered(&config);
        for (key, value) in &now {
            if self.value(key) != Some(value.as_str()) {
                self.labels.insert(key, label(key));
            }
        }
        self.values = now;
    }
}

impl<P: Primitive> Layers<P> for Labelled<'_> {
    fn file(&mut self, entry: &Resolved<P::Config>, builder: &P::Builder) {
        let set: HashMap<String, (String, String)> = entry
            .provenance()
            .into_iter()
            .filter(|p| p.path.is_some())
            .map(|p| {
                let location = p.location.unwrap_or_else(|| p.source.to_string());
                (p.key, (p.source.to_string(), location))
            })
            .collect();
        for (key, label) in &set {
            if let Some((key, _)) = self.values.iter().find(|(k, _)| k == key) {
                self.labels.insert(key, label.clone());
            }
        }
        let at = entry.path().to_owned();
        self.advance::<P>(builder, |key| {
            set.get(key)
                .cloned()
                .unwrap_or_else(|| ("config file".to_owned(), at.clone()))
        });
    }

    fn code(&mut self, builder: &P::Builder, config: Option<&str>) {
        let site = self.site;
        self.advance::<P>(builder, |key| {
            let location = match config {
                Some(config) => format!("code config `{config}`"),
                None => site
                    .filter(|s| s.literals.iter().any(|(k, _)| k.replace('_', "-") == key))
                    .map(|s| format!("attribute at {}", s.location))
                    .unwrap_or_else(|| "code".to_owned()),
            };
            ("code".to_owned(), location)
        });
    }
}
