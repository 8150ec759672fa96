//! `resil.http-client.instances.<name>`: a client layer's replay rules and
//! deadline header, beside `resil.http` (the same name as the layer's
//! instances).
//!
//! ```yaml
//! resil:
//!   http-client:
//!     instances:
//!       prices:
//!         max-replay-body: 16KiB          # bytes, or B/KiB/MiB/KB/MB (default 64KiB)
//!         replay-methods: safe            # safe (default), idempotent, any
//!         idempotency-header: x-idempotency-key   # default idempotency-key
//!         deadline-header: x-request-timeout-ms   # default x-envoy-expected-rq-timeout-ms
//!         deadline-margin: 10ms                   # default 5ms
//!         total-timeout: 30s                      # default none (the standard preset: 30s)
//! ```
//!
//! Every key is optional (the layer's defaults otherwise, and a value set in
//! code on the layer's builder wins over the file); an unknown key is an
//! error with a did-you-mean, a bad value names its key path and the values
//! allowed, and an entry must be named after an instance or named config
//! the file configures under `resilience4j` (the layer's name), else it is
//! an error with a did-you-mean. The registry checks the values' shapes
//! only; resil-web's client layer reads them, and follows reloads.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use resil_options::duration::parse_duration;

use super::error::{closest, quoted_list, Problem, ProblemKind};
use super::http::{unknown_name, NamedAfter};
use super::load::{map_entries, section_key};
use super::schema::normalize;
use super::value::Value;

/// Where a file keeps client layers' settings: `resil.http-client.instances`.
pub const HTTP_CLIENT_INSTANCES: &str = "resil.http-client.instances";

/// The keys of `resil.http-client.instances.<name>`.
pub const HTTP_CLIENT_KEYS: [&str; 6] = [
    "max-replay-body",
    "replay-methods",
    "idempotency-header",
    "deadline-header",
    "deadline-margin",
    "total-timeout",
];

/// The values `replay-methods` takes.
pub const REPLAY_METHODS: [&str; 3] = ["idempotent", "safe", "any"];

/// One client layer's settings from the file; `None` where the file says
/// nothing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpClientEntry {
    /// `max-replay-body`, in bytes.
    pub max_replay_body: Option<usize>,
    /// `replay-methods`: one of [`REPLAY_METHODS`], lower case.
    pub replay_methods: Option<&'static str>,
    /// `idempotency-header`, lower case.
    pub idempotency_header: Option<String>,
    /// `deadline-header`, lower case.
    pub deadline_header: Option<String>,
    /// `deadline-margin`.
    pub deadline_margin: Option<Duration>,
    /// `total-timeout`: one deadline for a request and all its attempts.
    pub total_timeout: Option<Duration>,
}

impl HttpClientEntry {
    /// `other`'s keys over this entry's (a later document's section).
    fn merge(&mut self, other: HttpClientEntry) {
        self.max_replay_body = other.max_replay_body.or(self.max_replay_body);
        self.replay_methods = other.replay_methods.or(self.replay_methods);
        self.idempotency_header = other.idempotency_header.or(self.idempotency_header.take());
        self.deadline_header = other.deadline_header.or(self.deadline_header.take());
        self.deadline_margin = other.deadline_margin.or(self.deadline_margin);
        self.total_timeout = other.total_timeout.or(self.total_timeout);
    }
}

/// Every client layer's entry the file gives, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HttpClientSection {
    instances: BTreeMap<String, HttpClientEntry>,
}

impl HttpClientSection {
    /// The entry of the client layer `name`, if the file has one.
    pub fn instance(&self, name: &str) -> Option<&HttpClientEntry> {
        self.instances.get(name)
    }

    /// `other`'s entries over this section's, key by key.
    pub(crate) fn merge(&mut self, other: HttpClientSection) {
        for (name, entry) in other.instances {
            self.instances.entry(name).or_default().merge(entry);
        }
    }

