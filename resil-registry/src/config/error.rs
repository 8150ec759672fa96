//! `ConfigFileError`: every problem found in a configuration, each naming its
//! key path (or environment variable), the value, and what is allowed.

use std::fmt;
use std::path::{Path, PathBuf};

use resil_core::ConfigError;

/// Everything wrong with one configuration (file plus environment overrides):
/// the loader does not stop at the first problem.
///
/// `Display` prints a header line, then one problem per line, with the line
/// of the file it is on when there is one:
///
/// ```text
/// 2 problems in `resil.toml`:
///   line 4: invalid `resilience4j.circuitbreaker.instances.inventory.failure-rate-threshold`: got 0, expected a percentage in (0, 100]
///   line 9: unknown key `resilience4j.retry.instances.inventory.max-atempts`; did you mean `max-attempts`?
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigFileError {
    origin: Option<PathBuf>,
    problems: Vec<Problem>,
    /// Found by a registry's first load (nothing was installed before).
    first_load: bool,
}

impl ConfigFileError {
    /// An error made of these problems (e.g. a registry adding its own, such as
    /// [`Problem::unknown_error_class`], to the ones the loader found).
    pub fn new(problems: Vec<Problem>) -> Self {
        ConfigFileError {
            origin: None,
            problems,
            first_load: false,
        }
    }

    /// The same problems, found by a registry's first load.
    pub(crate) fn on_first_load(mut self) -> Self {
        self.first_load = true;
        self
    }

    /// Whether a registry's first load found these problems (no file was
    /// installed before, so none stays in force: the registry "cannot
    /// load", rather than refusing a reload).
    pub fn is_first_load(&self) -> bool {
        self.first_load
    }

    /// The same problems, reported as found in the file at `path`.
    pub fn with_origin(mut self, path: impl Into<PathBuf>) -> Self {
        self.origin = Some(path.into());
        self
    }

    /// Every problem, sorted by key path.
    pub fn problems(&self) -> &[Problem] {
        &self.problems
    }

    /// The file the problems were found in, when the configuration came from one.
    pub fn origin(&self) -> Option<&Path> {
        self.origin.as_deref()
    }

    /// Adds a problem (kept sorted by key path).
    pub fn push(&mut self, problem: Problem) {
        self.problems.push(problem);
        self.sort();
    }

    /// Sorts the problems by key path and drops repeats.
    pub fn sort(&mut self) {
        self.problems
            .sort_by(|a, b| a.sort_key().cmp(&b.sort_key()));
        self.problems.dedup();
    }
}

impl fmt::Display for ConfigFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let n = self.problems.len();
        let plural = if n == 1 { "problem" } else { "problems" };
        match &self.origin {
            Some(path) => write!(f, "{n} {plural} in `{}`:", path.display())?,
            None => write!(f, "{n} {plural} in the configuration:")?,
        }
        for problem in &self.problems {
            match (problem.line, &problem.document) {
                (Some(line), Some(doc)) => write!(f, "\n  {doc}, line {line}: {problem}")?,
                (Some(line), None) => write!(f, "\n  line {line}: {problem}")?,
                (None, Some(doc)) => write!(f, "\n  {doc}: {problem}")?,
                (None, None) => write!(f, "\n  {problem}")?,
            }
        }
        Ok(())
    }
}

impl std::error::Error for ConfigFileError {}

/// What kind of problem a [`Problem`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ProblemKind {
    /// The file could not be read.
    Io,
    /// The text is not valid TOML/YAML, or the format is unknown or not compiled in.
    Syntax,
    /// A key the schema does not have (with a suggestion when one is close).
    UnknownKey,
    /// The same key given twice in one map (e.g. in two spellings).
    Duplicate,
    /// A Resilience4j key resil deliberately does not take (the message says why).
    Unsupported,
    /// A value of the wrong type (a list where a duration goes).
    WrongType,
    /// A value of the right type outside the allowed range.
    InvalidValue,
    /// A `base-config` naming a config that does not exist.
    UnknownBase,
    /// `base-config`s that form a cycle.
    Cycle,
    /// An error-class name the program did not register.
    UnknownErrorClass,
    /// A `RESIL_…` environment variable that names no key.
    UnknownVariable,
    /// A warning: a Resilience4j 1.x key, read as the 2.x key the message names.
    Renamed,
    /// A warning: a key of Resilience4j's Java starter that means nothing in
    /// Rust, ignored (the message says why).
    Ignored,
}

