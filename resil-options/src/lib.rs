//! resil's option table: every setting of every primitive is one row
//! ([`OptionSpec`]) — its config-file key and Resilience4j alias, its
//! attribute key, its type and range, its default, the builder setter it
//! reaches and whether it belongs to the primitive or to the registry.
//!
//! One table serves every reader: the config-file and environment loaders
//! (which keys exist, of which type), the attribute macros (which literal
//! keys an attribute takes and the range checked at compile time), the
//! snapshot (every option's value, rendered the way the loader reads it back)
//! and the guide's option table (`docs/configuration.md`), which a test compares with it. Adding an
//! option is one row here plus its builder method and one binding line in
//! resil-registry's config (which sets it from a file and renders it back).
//!
//! ```
//! use resil_options::{option, Section};
//!
//! let size = option(Section::CircuitBreaker, "slidingWindowSize").unwrap();
//! assert_eq!(size.key, "sliding-window-size");
//! assert_eq!(size.attribute_key(), Some("sliding_window_size".to_owned()));
//! assert_eq!(size.default.value(), Some("100"));
//! ```
#![warn(missing_docs, rust_2018_idioms, unreachable_pub)]

mod aspect;
pub mod case;
pub mod duration;
mod suggest;

pub use self::aspect::{in_order, order_text, Aspect, ORDER};
pub use self::suggest::closest;

/// One kind of primitive, and its part of the `resilience4j` tree.
///
/// resil-registry re-exports it as `Kind`: the one list of kinds that config
/// files, the option table, the registry, its errors, events, snapshots and
/// metrics all name. Each kind's labels live here, below every crate that
/// prints one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
// The hidden variant is a real kind (the unit tests'), not a marker for
// `#[non_exhaustive]`.
#[allow(clippy::manual_non_exhaustive)]
pub enum Section {
    /// `circuitbreaker`: resil-core's `CircuitBreaker`.
    CircuitBreaker,
    /// `retry`: resil-core's `Retry`.
    Retry,
    /// `bulkhead`: resil-core's (semaphore) `Bulkhead`.
    Bulkhead,
    /// `thread-pool-bulkhead`: resil-core's `ThreadPoolBulkhead`.
    ThreadPoolBulkhead,
    /// `ratelimiter`: resil-core's `RateLimiter` (and, with `backend: redis`,
    /// its Redis-backed twin).
    RateLimiter,
    /// `timelimiter`: resil-core's `TimeLimiter`.
    TimeLimiter,
    /// `hedging`: Polly's hedging strategy (not in Resilience4j).
    Hedging,
    /// `adaptive-bulkhead`: a bulkhead whose limit follows latency (Vegas).
    AdaptiveBulkhead,
    /// `chaos`: fault injection for drills, off by default.
    Chaos,
    /// `throttler`: adaptive client-side throttling (the Google SRE book's;
    /// not in Resilience4j).
    Throttler,
    /// A kind that exists only in resil-registry's own unit tests, which
    /// prove that adding a kind is one module and one line. Never in
    /// [`ALL`](Self::ALL), no file section, no options.
    #[doc(hidden)]
    UnitTestCounter,
}

impl Section {
    /// Every kind, in the registry's fixed order.
    pub const ALL: [Section; 10] = [
        Section::CircuitBreaker,
        Section::Retry,
        Section::Bulkhead,
        Section::ThreadPoolBulkhead,
        Section::RateLimiter,
        Section::TimeLimiter,
        Section::Hedging,
        Section::AdaptiveBulkhead,
        Section::Chaos,
        Section::Throttler,
    ];

