//! `resil.inbound-guard`: the server-wide inbound guard's thresholds
//! (`resil_core::inbound::InboundGuardConfig`), beside `resil.http`.
//!
//! ```yaml
//! resil:
//!   inbound-guard:
//!     cpu-usage-threshold: 80   # percent; the BBR check runs above it
//!     load-threshold: 8         # 1-minute load; the BBR check runs above it
//!     max-in-flight: 2000
//!     max-rps: 5000
//!     max-average-rt: 800ms
//!     window: 1s
//!     window-buckets: 10
//!     retry-after: 1s
//! ```
//!
//! Every key is optional (resil-core's defaults otherwise); an unknown key is
//! an error with a did-you-mean, a bad value names its key path.

use std::collections::HashMap;

use resil_core::inbound::{InboundGuardConfig, InboundGuardConfigBuilder};
use resil_options::duration::parse_duration;

use super::error::{Problem, ProblemKind};
use super::load::{map_entries, section_key};
use super::value::Value;

/// The keys of `resil.inbound-guard`.
pub const INBOUND_GUARD_KEYS: [&str; 8] = [
    "cpu-usage-threshold",
    "load-threshold",
    "max-in-flight",
    "max-rps",
    "max-average-rt",
    "window",
    "window-buckets",
    "retry-after",
];

/// One read value.
enum Read {
    Number(f64),
    Duration(std::time::Duration),
}

fn number(value: &Value) -> Option<f64> {
    match value {
        Value::Int(i) => Some(*i as f64),
        Value::Float(f) => Some(*f),
        Value::Str(s) => s.trim().parse().ok(),
        _ => None,
    }
}

/// Reads `resil.inbound-guard` (at `path`) into a checked configuration.
pub(crate) fn section(
    path: &str,
    value: Value,
    problems: &mut Vec<Problem>,
) -> Option<InboundGuardConfig> {
    let items = map_entries(
        value,
        path,
        "a map of the inbound guard's thresholds",
        problems,
    )?;
    let mut b = InboundGuardConfig::builder();
    let mut seen: HashMap<&'static str, String> = HashMap::new();
    let mut paths: HashMap<&'static str, String> = HashMap::new();
    let before = problems.len();
    for (key, value) in items {
        let key_path = format!("{path}.{key}");
        let Some(known) = section_key(
            &key,
            &key_path,
            &INBOUND_GUARD_KEYS,
            "keys of `resil.inbound-guard`",
            &mut seen,
            problems,
        ) else {
            continue;
        };
        let is_duration = matches!(known, "max-average-rt" | "window" | "retry-after");
        let read = if is_duration {
            match &value {
                Value::Int(ms) if *ms >= 0 => {
                    Some(Read::Duration(std::time::Duration::from_millis(*ms as u64)))
                }
                Value::Str(s) => parse_duration(s).ok().map(Read::Duration),
                _ => None,
            }
        } else {
            number(&value).map(Read::Number)
        };
        let Some(read) = read else {
            let expected = if is_duration {
                "a duration such as 500ms, 1s or PT1S"
            } else {
                "a number"
            };
            problems.push(Problem::new(
                ProblemKind::WrongType,
                Some(key_path.clone()),
                format!(
                    "invalid `{key_path}`: got {}, expected {expected}",
                    value.describe()
                ),
            ));
            continue;
        };
        b = apply(b, known, read);
        paths.insert(known, key_path);
    }
    if problems.len() > before {
        return None;
    }
    match b.build() {
        Ok(config) => Some(config),
        Err(e) => {
            let key = e.field().replace('_', "-");
            let key_path = paths
                .get(key.as_str())
                .cloned()
                .unwrap_or_else(|| format!("{path}.{key}"));
            problems.push(Problem::new(
                ProblemKind::InvalidValue,
                Some(key_path.clone()),
                format!(
                    "invalid `{key_path}`: got {}, expected {}",
                    e.got(),
                    e.expected()
                ),
            ));
            None
        }
    }
}

fn apply(b: InboundGuardConfigBuilder, key: &str, read: Read) -> InboundGuardConfigBuilder {
    match (key, read) {
        ("cpu-usage-threshold", Read::Number(n)) => b.cpu_usage_threshold(n as f32),
        ("load-threshold", Read::Number(n)) => b.load_threshold(n),
        // Out of `u32` becomes 0, which the builder refuses by name.
        ("max-in-flight", Read::Number(n)) => b.max_in_flight(
            if n.fract() == 0.0 && n >= 0.0 && n <= f64::from(u32::MAX) {
                n as u32
            } else {
                0
            },
        ),
        ("max-rps", Read::Number(n)) => b.max_rps(n),
        ("window-buckets", Read::Number(n)) => b.window_buckets(
            if n.fract() == 0.0 && n >= 0.0 && n <= f64::from(u32::MAX) {
                n as u32
            } else {
                0
            },
        ),
        ("max-average-rt", Read::Duration(d)) => b.max_average_rt(d),
        ("window", Read::Duration(d)) => b.window(d),
        ("retry-after", Read::Duration(d)) => b.retry_after(d),
        _ => b,
    }
}