/// One problem in a configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    kind: ProblemKind,
    path: Option<String>,
    env_var: Option<String>,
    suggestion: Option<String>,
    config_error: Option<Box<ConfigError>>,
    message: String,
    line: Option<usize>,
    /// The document or file the line is in, when the configuration has more
    /// than one (`application-prod.yml`, `profile prod`).
    document: Option<String>,
    /// For a value given twice under two key paths (`instances.a.x` and
    /// `limiters.a.x`): the other path, whose line the message adds.
    other_path: Option<String>,
}

impl Problem {
    pub(crate) fn new(kind: ProblemKind, path: Option<String>, message: String) -> Self {
        Problem {
            kind,
            path,
            env_var: None,
            suggestion: None,
            config_error: None,
            message,
            line: None,
            document: None,
            other_path: None,
        }
    }

    /// The same problem, also written at `other` (a second key path for the
    /// same setting): locating it names both lines.
    pub(crate) fn also_at(mut self, other: &str) -> Self {
        self.other_path = Some(other.to_owned());
        self
    }

    /// The same problem, on `line`.
    #[cfg_attr(not(feature = "properties"), allow(dead_code))]
    pub(crate) fn at(mut self, line: usize) -> Self {
        self.line = Some(line);
        self
    }

    /// The same problem, in `document` (when a configuration has several).
    pub(crate) fn in_document(mut self, document: Option<&str>) -> Self {
        if self.document.is_none() {
            self.document = document.map(str::to_owned);
        }
        self
    }

    /// Whether this is a warning ([`ProblemKind::Renamed`], [`ProblemKind::Ignored`]):
    /// the file loads, and [`FileConfig::warnings`](super::FileConfig::warnings) lists it.
    pub fn is_warning(&self) -> bool {
        matches!(self.kind, ProblemKind::Renamed | ProblemKind::Ignored)
    }

    /// The document or file the problem is in, when the configuration has
    /// several (a profile document, `application-prod.yml`).
    pub fn document(&self) -> Option<&str> {
        self.document.as_deref()
    }

    /// A value problem: `error`'s field is the full key path.
    pub(crate) fn value(kind: ProblemKind, error: ConfigError, env_var: Option<&str>) -> Self {
        let message = match env_var {
            None => error.to_string(),
            Some(var) => format!(
                "invalid `{var}` (sets `{}`): got {}, expected {}",
                error.field(),
                error.got(),
                error.expected()
            ),
        };
        Problem {
            kind,
            path: Some(error.field().to_owned()),
            env_var: env_var.map(str::to_owned),
            suggestion: None,
            config_error: Some(Box::new(error)),
            message,
            line: None,
            document: None,
            other_path: None,
        }
    }

    pub(crate) fn unknown_key(path: String, suggestion: Option<&str>, hint: Option<&str>) -> Self {
        let mut message = format!("unknown key `{path}`");
        if let Some(s) = suggestion {
            message.push_str(&format!("; did you mean `{s}`?"));
        }
        if let Some(hint) = hint {
            message.push_str(&format!(" ({hint})"));
        }
        Problem {
            suggestion: suggestion.map(str::to_owned),
            ..Problem::new(ProblemKind::UnknownKey, Some(path), message)
        }
    }

    pub(crate) fn with_env_var(mut self, var: &str) -> Self {
        self.env_var = Some(var.to_owned());
        self
    }

    pub(crate) fn with_suggestion(mut self, suggestion: Option<String>) -> Self {
        self.suggestion = suggestion;
        self
    }