    /// The stable snake_case label (`"circuit_breaker"`,
    /// `"thread_pool_bulkhead"`, …) used in errors, events, snapshots and logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Section::CircuitBreaker => "circuit_breaker",
            Section::Retry => "retry",
            Section::Bulkhead => "bulkhead",
            Section::ThreadPoolBulkhead => "thread_pool_bulkhead",
            Section::RateLimiter => "rate_limiter",
            Section::TimeLimiter => "time_limiter",
            Section::Hedging => "hedging",
            Section::AdaptiveBulkhead => "adaptive_bulkhead",
            Section::Chaos => "chaos",
            Section::Throttler => "throttler",
            Section::UnitTestCounter => "unit_test_counter",
        }
    }

    /// How the kind reads in a sentence: `circuit breaker`.
    pub const fn label(self) -> &'static str {
        match self {
            Section::CircuitBreaker => "circuit breaker",
            Section::Retry => "retry",
            Section::Bulkhead => "bulkhead",
            Section::ThreadPoolBulkhead => "thread-pool bulkhead",
            Section::RateLimiter => "rate limiter",
            Section::TimeLimiter => "time limiter",
            Section::Hedging => "hedging",
            Section::AdaptiveBulkhead => "adaptive bulkhead",
            Section::Chaos => "chaos",
            Section::Throttler => "throttler",
            Section::UnitTestCounter => "unit-test counter",
        }
    }

    /// The word Resilience4j's metric names use (`resilience4j_<word>_…`).
    pub const fn metric_word(self) -> &'static str {
        match self {
            Section::CircuitBreaker => "circuitbreaker",
            Section::Retry => "retry",
            Section::Bulkhead => "bulkhead",
            Section::ThreadPoolBulkhead => "thread_pool_bulkhead",
            Section::RateLimiter => "ratelimiter",
            Section::TimeLimiter => "timelimiter",
            // Not Resilience4j's: these publish under `resil_` names, the
            // adaptive bulkhead beside the bulkhead's (`bulkhead_adaptive_…`).
            Section::Hedging => "hedging",
            Section::AdaptiveBulkhead => "bulkhead_adaptive",
            Section::Chaos => "chaos",
            Section::Throttler => "throttler",
            Section::UnitTestCounter => "unit_test_counter",
        }
    }

    /// The key under `resilience4j` in a config file, as Resilience4j spells
    /// it (`circuitbreaker`, `thread-pool-bulkhead`, `ratelimiter`, …).
    pub const fn config_key(self) -> &'static str {
        match self {
            Section::CircuitBreaker => "circuitbreaker",
            Section::Retry => "retry",
            Section::Bulkhead => "bulkhead",
            Section::ThreadPoolBulkhead => "thread-pool-bulkhead",
            Section::RateLimiter => "ratelimiter",
            Section::TimeLimiter => "timelimiter",
            Section::Hedging => "hedging",
            Section::AdaptiveBulkhead => "adaptive-bulkhead",
            Section::Chaos => "chaos",
            Section::Throttler => "throttler",
            Section::UnitTestCounter => "unit-test-counter",
        }
    }

    /// The position in [`ALL`](Self::ALL) (the unit-test kind comes last).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The kind a key under `resilience4j` names, in any spelling Spring's
    /// relaxed binding accepts (`circuitbreaker`, `circuit-breaker`,
    /// `circuitBreaker`, `thread_pool_bulkhead`, …).
    pub fn from_key(key: &str) -> Option<Section> {
        Section::ALL
            .into_iter()
            .find(|k| same_key(k.config_key(), key))
    }

    /// The option of this kind that `key` names (see [`option`]).
    pub fn option(self, key: &str) -> Option<&'static OptionSpec> {
        option(self, key)
    }

    /// The options of this section, in the table's order (the order the
    /// snapshot and the guide's option table list them).
    pub fn options(self) -> &'static [OptionSpec] {
        match self {
            Section::CircuitBreaker => CIRCUIT_BREAKER,
            Section::Retry => RETRY,
            Section::Bulkhead => BULKHEAD,
            Section::ThreadPoolBulkhead => THREAD_POOL_BULKHEAD,
            Section::RateLimiter => RATE_LIMITER,
            Section::TimeLimiter => TIME_LIMITER,
            Section::Hedging => HEDGING,
            Section::AdaptiveBulkhead => ADAPTIVE_BULKHEAD,
            Section::Chaos => CHAOS,
            Section::Throttler => THROTTLER,
            Section::UnitTestCounter => &[],
        }
    }
}

impl std::fmt::Display for Section {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The option of `section` that `key` names, in any spelling Spring's relaxed
/// binding accepts (kebab, snake or camel case) or by its Resilience4j alias.
pub fn option(section: Section, key: &str) -> Option<&'static OptionSpec> {
    section.options().iter().find(|o| o.matches(key))
}

/// The option of `section` an attribute literal `key` (snake case, as
/// written in `#[resil::retry(max_attempts = 5)]`) sets, if attributes may
/// set it.
pub fn attribute(section: Section, key: &str) -> Option<&'static OptionSpec> {
    section
        .options()
        .iter()
        .find(|o| o.check.is_some() && same_key(o.key, key))
}

/// The attribute keys of `section`, in the table's order (snake case).
pub fn attribute_keys(section: Section) -> impl Iterator<Item = String> {
    section
        .options()
        .iter()
        .filter_map(OptionSpec::attribute_key)
}

/// Whether two spellings name one key: compared in lower case without `-`
/// and `_`, so `failure-rate-threshold`, `failure_rate_threshold` and
/// `failureRateThreshold` are the same key (Spring's relaxed binding).
pub fn same_key(a: &str, b: &str) -> bool {
    suggest::compared(a).eq(suggest::compared(b))
}

/// The type of an option's value in a config file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// A percentage: a number in `(0, 100]`, kept as `f32`.
    Percent,
    /// A whole number in `u32`.
    U32,
    /// A whole number in `usize`.
    Usize,
    /// A decimal number, kept as `f64`.
    F64,
    /// A duration: `500ms`, `10s`, `1m`, a plain integer of milliseconds, or
    /// ISO-8601 (`PT1M30S`).
    Duration,
    /// `true` or `false`.
    Bool,
    /// One of these words (matched ignoring case, `-` and `_`).
    Choice(&'static [&'static str]),
    /// A list of error-class names.
    Names,
    /// A non-empty string (a URL, a key prefix).
    Text,
    /// The name of a predicate the program registered in code, as a Spring
    /// file names a Java `Predicate` class.
    Predicate,
}

