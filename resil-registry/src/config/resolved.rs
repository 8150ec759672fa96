//! What the registry consumes: per kind, every named config and instance fully
//! resolved (inheritance and environment applied, validated), with the
//! resil-core builder, the provenance of every value, error-class names and tags.

use std::collections::BTreeMap;

use super::apply::{Apply, Values};
use super::render::{values, Render};
use super::schema::{
    Kind, Target, Val, ALLOW_HEALTH_INDICATOR_TO_FAIL, EVENT_CONSUMER_BUFFER_SIZE,
    REGISTER_HEALTH_INDICATOR,
};
use super::setting::{Setting, Source};

/// One effective value and where it came from (for a snapshot or a log line).
#[derive(Debug, Clone, PartialEq)]
pub struct Provenance {
    /// The canonical key (`failure-rate-threshold`), or `tags.<name>` for a tag.
    pub key: String,
    /// The value as a config file writes it (`50`, `10s`, `COUNT_BASED`,
    /// `[a, b]`); `None` when unset and without a default (the registry's
    /// choice, or "not used").
    pub value: Option<String>,
    /// Where the value came from.
    pub source: Source,
    /// The key path that set it (for an environment variable: the path it
    /// sets); `None` for a default.
    pub path: Option<String>,
    /// Where it is written, for people: `resil.yaml:14
    /// resilience4j.retry.instances.inventory.max-attempts` (file, line and
    /// key path; `line 14 …` for text loaded without a file name),
    /// `env RESIL_RETRY_…`, or `None` for a default.
    pub location: Option<String>,
}

/// The human-readable place a setting comes from (see [`Provenance::location`]).
fn location_of<T>(s: &Setting<T>) -> String {
    match (&s.source, s.location()) {
        (Source::Env(var), _) => format!("env {var}"),
        (_, Some(at)) => format!("{at} {}", s.path),
        (_, None) => s.path.clone(),
    }
}

/// An error-class list (`record-errors`, `ignore-errors`, `retry-errors`), as
/// written: the registry turns the names into predicates and reports a name no
/// registered type has with [`Problem::unknown_error_class`](super::Problem::unknown_error_class)
/// (`path()` and the index).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ErrorNames<'a> {
    key: &'static str,
    names: &'a [String],
    path: &'a str,
    source: &'a Source,
}

impl<'a> ErrorNames<'a> {
    /// The canonical key: `record-errors`, `ignore-errors` or `retry-errors`.
    pub fn key(&self) -> &'static str {
        self.key
    }

    /// The names, in file order.
    pub fn names(&self) -> &'a [String] {
        self.names
    }

    /// The key path of the list (`resilience4j.retry.instances.x.retry-exceptions`).
    pub fn path(&self) -> &'a str {
        self.path
    }

    /// Where the list came from (a list is inherited or replaced whole).
    pub fn source(&self) -> &'a Source {
        self.source
    }
}

/// One named config or instance, resolved: resil-core's defaults, then the
/// `base-config` chain (root first), then its own settings, then the
/// environment. Every value was validated by resil-core's builder.
///
/// For the registry:
/// - [`builder`](Resolved::builder) gives the resil-core builder with every
///   file value applied: apply code-only settings (predicates, interval
///   functions, clocks, the error-class predicates built from the names) on
///   top, then `build()`. [`config`](Resolved::config) is the same without
///   code settings, already built.
/// - [`record_errors`](Resolved::record_errors) & co give the error-class
///   names with the key path to blame.
/// - [`provenance`](Resolved::provenance) lists every option's effective value
///   and source, for the snapshot.
/// - [`same_settings`](Resolved::same_settings) tells a reload whether the
///   instance changed.
#[derive(Debug, Clone)]
pub struct Resolved<C> {
    kind: Kind,
    name: String,
    path: String,
    instance: bool,
    chain: Vec<String>,
    values: Values,
    tags: BTreeMap<String, Setting<String>>,
    config: C,
    /// Resilience4j's defaults of the kind, as the renderer writes them.
    defaults: fn() -> Vec<(&'static str, Val)>,
    /// `keyed.overrides`, by key pattern (the chain's, the entry's last).
    overrides: BTreeMap<String, super::load::KeyOverride>,
}

/// The defaults of `C`, as the renderer writes them.
fn defaults<C: Render>() -> Vec<(&'static str, Val)> {
    values(&C::default())
}

impl<C: Render> Resolved<C> {
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn new(
        kind: Kind,
        name: String,
        path: String,
        instance: bool,
        chain: Vec<String>,
        values: Values,
        tags: BTreeMap<String, Setting<String>>,
        config: C,
    ) -> Self {
        Resolved {
            kind,
            name,
            path,
            instance,
            chain,
            values,
            tags,
            config,
            defaults: defaults::<C>,
            overrides: BTreeMap::new(),
        }
    }
}

impl<C> Resolved<C> {
    /// The kind.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The config's or instance's name (`default` for the default config).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Its key path (`resilience4j.circuitbreaker.instances.inventory`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Whether this is an instance (else a named config).
    pub fn is_instance(&self) -> bool {
        self.instance
    }

