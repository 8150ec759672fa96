//! Config files: Resilience4j's `resilience4j.*` tree in TOML or YAML, plus
//! `RESIL_…` environment overrides, loaded into a [`FileConfig`] the registry
//! builds its instances from.
//!
//! # The tree
//!
//! ```yaml
//! resilience4j:
//!   circuitbreaker:            # also circuit-breaker
//!     tags: { team: storage }  # every circuit breaker's tags
//!     configs:                 # named configs; `default` applies to every name
//!       default: { sliding-window-size: 50 }
//!       inventory-base:
//!         failure-rate-threshold: 50
//!         wait-duration-in-open-state: 10s
//!     instances:
//!       inventory-query:
//!         base-config: inventory-base
//!         record-exceptions: [ConnectionRefused, Timeout]
//!         tags: { tier: "1" }
//!   retry: …                   # also bulkhead, thread-pool-bulkhead,
//!                              # ratelimiter (rate-limiter), timelimiter (time-limiter)
//! ```
//!
//! Keys are Resilience4j's kebab-case names; `snake_case` and `camelCase` are
//! the same key. Config and instance names are taken as written.
//!
//! Beside it, resil's own namespace `resil` holds the HTTP classifiers'
//! status sets (`resil.http.instances.<name>.record-status`, …; see
//! [`HttpSection`]), checked by the same loader. Every other top-level key
//! is the application's.
//!
//! # Values
//!
//! Durations: `500ms`, `10s`, `1m`, `2h` (units `ns`, `us`, `ms`, `s`, `m`, `h`,
//! `d`), ISO-8601 `PT10S`/`PT0.5S`/`PT1M30S`, or an integer of milliseconds
//! (see [`parse_duration`]). Error-class lists (`record-errors`,
//! `ignore-errors`, `retry-errors`, or Resilience4j's `…-exceptions`
//! spellings) are lists of names (or one comma-separated string).
//!
//! # Inheritance
//!
//! An entry's values are resil-core's defaults, then its `base-config` chain
//! root first, then its own, then the environment. Without `base-config` an
//! instance inherits the named config of its own name if there is one, else
//! `default`; a named config without `base-config` inherits `default`. Chains
//! may be long; a cycle or an unknown base is an error showing the whole chain.
//! Lists and values are inherited or replaced whole; tags merge by name.
//!
//! # Errors
//!
//! Nothing invalid is defaulted: every bad value, unknown key (with a "did you
//! mean"), wrong type, unknown base and cycle is one [`Problem`] naming its key
//! path, and a [`ConfigFileError`] lists them all.
//!
//! # For the registry
//!
//! Per kind, [`FileConfig`] has a [`Section`]: [`Section::for_name`] is what
//! `registry.<kind>(name)` builds (instance → config of the same name →
//! default), each a [`Resolved`] with the resil-core builder
//! ([`Resolved::builder`]: apply code settings, then `build()`), the
//! error-class names with their key paths, tags, and the provenance of every
//! value.

pub(crate) mod apply;
mod aspect_order;
pub(crate) mod bind;
mod client;
pub(crate) mod duration;
mod env;
mod error;
pub(crate) mod http;
mod inbound;
pub(crate) mod load;
#[cfg(feature = "properties")]
mod properties;
pub(crate) mod render;
mod resolve;
pub(crate) mod resolved;
pub(crate) mod schema;
pub(crate) mod setting;
mod spring;
mod value;

use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) use self::apply::Apply;
pub use self::client::{
    HttpClientEntry, HttpClientSection, HTTP_CLIENT_INSTANCES, HTTP_CLIENT_KEYS, REPLAY_METHODS,
};
pub use self::duration::{format_duration, parse_duration, ParseDurationError};
pub use self::error::{ConfigFileError, Problem, ProblemKind};
pub use self::http::{
    parse_status_ranges, HttpEntry, HttpSection, StatusKey, StatusList, StatusSetError,
    EXPECTED_STATUS, HTTP_INSTANCES, RESIL_ROOT, WATCH_DEBOUNCE_KEY, WATCH_KEY,
};
pub use self::inbound::INBOUND_GUARD_KEYS;
pub(crate) use self::render::{rendered, Render};
pub use self::resolved::{ErrorNames, FileGives, Provenance, Resolved, Section};
pub use self::schema::Kind;
pub use self::setting::Source;
pub use self::spring::PROFILES_VAR;

