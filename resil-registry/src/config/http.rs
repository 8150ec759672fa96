//! resil's own namespace of a config file, `resil`, beside Resilience4j's
//! `resilience4j`: today the HTTP classifiers' status sets,
//! `resil.http.instances.<name>.<key>`, checked by the same loader with the
//! same rigour (key path, line, allowed keys, did-you-mean).
//!
//! ```yaml
//! resil:
//!   http:
//!     instances:
//!       inventory-query:                # an instance the file configures
//!         record-status: [500-599, 408] # failures
//!         ignore-status: [400-499]      # neither success nor failure
//!         # success-status: [200]       # anything else is a failure
//!         # retry-after-status: [429, 503]
//! ```
//!
//! The registry knows the keys and the shape of their values (status sets:
//! codes 100–999 and ranges of them), not what HTTP does with them: resil-web's
//! `HttpClassifier` reads the validated sets ([`FileConfig::http`]), so this
//! crate needs no HTTP dependency.
//!
//! `RESIL_HTTP_INSTANCES_<NAME>_<KEY>=404,409` sets one key after the file,
//! as the `RESIL_<KIND>_…` overrides do for `resilience4j` (`<KEY>` in upper
//! snake case: `IGNORE_STATUS`); a variable that names no key is an error
//! with a did-you-mean.
//!
//! # Names
//!
//! A classifier is named after the instance it classifies for, so its name
//! must be one the file configures under `resilience4j` (an instance or a
//! named config of any kind, environment overrides included). Any other name
//! is an error with a did-you-mean against the file's names: a misspelled
//! name would otherwise leave the instance on the default classification
//! without a word. An instance configured only in code gets an entry of its
//! own (`resilience4j.circuitbreaker.instances.prices: {}` is enough).
//!
//! [`FileConfig::http`]: super::FileConfig::http

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use resil_core::ConfigError;

use super::error::{closest, quoted_list, Problem, ProblemKind};
use super::load::{duplicate, map_entries, named_path};
use super::schema::{normalize, Kind};
use super::value::Value;

/// The root key of resil's own namespace.
pub const RESIL_ROOT: &str = "resil";

/// Where a file keeps HTTP classifiers: `resil.http.instances.<name>`.
pub const HTTP_INSTANCES: &str = "resil.http.instances";

/// The keys of `resil`: `http`, `inbound-guard` (see `inbound.rs`),
/// `http-client` (see `client.rs`) and `config`.
const RESIL_KEYS: [&str; 4] = ["http", "inbound-guard", "http-client", "config"];

/// The keys of `resil.config`: whether the registry watches its file, and
/// how long it waits for a burst of changes to settle.
const CONFIG_KEYS: [&str; 2] = ["watch", "watch-debounce"];

/// The file key that turns the config file watcher on (feature `watch`).
pub const WATCH_KEY: &str = "resil.config.watch";

/// The file key of the watcher's debounce (a duration, `500ms` by default).
pub const WATCH_DEBOUNCE_KEY: &str = "resil.config.watch-debounce";

/// The keys of `resil.http` (one: `instances`).
const HTTP_SECTION_KEYS: [&str; 1] = ["instances"];

/// A key of `resil.http.instances.<name>`: one status set of a classifier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum StatusKey {
    /// `record-status`: the statuses recorded as failures.
    RecordStatus,
    /// `ignore-status`: the statuses neither success nor failure (checked first).
    IgnoreStatus,
    /// `success-status`: the only statuses that are successes.
    SuccessStatus,
    /// `retry-after-status`: the statuses whose `Retry-After` is honoured.
    RetryAfterStatus,
}

impl StatusKey {
    /// Every key, in the order the docs list them.
    pub const ALL: [StatusKey; 4] = [
        StatusKey::RecordStatus,
        StatusKey::IgnoreStatus,
        StatusKey::SuccessStatus,
        StatusKey::RetryAfterStatus,
    ];

    /// The key as the file writes it (`record-status`).
    pub const fn key(self) -> &'static str {
        match self {
            StatusKey::RecordStatus => "record-status",
            StatusKey::IgnoreStatus => "ignore-status",
            StatusKey::SuccessStatus => "success-status",
            StatusKey::RetryAfterStatus => "retry-after-status",
        }
    }

    /// The key `key` spells (`ignore_status` and `ignoreStatus` too).
    pub fn from_key(key: &str) -> Option<StatusKey> {
        let key = normalize(key);
        StatusKey::ALL
            .into_iter()
            .find(|k| normalize(k.key()) == key)
    }

    const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for StatusKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.key())
    }
}

