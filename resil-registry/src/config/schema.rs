//! The file tree: which kinds exist, which keys each kind accepts (the rows
//! of the option table, `resil-options`), and which Resilience4j keys resil
//! reads under another name, ignores or deliberately rejects.
//!
//! Adding an option is one row in `resil-options`, its resil-core builder
//! method and getter, and one binding line in `bind.rs` (which both sets it
//! from a file and renders it back); an option that is not one value passed
//! to one setter is written by hand in `apply.rs` and `render.rs` instead.

use std::fmt;

pub use crate::kind::Kind;
use std::time::Duration;

use super::duration::format_duration;

/// What the file schema knows of a kind's keys beyond the option table:
/// Resilience4j keys resil ignores, reads under a new name, or rejects.
pub(crate) trait KeyRules: Copy {
    /// Why a key of Resilience4j's Java starter that means nothing in Rust is
    /// ignored (with a warning), if `key` is one.
    fn ignored(self, key: &str) -> Option<&'static str>;
    /// The 2.x key a Resilience4j 1.x key of this kind is read as, if `key` is one.
    fn renamed(self, key: &str) -> Option<&'static Renamed>;
    /// Why a Resilience4j key this kind does not accept is rejected, if it is a
    /// known one.
    fn rejected(self, key: &str) -> Option<&'static str>;
}

impl KeyRules for Kind {
    fn ignored(self, key: &str) -> Option<&'static str> {
        let key = normalize(key);
        IGNORED
            .iter()
            .find(|r| normalize(r.key) == key && (r.kinds.is_empty() || r.kinds.contains(&self)))
            .map(|r| r.why)
    }

    fn renamed(self, key: &str) -> Option<&'static Renamed> {
        let key = normalize(key);
        RENAMED
            .iter()
            .find(|r| normalize(r.from) == key && r.kinds.contains(&self))
    }

    fn rejected(self, key: &str) -> Option<&'static str> {
        let key = normalize(key);
        REJECTED
            .iter()
            .find(|r| normalize(r.key) == key && (r.kinds.is_empty() || r.kinds.contains(&self)))
            .map(|r| r.why)
    }
}