use self::load::Document;
use self::value::Value;

/// A config file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// TOML (feature `toml`).
    Toml,
    /// YAML (feature `yaml`), one or more documents separated by `---`.
    Yaml,
    /// Spring's `application.properties` (feature `properties`).
    Properties,
}

/// One document of a config text: its value tree and the lines of its keys.
struct ParsedDoc {
    tree: Value,
    lines: value::Lines,
}

impl Format {
    /// The format a file's extension names: `.toml`, `.yaml`, `.yml` or
    /// `.properties`.
    pub fn from_path(path: &Path) -> Option<Format> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "toml" => Some(Format::Toml),
            "yaml" | "yml" => Some(Format::Yaml),
            "properties" => Some(Format::Properties),
            _ => None,
        }
    }

    /// The documents of `text`, or the parser's message.
    fn parse(self, text: &str, problems: &mut Vec<Problem>) -> Result<Vec<ParsedDoc>, String> {
        let _ = &problems;
        match self {
            #[cfg(feature = "toml")]
            Format::Toml => Ok(vec![ParsedDoc {
                tree: value::from_toml(text)?,
                lines: value::toml_lines(text),
            }]),
            #[cfg(feature = "yaml")]
            Format::Yaml => {
                let trees = value::from_yaml(text)?;
                let mut lines = value::yaml_lines(text);
                lines.resize_with(trees.len(), value::Lines::new);
                Ok(trees
                    .into_iter()
                    .zip(lines)
                    .map(|(tree, lines)| ParsedDoc { tree, lines })
                    .collect())
            }
            #[cfg(feature = "properties")]
            Format::Properties => {
                let (tree, lines, mut found) = properties::parse(text);
                problems.append(&mut found);
                Ok(vec![ParsedDoc { tree, lines }])
            }
            #[allow(unreachable_patterns)]
            other => {
                let _ = text;
                Err(format!(
                    "resil-registry was built without its `{}` feature",
                    other.feature()
                ))
            }
        }
    }

    fn feature(self) -> &'static str {
        match self {
            Format::Toml => "toml",
            Format::Yaml => "yaml",
            Format::Properties => "properties",
        }
    }
}

/// A validated configuration: per kind, the default config, the named configs
/// and the instances, each resolved (see the [module docs](self)).
///
/// ```
/// # #[cfg(feature = "yaml")] {
/// use resil_registry::config::{FileConfig, Source};
///
/// let file = FileConfig::from_yaml_str("
/// resilience4j:
///   retry:
///     configs:
///       default: { wait-duration: 200ms }
///     instances:
///       inventory: { max-attempts: 2, retry-errors: [connection_refused] }
/// ").unwrap();
/// let inventory = file.retry().for_name("inventory");
/// // Code-only settings (predicates from the error names, …) go on the builder.
/// let config = inventory.builder().build().unwrap();
/// assert_eq!(config.max_attempts(), 2);
/// assert_eq!(config.wait_duration(), std::time::Duration::from_millis(200));
/// assert_eq!(inventory.source("wait-duration"), Source::Config("default".into()));
/// assert_eq!(inventory.retry_errors().unwrap().names(), ["connection_refused"]);
/// // A name the file does not configure gets the default config.
/// assert_eq!(file.retry().for_name("payments").config().max_attempts(), 3);
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct FileConfig {
    origin: Option<PathBuf>,
    /// Warnings (1.x keys read as their 2.x meaning, Java-only keys ignored).
    warnings: Vec<Problem>,
    /// Top-level keys outside `resilience4j` and `resil`, left to the
    /// application.
    ignored_keys: Vec<String>,
    /// The profiles the configuration was read with.
    profiles: Vec<String>,
    /// Every scalar of the file (the application's keys too), by dotted key,
    /// later documents last.
    properties: Vec<(String, String)>,
    /// Per kind: the default config, the named configs and the instances.
    sections: Sections,
    /// resil's own `resil.http.instances`: the HTTP classifiers' status sets.
    http: HttpSection,
    /// resil's own `resil.inbound-guard`: the inbound guard's thresholds.
    inbound_guard: Option<resil_core::inbound::InboundGuardConfig>,
    /// resil's own `resil.http-client.instances`: client layers' settings.
    http_client: HttpClientSection,
}