/// The status-set text that does not parse, naming the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusSetError {
    token: String,
    input: String,
    why: &'static str,
}

impl StatusSetError {
    /// The token that does not parse.
    pub fn token(&self) -> &str {
        &self.token
    }

    /// The whole text it is in.
    pub fn input(&self) -> &str {
        &self.input
    }
}

impl fmt::Display for StatusSetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid status `{}` in `{}`: {}",
            self.token, self.input, self.why
        )
    }
}

impl std::error::Error for StatusSetError {}

/// What a status set may hold, for error messages.
pub const EXPECTED_STATUS: &str =
    "expected a status code (100-999) or a range of them such as `500-599`";

/// The one grammar of a status set (`"500-599, 408"`): comma-separated codes
/// (three digits, 100–999) and inclusive ranges of them, whitespace around
/// each ignored; an empty text is the empty set. The result is the ranges as
/// written (`(408, 408)` for a single code). resil-web's `StatusSet::parse`
/// reads text with it.
///
/// ```
/// use resil_registry::config::parse_status_ranges;
///
/// assert_eq!(parse_status_ranges("500-599, 408").unwrap(), [(500, 599), (408, 408)]);
/// assert_eq!(
///     parse_status_ranges("500-599, 60x").unwrap_err().to_string(),
///     "invalid status `60x` in `500-599, 60x`: expected a status code (100-999) \
///      or a range of them such as `500-599`"
/// );
/// ```
pub fn parse_status_ranges(input: &str) -> Result<Vec<(u16, u16)>, StatusSetError> {
    let mut ranges = Vec::new();
    if input.trim().is_empty() {
        return Ok(ranges);
    }
    for raw in input.split(',') {
        let token = raw.trim();
        let error = |why| StatusSetError {
            token: token.to_owned(),
            input: input.to_owned(),
            why,
        };
        let (lo, hi) = match token.split_once('-') {
            Some((lo, hi)) => (code(lo.trim()), code(hi.trim())),
            None => (code(token), code(token)),
        };
        let (Some(lo), Some(hi)) = (lo, hi) else {
            return Err(error(EXPECTED_STATUS));
        };
        if lo > hi {
            return Err(error("a range must go from the lower code to the higher"));
        }
        ranges.push((lo, hi));
    }
    Ok(ranges)
}

fn code(s: &str) -> Option<u16> {
    if s.len() != 3 || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let c: u16 = s.parse().ok()?;
    (100..=999).contains(&c).then_some(c)
}

/// One key's status set, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusList {
    ranges: Vec<(u16, u16)>,
    path: String,
}

impl StatusList {
    /// The inclusive ranges as written (`(408, 408)` for a single code).
    pub fn ranges(&self) -> &[(u16, u16)] {
        &self.ranges
    }

    /// The full key path (`resil.http.instances.inventory.record-status`).
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// One classifier's entry: the status sets the file gives it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpEntry {
    path: String,
    lists: [Option<StatusList>; 4],
}

impl HttpEntry {
    /// The set the file gives for `key`, if it gives one.
    pub fn get(&self, key: StatusKey) -> Option<&StatusList> {
        self.lists[key.index()].as_ref()
    }

    /// The entry's key path (`resil.http.instances.inventory`).
    pub fn path(&self) -> &str {
        &self.path
    }
}

/// The file's `resil.http.instances`: every classifier entry, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpSection {
    instances: BTreeMap<String, HttpEntry>,
}

impl HttpSection {
    /// The entry of the classifier `name`, if the file has one.
    pub fn instance(&self, name: &str) -> Option<&HttpEntry> {
        self.instances.get(name)
    }

    /// Every entry, by name, sorted.
    pub fn instances(&self) -> impl Iterator<Item = (&str, &HttpEntry)> {
        self.instances.iter().map(|(k, v)| (k.as_str(), v))
    }

