//! An [`HttpClassifier`] from a config file's `resil.http` keys, and one that
//! follows a registry's file through its reloads.

use resil_registry::config::{HttpEntry, StatusKey, HTTP_INSTANCES};
use resil_registry::{FileConfig, Registry};

use super::classifier::{HttpClassifier, HttpClassifierBuilder};
use super::status_set::StatusSet;

/// Where a file keeps HTTP classifiers: `resil.http.instances.<name>`.
///
/// `resil` is resil's own namespace beside Resilience4j's `resilience4j`,
/// and the config loader checks it as strictly: an unknown key (with the
/// allowed ones and a did-you-mean), a status set that does not parse, and a
/// classifier name that is not an instance (or named config) the file
/// configures under `resilience4j` are errors with their key path and line
/// (see [`resil_registry::config::HttpSection`]).
///
/// ```yaml
/// resil:
///   http:
///     instances:
///       inventory:                    # resilience4j.*.instances.inventory exists
///         record-status: [500-599, 408]   # failures
///         ignore-status: [400-499]        # neither success nor failure
///         # success-status: [200]         # anything else is a failure
///         # retry-after-status: [429, 503]
/// ```
pub const FILE_PREFIX: &str = HTTP_INSTANCES;

/// The four keys, in the order the docs list them.
pub const FILE_KEYS: [&str; 4] = [
    StatusKey::RecordStatus.key(),
    StatusKey::IgnoreStatus.key(),
    StatusKey::SuccessStatus.key(),
    StatusKey::RetryAfterStatus.key(),
];

impl HttpClassifierBuilder {
    /// This builder with the sets `file` gives the classifier `name` (under
    /// [`FILE_PREFIX`]): each key the file gives replaces this builder's set,
    /// the others keep it; code predicates and the wall clock stay. The file
    /// was validated when it loaded, so this cannot fail.
    pub fn file(self, file: &FileConfig, name: &str) -> Self {
        match file.http().instance(name) {
            Some(entry) => self.entry(entry),
            None => self,
        }
    }

    fn entry(mut self, entry: &HttpEntry) -> Self {
        for key in StatusKey::ALL {
            let Some(list) = entry.get(key) else {
                continue;
            };
            let set = StatusSet::from_ranges(list.ranges());
            self = match key {
                StatusKey::RecordStatus => self.record_status(set),
                StatusKey::IgnoreStatus => self.ignore_status(set),
                StatusKey::SuccessStatus => self.success_status(set),
                StatusKey::RetryAfterStatus => self.retry_after_status(set),
            };
        }
        self
    }

    /// A classifier that follows `registry`'s config file: this builder's
    /// settings with the file's sets for `name` laid over them
    /// ([`file`](Self::file)), now and again after every reload that
    /// installs a file. Every clone of it (the one a tower layer holds, the
    /// one a call site keeps) sees the new sets on its next classification:
    /// one atomic load per call, as a registry handle. A refused reload (an
    /// invalid `resil.http` key among them) leaves the sets as they were.
    ///
    /// ```
    /// use http::StatusCode;
    /// use resil_core::circuit_breaker::Outcome;
    /// use resil_registry::{FileConfig, Registry};
    /// use resil_web::http::{HttpClassifier, StatusSet};
    ///
    /// let registry = Registry::new();
    /// let classifier = HttpClassifier::builder()
    ///     .ignore_status(StatusSet::parse("409").unwrap())
    ///     .follow(&registry, "inventory");
    /// assert_eq!(classifier.outcome(StatusCode::NOT_FOUND), Outcome::Success);
    ///
    /// registry
    ///     .reload(FileConfig::from_toml_str(r#"
    ///         [resilience4j.circuitbreaker.instances.inventory]
    ///         [resil.http.instances.inventory]
    ///         record-status = ["400-599"]
    ///     "#).unwrap())
    ///     .unwrap();
    /// assert_eq!(classifier.outcome(StatusCode::NOT_FOUND), Outcome::Failure);
    /// // The builder's `ignore-status`, which the file does not give, stays.
    /// assert_eq!(classifier.outcome(StatusCode::CONFLICT), Outcome::Ignored);
    /// ```
    pub fn follow(self, registry: &Registry, name: &str) -> HttpClassifier {
        let owned = name.to_owned();
        HttpClassifier {
            inner: registry.follow_file(name, move |file| {
                self.clone().file(file, &owned).build_inner()
            }),
        }
    }
}

impl HttpClassifier {
    /// The classifier `file` describes for `name` under [`FILE_PREFIX`]
    /// (`record-status`, `ignore-status`, `success-status`,
    /// `retry-after-status`), each key not given keeping its default; `None`
    /// when the file has no entry for `name`. The keys were checked when the
    /// file loaded (a bad one is the loader's error, with its key path and
    /// line). It does not follow reloads: see [`follow`](Self::follow).
    pub fn from_file(file: &FileConfig, name: &str) -> Option<HttpClassifier> {
        let entry = file.http().instance(name)?;
        Some(HttpClassifier::builder().entry(entry).build())
    }

    /// A classifier with the defaults that follows `registry`'s config file:
    /// the file's sets for `name`, now and after every reload (see
    /// [`HttpClassifierBuilder::follow`]).
    pub fn follow(registry: &Registry, name: &str) -> HttpClassifier {
        HttpClassifier::builder().follow(registry, name)
    }
}
