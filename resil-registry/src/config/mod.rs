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

mod apply;
#[cfg(feature = "redis")]
mod distributed;
mod duration;
mod env;
mod error;
mod load;
mod resolve;
mod resolved;
mod schema;
mod value;

use std::path::{Path, PathBuf};

use resil_core::bulkhead::BulkheadConfig;
use resil_core::circuit_breaker::CircuitBreakerConfig;
use resil_core::rate_limiter::RateLimiterConfig;
use resil_core::retry::RetryConfig;
use resil_core::thread_pool_bulkhead::ThreadPoolBulkheadConfig;
use resil_core::time_limiter::TimeLimiterConfig;

pub use self::duration::{format_duration, parse_duration, ParseDurationError};
pub use self::error::{ConfigFileError, Problem, ProblemKind};
pub use self::resolved::{ErrorNames, Provenance, Resolved, Section, Source};
pub use self::schema::Kind;

use self::load::Document;
use self::value::Value;

/// A config file's format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Format {
    /// TOML (feature `toml`).
    Toml,
    /// YAML (feature `yaml`).
    Yaml,
}

impl Format {
    /// The format a file's extension names: `.toml`, `.yaml` or `.yml`.
    pub fn from_path(path: &Path) -> Option<Format> {
        match path.extension()?.to_str()?.to_ascii_lowercase().as_str() {
            "toml" => Some(Format::Toml),
            "yaml" | "yml" => Some(Format::Yaml),
            _ => None,
        }
    }

    fn parse(self, text: &str) -> Result<Value, String> {
        match self {
            #[cfg(feature = "toml")]
            Format::Toml => value::from_toml(text),
            #[cfg(feature = "yaml")]
            Format::Yaml => value::from_yaml(text),
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

    /// The line of every key path (only computed when there are problems).
    fn lines(self, text: &str) -> value::Lines {
        match self {
            #[cfg(feature = "toml")]
            Format::Toml => value::toml_lines(text),
            #[cfg(feature = "yaml")]
            Format::Yaml => value::yaml_lines(text),
            #[allow(unreachable_patterns)]
            _ => {
                let _ = text;
                value::Lines::new()
            }
        }
    }

    fn feature(self) -> &'static str {
        match self {
            Format::Toml => "toml",
            Format::Yaml => "yaml",
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
    circuit_breaker: Section<CircuitBreakerConfig>,
    retry: Section<RetryConfig>,
    bulkhead: Section<BulkheadConfig>,
    thread_pool_bulkhead: Section<ThreadPoolBulkheadConfig>,
    rate_limiter: Section<RateLimiterConfig>,
    time_limiter: Section<TimeLimiterConfig>,
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

    /// Loads a file, its format named by its extension (`.toml`, `.yaml`, `.yml`).
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
        FileConfig::load(Some((text, format)), None, vars)
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
        let fail = |kind, message: String| {
            Err(ConfigFileError::new(vec![Problem::new(kind, None, message)]).with_origin(path))
        };
        let Some(format) = Format::from_path(path) else {
            return fail(
                ProblemKind::Syntax,
                format!(
                    "`{}`: unknown config format; name the file `*.toml`, `*.yaml` or `*.yml`",
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
        FileConfig::load(Some((&text, format)), Some(path), vars)
    }

    /// No file, only the `RESIL_…` overrides among `vars`.
    pub fn from_env<I, K, V>(vars: I) -> Result<FileConfig, ConfigFileError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        FileConfig::load(None, None, vars)
    }

    fn load<I, K, V>(
        source: Option<(&str, Format)>,
        origin: Option<&Path>,
        vars: I,
    ) -> Result<FileConfig, ConfigFileError>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<str>,
        V: AsRef<str>,
    {
        let mut problems = Vec::new();
        let mut doc = Document::default();
        let mut lines = value::Lines::new();
        if let Some((text, format)) = source {
            match format.parse(text) {
                Ok(tree) => {
                    doc = load::document(tree, &mut problems);
                    if !problems.is_empty() {
                        lines = format.lines(text);
                    }
                }
                Err(message) => problems.push(Problem::new(
                    ProblemKind::Syntax,
                    None,
                    format!(
                        "not valid {}: {message}",
                        format.feature().to_ascii_uppercase()
                    ),
                )),
            }
        }
        env::apply(&mut doc, vars, &mut problems);
        let config = FileConfig::resolve(doc, origin, &mut problems);
        if problems.is_empty() {
            return Ok(config);
        }
        if let (true, Some((text, format))) = (lines.is_empty(), source) {
            lines = format.lines(text);
        }
        for problem in &mut problems {
            problem.locate(&lines);
        }
        let mut error = ConfigFileError::new(problems);
        error.sort();
        Err(match origin {
            Some(path) => error.with_origin(path),
            None => error,
        })
    }

    fn resolve(doc: Document, origin: Option<&Path>, problems: &mut Vec<Problem>) -> FileConfig {
        let section = |kind: Kind| &doc.kinds[kind.index()];
        FileConfig {
            origin: origin.map(Path::to_path_buf),
            circuit_breaker: resolve::section(section(Kind::CircuitBreaker), problems),
            retry: resolve::section(section(Kind::Retry), problems),
            bulkhead: resolve::section(section(Kind::Bulkhead), problems),
            thread_pool_bulkhead: resolve::section(section(Kind::ThreadPoolBulkhead), problems),
            rate_limiter: resolve::section(section(Kind::RateLimiter), problems),
            time_limiter: resolve::section(section(Kind::TimeLimiter), problems),
        }
    }

    /// The file it was loaded from, if any.
    pub fn origin(&self) -> Option<&Path> {
        self.origin.as_deref()
    }

    /// `resilience4j.circuitbreaker`.
    pub fn circuit_breaker(&self) -> &Section<CircuitBreakerConfig> {
        &self.circuit_breaker
    }

    /// `resilience4j.retry`.
    pub fn retry(&self) -> &Section<RetryConfig> {
        &self.retry
    }

    /// `resilience4j.bulkhead`.
    pub fn bulkhead(&self) -> &Section<BulkheadConfig> {
        &self.bulkhead
    }

    /// `resilience4j.thread-pool-bulkhead`.
    pub fn thread_pool_bulkhead(&self) -> &Section<ThreadPoolBulkheadConfig> {
        &self.thread_pool_bulkhead
    }

    /// `resilience4j.ratelimiter`.
    pub fn rate_limiter(&self) -> &Section<RateLimiterConfig> {
        &self.rate_limiter
    }

    /// `resilience4j.timelimiter`.
    pub fn time_limiter(&self) -> &Section<TimeLimiterConfig> {
        &self.time_limiter
    }
}

const NO_ENV: [(&str, &str); 0] = [];