    /// The named configs it inherits, root first (`["default", "inventory-base"]`).
    pub fn chain(&self) -> &[String] {
        &self.chain
    }

    /// The validated resil-core config, without code-only settings.
    pub fn config(&self) -> &C {
        &self.config
    }

    /// Where the option `key` (canonical kebab-case) came from: `Source::Default`
    /// when nothing set it.
    pub fn source(&self, key: &str) -> Source {
        self.values
            .get(key)
            .map_or(Source::Default, |s| s.source.clone())
    }

    /// The key path that set option `key`, if something did.
    pub fn path_of(&self, key: &str) -> Option<&str> {
        self.values.get(key).map(|s| s.path.as_str())
    }

    /// The tags (kind-level, then inherited, then the instance's own), by name.
    pub fn tags(&self) -> impl Iterator<Item = (&str, &str)> {
        self.tags.iter().map(|(k, v)| (k.as_str(), v.val.as_str()))
    }

    /// `record-errors` (Resilience4j `record-exceptions`), circuit breaker only.
    pub fn record_errors(&self) -> Option<ErrorNames<'_>> {
        self.names("record-errors")
    }

    /// `ignore-errors` (Resilience4j `ignore-exceptions`), circuit breaker and retry.
    pub fn ignore_errors(&self) -> Option<ErrorNames<'_>> {
        self.names("ignore-errors")
    }

    /// `retry-errors` (Resilience4j `retry-exceptions`), retry only.
    pub fn retry_errors(&self) -> Option<ErrorNames<'_>> {
        self.names("retry-errors")
    }

    /// A predicate-name key (`record-failure-predicate`, `result-predicate`,
    /// …): the names of predicates registered in code.
    pub fn predicate_names(&self, key: &'static str) -> Option<ErrorNames<'_>> {
        self.names(key)
    }

    /// A names-valued key of the new kinds (`hedge-errors`, chaos `errors`
    /// and `results`).
    pub(crate) fn names_of(&self, key: &'static str) -> Option<ErrorNames<'_>> {
        self.names(key)
    }

    /// A number-valued key (a chaos entry's `error-rate`), when set.
    pub(crate) fn f64_of(&self, key: &str) -> Option<f64> {
        match self.value(key)? {
            Val::F64(v) => Some(*v),
            _ => None,
        }
    }

    fn names(&self, key: &'static str) -> Option<ErrorNames<'_>> {
        let setting = self.values.get(key)?;
        match &setting.val {
            Val::Names(names) => Some(ErrorNames {
                key,
                names,
                path: &setting.path,
                source: &setting.source,
            }),
            _ => None,
        }
    }

    /// `register-health-indicator` (circuit breaker, rate limiter): `None` when
    /// unset, the registry's default applies.
    pub fn register_health_indicator(&self) -> Option<bool> {
        self.flag(REGISTER_HEALTH_INDICATOR)
    }

    /// `allow-health-indicator-to-fail` (circuit breaker, rate limiter).
    pub fn allow_health_indicator_to_fail(&self) -> Option<bool> {
        self.flag(ALLOW_HEALTH_INDICATOR_TO_FAIL)
    }

    /// `event-consumer-buffer-size`: how many recent events to keep (≥ 1).
    pub fn event_consumer_buffer_size(&self) -> Option<usize> {
        match self.values.get(EVENT_CONSUMER_BUFFER_SIZE)?.val {
            Val::Usize(n) => Some(n),
            _ => None,
        }
    }

    /// With `keyed.overrides` set to `overrides`.
    pub(crate) fn with_overrides(
        mut self,
        overrides: BTreeMap<String, super::load::KeyOverride>,
    ) -> Self {
        self.overrides = overrides;
        self
    }

    /// `keyed.overrides`: key pattern → the values that key gets (each with
    /// its key path).
    pub(crate) fn key_overrides(&self) -> &BTreeMap<String, super::load::KeyOverride> {
        &self.overrides
    }

    /// The value of option `key`, if something set it (a registry-read
    /// option's, such as `redis-url` or `backend`, too).
    pub(crate) fn value(&self, key: &str) -> Option<&Val> {
        self.values.get(key).map(|s| &s.val)
    }

    fn flag(&self, key: &str) -> Option<bool> {
        match self.value(key)? {
            Val::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// Every option of the kind with its effective value and source (defaults
    /// included), then every tag as `tags.<name>`.
    pub fn provenance(&self) -> Vec<Provenance> {
        let defaults = (self.defaults)();
        let default_value = |key: &str| {
            defaults
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string())
        };
        let options = self
            .kind
            .options()
            .iter()
            .map(|o| match self.values.get(o.key) {
                Some(s) => Provenance {
                    key: o.key.to_owned(),
                    value: Some(s.val.to_string()),
                    source: s.source.clone(),
                    path: Some(s.path.clone()),
                    location: Some(location_of(s)),
                },
                None => Provenance {
                    key: o.key.to_owned(),
                    value: match o.target {
                        Target::Core => default_value(o.key),
                        Target::Registry => None,
                    },
                    source: Source::Default,
                    path: None,
                    location: None,
                },
            });
        let tags = self.tags.iter().map(|(k, s)| Provenance {
            key: format!("tags.{k}"),
            value: Some(s.val.clone()),
            source: s.source.clone(),
            path: Some(s.path.clone()),
            location: Some(location_of(s)),
        });
        options.chain(tags).collect()
    }

    /// Whether `other` has the same effective settings (values, error names,
    /// tags), wherever they came from: a reload leaves such an instance alone.
    pub fn same_settings(&self, other: &Resolved<C>) -> bool {
        self.kind == other.kind
            && self.values.len() == other.values.len()
            && self
                .values
                .iter()
                .zip(&other.values)
                .all(|((k1, a), (k2, b))| k1 == k2 && a.val == b.val)
            && self.tags.len() == other.tags.len()
            && self
                .tags
                .iter()
                .zip(&other.tags)
                .all(|((k1, a), (k2, b))| k1 == k2 && a.val == b.val)
    }
}

/// Which keys a config file gives one instance, for code defaults that
/// yield to the file (see
/// [`Registry::configure_defaults`](crate::Registry::configure_defaults)).
#[derive(Debug, Clone, Copy)]
pub struct FileGives<'a> {
    values: &'a Values,
}

impl<'a> FileGives<'a> {
    /// The keys `entry` was given.
    pub(crate) fn of<C>(entry: &'a Resolved<C>) -> Self {
        FileGives {
            values: &entry.values,
        }
    }

    /// Whether the file gives the instance `key` (canonical kebab case,
    /// `max-attempts`): in its own entry, in a named config it inherits
    /// (its `base-config`), or by an environment override. A value of the
    /// file's `configs.default` does not count: that is the file's default
    /// for every instance, which code defaults for this one replace.
    pub fn key(&self, key: &str) -> bool {
        self.values.get(key).is_some_and(|s| match &s.source {
            Source::Default | Source::Shared => false,
            Source::Config(name) => name != crate::chain::DEFAULT,
            Source::Instance | Source::Env(_) => true,
        })
    }
}

impl<C: Apply> Resolved<C> {
    /// resil-core's builder with every file value applied (defaults →
    /// `base-config` chain → own settings → environment): add code-only
    /// settings, then `build()`.
    pub fn builder(&self) -> C::Builder {
        C::builder_with(&self.values)
    }
}

/// One kind's part of the file: the default config, the named configs and the
/// instances, each resolved.
#[derive(Debug, Clone)]
pub struct Section<C> {
    kind: Kind,
    path: String,
    default: Resolved<C>,
    configs: BTreeMap<String, Resolved<C>>,
    instances: BTreeMap<String, Resolved<C>>,
}

impl<C> Section<C> {
    pub(crate) fn new(
        kind: Kind,
        path: String,
        default: Resolved<C>,
        configs: BTreeMap<String, Resolved<C>>,
        instances: BTreeMap<String, Resolved<C>>,
    ) -> Self {
        Section {
            kind,
            path,
            default,
            configs,
            instances,
        }
    }

    /// The kind.
    pub fn kind(&self) -> Kind {
        self.kind
    }

    /// The section's key path (`resilience4j.circuitbreaker`).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The configured instance `name`.
    pub fn instance(&self, name: &str) -> Option<&Resolved<C>> {
        self.instances.get(name)
    }

    /// The named config `name` (`configs.<name>`), resolved through its own chain.
    pub fn config(&self, name: &str) -> Option<&Resolved<C>> {
        self.configs.get(name)
    }

    /// `configs.default`, or resil-core's defaults (with the kind-level tags)
    /// when the file has none: what an unconfigured name gets.
    pub fn default_config(&self) -> &Resolved<C> {
        &self.default
    }

    /// What `registry.<kind>(name)` should build for `name`: the instance if
    /// configured, else the named config of the same name (as Resilience4j's
    /// Spring Boot starter does), else the default config.
    pub fn for_name(&self, name: &str) -> &Resolved<C> {
        self.instance(name)
            .or_else(|| self.config(name))
            .unwrap_or(&self.default)
    }

    /// The configured instance names, sorted.
    pub fn instance_names(&self) -> impl Iterator<Item = &str> {
        self.instances.keys().map(String::as_str)
    }

    /// The named config names (`default` included when the file has it), sorted.
    pub fn config_names(&self) -> impl Iterator<Item = &str> {
        self.configs.keys().map(String::as_str)
    }

    /// The configured instances, by name.
    pub fn instances(&self) -> impl Iterator<Item = (&str, &Resolved<C>)> {
        self.instances.iter().map(|(k, v)| (k.as_str(), v))
    }
}