/// Where an option's value is used.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// The primitive's config builder (resil-core).
    Core,
    /// The registry: health indicators, event buffers, the Redis backend.
    Registry,
}

/// The check an attribute's literal gets at compile time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Check {
    /// A number in `(0, 100]`.
    Percent,
    /// An integer in `[min, max]`, of Rust type `ty`.
    Int {
        /// Smallest value.
        min: u64,
        /// Largest value.
        max: u64,
        /// The setter's parameter type (`u32`, `usize`).
        ty: &'static str,
    },
    /// A window size, whose largest value depends on the window's type
    /// (which a file may set): calls for a count window, seconds for a time
    /// window. An attribute cannot see the file, so it takes up to
    /// `count_max` and the primitive's build checks the rest.
    WindowSize {
        /// Largest `COUNT_BASED` window, in calls.
        count_max: u64,
        /// Largest `TIME_BASED` window, in seconds.
        time_max: u64,
    },
    /// A duration literal (`"500ms"`) of at least `min_nanos`.
    Duration {
        /// Shortest duration, in nanoseconds.
        min_nanos: u64,
        /// The same, as written in a message (`1ms`).
        min_text: &'static str,
    },
    /// `true` or `false`.
    Bool,
}

impl Check {
    /// What the check accepts, for "expected …" in messages.
    pub fn expected(self) -> String {
        match self {
            Check::Percent => "a percentage in (0, 100]".into(),
            Check::Int { min, max, ty } => format!("a `{ty}` in [{min}, {max}]"),
            Check::WindowSize {
                count_max,
                time_max,
            } => format!(
                "a `u32` in [1, {count_max}] (calls, COUNT_BASED; a TIME_BASED window takes at most {time_max} seconds)"
            ),
            Check::Duration { min_text, .. } => {
                format!("a duration of at least {min_text}, such as \"500ms\", \"10s\" or \"1m\"")
            }
            Check::Bool => "`true` or `false`".into(),
        }
    }
}

/// An option's default, as the loader would read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Default {
    /// This value, rendered as a config file writes it.
    Is(&'static str),
    /// Computed on the machine (described here).
    Computed(&'static str),
    /// Unset unless given (described here).
    Unset(&'static str),
}

impl Default {
    /// The rendered default, when it is a fixed value.
    pub fn value(self) -> Option<&'static str> {
        match self {
            Default::Is(v) => Some(v),
            _ => None,
        }
    }

    /// The default as the docs write it.
    pub fn describe(self) -> &'static str {
        match self {
            Default::Is(v) | Default::Computed(v) | Default::Unset(v) => v,
        }
    }
}

/// One option: a row of the table.
#[derive(Debug, Clone, Copy)]
pub struct OptionSpec {
    /// The canonical config-file key, kebab-case as Resilience4j writes it.
    pub key: &'static str,
    /// Resilience4j's other spelling, if any (`record-exceptions`).
    pub alias: Option<&'static str>,
    /// The value's type in a file.
    pub ty: Ty,
    /// The builder setter and `ConfigError` field (`""` when the registry, not
    /// a builder, reads the option).
    pub setter: &'static str,
    /// Where the value goes.
    pub target: Target,
    /// The literal check when an attribute may set the option (its attribute
    /// key is the setter's name); `None` when only files and code can.
    pub check: Option<Check>,
    /// The default.
    pub default: Default,
}

impl OptionSpec {
    /// Whether `key` names this option, in any accepted spelling.
    pub fn matches(&self, key: &str) -> bool {
        same_key(self.key, key) || self.alias.is_some_and(|a| same_key(a, key))
    }

    /// The attribute key (`max_attempts`), when attributes may set it.
    pub fn attribute_key(&self) -> Option<String> {
        self.check.map(|_| self.key.replace('-', "_"))
    }

    /// The environment-variable suffix (`MAX_ATTEMPTS`).
    pub fn env_suffix(&self) -> String {
        self.key.replace('-', "_").to_uppercase()
    }
}

const fn core(key: &'static str, ty: Ty, setter: &'static str, default: Default) -> OptionSpec {
    OptionSpec {
        key,
        alias: None,
        ty,
        setter,
        target: Target::Core,
        check: None,
        default,
    }
}

/// A core option an attribute may set too.
const fn attr(
    key: &'static str,
    ty: Ty,
    setter: &'static str,
    check: Check,
    default: Default,
) -> OptionSpec {
    OptionSpec {
        check: Some(check),
        ..core(key, ty, setter, default)
    }
}

const fn names(key: &'static str, alias: &'static str, default: &'static str) -> OptionSpec {
    OptionSpec {
        alias: Some(alias),
        ..core(key, Ty::Names, "", Default::Unset(default))
    }
}

const fn registry(key: &'static str, ty: Ty, default: Default) -> OptionSpec {
    OptionSpec {
        key,
        alias: None,
        ty,
        setter: "",
        target: Target::Registry,
        check: None,
        default,
    }
}