    /// Every entry must be named after a name the file configures under
    /// `resilience4j` (`configured`): a client layer looks its instances up
    /// by its name, so an entry named otherwise would apply to nothing.
    pub(crate) fn check_names(&self, configured: &[&str], problems: &mut Vec<Problem>) {
        for name in self.instances.keys() {
            if !configured.contains(&name.as_str()) {
                let path = format!("{HTTP_CLIENT_INSTANCES}.{name}");
                problems.push(unknown_name(CLIENT_LAYER, &path, name, configured));
            }
        }
    }
}

/// A `resil.http-client` entry, for the name check.
const CLIENT_LAYER: NamedAfter = NamedAfter {
    what: "client layer",
    a: "a client layer",
    after: "the instances it applies",
};

/// Reads `resil.http-client` (at `path`) into `section`.
pub(crate) fn section(
    path: &str,
    value: Value,
    problems: &mut Vec<Problem>,
    section: &mut HttpClientSection,
) {
    let Some(items) = map_entries(value, path, "a map with an `instances` key", problems) else {
        return;
    };
    for (key, value) in items {
        let key_path = format!("{path}.{key}");
        if normalize(&key) != "instances" {
            let hint = "keys of `resil.http-client`: `instances`";
            problems.push(Problem::unknown_key(
                key_path,
                closest(&key, ["instances"]),
                Some(hint),
            ));
            continue;
        }
        let Some(names) = map_entries(value, &key_path, "a map of client names", problems) else {
            continue;
        };
        for (name, value) in names {
            let entry_path = format!("{key_path}.{name}");
            if let Some(entry) = entry(&entry_path, value, problems) {
                section.instances.entry(name).or_default().merge(entry);
            }
        }
    }
}

/// Reads one client's keys.
fn entry(path: &str, value: Value, problems: &mut Vec<Problem>) -> Option<HttpClientEntry> {
    let items = map_entries(value, path, "a map of a client layer's settings", problems)?;
    let mut entry = HttpClientEntry::default();
    let mut seen: HashMap<&'static str, String> = HashMap::new();
    let before = problems.len();
    for (key, value) in items {
        let key_path = format!("{path}.{key}");
        let Some(known) = section_key(
            &key,
            &key_path,
            &HTTP_CLIENT_KEYS,
            "the keys of a client layer",
            &mut seen,
            problems,
        ) else {
            continue;
        };
        let read = match known {
            "max-replay-body" => bytes(&value).map(|n| entry.max_replay_body = Some(n)),
            "replay-methods" => text(&value)
                .and_then(|s| {
                    REPLAY_METHODS
                        .into_iter()
                        .find(|m| m.eq_ignore_ascii_case(s.trim()))
                })
                .map(|m| entry.replay_methods = Some(m)),
            "idempotency-header" => header(&value).map(|h| entry.idempotency_header = Some(h)),
            "deadline-header" => header(&value).map(|h| entry.deadline_header = Some(h)),
            "total-timeout" => duration(&value)
                .filter(|d| !d.is_zero())
                .map(|d| entry.total_timeout = Some(d)),
            _ => duration(&value).map(|d| entry.deadline_margin = Some(d)),
        };
        if read.is_none() {
            let expected = match known {
                "max-replay-body" => "a size in bytes such as 65536, 64KiB or 1MiB".to_owned(),
                "replay-methods" => format!("one of {}", quoted_list(REPLAY_METHODS)),
                "deadline-margin" => "a duration such as 5ms or PT0.005S".to_owned(),
                "total-timeout" => "a duration above zero such as 30s or PT30S".to_owned(),
                _ => "an HTTP header name (letters, digits and `-`, e.g. `idempotency-key`)"
                    .to_owned(),
            };
            problems.push(Problem::new(
                ProblemKind::WrongType,
                Some(key_path.clone()),
                format!(
                    "invalid `{key_path}`: got {}, expected {expected}",
                    value.describe()
                ),
            ));
        }
    }
    (problems.len() == before).then_some(entry)
}