impl Default for FileConfig {
    /// No file and no override: every name gets resil-core's defaults.
    fn default() -> Self {
        let mut problems = Vec::new();
        let config = FileConfig::resolve(Document::default(), None, &mut problems);
        debug_assert!(problems.is_empty(), "resil-core's defaults are valid");
        config
    }
}

impl FileConfig {
    /// Loads TOML text (no environment overrides).
    #[cfg(feature = "toml")]
    pub fn from_toml_str(text: &str) -> Result<FileConfig, ConfigFileError> {
        FileConfig::from_str_with_env(text, Format::Toml, NO_ENV)
    }

    /// Loads YAML text (no environment overrides).
    #[cfg(feature = "yaml")]
    pub fn from_yaml_str(text: &str) -> Result<FileConfig, ConfigFileError> {
        FileConfig::from_str_with_env(text, Format::Yaml, NO_ENV)
    }

    /// Loads a file, its format named by its extension (`.toml`, `.yaml`, `.yml`, `.properties`).
    /// No environment overrides: see [`from_file_with_env`](Self::from_file_with_env).
    pub fn from_file(path: impl AsRef<Path>) -> Result<FileConfig, ConfigFileError> {
        FileConfig::from_file_with_env(path, NO_ENV)
    }

    /// Loads text in `format`, then applies the `RESIL_…` overrides among
    /// `vars` (pass `std::env::vars()` for the process environment; tests pass
    /// their own pairs). Variables without the prefix are ignored.
    pub fn from_str_with_env<I, K, V>(
        text: &str,
        format: Format,
        vars: I,
    ) -> Result<FileConfig, ConfigFileError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let text = Text::new(text.to_owned(), format, None);
        FileConfig::load(vec![text], None, collect_vars(vars))
    }

    /// [`from_file`](Self::from_file), then the `RESIL_…` overrides among `vars`.
    pub fn from_file_with_env<I, K, V>(
        path: impl AsRef<Path>,
        vars: I,
    ) -> Result<FileConfig, ConfigFileError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let path = path.as_ref();
        let (config, problems) = FileConfig::load_file_all(path, vars)?;
        FileConfig::finish(config, problems, Some(path))
    }

    /// [`from_file_with_env`](Self::from_file_with_env), returning what could
    /// be resolved beside every problem found (an unreadable file is an
    /// error at once: nothing to resolve).
    pub(crate) fn load_file_all<I, K, V>(
        path: &Path,
        vars: I,
    ) -> Result<(FileConfig, Vec<Problem>), ConfigFileError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let fail = |kind, message: String| {
            Err(ConfigFileError::new(vec![Problem::new(kind, None, message)]).with_origin(path))
        };
        let Some(format) = Format::from_path(path) else {
            return fail(
                ProblemKind::Syntax,
                format!(
                    "`{}`: unknown config format; name the file `*.toml`, `*.yaml`, `*.yml` or `*.properties`",
                    path.display()
                ),
            );
        };
        let text = match std::fs::read_to_string(path) {
            Ok(text) => text,
            Err(e) => {
                return fail(
                    ProblemKind::Io,
                    format!("cannot read `{}`: {e}", path.display()),
                )
            }
        };
        let vars = collect_vars(vars);
        let mut texts = vec![Text::new(text, format, Some(path.to_path_buf()))];
        // Spring's `application-{profile}.yml` beside the main file, for each
        // active profile in order, read after it.
        let profiles = active_profiles(&vars).or_else(|| {
            // Parsed once: `load_all` takes these documents and problems.
            match &texts[0].parsed().0 {
                Ok(docs) => docs.first().and_then(|d| spring::active_in_file(&d.tree)),
                Err(_) => None,
            }
        });
        for profile in profiles.iter().flatten() {
            let (Some(stem), Some(ext)) = (path.file_stem(), path.extension()) else {
                break;
            };
            let sibling = path.with_file_name(format!(
                "{}-{profile}.{}",
                stem.to_string_lossy(),
                ext.to_string_lossy()
            ));
            match std::fs::read_to_string(&sibling) {
                Ok(text) => texts.push(Text::new(text, format, Some(sibling))),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => {
                    return fail(
                        ProblemKind::Io,
                        format!("cannot read `{}`: {e}", sibling.display()),
                    )
                }
            }
        }
        Ok(FileConfig::load_all(texts, Some(path), vars))
    }

    /// No file, only the `RESIL_…` overrides among `vars`.
    pub fn from_env<I, K, V>(vars: I) -> Result<FileConfig, ConfigFileError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        FileConfig::load(Vec::new(), None, collect_vars(vars))
    }

    /// Every stage, every problem: the texts' documents (dotted keys
    /// expanded, profile documents selected, placeholders resolved), laid
    /// over each other in order, then the `RESIL_…` overrides, then
    /// inheritance and validation.
    fn load(
        texts: Vec<Text>,
        origin: Option<&Path>,
        vars: Vec<(String, String)>,
    ) -> Result<FileConfig, ConfigFileError> {
        let (config, problems) = FileConfig::load_all(texts, origin, vars);
        FileConfig::finish(config, problems, origin)
    }

    fn finish(
        config: FileConfig,
        problems: Vec<Problem>,
        origin: Option<&Path>,
    ) -> Result<FileConfig, ConfigFileError> {
        if problems.is_empty() {
            return Ok(config);
        }
        let mut error = ConfigFileError::new(problems);
        error.sort();
        Err(match origin {
            Some(path) => error.with_origin(path),
            None => error,
        })
    }

    /// As [`load`](Self::load), returning what could be resolved beside every
    /// problem, so a registry can add its own (unknown error-class names) to
    /// one report.
    pub(crate) fn load_all(
        texts: Vec<Text>,
        origin: Option<&Path>,
        vars: Vec<(String, String)>,
    ) -> (FileConfig, Vec<Problem>) {
        let mut problems = Vec::new();
        let mut parsed: Vec<(ParsedDoc, Option<Arc<str>>)> = Vec::new();
        let several_files = texts.len() > 1;
        for mut text in texts {
            let file_label = text
                .file
                .as_ref()
                .and_then(|f| f.file_name())
                .map(|f| f.to_string_lossy().into_owned());
            let (docs, mut found) = text.take_parsed();
            match docs {
                Ok(docs) => {
                    let several_docs = docs.len() > 1;
                    for (i, doc) in docs.into_iter().enumerate() {
                        let label = match (&file_label, several_docs) {
                            (Some(f), true) => Some(format!("{f} (document {})", i + 1)),
                            (Some(f), false) => Some(f.clone()),
                            (None, true) => Some(format!("document {}", i + 1)),
                            (None, false) => None,
                        };
                        parsed.push((doc, label.map(Arc::from)));
                    }
                }
                Err(message) => found.push(Problem::new(
                    ProblemKind::Syntax,
                    None,
                    format!(
                        "not valid {}: {message}",
                        text.format.feature().to_ascii_uppercase()
                    ),
                )),
            }
            let doc_label = if several_files { file_label } else { None };
            problems.extend(
                found
                    .into_iter()
                    .map(|p| p.in_document(doc_label.as_deref())),
            );
        }

        // Profiles: the environment's, else the first document's
        // `spring.profiles.active`.
        let profiles = active_profiles(&vars)
            .or_else(|| {
                parsed
                    .first()
                    .and_then(|(d, _)| spring::active_in_file(&d.tree))
            })
            .unwrap_or_default();
        let mut docs = Vec::new();
        for (doc, label) in parsed {
            if let Some(expr) = spring::document_profiles(&doc.tree) {
                if !spring::profile_matches(&expr, &profiles) {
                    continue;
                }
            }
            docs.push((doc, label));
        }

        // Placeholders name environment variables (Spring's relaxed form
        // too), else keys of the file itself.
        let mut file_keys = Vec::new();
        for (doc, _) in &docs {
            spring::flatten(&doc.tree, "", &mut file_keys);
        }
        let lookup = |name: &str| -> Option<String> {
            let env = |n: &str| vars.iter().find(|(k, _)| k == n).map(|(_, v)| v.clone());
            env(name)
                .or_else(|| env(&spring::env_name(name)))
                .or_else(|| {
                    file_keys
                        .iter()
                        .rev()
                        .find(|(k, _)| k == name)
                        .map(|(_, v)| v.clone())
                })
        };

        let mut merged = Document::default();
        let mut merged_http = HttpSection::default();
        let mut inbound_guard = None;
        let mut http_client = HttpClientSection::default();
        let mut ignored_keys: Vec<String> = Vec::new();
        // Every document's lines, for the problems found after merging.
        let mut all_lines = value::Lines::new();
        for (doc, _) in &docs {
            all_lines.extend(&doc.lines);
        }
        for (doc, label) in docs {
            let mut found = Vec::new();
            let Root {
                mut resilience4j,
                resil,
                ignored,
            } = split_root(doc.tree);
            for key in ignored {
                if !ignored_keys.contains(&key) {
                    ignored_keys.push(key);
                }
            }
            let _ = spring::resolve_placeholders(&mut resilience4j, "", &lookup, &mut found);
            let (mut document, _) = load::document(resilience4j, &mut found);
            document.locate(&doc.lines, &label);
            for (root, mut value) in resil {
                let _ = spring::resolve_placeholders(&mut value, &root, &lookup, &mut found);
                merged_http.merge(http::section_and_guard(
                    &root,
                    value,
                    &mut found,
                    &mut inbound_guard,
                    &mut http_client,
                ));
            }
            for problem in &mut found {
                problem.locate(&doc.lines);
            }
            problems.extend(found.into_iter().map(|p| p.in_document(label.as_deref())));
            merged.merge(document);
        }
        if !ignored_keys.is_empty() {
            tracing::debug!(
                keys = %ignored_keys.join(", "),
                "resil reads only `resilience4j` and `resil` from a config file; the other top-level keys belong to the application"
            );
        }

        let mut late = Vec::new();
        let orders: Vec<_> = merged
            .kinds
            .iter()
            .filter_map(|k| k.aspect_order.as_ref())
            .collect();
        aspect_order::check(&orders, &mut late);
        env::apply(&mut merged, vars.iter().map(|(k, v)| (k, v)), &mut late);
        let mut config = FileConfig::resolve(merged, origin, &mut late);
        let configured = config.sections.configured_names();
        merged_http.apply_env(&vars, &configured, &mut late);
        merged_http.check_names(&configured, &mut late);
        http_client.check_names(&configured, &mut late);
        config.http = merged_http;
        config.inbound_guard = inbound_guard;
        config.http_client = http_client;
        for problem in &mut late {
            problem.locate(&all_lines);
        }
        problems.append(&mut late);
        let (warnings, problems): (Vec<Problem>, Vec<Problem>) =
            problems.into_iter().partition(Problem::is_warning);
        for w in &warnings {
            tracing::warn!(
                path = w.path().unwrap_or(""),
                line = w.line().unwrap_or(0),
                "{w}"
            );
        }
        config.warnings = warnings;
        config.ignored_keys = ignored_keys;
        config.profiles = profiles;
        config.properties = file_keys
            .iter()
            .map(|(k, v)| {
                let v = spring::resolve_text(v, &lookup).unwrap_or_else(|| v.clone());
                (k.clone(), v)
            })
            .collect();
        (config, problems)
    }

    fn resolve(doc: Document, origin: Option<&Path>, problems: &mut Vec<Problem>) -> FileConfig {
        FileConfig {
            origin: origin.map(Path::to_path_buf),
            warnings: Vec::new(),
            ignored_keys: Vec::new(),
            profiles: Vec::new(),
            properties: Vec::new(),
            sections: Sections::resolve(&doc, problems),
            http: HttpSection::default(),
            inbound_guard: None,
            http_client: HttpClientSection::default(),
        }
    }

    /// The file it was loaded from, if any.
    pub fn origin(&self) -> Option<&Path> {
        self.origin.as_deref()
    }

    /// What the file says that resil read differently or ignored: each
    /// Resilience4j 1.x key read as its 2.x key ([`ProblemKind::Renamed`]),
    /// each Java-only starter key ignored ([`ProblemKind::Ignored`]). Each is
    /// also logged once, at `warn`, when the file is loaded.
    pub fn warnings(&self) -> &[Problem] {
        &self.warnings
    }

    /// The top-level keys outside `resilience4j` and `resil` (`spring`,
    /// `server`, `management`, …): the application's, not resil's, so
    /// ignored (one `debug` event lists them).
    pub fn ignored_keys(&self) -> &[String] {
        &self.ignored_keys
    }

    /// The value of any key of the file, the application's own included, as
    /// Spring's `Environment.getProperty` answers it: by dotted key
    /// (`lab.price-cache.expires-after`, list items as `key[0]`), from the
    /// last active document that sets it, with its `${…}` placeholders
    /// resolved. Settings resil does not own live beside its own this way.
    ///
    /// ```
    /// # #[cfg(feature = "yaml")] {
    /// let file = resil_registry::FileConfig::from_yaml_str(
    ///     "app.cache.ttl: 350ms\nresilience4j.retry.instances.a.max-attempts: 2\n",
    /// ).unwrap();
    /// assert_eq!(file.property("app.cache.ttl"), Some("350ms"));
    /// assert_eq!(file.property("app.cache.size"), None);
    /// # }
    /// ```
    pub fn property(&self, key: &str) -> Option<&str> {
        self.properties
            .iter()
            .rev()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    /// resil's own `resil.http.instances`: each HTTP classifier's status
    /// sets, validated by the loader (unknown keys, bad sets and names that
    /// match no instance of the file are errors; see [`HttpSection`]).
    /// resil-web's `HttpClassifier` reads them.
    ///
    /// ```
    /// # #[cfg(feature = "yaml")] {
    /// use resil_registry::config::{FileConfig, StatusKey};
    ///
    /// let file = FileConfig::from_yaml_str("
    /// resilience4j.circuitbreaker.instances.inventory: {}
    /// resil.http.instances.inventory:
    ///   ignore-status: [404, 409]
    /// ").unwrap();
    /// let inventory = file.http().instance("inventory").unwrap();
    /// let ignored = inventory.get(StatusKey::IgnoreStatus).unwrap();
    /// assert_eq!(ignored.ranges(), [(404, 404), (409, 409)]);
    ///
    /// let typo = FileConfig::from_yaml_str("
    /// resilience4j.circuitbreaker.instances.inventory: {}
    /// resil.http.instances.inventory:
    ///   ignore-statuses: [404]
    /// ").unwrap_err();
    /// assert!(typo.to_string().contains(
    ///     "line 4: unknown key `resil.http.instances.inventory.ignore-statuses`; \
    ///      did you mean `ignore-status`?"
    /// ));
    /// # }
    /// ```
    pub fn http(&self) -> &HttpSection {
        &self.http
    }

    /// resil's own `resil.inbound-guard`: the server-wide inbound guard's
    /// thresholds, checked by the loader (`None` when the file has no such
    /// section; a later document's section replaces an earlier one's).
    ///
    /// ```
    /// # #[cfg(feature = "yaml")] {
    /// use resil_registry::config::FileConfig;
    /// use std::time::Duration;
    ///
    /// let file = FileConfig::from_yaml_str("
    /// resil.inbound-guard:
    ///   max-in-flight: 500
    ///   retry-after: 2s
    /// ").unwrap();
    /// let guard = file.inbound_guard().unwrap();
    /// assert_eq!(guard.max_in_flight(), Some(500));
    /// assert_eq!(guard.retry_after(), Duration::from_secs(2));
    /// assert_eq!(guard.cpu_usage_threshold(), Some(80.0));
    ///
    /// let typo = FileConfig::from_yaml_str("resil.inbound-guard.max-in-fligth: 5\n").unwrap_err();
    /// assert!(typo.to_string().contains(
    ///     "unknown key `resil.inbound-guard.max-in-fligth`; did you mean `max-in-flight`?"
    /// ), "{typo}");
    /// # }
    /// ```
    pub fn inbound_guard(&self) -> Option<&resil_core::inbound::InboundGuardConfig> {
        self.inbound_guard.as_ref()
    }

    /// Every scalar of the file by dotted key, later documents last (what
    /// [`property`](Self::property) reads): a fleet publishes a version as
    /// these.
    #[cfg(feature = "redis")]
    pub(crate) fn all_properties(&self) -> &[(String, String)] {
        &self.properties
    }

    /// resil's own `resil.http-client.instances`: client layers' replay
    /// rules and deadline header, checked by the loader (see
    /// [`HttpClientEntry`]; a later document's keys replace an earlier
    /// one's). An entry is named after the instances the layer applies, so
    /// the file must configure one of that name under `resilience4j`.
    ///
    /// ```
    /// # #[cfg(feature = "yaml")] {
    /// use resil_registry::config::FileConfig;
    ///
    /// let file = FileConfig::from_yaml_str("
    /// resilience4j.retry.instances.prices: {}
    /// resil.http-client.instances.prices:
    ///   max-replay-body: 16KiB
    ///   replay-methods: safe
    /// ").unwrap();
    /// let prices = file.http_client().instance("prices").unwrap();
    /// assert_eq!(prices.max_replay_body, Some(16 * 1024));
    /// assert_eq!(prices.replay_methods, Some("safe"));
    /// # }
    /// ```
    pub fn http_client(&self) -> &HttpClientSection {
        &self.http_client
    }

    /// The active profiles the configuration was read with
    /// ([`PROFILES_VAR`], else the file's `spring.profiles.active`).
    pub fn profiles(&self) -> &[String] {
        &self.profiles
    }
}