const U32: u64 = u32::MAX as u64;
const ANY_DURATION: Check = Check::Duration {
    min_nanos: 0,
    min_text: "0ms",
};
const POSITIVE_DURATION: Check = Check::Duration {
    min_nanos: 1,
    min_text: "1ns",
};

/// `register-health-indicator`: whether the instance takes part in the health summary.
pub const REGISTER_HEALTH_INDICATOR: &str = "register-health-indicator";
/// `allow-health-indicator-to-fail`: whether the instance may turn the summary DOWN.
pub const ALLOW_HEALTH_INDICATOR_TO_FAIL: &str = "allow-health-indicator-to-fail";
/// `event-consumer-buffer-size`: how many recent events the registry keeps.
pub const EVENT_CONSUMER_BUFFER_SIZE: &str = "event-consumer-buffer-size";

/// `backend` (rate limiter): where the quota lives. `redis` exists only with
/// the `redis` feature.
#[cfg(feature = "redis")]
pub const BACKENDS: &[&str] = &["local", "redis"];
/// `backend` (rate limiter): where the quota lives (`redis` needs the `redis`
/// feature).
#[cfg(not(feature = "redis"))]
pub const BACKENDS: &[&str] = &["local"];
/// `algorithm` (Redis-backed rate limiter).
pub const ALGORITHMS: &[&str] = &["SLIDING_WINDOW", "GCRA"];
/// `failure-policy` (Redis-backed rate limiter): what an acquire does when
/// Redis does not answer.
pub const FAILURE_POLICIES: &[&str] = &["FAIL_CLOSED", "FAIL_OPEN", "LOCAL_FALLBACK"];
/// `topology` (Redis-backed rate limiter): what `redis-url` points at.
pub const TOPOLOGIES: &[&str] = &["STANDALONE", "CLUSTER", "SENTINEL"];
/// Sliding window types as Resilience4j writes them.
pub const SLIDING_WINDOW_TYPES: &[&str] = &["COUNT_BASED", "TIME_BASED"];
/// Circuit-breaker failure models: what opens a CLOSED breaker on failures
/// (the window's rate, a run of consecutive failures, a count within an
/// interval).
pub const FAILURE_MODELS: &[&str] = &["RATE", "CONSECUTIVE", "COUNT"];
/// Circuit-breaker states as Resilience4j writes them.
pub const STATES: &[&str] = &[
    "CLOSED",
    "OPEN",
    "HALF_OPEN",
    "FORCED_OPEN",
    "DISABLED",
    "METRICS_ONLY",
];

const HEALTH: [OptionSpec; 2] = [
    registry(REGISTER_HEALTH_INDICATOR, Ty::Bool, Default::Is("true")),
    registry(
        ALLOW_HEALTH_INDICATOR_TO_FAIL,
        Ty::Bool,
        Default::Is("false"),
    ),
];
const EVENTS: OptionSpec = registry(EVENT_CONSUMER_BUFFER_SIZE, Ty::Usize, Default::Is("100"));