    /// Lays a later document's entries over these, key by key.
    pub(crate) fn merge(&mut self, later: HttpSection) {
        for (name, entry) in later.instances {
            match self.instances.get_mut(&name) {
                Some(existing) => {
                    for (into, from) in existing.lists.iter_mut().zip(entry.lists) {
                        if from.is_some() {
                            *into = from;
                        }
                    }
                }
                None => {
                    self.instances.insert(name, entry);
                }
            }
        }
    }

    /// Every entry must be named after a name the file configures under
    /// `resilience4j` (see the [module docs](self)).
    pub(crate) fn check_names(&self, configured: &[&str], problems: &mut Vec<Problem>) {
        for (name, entry) in &self.instances {
            if !configured.contains(&name.as_str()) {
                problems.push(unknown_name(CLASSIFIER, entry.path(), name, configured));
            }
        }
    }
}

impl HttpSection {
    /// Applies the `RESIL_HTTP_INSTANCES_<NAME>_<KEY>` overrides among
    /// `vars` (in name order), after the file: `<KEY>` is a status key in
    /// upper snake case (`IGNORE_STATUS`), the value a comma-separated set.
    /// `<NAME>` finds the classifier (else the instance or named config of
    /// `configured`) whose name reads the same in upper case with `_` for
    /// every other character than a letter or digit; another name is taken
    /// in lower case with `-` for `_`, for the name check to judge.
    pub(crate) fn apply_env(
        &mut self,
        vars: &[(String, String)],
        configured: &[&str],
        problems: &mut Vec<Problem>,
    ) {
        let mut ours: Vec<&(String, String)> = vars
            .iter()
            .filter(|(k, _)| k.starts_with(ENV_PREFIX))
            .collect();
        ours.sort();
        for (var, value) in ours {
            if let Err(problem) = self.apply_one(var, value, configured) {
                problems.push(problem.with_env_var(var));
            }
        }
    }

    // One call per variable, on a cold path: the problem is returned unboxed.
    #[allow(clippy::result_large_err)]
    fn apply_one(&mut self, var: &str, value: &str, configured: &[&str]) -> Result<(), Problem> {
        let tokens: Vec<&str> = var[ENV_PREFIX.len()..].split('_').collect();
        let shape = || {
            Problem::new(
                ProblemKind::UnknownVariable,
                None,
                format!("`{var}` is not an override: write `RESIL_HTTP_INSTANCES_<NAME>_<KEY>`"),
            )
        };
        let Some((section, rest)) = tokens.split_first() else {
            return Err(shape());
        };
        if !section.eq_ignore_ascii_case("INSTANCES")
            || rest.len() < 2
            || rest.iter().any(|t| t.is_empty())
        {
            return Err(shape());
        }
        // The longest key that ends the variable (keys have 2 or 3 words).
        let Some((at, key)) = (1..rest.len())
            .find_map(|at| StatusKey::from_key(&rest[at..].join("-")).map(|k| (at, k)))
        else {
            let keys = StatusKey::ALL.map(|k| k.key().replace('-', "_").to_ascii_uppercase());
            let suggestion = (1..rest.len()).find_map(|at| {
                let written = rest[at..].join("_");
                closest(&written, keys.iter().map(String::as_str))
                    .map(|k| format!("{}{k}", &var[..var.len() - written.len()]))
            });
            let mut message = format!("`{var}` does not end with an HTTP classifier key");
            if let Some(s) = &suggestion {
                message.push_str(&format!("; did you mean `{s}`?"));
            }
            message.push_str(&format!(" (keys: {})", quoted_list(&keys)));
            return Err(Problem::new(ProblemKind::UnknownVariable, None, message)
                .with_suggestion(suggestion));
        };
        let name_env = rest[..at].join("_").to_ascii_uppercase();
        let matching = |names: Vec<&str>| -> Result<Option<String>, Problem> {
            let mut found: Vec<&str> = names
                .into_iter()
                .filter(|n| super::env::env_form(n) == name_env)
                .collect();
            found.sort_unstable();
            found.dedup();
            match found.as_slice() {
                [] => Ok(None),
                [one] => Ok(Some((*one).to_owned())),
                several => Err(Problem::new(
                    ProblemKind::UnknownVariable,
                    Some(HTTP_INSTANCES.to_owned()),
                    format!(
                        "`{var}` is ambiguous: {} all read `{name_env}`; rename one of them",
                        quoted_list(several.iter())
                    ),
                )),
            }
        };
        let name = match matching(self.instances.keys().map(String::as_str).collect())? {
            Some(name) => name,
            None => matching(configured.to_vec())?
                .unwrap_or_else(|| name_env.to_ascii_lowercase().replace('_', "-")),
        };
        let entry_path = format!("{HTTP_INSTANCES}.{name}");
        let path = format!("{entry_path}.{key}");
        let ranges = parse_status_ranges(value).map_err(|e| {
            Problem::new(
                ProblemKind::InvalidValue,
                Some(path.clone()),
                format!("invalid `{var}` (sets `{path}`): {e}"),
            )
        })?;
        let entry = self.instances.entry(name).or_insert_with(|| HttpEntry {
            path: entry_path,
            lists: Default::default(),
        });
        entry.lists[key.index()] = Some(StatusList { ranges, path });
        Ok(())
    }
}