/// A duration: whole milliseconds, or a duration string.
fn duration(value: &Value) -> Option<Duration> {
    match value {
        Value::Int(ms) if *ms >= 0 => Some(Duration::from_millis(*ms as u64)),
        Value::Str(s) => parse_duration(s).ok(),
        _ => None,
    }
}

fn text(value: &Value) -> Option<&str> {
    match value {
        Value::Str(s) => Some(s),
        _ => None,
    }
}

/// A size: a whole number of bytes, or one with a unit.
fn bytes(value: &Value) -> Option<usize> {
    match value {
        Value::Int(n) => usize::try_from(*n).ok(),
        Value::Str(s) => {
            let s = s.trim();
            let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            let (digits, unit) = s.split_at(split);
            let n: usize = digits.parse().ok()?;
            let per = match unit.trim() {
                "" | "B" => 1,
                "KiB" => 1024,
                "MiB" => 1024 * 1024,
                "KB" | "kB" => 1000,
                "MB" => 1_000_000,
                _ => return None,
            };
            n.checked_mul(per)
        }
        _ => None,
    }
}

/// A header name: RFC 9110 token characters, lower-cased.
fn header(value: &Value) -> Option<String> {
    let s = text(value)?.trim();
    let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
    (!s.is_empty() && s.chars().all(token)).then(|| s.to_ascii_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(items: Vec<(&str, Value)>) -> Value {
        Value::Map(items.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }

    #[test]
    fn every_key_reads_and_sizes_take_units() {
        let mut problems = Vec::new();
        let mut s = HttpClientSection::default();
        section(
            "resil.http-client",
            map(vec![(
                "instances",
                map(vec![(
                    "prices",
                    map(vec![
                        ("max-replay-body", Value::Str("16KiB".into())),
                        ("replayMethods", Value::Str("Safe".into())),
                        ("idempotency-header", Value::Str("X-Idempotency-Key".into())),
                        ("deadline-header", Value::Str("x-request-timeout-ms".into())),
                        ("deadline-margin", Value::Str("10ms".into())),
                        ("totalTimeout", Value::Str("PT30S".into())),
                    ]),
                )]),
            )]),
            &mut problems,
            &mut s,
        );
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(
            s.instance("prices"),
            Some(&HttpClientEntry {
                max_replay_body: Some(16 * 1024),
                replay_methods: Some("safe"),
                idempotency_header: Some("x-idempotency-key".into()),
                deadline_header: Some("x-request-timeout-ms".into()),
                deadline_margin: Some(Duration::from_millis(10)),
                total_timeout: Some(Duration::from_secs(30)),
            })
        );
        assert_eq!(bytes(&Value::Int(65536)), Some(65536));
        assert_eq!(bytes(&Value::Str("1MB".into())), Some(1_000_000));
        assert_eq!(bytes(&Value::Str("1.5MiB".into())), None);
    }

    #[test]
    fn a_bad_value_names_its_key_path_and_the_values_allowed_and_a_typo_gets_a_suggestion() {
        let mut problems = Vec::new();
        let mut s = HttpClientSection::default();
        section(
            "resil.http-client",
            map(vec![(
                "instances",
                map(vec![(
                    "prices",
                    map(vec![
                        ("replay-methods", Value::Str("all".into())),
                        ("max-replay-bdy", Value::Int(1)),
                        ("idempotency-header", Value::Str("bad header".into())),
                    ]),
                )]),
            )]),
            &mut problems,
            &mut s,
        );
        let texts: Vec<String> = problems.iter().map(|p| p.to_string()).collect();
        assert_eq!(texts.len(), 3, "{texts:?}");
        assert!(texts[0].contains(
            "invalid `resil.http-client.instances.prices.replay-methods`: got \"all\", expected one of `idempotent`, `safe`, `any`"
        ), "{}", texts[0]);
        assert!(texts[1].contains("unknown key `resil.http-client.instances.prices.max-replay-bdy`; did you mean `max-replay-body`?"), "{}", texts[1]);
        assert!(
            texts[2].contains("expected an HTTP header name"),
            "{}",
            texts[2]
        );
        assert_eq!(s.instance("prices"), None);
    }
}