const CIRCUIT_BREAKER: &[OptionSpec] = &[
    attr(
        "failure-rate-threshold",
        Ty::Percent,
        "failure_rate_threshold",
        Check::Percent,
        Default::Is("50"),
    ),
    attr(
        "slow-call-rate-threshold",
        Ty::Percent,
        "slow_call_rate_threshold",
        Check::Percent,
        Default::Is("100"),
    ),
    attr(
        "slow-call-duration-threshold",
        Ty::Duration,
        "slow_call_duration_threshold",
        POSITIVE_DURATION,
        Default::Is("1m"),
    ),
    core(
        "sliding-window-type",
        Ty::Choice(SLIDING_WINDOW_TYPES),
        "sliding_window_type",
        Default::Is("COUNT_BASED"),
    ),
    attr(
        "sliding-window-size",
        Ty::U32,
        "sliding_window_size",
        Check::WindowSize {
            count_max: 16_777_216,
            time_max: 604_800,
        },
        Default::Is("100"),
    ),
    attr(
        "minimum-number-of-calls",
        Ty::U32,
        "minimum_number_of_calls",
        Check::Int {
            min: 1,
            max: U32,
            ty: "u32",
        },
        Default::Is("100"),
    ),
    core(
        "failure-model",
        Ty::Choice(FAILURE_MODELS),
        "failure_model",
        Default::Is("RATE"),
    ),
    attr(
        "consecutive-failure-threshold",
        Ty::U32,
        "consecutive_failure_threshold",
        Check::Int {
            min: 1,
            max: U32,
            ty: "u32",
        },
        Default::Is("5"),
    ),
    attr(
        "failure-count-threshold",
        Ty::U32,
        "failure_count_threshold",
        Check::Int {
            min: 1,
            max: 65_536,
            ty: "u32",
        },
        Default::Is("5"),
    ),
    attr(
        "failure-count-interval",
        Ty::Duration,
        "failure_count_interval",
        Check::Duration {
            min_nanos: 1_000_000,
            min_text: "1ms",
        },
        Default::Is("10s"),
    ),
    attr(
        "warm-up-period",
        Ty::Duration,
        "warm_up_period",
        ANY_DURATION,
        Default::Is("0ms"),
    ),
    core("cold-factor", Ty::U32, "cold_factor", Default::Is("3")),
    attr(
        "wait-duration-in-open-state",
        Ty::Duration,
        "wait_duration_in_open_state",
        Check::Duration {
            min_nanos: 1_000_000,
            min_text: "1ms",
        },
        Default::Is("1m"),
    ),
    attr(
        "automatic-transition-from-open-to-half-open-enabled",
        Ty::Bool,
        "automatic_transition_from_open_to_half_open_enabled",
        Check::Bool,
        Default::Is("false"),
    ),
    attr(
        "permitted-number-of-calls-in-half-open-state",
        Ty::U32,
        "permitted_number_of_calls_in_half_open_state",
        Check::Int {
            min: 1,
            max: 16_777_216,
            ty: "u32",
        },
        Default::Is("10"),
    ),
    attr(
        "max-wait-duration-in-half-open-state",
        Ty::Duration,
        "max_wait_duration_in_half_open_state",
        ANY_DURATION,
        Default::Is("0ms"),
    ),
    core(
        "transition-to-state-after-wait-duration",
        Ty::Choice(STATES),
        "transition_to_state_after_wait_duration",
        Default::Is("OPEN"),
    ),
    core(
        "initial-state",
        Ty::Choice(STATES),
        "initial_state",
        Default::Is("CLOSED"),
    ),
    core(
        "enable-exponential-backoff",
        Ty::Bool,
        "",
        Default::Is("false"),
    ),
    core(
        "exponential-backoff-multiplier",
        Ty::F64,
        "",
        Default::Is("1.5"),
    ),
    core(
        "exponential-max-wait-duration-in-open-state",
        Ty::Duration,
        "",
        Default::Unset("no cap"),
    ),
    core("enable-randomized-wait", Ty::Bool, "", Default::Is("false")),
    core("randomized-wait-factor", Ty::F64, "", Default::Is("0.5")),
    names(
        "record-errors",
        "record-exceptions",
        "none: every error is a failure",
    ),
    names("ignore-errors", "ignore-exceptions", "none"),
    registry(
        "record-failure-predicate",
        Ty::Predicate,
        Default::Unset("none"),
    ),
    registry(
        "ignore-exception-predicate",
        Ty::Predicate,
        Default::Unset("none"),
    ),
    registry(
        "record-result-predicate",
        Ty::Predicate,
        Default::Unset("none"),
    ),
    HEALTH[0],
    HEALTH[1],
    EVENTS,
    // Keyed families (`registry.keyed_*(name)`): the `keyed` map of an
    // instance; its `overrides` (per key or `*` pattern) are read beside.
    registry("keyed.max-keys", Ty::Usize, Default::Is("10000")),
    registry("keyed.idle-ttl", Ty::Duration, Default::Is("10m")),
];

const RETRY: &[OptionSpec] = &[
    attr(
        "max-attempts",
        Ty::U32,
        "max_attempts",
        Check::Int {
            min: 1,
            max: U32,
            ty: "u32",
        },
        Default::Is("3"),
    ),
    attr(
        "wait-duration",
        Ty::Duration,
        "wait_duration",
        ANY_DURATION,
        Default::Is("500ms"),
    ),
    core(
        "enable-exponential-backoff",
        Ty::Bool,
        "",
        Default::Is("false"),
    ),
    core(
        "exponential-backoff-multiplier",
        Ty::F64,
        "",
        Default::Is("1.5"),
    ),
    core(
        "exponential-max-wait-duration",
        Ty::Duration,
        "",
        Default::Unset("no cap"),
    ),
    core("enable-randomized-wait", Ty::Bool, "", Default::Is("false")),
    core("randomized-wait-factor", Ty::F64, "", Default::Is("0.5")),
    core(
        "fail-after-max-attempts",
        Ty::Bool,
        "fail_after_max_attempts",
        Default::Is("false"),
    ),
    names(
        "retry-errors",
        "retry-exceptions",
        "none: every error is retried",
    ),
    names("ignore-errors", "ignore-exceptions", "none"),
    registry(
        "retry-exception-predicate",
        Ty::Predicate,
        Default::Unset("none"),
    ),
    registry("result-predicate", Ty::Predicate, Default::Unset("none")),
    // A retry budget (tower's `TpsBudget`): set any of the three and the
    // retry draws on one; they are also what each key's budget of the
    // keyed family gets, and what `keyed.overrides` may set per key.
    core(
        "budget-retry-ratio",
        Ty::F64,
        "",
        Default::Unset("no budget (0.2 once a budget key is set)"),
    ),
    core(
        "budget-min-retries-per-second",
        Ty::U32,
        "",
        Default::Unset("no budget (10 once a budget key is set)"),
    ),
    core(
        "budget-window",
        Ty::Duration,
        "",
        Default::Unset("no budget (10s once a budget key is set)"),
    ),
    EVENTS,
    // The keyed retry-budget family (`registry.keyed_retry_budget(name)`):
    // a retry budget per key, within these bounds.
    registry("keyed.max-keys", Ty::Usize, Default::Is("10000")),
    registry("keyed.idle-ttl", Ty::Duration, Default::Is("10m")),
];