/// The prefix of the `resil.http` overrides.
const ENV_PREFIX: &str = "RESIL_HTTP_";

/// What a `resil` section names after instances of the file: a `resil.http`
/// classifier or a `resil.http-client` layer.
#[derive(Debug, Clone, Copy)]
pub(crate) struct NamedAfter {
    /// What the entry is: `HTTP classifier`.
    pub(crate) what: &'static str,
    /// The same with its article: `a classifier`.
    pub(crate) a: &'static str,
    /// What it is named after: `the instance it classifies for`.
    pub(crate) after: &'static str,
}

/// A `resil.http` classifier.
const CLASSIFIER: NamedAfter = NamedAfter {
    what: "HTTP classifier",
    a: "a classifier",
    after: "the instance it classifies for",
};

/// The problem of an entry at `path` named `name` after no name the file
/// configures under `resilience4j` (`configured`, repeats allowed), with a
/// did-you-mean.
pub(crate) fn unknown_name(
    named: NamedAfter,
    path: &str,
    name: &str,
    configured: &[&str],
) -> Problem {
    let NamedAfter { what, a, after } = named;
    let suggestion = closest(name, configured.iter().copied());
    let mut message = format!("unknown {what} `{name}` at `{path}`");
    if let Some(s) = suggestion {
        message.push_str(&format!("; did you mean `{s}`?"));
    }
    let mut names = configured.to_vec();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        message.push_str(&format!(
            " ({a} is named after {after}, and the file \
             configures none under `resilience4j`: add one, e.g. \
             `resilience4j.circuitbreaker.instances.{name}: {{}}`)"
        ));
    } else {
        message.push_str(&format!(
            " ({a} is named after an instance the file configures under \
             `resilience4j`: {})",
            quoted_list(names)
        ));
    }
    Problem::new(ProblemKind::UnknownKey, Some(path.to_owned()), message)
        .with_suggestion(suggestion.map(str::to_owned))
}

/// Reads the `resil` subtree (`root` is the key as written), recording every
/// problem with its key path.
#[cfg(test)]
pub(crate) fn section(root: &str, value: Value, problems: &mut Vec<Problem>) -> HttpSection {
    section_and_guard(root, value, problems, &mut None, &mut Default::default())
}

/// [`section`], also reading `resil.inbound-guard` into `guard` (a later
/// section replaces an earlier one) and `resil.http-client` into `client`.
pub(crate) fn section_and_guard(
    root: &str,
    value: Value,
    problems: &mut Vec<Problem>,
    guard: &mut Option<resil_core::inbound::InboundGuardConfig>,
    client: &mut super::client::HttpClientSection,
) -> HttpSection {
    let mut section = HttpSection::default();
    let Some(items) = map_entries(value, root, "a map with an `http` key", problems) else {
        return section;
    };
    let mut seen = HashMap::new();
    for (key, value) in items {
        let path = format!("{root}.{key}");
        if normalize(&key) == normalize("inbound-guard") {
            if let Some(first) = seen.insert("inbound-guard", key.clone()) {
                problems.push(duplicate(&path, &first, &key));
            } else if let Some(config) = super::inbound::section(&path, value, problems) {
                *guard = Some(config);
            }
            continue;
        }
        if normalize(&key) == "config" {
            config_keys(&path, value, problems);
            continue;
        }
        if normalize(&key) == normalize("http-client") {
            if let Some(first) = seen.insert("http-client", key.clone()) {
                problems.push(duplicate(&path, &first, &key));
            } else {
                let mut read = super::client::HttpClientSection::default();
                super::client::section(&path, value, problems, &mut read);
                client.merge(read);
            }
            continue;
        }
        if normalize(&key) != "http" {
            problems.push(unknown_key(path, &key, RESIL_KEYS, "resil's own keys"));
            continue;
        }
        if let Some(first) = seen.insert("http", key.clone()) {
            problems.push(duplicate(&path, &first, &key));
            continue;
        }
        http(&mut section, &path, value, problems);
    }
    section
}