/// A key as compared: lower case, without `-` and `_`, so `failure-rate-threshold`,
/// `failure_rate_threshold` and `failureRateThreshold` are the same key (Spring's
/// relaxed binding). Instance and config names are never normalized.
pub(crate) fn normalize(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

pub(crate) use resil_options::{
    OptionSpec, Target, Ty, ALLOW_HEALTH_INDICATOR_TO_FAIL, EVENT_CONSUMER_BUFFER_SIZE,
    FAILURE_MODELS, REGISTER_HEALTH_INDICATOR, SLIDING_WINDOW_TYPES, STATES,
};

/// What a type accepts, for "expected …" in errors.
pub(crate) fn expected(ty: Ty) -> String {
    match ty {
        Ty::Percent | Ty::F64 => "a number".into(),
        Ty::U32 => format!("a whole number in [0, {}]", u32::MAX),
        Ty::Usize => format!("a whole number in [0, {}]", usize::MAX),
        Ty::Duration => super::duration::EXPECTED_DURATION.into(),
        Ty::Bool => "`true` or `false`".into(),
        Ty::Choice(words) => {
            let words: Vec<String> = words.iter().map(|w| format!("`{w}`")).collect();
            format!("one of {}", words.join(", "))
        }
        Ty::Names => "a list of error-class names".into(),
        Ty::Text => "a non-empty string".into(),
        Ty::Predicate => {
            "the name of a predicate registered with `Registry::register_predicate`".into()
        }
    }
}

/// A Resilience4j key resil does not take, and what to do instead.
struct Rejected {
    key: &'static str,
    /// The kinds it applies to (empty: all).
    kinds: &'static [Kind],
    why: &'static str,
}

/// A key of Resilience4j 1.x (or its Spring Boot 1/2 starters) still found in
/// real files, and the 2.x key it is read as.
#[derive(Debug)]
pub(crate) struct Renamed {
    pub from: &'static str,
    pub to: &'static str,
    pub kinds: &'static [Kind],
    /// What the reading means, when it is not a plain rename.
    pub note: &'static str,
}

const RENAMED: &[Renamed] = &[
    Renamed {
        from: "ring-buffer-size-in-closed-state",
        to: "sliding-window-size",
        kinds: &[Kind::CircuitBreaker],
        note: " (a COUNT_BASED window of that many calls, as the ring buffer was)",
    },
    Renamed {
        from: "ring-buffer-size-in-half-open-state",
        to: "permitted-number-of-calls-in-half-open-state",
        kinds: &[Kind::CircuitBreaker],
        note: "",
    },
    Renamed {
        from: "wait-interval",
        to: "wait-duration-in-open-state",
        kinds: &[Kind::CircuitBreaker],
        note: "",
    },
    Renamed {
        from: "max-retry-attempts",
        to: "max-attempts",
        kinds: &[Kind::Retry],
        note: " (1.x passed it to the same setting, which counts the first call; \
                Spring on Resilience4j 2.x drops this key silently and makes 3 attempts)",
    },
    Renamed {
        from: "max-wait-time",
        to: "max-wait-duration",
        kinds: &[Kind::Bulkhead],
        note: "",
    },
    Renamed {
        from: "keep-alive-time",
        to: "keep-alive-duration",
        kinds: &[Kind::ThreadPoolBulkhead],
        note: "",
    },
];

/// A key of the Java starter with no meaning in Rust: ignored, with a warning.
struct Ignored {
    key: &'static str,
    /// The kinds it applies to (empty: all).
    kinds: &'static [Kind],
    why: &'static str,
}

const IGNORED: &[Ignored] = &[
    Ignored {
        key: "writable-stack-trace-enabled",
        kinds: &[],
        why: "Rust errors carry no stack trace to fill in",
    },
    Ignored {
        key: "subscribe-for-events",
        kinds: &[Kind::RateLimiter],
        why: "the registry always records every instance's events",
    },
    Ignored {
        key: "ignore-class-binding-exceptions",
        kinds: &[Kind::CircuitBreaker],
        why: "error classes are names the program registers, never loaded Java classes; \
              an unknown name stays an error",
    },
];

const REJECTED: &[Rejected] = &[
    Rejected {
        key: "interval-bi-function",
        kinds: &[Kind::Retry],
        why: "it names a Java class; attach an `interval_bi_function` in code (`Registry::configure_retry`)",
    },
    Rejected {
        key: "consume-result-before-retry-attempt",
        kinds: &[Kind::Retry],
        why: "it names a Java class; attach `consume_result_before_retry_attempt` in code (`Registry::configure_retry`)",
    },
    Rejected {
        key: "context-propagators",
        kinds: &[Kind::ThreadPoolBulkhead],
        why: "it names Java classes; resil's pool threads carry no thread-local context",
    },
];

/// A typed option value, after the file's text was read.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Percent(f32),
    U32(u32),
    Usize(usize),
    F64(f64),
    Duration(Duration),
    Bool(bool),
    /// The canonical word of a `Ty::Choice`.
    Choice(&'static str),
    Names(Vec<String>),
    /// A `Ty::Text`.
    Text(String),
}

impl fmt::Display for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Val::Percent(v) => write!(f, "{v}"),
            Val::U32(v) => write!(f, "{v}"),
            Val::Usize(v) => write!(f, "{v}"),
            Val::F64(v) => write!(f, "{v}"),
            Val::Duration(d) => f.write_str(&format_duration(*d)),
            Val::Bool(b) => write!(f, "{b}"),
            Val::Choice(c) => f.write_str(c),
            Val::Names(names) => write!(f, "[{}]", names.join(", ")),
            Val::Text(text) => f.write_str(text),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_and_keys_match_in_every_spelling() {
        for (key, kind) in [
            ("circuitbreaker", Kind::CircuitBreaker),
            ("circuit-breaker", Kind::CircuitBreaker),
            ("circuit_breaker", Kind::CircuitBreaker),
            ("circuitBreaker", Kind::CircuitBreaker),
            ("rate-limiter", Kind::RateLimiter),
            ("ratelimiter", Kind::RateLimiter),
            ("time-limiter", Kind::TimeLimiter),
            ("thread-pool-bulkhead", Kind::ThreadPoolBulkhead),
            ("thread_pool_bulkhead", Kind::ThreadPoolBulkhead),
        ] {
            assert_eq!(Kind::from_key(key), Some(kind), "{key}");
        }
        assert_eq!(Kind::from_key("circuitbreakers"), None);
        let cb = Kind::CircuitBreaker;
        for key in [
            "failure-rate-threshold",
            "failure_rate_threshold",
            "failureRateThreshold",
        ] {
            assert_eq!(cb.option(key).unwrap().key, "failure-rate-threshold");
        }
        assert_eq!(cb.option("record-exceptions").unwrap().key, "record-errors");
        assert_eq!(
            Kind::Retry.option("retry_exceptions").unwrap().key,
            "retry-errors"
        );
        assert!(Kind::Bulkhead.option("failure-rate-threshold").is_none());
        assert!(cb.ignored("writableStackTraceEnabled").is_some());
        assert!(Kind::Retry.rejected("interval-bi-function").is_some());
        assert_eq!(
            Kind::Retry.renamed("maxRetryAttempts").unwrap().to,
            "max-attempts"
        );
        assert!(Kind::Bulkhead.renamed("maxRetryAttempts").is_none());
    }

    #[test]
    fn every_table_has_unique_canonical_keys_in_kebab_case() {
        for kind in Kind::ALL {
            let mut seen = std::collections::HashSet::new();
            for o in kind.options() {
                assert!(seen.insert(normalize(o.key)), "{kind}: {} twice", o.key);
                // `.` nests a key in a map of its own (`keyed.max-keys`).
                assert!(o
                    .key
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '-' || c == '.'));
            }
        }
    }
}