const BULKHEAD: &[OptionSpec] = &[
    attr(
        "max-concurrent-calls",
        Ty::U32,
        "max_concurrent_calls",
        Check::Int {
            min: 1,
            max: i32::MAX as u64,
            ty: "u32",
        },
        Default::Is("25"),
    ),
    attr(
        "max-wait-duration",
        Ty::Duration,
        "max_wait_duration",
        ANY_DURATION,
        Default::Is("0ms"),
    ),
    attr(
        "fair-call-handling-enabled",
        Ty::Bool,
        "fair_call_handling_enabled",
        Check::Bool,
        Default::Is("true"),
    ),
    core(
        "sheddable-threshold",
        Ty::Percent,
        "sheddable_threshold",
        Default::Is("50"),
    ),
    core(
        "sheddable-plus-threshold",
        Ty::Percent,
        "sheddable_plus_threshold",
        Default::Is("75"),
    ),
    core(
        "critical-threshold",
        Ty::Percent,
        "critical_threshold",
        Default::Is("100"),
    ),
    core(
        "critical-plus-threshold",
        Ty::Percent,
        "critical_plus_threshold",
        Default::Is("100"),
    ),
    EVENTS,
    // Keyed families (`registry.keyed_*(name)`): the `keyed` map of an
    // instance; its `overrides` (per key or `*` pattern) are read beside.
    registry("keyed.max-keys", Ty::Usize, Default::Is("10000")),
    registry("keyed.idle-ttl", Ty::Duration, Default::Is("10m")),
];

const THREAD_POOL_BULKHEAD: &[OptionSpec] = &[
    attr(
        "core-thread-pool-size",
        Ty::Usize,
        "core_thread_pool_size",
        Check::Int {
            min: 1,
            max: U32,
            ty: "usize",
        },
        Default::Computed("the number of cores − 1, at least 1"),
    ),
    attr(
        "max-thread-pool-size",
        Ty::Usize,
        "max_thread_pool_size",
        Check::Int {
            min: 1,
            max: U32,
            ty: "usize",
        },
        Default::Computed("the number of cores"),
    ),
    attr(
        "queue-capacity",
        Ty::Usize,
        "queue_capacity",
        Check::Int {
            min: 0,
            max: U32,
            ty: "usize",
        },
        Default::Is("100"),
    ),
    attr(
        "keep-alive-duration",
        Ty::Duration,
        "keep_alive_duration",
        ANY_DURATION,
        Default::Is("20ms"),
    ),
    EVENTS,
];

const RATE_LIMITER: &[OptionSpec] = &[
    attr(
        "limit-for-period",
        Ty::U32,
        "limit_for_period",
        Check::Int {
            min: 1,
            max: U32,
            ty: "u32",
        },
        Default::Is("50"),
    ),
    attr(
        "limit-refresh-period",
        Ty::Duration,
        "limit_refresh_period",
        POSITIVE_DURATION,
        Default::Is("500ns"),
    ),
    attr(
        "timeout-duration",
        Ty::Duration,
        "timeout_duration",
        ANY_DURATION,
        Default::Is("5s"),
    ),
    core(
        "sheddable-threshold",
        Ty::Percent,
        "sheddable_threshold",
        Default::Is("50"),
    ),
    core(
        "sheddable-plus-threshold",
        Ty::Percent,
        "sheddable_plus_threshold",
        Default::Is("75"),
    ),
    core(
        "critical-threshold",
        Ty::Percent,
        "critical_threshold",
        Default::Is("100"),
    ),
    core(
        "critical-plus-threshold",
        Ty::Percent,
        "critical_plus_threshold",
        Default::Is("100"),
    ),
    attr(
        "warm-up-period",
        Ty::Duration,
        "warm_up_period",
        ANY_DURATION,
        Default::Is("0ms"),
    ),
    core("cold-factor", Ty::U32, "cold_factor", Default::Is("3")),
    HEALTH[0],
    HEALTH[1],
    EVENTS,
    // The Redis-backed rate limiter (feature `redis`): read by the registry,
    // never by the local limiter.
    registry("backend", Ty::Choice(BACKENDS), Default::Is("local")),
    registry(
        "redis-url",
        Ty::Text,
        Default::Unset("required with `backend: redis`"),
    ),
    registry(
        "key-prefix",
        Ty::Text,
        Default::Unset("`resil:ratelimiter:`"),
    ),
    registry(
        "algorithm",
        Ty::Choice(ALGORITHMS),
        Default::Is("SLIDING_WINDOW"),
    ),
    registry("buckets", Ty::U32, Default::Unset("chosen from the window")),
    registry(
        "burst",
        Ty::U32,
        Default::Unset("`limit-for-period` (GCRA)"),
    ),
    registry(
        "redis-timeout",
        Ty::Duration,
        Default::Unset("chosen by the backend"),
    ),
    registry(
        "failure-policy",
        Ty::Choice(FAILURE_POLICIES),
        Default::Is("FAIL_CLOSED"),
    ),
    registry(
        "expected-instances",
        Ty::U32,
        Default::Unset("for `LOCAL_FALLBACK`'s share"),
    ),
    registry(
        "topology",
        Ty::Choice(TOPOLOGIES),
        Default::Is("STANDALONE"),
    ),
    registry(
        "sentinel-master-name",
        Ty::Text,
        Default::Unset("required with `topology: SENTINEL`"),
    ),
    registry(
        "lease-size",
        Ty::U32,
        Default::Unset("no leases: one round trip per acquire"),
    ),
    registry(
        "lease-ttl",
        Ty::Duration,
        Default::Unset("the refresh period (with `lease-size`)"),
    ),
    // Keyed families (`registry.keyed_*(name)`): the `keyed` map of an
    // instance; its `overrides` (per key or `*` pattern) are read beside.
    registry("keyed.max-keys", Ty::Usize, Default::Is("10000")),
    registry("keyed.idle-ttl", Ty::Duration, Default::Is("10m")),
];