/// Checks `resil.config` (`watch`: a boolean, `watch-debounce`: a
/// duration); the watcher reads them back with `FileConfig::property`.
fn config_keys(path: &str, value: Value, problems: &mut Vec<Problem>) {
    let expected = "a map with `watch` and `watch-debounce` keys";
    let Some(items) = map_entries(value, path, expected, problems) else {
        return;
    };
    for (key, value) in items {
        let key_path = format!("{path}.{key}");
        let bad = |expected: &str, got: &Value| {
            Problem::new(
                ProblemKind::InvalidValue,
                Some(key_path.clone()),
                format!("`{key_path}` must be {expected}, got {}", got.describe()),
            )
        };
        let watch_debounce = normalize("watch-debounce");
        match normalize(&key).as_str() {
            "watch" => match &value {
                Value::Bool(_) => {}
                Value::Str(s) if s == "true" || s == "false" => {}
                other => problems.push(bad("`true` or `false`", other)),
            },
            k if k == watch_debounce => match &value {
                Value::Str(s) if super::duration::parse_duration(s).is_ok() => {}
                other => problems.push(bad("a duration such as `500ms`", other)),
            },
            _ => problems.push(unknown_key(
                key_path.clone(),
                &key,
                CONFIG_KEYS,
                "keys of `resil.config`",
            )),
        }
    }
}

fn http(section: &mut HttpSection, path: &str, value: Value, problems: &mut Vec<Problem>) {
    let Some(items) = map_entries(value, path, "a map with an `instances` key", problems) else {
        return;
    };
    let mut seen = HashMap::new();
    for (key, value) in items {
        let key_path = format!("{path}.{key}");
        if normalize(&key) != "instances" {
            problems.push(unknown_key(
                key_path,
                &key,
                HTTP_SECTION_KEYS,
                "keys of `resil.http`",
            ));
            continue;
        }
        if let Some(first) = seen.insert("instances", key.clone()) {
            problems.push(duplicate(&key_path, &first, &key));
            continue;
        }
        let Some(named) = map_entries(value, &key_path, "a map of names to status sets", problems)
        else {
            continue;
        };
        for (name, value) in named {
            let Some(entry_path) = named_path(&key_path, &name, "the classifier", problems) else {
                continue;
            };
            let entry = entry(entry_path, value, problems);
            section.merge(HttpSection {
                instances: BTreeMap::from([(name, entry)]),
            });
        }
    }
}

fn entry(path: String, value: Value, problems: &mut Vec<Problem>) -> HttpEntry {
    let mut entry = HttpEntry {
        path,
        lists: Default::default(),
    };
    let Some(items) = map_entries(value, &entry.path, "a map of status sets", problems) else {
        return entry;
    };
    let mut seen: HashMap<StatusKey, String> = HashMap::new();
    for (key, value) in items {
        let key_path = format!("{}.{key}", entry.path);
        let Some(status_key) = StatusKey::from_key(&key) else {
            problems.push(unknown_entry_key(key_path, &key, &entry.path));
            continue;
        };
        if let Some(first) = seen.insert(status_key, key.clone()) {
            problems.push(duplicate(&key_path, &first, &key));
            continue;
        }
        match status_list(&value, &key_path) {
            Ok(ranges) => {
                entry.lists[status_key.index()] = Some(StatusList {
                    ranges,
                    path: key_path,
                })
            }
            Err(problem) => problems.push(problem),
        }
    }
    entry
}

