//! An [`HttpClassifier`] from a config file's keys, beside resil's own.

use std::fmt;

use resil_registry::FileConfig;

use super::classifier::HttpClassifier;
use super::status_set::{StatusSet, StatusSetError};

/// Where a file keeps HTTP classifiers: `resil.http.instances.<name>`.
///
/// The keys live outside `resilience4j` (whose keys resil's loader checks
/// against Resilience4j's schema), as an application's own settings do, and
/// are read through [`FileConfig::property`]:
///
/// ```yaml
/// resil:
///   http:
///     instances:
///       inventory:
///         record-status: [500-599, 408]   # failures
///         ignore-status: [400-499]        # neither success nor failure
///         # success-status: [200]         # anything else is a failure
///         # retry-after-status: [429, 503]
/// ```
pub const FILE_PREFIX: &str = "resil.http.instances";

/// The four keys, in the order [`HttpClassifier::from_file`] reads them.
pub const FILE_KEYS: [&str; 4] = [
    "record-status",
    "ignore-status",
    "success-status",
    "retry-after-status",
];

/// A status key of a file that does not parse, naming the key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HttpConfigError {
    key: String,
    error: StatusSetError,
}

impl HttpConfigError {
    /// The full key (`resil.http.instances.inventory.record-status`).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// Why its value does not parse.
    pub fn error(&self) -> &StatusSetError {
        &self.error
    }
}

impl fmt::Display for HttpConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "invalid `{}`: {}", self.key, self.error)
    }
}

impl std::error::Error for HttpConfigError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// A key's value: a string (`"500-599, 408"`) or a list (`[500-599, 408]`,
/// read item by item as `key[0]`, `key[1]`, …).
fn read(file: &FileConfig, key: &str) -> Option<String> {
    if let Some(v) = file.property(key) {
        return Some(v.to_owned());
    }
    let items: Vec<&str> = (0..)
        .map_while(|i| file.property(&format!("{key}[{i}]")))
        .collect();
    (!items.is_empty()).then(|| items.join(", "))
}

impl HttpClassifier {
    /// The classifier `file` describes for `name` under [`FILE_PREFIX`]
    /// (`record-status`, `ignore-status`, `success-status`,
    /// `retry-after-status`), each key not given keeping its default; `None`
    /// when the file gives none of them. A value that does not parse is an
    /// error naming the key and the token.
    pub fn from_file(
        file: &FileConfig,
        name: &str,
    ) -> Result<Option<HttpClassifier>, HttpConfigError> {
        let mut builder = HttpClassifier::builder();
        let mut any = false;
        for key in FILE_KEYS {
            let full = format!("{FILE_PREFIX}.{name}.{key}");
            let Some(value) = read(file, &full) else {
                continue;
            };
            let set = StatusSet::parse(&value).map_err(|error| HttpConfigError {
                key: full.clone(),
                error,
            })?;
            any = true;
            builder = match key {
                "record-status" => builder.record_status(set),
                "ignore-status" => builder.ignore_status(set),
                "success-status" => builder.success_status(set),
                _ => builder.retry_after_status(set),
            };
        }
        Ok(any.then(|| builder.build()))
    }
}