const TIME_LIMITER: &[OptionSpec] = &[
    attr(
        "timeout-duration",
        Ty::Duration,
        "timeout_duration",
        POSITIVE_DURATION,
        Default::Is("1s"),
    ),
    attr(
        "cancel-running-future",
        Ty::Bool,
        "cancel_running_future",
        Check::Bool,
        Default::Is("true"),
    ),
    EVENTS,
];

const HEDGING: &[OptionSpec] = &[
    core(
        "max-hedged-attempts",
        Ty::U32,
        "max_hedged_attempts",
        Default::Is("1"),
    ),
    core("delay", Ty::Duration, "delay", Default::Is("2s")),
    names(
        "hedge-errors",
        "hedge-exceptions",
        "none: every error is hedged",
    ),
    HEALTH[0],
    HEALTH[1],
    EVENTS,
];

const ADAPTIVE_BULKHEAD: &[OptionSpec] = &[
    core("initial-limit", Ty::U32, "initial_limit", Default::Is("20")),
    core("min-limit", Ty::U32, "min_limit", Default::Is("1")),
    core("max-limit", Ty::U32, "max_limit", Default::Is("1000")),
    core("smoothing", Ty::F64, "smoothing", Default::Is("1")),
    core(
        "probe-multiplier",
        Ty::U32,
        "probe_multiplier",
        Default::Is("30"),
    ),
    core(
        "min-window-time",
        Ty::Duration,
        "min_window_time",
        Default::Is("1s"),
    ),
    core(
        "max-window-time",
        Ty::Duration,
        "max_window_time",
        Default::Is("1s"),
    ),
    core("window-size", Ty::U32, "window_size", Default::Is("10")),
    core(
        "min-rtt-threshold",
        Ty::Duration,
        "min_rtt_threshold",
        Default::Is("100us"),
    ),
    core(
        "sheddable-threshold",
        Ty::Percent,
        "sheddable_threshold",
        Default::Is("50"),
    ),
    core(
        "sheddable-plus-threshold",
        Ty::Percent,
        "sheddable_plus_threshold",
        Default::Is("75"),
    ),
    core(
        "critical-threshold",
        Ty::Percent,
        "critical_threshold",
        Default::Is("100"),
    ),
    core(
        "critical-plus-threshold",
        Ty::Percent,
        "critical_plus_threshold",
        Default::Is("100"),
    ),
    core(
        "sheddable-guaranteed-share",
        Ty::Percent,
        "sheddable_guaranteed_share",
        Default::Is("0"),
    ),
    core(
        "sheddable-plus-guaranteed-share",
        Ty::Percent,
        "sheddable_plus_guaranteed_share",
        Default::Is("0"),
    ),
    core(
        "critical-guaranteed-share",
        Ty::Percent,
        "critical_guaranteed_share",
        Default::Is("0"),
    ),
    core(
        "critical-plus-guaranteed-share",
        Ty::Percent,
        "critical_plus_guaranteed_share",
        Default::Is("10"),
    ),
    HEALTH[0],
    HEALTH[1],
    EVENTS,
];

/// A chaos instance's rows. `errors` and `results` name injections the
/// program registered in code (a file cannot build a Rust value); every rate
/// is a probability in `[0, 1]`.
const CHAOS: &[OptionSpec] = &[
    core("enabled", Ty::Bool, "enabled", Default::Is("false")),
    core("latency-rate", Ty::F64, "latency_rate", Default::Is("0")),
    core(
        "latency",
        Ty::Duration,
        "inject_latency",
        Default::Is("0ms"),
    ),
    registry("error-rate", Ty::F64, Default::Is("0")),
    registry(
        "errors",
        Ty::Names,
        Default::Unset("none (names given to `Registry::register_chaos_error`)"),
    ),
    registry("result-rate", Ty::F64, Default::Is("0")),
    registry(
        "results",
        Ty::Names,
        Default::Unset("none (names given to `Registry::register_chaos_result`)"),
    ),
    HEALTH[0],
    HEALTH[1],
    EVENTS,
];