/// A status set's value: one text (`"500-599, 408"`), one code (`408`), or a
/// list of either (`[500-599, 408]`, read as the text of its items joined
/// with commas, so a bad item is named in the whole list).
// One call per key, on a cold path: the problem is returned unboxed.
#[allow(clippy::result_large_err)]
fn status_list(value: &Value, path: &str) -> Result<Vec<(u16, u16)>, Problem> {
    let item = |v: &Value| match v {
        Value::Str(s) => Some(s.clone()),
        Value::Int(i) => Some(i.to_string()),
        _ => None,
    };
    let wrong = |got: &Value| {
        Problem::value(
            ProblemKind::WrongType,
            ConfigError::new(
                path.to_owned(),
                got.describe(),
                "a status set: a list of status codes (100-999) and ranges such as `500-599`, \
                 or one comma-separated text",
            ),
            None,
        )
    };
    let text = match value {
        Value::List(items) => {
            let mut texts = Vec::with_capacity(items.len());
            for (i, v) in items.iter().enumerate() {
                match item(v) {
                    Some(t) => texts.push(t),
                    None => {
                        return Err(Problem::value(
                            ProblemKind::WrongType,
                            ConfigError::new(
                                format!("{path}[{i}]"),
                                v.describe(),
                                "a status code (100-999) or a range such as `500-599`",
                            ),
                            None,
                        ))
                    }
                }
            }
            texts.join(", ")
        }
        other => item(other).ok_or_else(|| wrong(other))?,
    };
    parse_status_ranges(&text).map_err(|e| {
        Problem::new(
            ProblemKind::InvalidValue,
            Some(path.to_owned()),
            format!("invalid `{path}`: {e}"),
        )
    })
}

fn unknown_entry_key(key_path: String, key: &str, entry_path: &str) -> Problem {
    let keys = StatusKey::ALL.map(StatusKey::key);
    let suggestion = closest(key, keys);
    let mut hint = format!("the keys of an HTTP classifier: {}", quoted_list(keys));
    let elsewhere = Kind::ALL.into_iter().find(|k| k.option(key).is_some());
    if let (Some(kind), None) = (elsewhere, suggestion) {
        let name = entry_path.rsplit('.').next().unwrap_or_default();
        hint = format!(
            "`{key}` is a {} option: it goes under `resilience4j.{}.instances.{name}`; {hint}",
            kind.label(),
            kind.config_key()
        );
    }
    Problem::unknown_key(key_path, suggestion, Some(&hint))
}

