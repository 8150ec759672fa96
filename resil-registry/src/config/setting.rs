//! A value with where it came from: [`Source`] (which layer) and
//! [`Setting`] (the value, its layer, key path, line and document). Plain
//! data below every stage that carries it: the loader writes settings, the
//! environment layer overrides them, inheritance merges them and the
//! resolved entries answer provenance from them.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use super::schema::Val;
use super::value::Lines;

/// Where a value came from, lowest precedence first.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Source {
    /// Set nowhere: resil-core's default.
    Default,
    /// The kind-level `tags` map (`resilience4j.circuitbreaker.tags`), shared by
    /// every instance of the kind (tags only).
    Shared,
    /// The named config `configs.<name>` (`default` included), directly or
    /// through a `base-config` chain.
    Config(String),
    /// The instance's own settings (`instances.<name>`).
    Instance,
    /// The environment variable named here, applied after the file.
    Env(String),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Default => f.write_str("default"),
            Source::Shared => f.write_str("kind-level tags"),
            Source::Config(name) => write!(f, "config `{name}`"),
            Source::Instance => f.write_str("instance"),
            Source::Env(var) => write!(f, "env `{var}`"),
        }
    }
}

/// A value as written somewhere, with where.
#[derive(Debug, Clone, PartialEq)]
pub struct Setting<T = Val> {
    pub val: T,
    pub source: Source,
    /// The full key path (as written), also for a value set by an environment variable.
    pub path: String,
    /// The line it is written on (none for an environment variable).
    pub line: Option<usize>,
    /// The file or profile document it is written in, when the configuration
    /// has several (`application-prod.yml`, `resil.yaml (profile prod)`).
    pub document: Option<Arc<str>>,
}

impl<T> Setting<T> {
    /// Where it was written, for a snapshot: `resil.yaml:14`, `line 14`, or
    /// `None` for a value that no file line set.
    pub(crate) fn location(&self) -> Option<String> {
        match (&self.document, self.line) {
            (Some(doc), Some(line)) => Some(format!("{doc}:{line}")),
            (None, Some(line)) => Some(format!("line {line}")),
            (Some(doc), None) => Some(doc.to_string()),
            (None, None) => None,
        }
    }

    /// Records the line and document `path` is written on (nothing for a
    /// value set by an environment variable).
    pub(crate) fn locate(&mut self, lines: &Lines, document: &Option<Arc<str>>) {
        if matches!(self.source, Source::Env(_)) {
            return;
        }
        self.line = lines.get(&self.path);
        self.document.clone_from(document);
    }
}

/// An entry's merged settings, by canonical key.
pub(crate) type Values = BTreeMap<&'static str, Setting>;