/// A throttler's rows (Google SRE book's client-side throttling). What
/// counts as accepted is set in code (`accept_error`, `refuse_result`).
const THROTTLER: &[OptionSpec] = &[
    core(
        "accepts-multiplier",
        Ty::F64,
        "accepts_multiplier",
        Default::Is("2"),
    ),
    attr(
        "sliding-window-duration",
        Ty::Duration,
        "sliding_window_duration",
        Check::Duration {
            min_nanos: 1_000_000_000,
            min_text: "1s",
        },
        Default::Is("2m"),
    ),
    core(
        "max-rejection-probability",
        Ty::F64,
        "max_rejection_probability",
        Default::Is("1"),
    ),
    HEALTH[0],
    HEALTH[1],
    EVENTS,
];

impl Ty {
    /// The type as the docs write it.
    pub fn describe(self) -> String {
        match self {
            Ty::Percent => "percent".into(),
            Ty::U32 => "integer (u32)".into(),
            Ty::Usize => "integer (usize)".into(),
            Ty::F64 => "number".into(),
            Ty::Duration => "duration".into(),
            Ty::Bool => "bool".into(),
            Ty::Choice(words) => {
                let mut out = String::new();
                for (i, w) in words.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" \\| ");
                    }
                    out.push_str(w);
                }
                out
            }
            Ty::Names => "list of error classes".into(),
            Ty::Text => "text".into(),
            Ty::Predicate => "predicate name".into(),
        }
    }
}

/// The whole table as Markdown, one table per section: the guide's
/// "Option table" section is exactly this text (a test checks it).
pub fn markdown() -> String {
    let mut out = String::new();
    for section in Section::ALL {
        out.push_str(&format!(
            "#### `resilience4j.{}`\n\n| file key | attribute | type | default | from |\n|---|---|---|---|---|\n",
            section.config_key()
        ));
        for o in section.options() {
            let attribute = match (o.attribute_key(), o.check) {
                (Some(key), Some(check)) => format!("`{key}`: {}", check.expected()),
                _ => "—".into(),
            };
            let alias = o.alias.map(|a| format!(" (`{a}`)")).unwrap_or_default();
            let default = match o.default {
                Default::Is(v) => format!("`{v}`"),
                other => other.describe().into(),
            };
            let from = match o.target {
                Target::Core if o.ty == Ty::Names => {
                    "builder (predicates of registered error classes)".into()
                }
                Target::Core if o.setter.is_empty() => "builder (interval function)".into(),
                Target::Core => format!("builder `{}`", o.setter),
                Target::Registry => String::from("registry"),
            };
            // The docs describe every build: `redis` is a choice only with
            // the `redis` feature, which the table's own type follows.
            let ty = match o.ty {
                Ty::Choice(_) if o.key == "backend" => {
                    String::from("local \\| redis (feature `redis`)")
                }
                ty => ty.describe(),
            };
            out.push_str(&format!(
                "| `{}`{alias} | {attribute} | {ty} | {default} | {from} |\n",
                o.key
            ));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_kebab_case_and_match_in_every_spelling() {
        for section in Section::ALL {
            let options = section.options();
            for (i, o) in options.iter().enumerate() {
                // Kebab-case, in `.`-separated parts for a nested key
                // (`keyed.max-keys`).
                assert!(
                    o.key.split('.').all(|part| !part.is_empty()
                        && part.chars().all(|c| c.is_ascii_lowercase() || c == '-')),
                    "{}",
                    o.key
                );
                assert!(
                    options[..i].iter().all(|p| !same_key(p.key, o.key)),
                    "{section:?}: {} twice",
                    o.key
                );
            }
        }
        let o = option(Section::CircuitBreaker, "failureRateThreshold").unwrap();
        assert_eq!(o.key, "failure-rate-threshold");
        assert_eq!(
            option(Section::CircuitBreaker, "record_exceptions")
                .unwrap()
                .key,
            "record-errors"
        );
        assert!(option(Section::Bulkhead, "failure-rate-threshold").is_none());
        assert!(!same_key("max-attempts", "max-attempt"));
    }

    #[test]
    fn attribute_keys_are_the_setters_and_only_core_options_have_one() {
        for section in Section::ALL {
            for o in section.options() {
                if let Some(key) = o.attribute_key() {
                    assert_eq!(key, o.setter, "{}", o.key);
                    assert_eq!(o.target, Target::Core, "{}", o.key);
                    assert!(core::ptr::eq(attribute(section, &key).unwrap(), o));
                }
            }
        }
        let keys: Vec<String> = attribute_keys(Section::Retry).collect();
        assert_eq!(keys, ["max_attempts", "wait_duration"]);
        assert!(attribute(Section::CircuitBreaker, "sliding_window_type").is_none());
    }

    #[test]
    fn a_window_size_names_both_limits() {
        let check = attribute(Section::CircuitBreaker, "sliding_window_size")
            .unwrap()
            .check
            .unwrap();
        let text = check.expected();
        assert!(
            text.contains("16777216") && text.contains("604800"),
            "{text}"
        );
    }
}
