//! The file tree: which kinds exist, which keys each kind accepts, of which
//! type, and which Resilience4j keys resil deliberately rejects.
//!
//! Adding an option is one line in the kind's table here plus one line in
//! `apply.rs` (how it reaches the resil-core builder).

use std::fmt;

pub use crate::kind::Kind;
use std::time::Duration;

use super::duration::format_duration;

impl Kind {
    /// The key under `resilience4j` in a config file, as Resilience4j spells
    /// it (`circuitbreaker`, `thread-pool-bulkhead`, `ratelimiter`, …).
    pub fn config_key(self) -> &'static str {
        match self {
            Kind::CircuitBreaker => "circuitbreaker",
            Kind::Retry => "retry",
            Kind::Bulkhead => "bulkhead",
            Kind::ThreadPoolBulkhead => "thread-pool-bulkhead",
            Kind::RateLimiter => "ratelimiter",
            Kind::TimeLimiter => "timelimiter",
        }
    }

    /// How the kind reads in a sentence: `circuit breaker`.
    pub(crate) fn label(self) -> &'static str {
        match self {
            Kind::CircuitBreaker => "circuit breaker",
            Kind::Retry => "retry",
            Kind::Bulkhead => "bulkhead",
            Kind::ThreadPoolBulkhead => "thread-pool bulkhead",
            Kind::RateLimiter => "rate limiter",
            Kind::TimeLimiter => "time limiter",
        }
    }

    pub(crate) fn index(self) -> usize {
        self as usize
    }

    /// The kind a key under `resilience4j` names, in any accepted spelling.
    pub(crate) fn from_key(key: &str) -> Option<Kind> {
        let key = normalize(key);
        Kind::ALL
            .into_iter()
            .find(|k| normalize(k.config_key()) == key)
    }

    /// The options the kind's configs and instances accept.
    pub(crate) fn options(self) -> &'static [OptionSpec] {
        match self {
            Kind::CircuitBreaker => CIRCUIT_BREAKER,
            Kind::Retry => RETRY,
            Kind::Bulkhead => BULKHEAD,
            Kind::ThreadPoolBulkhead => THREAD_POOL_BULKHEAD,
            Kind::RateLimiter => RATE_LIMITER,
            Kind::TimeLimiter => TIME_LIMITER,
        }
    }

    /// The option `key` names, in any accepted spelling (kebab, snake, camel,
    /// or Resilience4j's alias).
    pub(crate) fn option(self, key: &str) -> Option<&'static OptionSpec> {
        let key = normalize(key);
        self.options().iter().find(|o| o.matches(&key))
    }

    /// Why a key of Resilience4j's Java starter that means nothing in Rust is
    /// ignored (with a warning), if `key` is one.
    pub(crate) fn ignored(self, key: &str) -> Option<&'static str> {
        let key = normalize(key);
        IGNORED
            .iter()
            .find(|r| normalize(r.key) == key && (r.kinds.is_empty() || r.kinds.contains(&self)))
            .map(|r| r.why)
    }

    /// The 2.x key a Resilience4j 1.x key of this kind is read as, if `key` is one.
    pub(crate) fn renamed(self, key: &str) -> Option<&'static Renamed> {
        let key = normalize(key);
        RENAMED
            .iter()
            .find(|r| normalize(r.from) == key && r.kinds.contains(&self))
    }

    /// Why a Resilience4j key this kind does not accept is rejected, if it is a
    /// known one.
    pub(crate) fn rejected(self, key: &str) -> Option<&'static str> {
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

/// The type of an option's value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ty {
    /// A number (integer or decimal), kept as `f32`.
    Percent,
    /// A whole number in `u32`.
    U32,
    /// A whole number in `usize`.
    Usize,
    /// A number, kept as `f64`.
    F64,
    /// A duration (see `duration.rs`).
    Duration,
    /// `true` or `false`.
    Bool,
    /// One of these words (matched ignoring case, `-` or `_`).
    Choice(&'static [&'static str]),
    /// A list of error-class names.
    Names,
    /// A non-empty string (a URL, a key prefix).
    Text,
    /// The name of a predicate the program registered in code
    /// (`Registry::register_predicate`), as Spring files name a Java class.
    Predicate,
}