const NO_ENV: [(&str, &str); 0] = [];

/// One config text to load, with the file it came from.
pub(crate) struct Text {
    text: String,
    format: Format,
    file: Option<PathBuf>,
    /// Its documents (or the syntax error) and the problems found reading
    /// them, once parsed.
    parsed: Option<Parsed>,
}

/// A text's documents (or its syntax error) and the problems found on the way.
type Parsed = (Result<Vec<ParsedDoc>, String>, Vec<Problem>);

impl Text {
    fn new(text: String, format: Format, file: Option<PathBuf>) -> Text {
        Text {
            text,
            format,
            file,
            parsed: None,
        }
    }

    /// Its documents, parsed on first use.
    fn parsed(&mut self) -> &Parsed {
        self.parsed
            .get_or_insert_with(|| parse(&self.text, self.format))
    }

    /// Its documents, parsed now unless they already were.
    fn take_parsed(&mut self) -> Parsed {
        self.parsed
            .take()
            .unwrap_or_else(|| parse(&self.text, self.format))
    }
}

/// `text`'s documents, dotted keys expanded, and the problems found reading
/// them.
fn parse(text: &str, format: Format) -> Parsed {
    let mut problems = Vec::new();
    let docs = format.parse(text, &mut problems).map(|docs| {
        docs.into_iter()
            .map(|d| ParsedDoc {
                tree: spring::expand(d.tree, "", &mut problems),
                lines: d.lines,
            })
            .collect()
    });
    (docs, problems)
}