    /// The problem a registry reports for a predicate name (a Spring file's
    /// `record-failure-predicate: com.acme.RecordFailurePredicate`) no
    /// predicate registered in code answers to; it lists the registered ones.
    pub fn unknown_predicate(path: &str, name: &str, registered: &[String]) -> Self {
        let mut message = format!("unknown predicate `{name}` at `{path}`");
        if registered.is_empty() {
            message.push_str("; no predicate is registered: call `Registry::register_predicate(\"");
            message.push_str(name.rsplit(['.', '$']).next().unwrap_or(name));
            message.push_str("\", |e: &YourError| …)` before loading the file");
        } else {
            message.push_str(&format!(
                " (registered: {})",
                quoted_list(registered.iter())
            ));
        }
        Problem::new(
            ProblemKind::UnknownErrorClass,
            Some(path.to_owned()),
            message,
        )
    }

    /// The problem a registry reports for a chaos `errors` or `results` name
    /// nothing was registered under (`Registry::register_chaos_error`,
    /// `Registry::register_chaos_result`): `path` is the list's key path.
    pub fn unknown_chaos_injection(path: &str, name: &str, registered: &[String]) -> Self {
        let results = path.ends_with("results");
        let register = if results {
            "register_chaos_result"
        } else {
            "register_chaos_error"
        };
        let mut message = format!("unknown chaos injection `{name}` at `{path}`");
        if registered.is_empty() {
            message.push_str(&format!(
                "; nothing is registered: call `Registry::{register}(\"{name}\", || …)` before loading the file"
            ));
        } else {
            message.push_str(&format!(
                " (registered: {})",
                quoted_list(registered.iter())
            ));
        }
        Problem::new(
            ProblemKind::UnknownErrorClass,
            Some(path.to_owned()),
            message,
        )
    }

    /// The problem a registry reports for an error-class name no registered
    /// type has: `path` is the list's key path, `index` the name's position.
    /// Suggests a close registered name, and lists them all.
    ///
    /// ```
    /// use resil_registry::config::{Problem, ProblemKind};
    ///
    /// let p = Problem::unknown_error_class(
    ///     "resilience4j.retry.instances.inventory.retry-errors", 0, "ConnectionRefsed",
    ///     &["ConnectionRefused", "Timeout"],
    /// );
    /// assert_eq!(p.kind(), ProblemKind::UnknownErrorClass);
    /// assert_eq!(p.suggestion(), Some("ConnectionRefused"));
    /// assert_eq!(
    ///     p.to_string(),
    ///     "unknown error class `ConnectionRefsed` at `resilience4j.retry.instances.inventory.retry-errors[0]`; \
    ///      did you mean `ConnectionRefused`? (registered: `ConnectionRefused`, `Timeout`)"
    /// );
    /// ```
    pub fn unknown_error_class(path: &str, index: usize, name: &str, registered: &[&str]) -> Self {
        // A Java class name is compared by the names it may stand for
        // (`com.acme.InventoryConectionException` → `inventory_conection`).
        let suggestion = std::iter::once(name.to_owned())
            .chain(crate::classes::java_simple_names(name))
            .find_map(|n| closest(&n, registered.iter().copied()));
        let at = format!("{path}[{index}]");
        let mut message = format!("unknown error class `{name}` at `{at}`");
        if let Some(s) = suggestion {
            message.push_str(&format!("; did you mean `{s}`?"));
        }
        if registered.is_empty() {
            message.push_str(
                " (no error class is registered: `Registry::register_error_class::<E>()`)",
            );
        } else {
            message.push_str(&format!(
                " (registered: {})",
                quoted_list(registered.iter())
            ));
        }
        Problem {
            suggestion: suggestion.map(str::to_owned),
            ..Problem::new(ProblemKind::UnknownErrorClass, Some(at), message)
        }
    }

    /// What kind of problem this is.
    pub fn kind(&self) -> ProblemKind {
        self.kind
    }