impl Ty {
    /// What the type accepts, for "expected …" in errors.
    pub(crate) fn expected(self) -> String {
        match self {
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
}

/// One option a kind accepts.
#[derive(Debug)]
pub(crate) struct OptionSpec {
    /// The canonical key, kebab-case as Resilience4j writes it.
    pub key: &'static str,
    /// Resilience4j's other spelling, if any (`record-exceptions`).
    pub alias: Option<&'static str>,
    pub ty: Ty,
    /// The field resil-core's `ConfigError` names for this option ("" when
    /// resil-core does not validate it).
    pub field: &'static str,
    /// Where the value goes: the core config, or the registry.
    pub target: Target,
}

/// Where an option's value is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Target {
    /// The resil-core config builder.
    Core,
    /// The registry (health indicator, event buffer): not a core setting.
    Registry,
}

impl OptionSpec {
    fn matches(&self, normalized: &str) -> bool {
        normalize(self.key) == normalized || self.alias.is_some_and(|a| normalize(a) == normalized)
    }
}

const fn opt(key: &'static str, ty: Ty, field: &'static str) -> OptionSpec {
    OptionSpec {
        key,
        alias: None,
        ty,
        field,
        target: Target::Core,
    }
}

const fn names(key: &'static str, alias: &'static str) -> OptionSpec {
    OptionSpec {
        key,
        alias: Some(alias),
        ty: Ty::Names,
        field: "",
        target: Target::Core,
    }
}

const fn registry(key: &'static str, ty: Ty) -> OptionSpec {
    OptionSpec {
        key,
        alias: None,
        ty,
        field: "",
        target: Target::Registry,
    }
}

/// `register-health-indicator`: whether the instance appears in the health summary.
pub(crate) const REGISTER_HEALTH_INDICATOR: &str = "register-health-indicator";
/// `allow-health-indicator-to-fail`: whether the instance can make it DOWN.
pub(crate) const ALLOW_HEALTH_INDICATOR_TO_FAIL: &str = "allow-health-indicator-to-fail";
/// `event-consumer-buffer-size`: how many recent events the registry keeps.
pub(crate) const EVENT_CONSUMER_BUFFER_SIZE: &str = "event-consumer-buffer-size";

/// `backend` (rate limiter): where the quota lives. `redis` only exists with
/// the `redis` feature: without it a file asking for Redis is an error, never
/// a local limiter in its place.
#[cfg(feature = "redis")]
pub(crate) const BACKENDS: &[&str] = &["local", "redis"];
/// `backend` (rate limiter): where the quota lives (`redis` needs the `redis`
/// feature).
#[cfg(not(feature = "redis"))]
pub(crate) const BACKENDS: &[&str] = &["local"];
/// `algorithm` (redis-backed rate limiter).
pub(crate) const ALGORITHMS: &[&str] = &["SLIDING_WINDOW", "GCRA"];
/// `failure-policy` (redis-backed rate limiter): what an acquire does when
/// Redis does not answer.
pub(crate) const FAILURE_POLICIES: &[&str] = &["FAIL_CLOSED", "FAIL_OPEN", "LOCAL_FALLBACK"];
/// `topology` (redis-backed rate limiter): what `redis-url` points at.
pub(crate) const TOPOLOGIES: &[&str] = &["STANDALONE", "CLUSTER", "SENTINEL"];

/// Sliding window types as Resilience4j writes them.
pub(crate) const SLIDING_WINDOW_TYPES: &[&str] = &["COUNT_BASED", "TIME_BASED"];

/// Circuit-breaker states as Resilience4j writes them.
pub(crate) const STATES: &[&str] = &[
    "CLOSED",
    "OPEN",
    "HALF_OPEN",
    "FORCED_OPEN",
    "DISABLED",
    "METRICS_ONLY",
];

const CIRCUIT_BREAKER: &[OptionSpec] = &[
    opt(
        "failure-rate-threshold",
        Ty::Percent,
        "failure_rate_threshold",
    ),
    opt(
        "slow-call-rate-threshold",
        Ty::Percent,
        "slow_call_rate_threshold",
    ),
    opt(
        "slow-call-duration-threshold",
        Ty::Duration,
        "slow_call_duration_threshold",
    ),
    opt(
        "sliding-window-type",
        Ty::Choice(SLIDING_WINDOW_TYPES),
        "sliding_window_type",
    ),
    opt("sliding-window-size", Ty::U32, "sliding_window_size"),
    opt(
        "minimum-number-of-calls",
        Ty::U32,
        "minimum_number_of_calls",
    ),
    opt(
        "wait-duration-in-open-state",
        Ty::Duration,
        "wait_duration_in_open_state",
    ),
    opt(
        "automatic-transition-from-open-to-half-open-enabled",
        Ty::Bool,
        "automatic_transition_from_open_to_half_open_enabled",
    ),
    opt(
        "permitted-number-of-calls-in-half-open-state",
        Ty::U32,
        "permitted_number_of_calls_in_half_open_state",
    ),
    opt(
        "max-wait-duration-in-half-open-state",
        Ty::Duration,
        "max_wait_duration_in_half_open_state",
    ),
    opt(
        "transition-to-state-after-wait-duration",
        Ty::Choice(STATES),
        "transition_to_state_after_wait_duration",
    ),
    opt("initial-state", Ty::Choice(STATES), "initial_state"),
    opt("enable-exponential-backoff", Ty::Bool, ""),
    opt("exponential-backoff-multiplier", Ty::F64, ""),
    opt(
        "exponential-max-wait-duration-in-open-state",
        Ty::Duration,
        "",
    ),
    opt("enable-randomized-wait", Ty::Bool, ""),
    opt("randomized-wait-factor", Ty::F64, ""),
    names("record-errors", "record-exceptions"),
    names("ignore-errors", "ignore-exceptions"),
    registry("record-failure-predicate", Ty::Predicate),
    registry("ignore-exception-predicate", Ty::Predicate),
    registry("record-result-predicate", Ty::Predicate),
    registry(REGISTER_HEALTH_INDICATOR, Ty::Bool),
    registry(ALLOW_HEALTH_INDICATOR_TO_FAIL, Ty::Bool),
    registry(EVENT_CONSUMER_BUFFER_SIZE, Ty::Usize),
];

const RETRY: &[OptionSpec] = &[
    opt("max-attempts", Ty::U32, "max_attempts"),
    opt("wait-duration", Ty::Duration, "wait_duration"),
    opt("enable-exponential-backoff", Ty::Bool, ""),
    opt("exponential-backoff-multiplier", Ty::F64, ""),
    opt("exponential-max-wait-duration", Ty::Duration, ""),
    opt("enable-randomized-wait", Ty::Bool, ""),
    opt("randomized-wait-factor", Ty::F64, ""),
    opt(
        "fail-after-max-attempts",
        Ty::Bool,
        "fail_after_max_attempts",
    ),
    names("retry-errors", "retry-exceptions"),
    names("ignore-errors", "ignore-exceptions"),
    registry("retry-exception-predicate", Ty::Predicate),
    registry("result-predicate", Ty::Predicate),
    registry(EVENT_CONSUMER_BUFFER_SIZE, Ty::Usize),
];

const BULKHEAD: &[OptionSpec] = &[
    opt("max-concurrent-calls", Ty::U32, "max_concurrent_calls"),
    opt("max-wait-duration", Ty::Duration, "max_wait_duration"),
    opt(
        "fair-call-handling-enabled",
        Ty::Bool,
        "fair_call_handling_enabled",
    ),
    registry(EVENT_CONSUMER_BUFFER_SIZE, Ty::Usize),
];

const THREAD_POOL_BULKHEAD: &[OptionSpec] = &[
    opt("core-thread-pool-size", Ty::Usize, "core_thread_pool_size"),
    opt("max-thread-pool-size", Ty::Usize, "max_thread_pool_size"),
    opt("queue-capacity", Ty::Usize, "queue_capacity"),
    opt("keep-alive-duration", Ty::Duration, "keep_alive_duration"),
    registry(EVENT_CONSUMER_BUFFER_SIZE, Ty::Usize),
];

const RATE_LIMITER: &[OptionSpec] = &[
    opt("limit-for-period", Ty::U32, "limit_for_period"),
    opt("limit-refresh-period", Ty::Duration, "limit_refresh_period"),
    opt("timeout-duration", Ty::Duration, "timeout_duration"),
    registry(REGISTER_HEALTH_INDICATOR, Ty::Bool),
    registry(ALLOW_HEALTH_INDICATOR_TO_FAIL, Ty::Bool),
    registry(EVENT_CONSUMER_BUFFER_SIZE, Ty::Usize),
    // The distributed rate limiter (`Registry::distributed_rate_limiter`,
    // feature `redis`): read by the registry, never by the local limiter.
    registry("backend", Ty::Choice(BACKENDS)),
    registry("redis-url", Ty::Text),
    registry("key-prefix", Ty::Text),
    registry("algorithm", Ty::Choice(ALGORITHMS)),
    registry("buckets", Ty::U32),
    registry("burst", Ty::U32),
    registry("redis-timeout", Ty::Duration),
    registry("failure-policy", Ty::Choice(FAILURE_POLICIES)),
    registry("expected-instances", Ty::U32),
    registry("topology", Ty::Choice(TOPOLOGIES)),
    registry("sentinel-master-name", Ty::Text),
    registry("lease-size", Ty::U32),
    registry("lease-ttl", Ty::Duration),
];

const TIME_LIMITER: &[OptionSpec] = &[
    opt("timeout-duration", Ty::Duration, "timeout_duration"),
    opt("cancel-running-future", Ty::Bool, "cancel_running_future"),
    registry(EVENT_CONSUMER_BUFFER_SIZE, Ty::Usize),
];

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
pub(crate) enum Val {
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
                assert!(o.key.chars().all(|c| c.is_ascii_lowercase() || c == '-'));
            }
        }
    }
}