fn unknown_key<const N: usize>(
    path: String,
    key: &str,
    allowed: [&'static str; N],
    what: &str,
) -> Problem {
    let hint = format!("{what}: {}", quoted_list(allowed));
    Problem::unknown_key(path, closest(key, allowed), Some(&hint))
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::value::map;

    fn read(value: Value) -> (HttpSection, Vec<String>) {
        let mut problems = Vec::new();
        let section = section("resil", value, &mut problems);
        (section, problems.iter().map(|p| p.to_string()).collect())
    }

    #[test]
    fn every_malformed_token_is_named_with_the_whole_text() {
        for (input, token) in [
            ("500-599, 40", "40"),
            ("1000", "1000"),
            ("5xx", "5xx"),
            ("599-500", "599-500"),
            ("500-", "500-"),
            ("200,,201", ""),
            ("099", "099"),
        ] {
            let err = parse_status_ranges(input).unwrap_err();
            assert_eq!(err.token(), token, "{input}");
            assert_eq!(err.input(), input);
            assert!(err.to_string().contains(&format!("`{input}`")));
        }
        assert_eq!(parse_status_ranges(" ").unwrap(), []);
    }

    #[test]
    fn lists_texts_and_single_codes_are_status_sets() {
        let (section, problems) = read(map(vec![(
            "http",
            map(vec![(
                "instances",
                map(vec![(
                    "a",
                    map(vec![
                        (
                            "record_status",
                            Value::List(vec![Value::Str("500-599".into()), Value::Int(408)]),
                        ),
                        ("ignoreStatus", Value::Str("404, 409".into())),
                        ("success-status", Value::Int(200)),
                        ("retry-after-status", Value::List(Vec::new())),
                    ]),
                )]),
            )]),
        )]));
        assert_eq!(problems, Vec::<String>::new());
        let a = section.instance("a").unwrap();
        assert_eq!(a.path(), "resil.http.instances.a");
        let ranges = |k| a.get(k).unwrap().ranges().to_vec();
        assert_eq!(ranges(StatusKey::RecordStatus), [(500, 599), (408, 408)]);
        assert_eq!(ranges(StatusKey::IgnoreStatus), [(404, 404), (409, 409)]);
        assert_eq!(ranges(StatusKey::SuccessStatus), [(200, 200)]);
        assert_eq!(ranges(StatusKey::RetryAfterStatus), []);
        assert_eq!(
            a.get(StatusKey::RecordStatus).unwrap().path(),
            "resil.http.instances.a.record_status"
        );
    }

    #[test]
    fn unknown_keys_at_every_level_name_their_path_the_allowed_keys_and_a_suggestion() {
        let (_, problems) = read(map(vec![
            ("htp", Value::Null),
            (
                "http",
                map(vec![
                    ("instance", Value::Null),
                    (
                        "instances",
                        map(vec![(
                            "a",
                            map(vec![
                                ("ignore-statuses", Value::Int(404)),
                                ("failure-rate-threshold", Value::Int(50)),
                            ]),
                        )]),
                    ),
                ]),
            ),
        ]));
        assert_eq!(
            problems,
            [
                "unknown key `resil.htp`; did you mean `http`? (resil's own keys: `http`, `inbound-guard`, `http-client`, `config`)",
                "unknown key `resil.http.instance`; did you mean `instances`? \
                 (keys of `resil.http`: `instances`)",
                "unknown key `resil.http.instances.a.ignore-statuses`; did you mean \
                 `ignore-status`? (the keys of an HTTP classifier: `record-status`, \
                 `ignore-status`, `success-status`, `retry-after-status`)",
                "unknown key `resil.http.instances.a.failure-rate-threshold` \
                 (`failure-rate-threshold` is a circuit breaker option: it goes under \
                 `resilience4j.circuitbreaker.instances.a`; the keys of an HTTP classifier: \
                 `record-status`, `ignore-status`, `success-status`, `retry-after-status`)",
            ]
        );
    }

    #[test]
    fn bad_values_name_the_key_and_what_a_status_set_is() {
        let (section, problems) = read(map(vec![(
            "http",
            map(vec![(
                "instances",
                map(vec![(
                    "a",
                    map(vec![
                        (
                            "record-status",
                            Value::List(vec![
                                Value::Str("500-599".into()),
                                Value::Str("60x".into()),
                            ]),
                        ),
                        ("ignore-status", Value::Bool(true)),
                        ("success-status", Value::List(vec![Value::Float(2.5)])),
                        ("retry-after-status", Value::Int(99)),
                        ("ignore_status", Value::Int(404)),
                    ]),
                )]),
            )]),
        )]));
        assert_eq!(
            problems,
            [
                "invalid `resil.http.instances.a.record-status`: invalid status `60x` in \
                 `500-599, 60x`: expected a status code (100-999) or a range of them such as \
                 `500-599`",
                "invalid `resil.http.instances.a.ignore-status`: got true, expected a status \
                 set: a list of status codes (100-999) and ranges such as `500-599`, or one \
                 comma-separated text",
                "invalid `resil.http.instances.a.success-status[0]`: got 2.5, expected a \
                 status code (100-999) or a range such as `500-599`",
                "invalid `resil.http.instances.a.retry-after-status`: invalid status `99` in \
                 `99`: expected a status code (100-999) or a range of them such as `500-599`",
                "`resil.http.instances.a.ignore_status` is given twice (as `ignore-status` \
                 and as `ignore_status`)",
            ]
        );
        assert!(section
            .instance("a")
            .unwrap()
            .get(StatusKey::RecordStatus)
            .is_none());
    }

    #[test]
    fn a_name_the_file_does_not_configure_gets_a_suggestion_from_the_names_it_does() {
        let (section, problems) = read(map(vec![(
            "http",
            map(vec![(
                "instances",
                map(vec![
                    ("inventory-qurey", Value::Null),
                    ("prices", Value::Null),
                ]),
            )]),
        )]));
        assert!(problems.is_empty());
        let mut problems = Vec::new();
        section.check_names(&["prices", "inventory-query", "prices"], &mut problems);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].suggestion(), Some("inventory-query"));
        assert_eq!(
            problems[0].to_string(),
            "unknown HTTP classifier `inventory-qurey` at `resil.http.instances.inventory-qurey`; \
             did you mean `inventory-query`? (a classifier is named after an instance the file \
             configures under `resilience4j`: `inventory-query`, `prices`)"
        );
        let mut problems = Vec::new();
        section.check_names(&[], &mut problems);
        assert_eq!(problems.len(), 2);
        assert!(problems[1]
            .to_string()
            .ends_with("add one, e.g. `resilience4j.circuitbreaker.instances.prices: {}`)"));
    }

    #[test]
    fn environment_overrides_set_a_key_of_the_classifier_their_name_reads_as() {
        let vars = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect()
        };
        let (mut section, _) = read(map(vec![(
            "http",
            map(vec![(
                "instances",
                map(vec![(
                    "inventory-query",
                    map(vec![("ignore-status", Value::Int(409))]),
                )]),
            )]),
        )]));
        let mut problems = Vec::new();
        section.apply_env(
            &vars(&[
                (
                    "RESIL_HTTP_INSTANCES_INVENTORY_QUERY_IGNORE_STATUS",
                    "404, 409",
                ),
                ("RESIL_HTTP_INSTANCES_PRICES_RETRY_AFTER_STATUS", "503"),
                ("RESIL_CONFIG", "resil.yaml"),
            ]),
            &["prices"],
            &mut problems,
        );
        assert!(problems.is_empty(), "{problems:?}");
        let ranges = |name: &str, key| {
            section
                .instance(name)
                .unwrap()
                .get(key)
                .unwrap()
                .ranges()
                .to_vec()
        };
        assert_eq!(
            ranges("inventory-query", StatusKey::IgnoreStatus),
            [(404, 404), (409, 409)]
        );
        assert_eq!(ranges("prices", StatusKey::RetryAfterStatus), [(503, 503)]);

        section.apply_env(
            &vars(&[
                ("RESIL_HTTP_INSTANCES_PRICES_IGNORE_STATUSES", "404"),
                ("RESIL_HTTP_INSTANCES_PRICES_RECORD_STATUS", "5xx"),
                ("RESIL_HTTP_PORT", "80"),
            ]),
            &["prices"],
            &mut problems,
        );
        let messages: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(
            messages,
            [
                "`RESIL_HTTP_INSTANCES_PRICES_IGNORE_STATUSES` does not end with an HTTP \
                 classifier key; did you mean `RESIL_HTTP_INSTANCES_PRICES_IGNORE_STATUS`? \
                 (keys: `RECORD_STATUS`, `IGNORE_STATUS`, `SUCCESS_STATUS`, `RETRY_AFTER_STATUS`)",
                "invalid `RESIL_HTTP_INSTANCES_PRICES_RECORD_STATUS` (sets \
                 `resil.http.instances.prices.record-status`): invalid status `5xx` in `5xx`: \
                 expected a status code (100-999) or a range of them such as `500-599`",
                "`RESIL_HTTP_PORT` is not an override: write `RESIL_HTTP_INSTANCES_<NAME>_<KEY>`",
            ]
        );
        assert!(problems.iter().all(|p| p.env_var().is_some()));
    }

    #[test]
    fn a_later_document_replaces_a_key_and_keeps_the_others() {
        let entry = |record: Option<&str>, ignore: Option<&str>| {
            let list = |t: &str| StatusList {
                ranges: parse_status_ranges(t).unwrap(),
                path: String::new(),
            };
            HttpSection {
                instances: BTreeMap::from([(
                    "a".to_owned(),
                    HttpEntry {
                        path: "resil.http.instances.a".into(),
                        lists: [record.map(list), ignore.map(list), None, None],
                    },
                )]),
            }
        };
        let mut first = entry(Some("500"), Some("404"));
        first.merge(entry(Some("503"), None));
        let a = first.instance("a").unwrap();
        assert_eq!(
            a.get(StatusKey::RecordStatus).unwrap().ranges(),
            [(503, 503)]
        );
        assert_eq!(
            a.get(StatusKey::IgnoreStatus).unwrap().ranges(),
            [(404, 404)]
        );
    }
}