    /// The full key path the problem is about
    /// (`resilience4j.circuitbreaker.instances.inventory.failure-rate-threshold`),
    /// also when an environment variable set it. `None` for problems with the
    /// whole file (syntax, I/O).
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }

    /// The environment variable that set the bad value, if one did.
    pub fn env_var(&self) -> Option<&str> {
        self.env_var.as_deref()
    }

    /// The close, valid key or name the message suggests ("did you mean").
    pub fn suggestion(&self) -> Option<&str> {
        self.suggestion.as_deref()
    }

    /// For a bad value: resil-core's error, whose field is the full key path.
    pub fn config_error(&self) -> Option<&ConfigError> {
        self.config_error.as_deref()
    }

    /// The line of the file the key path is written on, when the problem is
    /// about a key of the file (not an environment variable or the whole file).
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// Sets the line from the file's key-path lines: the path's own, else its
    /// nearest written parent's (a default that does not fit sits under the
    /// entry that chose the other values).
    pub(crate) fn locate(&mut self, lines: &super::value::Lines) {
        if self.env_var.is_some() {
            return;
        }
        let mut path = match &self.path {
            Some(p) => p.as_str(),
            None => return,
        };
        if self.line.is_some() {
            return;
        }
        if let Some(other) = &self.other_path {
            if let (Some(first), Some(second)) = (lines.get(other), lines.get(path)) {
                self.message
                    .push_str(&format!(" (lines {first} and {second})"));
            }
        } else if self.kind == ProblemKind::Duplicate {
            if let [first, second, ..] = lines.all(path) {
                self.message
                    .push_str(&format!(" (lines {first} and {second})"));
            }
        }
        loop {
            if let Some(line) = lines.get(path) {
                self.line = Some(line);
                return;
            }
            match path.rfind(['.', '[']) {
                Some(at) => path = &path[..at],
                None => return,
            }
        }
    }

    fn sort_key(&self) -> (&str, &str) {
        (self.path.as_deref().unwrap_or(""), &self.message)
    }
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// `` `a`, `b`, `c` ``
pub(crate) fn quoted_list<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> String {
    items
        .into_iter()
        .map(|s| format!("`{}`", s.as_ref()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The candidate closest to `word`, if it is a likely typo of it: the option
/// table's one did-you-mean, which the attributes use too, so a typo gets the
/// same suggestion in a file, an environment variable and an attribute.
pub(crate) use resil_options::closest;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_error_lists_every_problem_one_per_line_sorted_by_path() {
        let mut err = ConfigFileError::new(vec![
            Problem::unknown_key("b.y".into(), Some("x"), None),
            Problem::value(
                ProblemKind::InvalidValue,
                ConfigError::new("a.x", 0, "an integer >= 1"),
                None,
            ),
        ]);
        err.sort();
        assert_eq!(
            err.to_string(),
            "2 problems in the configuration:\n  invalid `a.x`: got 0, expected an integer >= 1\n  \
             unknown key `b.y`; did you mean `x`?"
        );
        let err = err.with_origin("conf/resil.toml");
        assert!(err
            .to_string()
            .starts_with("2 problems in `conf/resil.toml`:\n"));
        assert_eq!(err.problems()[0].path(), Some("a.x"));
        assert_eq!(err.problems()[1].suggestion(), Some("x"));
    }

    #[test]
    fn an_env_value_problem_names_the_variable_and_the_key_it_sets() {
        let p = Problem::value(
            ProblemKind::WrongType,
            ConfigError::new(
                "resilience4j.retry.instances.a.max-attempts",
                "\"x\"",
                "a number",
            ),
            Some("RESIL_RETRY_INSTANCES_A_MAX_ATTEMPTS"),
        );
        assert_eq!(
            p.to_string(),
            "invalid `RESIL_RETRY_INSTANCES_A_MAX_ATTEMPTS` (sets `resilience4j.retry.instances.a.max-attempts`): \
             got \"x\", expected a number"
        );
        assert_eq!(p.env_var(), Some("RESIL_RETRY_INSTANCES_A_MAX_ATTEMPTS"));
        assert_eq!(
            p.path(),
            Some("resilience4j.retry.instances.a.max-attempts")
        );
    }
}