fn collect_vars<I, K, V>(vars: I) -> Vec<(String, String)>
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<str>,
{
    vars.into_iter()
        .map(|(k, v)| (k.as_ref().to_owned(), v.as_ref().to_owned()))
        .collect()
}

/// The profiles [`PROFILES_VAR`] (or Spring's `SPRING_PROFILES_ACTIVE`) names.
fn active_profiles(vars: &[(String, String)]) -> Option<Vec<String>> {
    [PROFILES_VAR, "SPRING_PROFILES_ACTIVE"]
        .iter()
        .find_map(|name| {
            vars.iter().find(|(k, _)| k == name).map(|(_, v)| {
                v.split(',')
                    .map(str::trim)
                    .filter(|p| !p.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
        })
}

/// A document's top level, split by owner.
struct Root {
    /// The `resilience4j` subtree as a one-key map (the whole value when it
    /// is not a map, for the loader to report).
    resilience4j: Value,
    /// resil's own subtree (`resil`), by the key as written.
    resil: Vec<(String, Value)>,
    /// The other top-level keys: the application's.
    ignored: Vec<String>,
}

fn split_root(tree: Value) -> Root {
    match tree {
        Value::Map(entries) => {
            let mut root = Root {
                resilience4j: Value::Null,
                resil: Vec::new(),
                ignored: Vec::new(),
            };
            let mut kept = Vec::new();
            for (key, value) in entries {
                let n = schema::normalize(&key);
                if n == load::ROOT {
                    kept.push((key, value));
                } else if n == http::RESIL_ROOT {
                    root.resil.push((key, value));
                } else {
                    root.ignored.push(key);
                }
            }
            root.resilience4j = Value::Map(kept);
            root
        }
        other => Root {
            resilience4j: other,
            resil: Vec::new(),
            ignored: Vec::new(),
        },
    }
}

/// Generates, from the list of kinds (`kinds!`), the file's sections: one
/// [`Section`] per kind, resolved from the document, and the accessor
/// [`FileConfig::circuit_breaker`], [`FileConfig::retry`], … of each.
macro_rules! sections {
    ($(
        $(#[doc = $doc:expr])*
        $([cfg($cfg:meta)])?
        $field:ident, $try_get:ident, $configure:ident: $ty:path, $config:path, $builder:path;
    )*) => {
        /// Every kind's part of a config file.
        #[derive(Debug, Clone)]
        struct Sections {
            $($(#[cfg($cfg)])? $field: Section<$config>,)*
        }

        impl Sections {
            fn resolve(doc: &Document, problems: &mut Vec<Problem>) -> Sections {
                Sections {
                    $($(#[cfg($cfg)])? $field: resolve::section(doc, problems),)*
                }
            }

            /// Every instance and named config name of every kind
            /// (`default` aside), repeats included.
            fn configured_names(&self) -> Vec<&str> {
                let mut names = Vec::new();
                $(
                    $(#[cfg($cfg)])?
                    names.extend(
                        self.$field
                            .instance_names()
                            .chain(self.$field.config_names())
                            .filter(|n| *n != crate::chain::DEFAULT),
                    );
                )*
                names
            }
        }

        impl FileConfig {
            $(
                #[doc = concat!("The `", stringify!($field), "` section: its default config, named configs and instances.")]
                $(#[cfg($cfg)])?
                pub fn $field(&self) -> &Section<$config> {
                    &self.sections.$field
                }
            )*
        }
    };
}
crate::kinds::kinds!(sections);
