//! A configuration advisor: what a set of primitives' configurations will do
//! under a given traffic, and the settings that work against each other
//! (beyond Resilience4j).
//!
//! [`advise`] is a pure function: configurations and a description of the
//! traffic in, [`Finding`]s out, each naming the Resilience4j key path it is
//! about (`resilience4j.bulkhead.instances.inventory.max-concurrent-calls`).
//!
//! ```
//! use std::time::Duration;
//! use resil_core::advisor::{advise, Protection, Severity, Traffic};
//! use resil_core::bulkhead::BulkheadConfig;
//! use resil_core::retry::RetryConfig;
//! use resil_core::time_limiter::TimeLimiterConfig;
//!
//! let bulkhead = BulkheadConfig::builder().max_concurrent_calls(10).build().unwrap();
//! let retry = RetryConfig::default(); // 3 attempts, 500 ms apart
//! let timeout = TimeLimiterConfig::default(); // 1 s
//! let findings = advise(
//!     &Protection::new("inventory")
//!         .bulkhead(&bulkhead)
//!         .retry(&retry)
//!         .time_limiter(&timeout),
//!     &Traffic::new(200.0, Duration::from_millis(40), Duration::from_millis(120))
//!         .deadline(Duration::from_secs(1)),
//! );
//! let warnings: Vec<_> = findings.iter().filter(|f| f.severity() == Severity::Warning).collect();
//! assert_eq!(warnings[0].key_path(), "resilience4j.bulkhead.instances.inventory.max-concurrent-calls");
//! assert!(warnings.iter().any(|f| f.key_path() == "resilience4j.retry.instances.inventory.max-attempts"));
//! ```

use std::fmt;
use std::time::Duration;

use crate::bulkhead::BulkheadConfig;
use crate::circuit_breaker::{CircuitBreakerConfig, SlidingWindowType};
use crate::retry::RetryConfig;
use crate::time_limiter::TimeLimiterConfig;

/// The traffic an instance serves: calls per second and their latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Traffic {
    qps: f64,
    p50: Duration,
    p99: Duration,
    deadline: Option<Duration>,
}

impl Traffic {
    /// `qps` calls a second whose median latency is `p50` and 99th
    /// percentile `p99`.
    pub fn new(qps: f64, p50: Duration, p99: Duration) -> Self {
        Traffic {
            qps,
            p50,
            p99,
            deadline: None,
        }
    }

    /// The end-to-end deadline the caller gives each request.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = Some(deadline);
        self
    }
}

/// The configurations protecting one named downstream call (any may be absent).
#[derive(Debug, Clone, Copy)]
pub struct Protection<'a> {
    name: &'a str,
    circuit_breaker: Option<&'a CircuitBreakerConfig>,
    retry: Option<&'a RetryConfig>,
    bulkhead: Option<&'a BulkheadConfig>,
    time_limiter: Option<&'a TimeLimiterConfig>,
}

impl<'a> Protection<'a> {
    /// Nothing yet, for the instance `name` (used in the key paths).
    pub fn new(name: &'a str) -> Self {
        Protection {
            name,
            circuit_breaker: None,
            retry: None,
            bulkhead: None,
            time_limiter: None,
        }
    }

    /// With this circuit breaker.
    pub fn circuit_breaker(mut self, config: &'a CircuitBreakerConfig) -> Self {
        self.circuit_breaker = Some(config);
        self
    }

    /// With this retry.
    pub fn retry(mut self, config: &'a RetryConfig) -> Self {
        self.retry = Some(config);
        self
    }

    /// With this bulkhead.
    pub fn bulkhead(mut self, config: &'a BulkheadConfig) -> Self {
        self.bulkhead = Some(config);
        self
    }

    /// With this time limiter.
    pub fn time_limiter(mut self, config: &'a TimeLimiterConfig) -> Self {
        self.time_limiter = Some(config);
        self
    }

    fn path(&self, kind: &str, key: &str) -> String {
        format!("resilience4j.{kind}.instances.{}.{key}", self.name)
    }
}

/// How much a [`Finding`] matters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// A derived figure worth knowing (a size, a time to open).
    Info,
    /// A setting that defeats another one, or the traffic.
    Warning,
}

/// One piece of advice, about one key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    severity: Severity,
    key_path: String,
    message: String,
}

impl Finding {
    /// How much it matters.
    pub fn severity(&self) -> Severity {
        self.severity
    }

    /// The Resilience4j key path it concerns.
    pub fn key_path(&self) -> &str {
        &self.key_path
    }

    /// What was found, and what to do about it.
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Info => "info",
            Severity::Warning => "warning",
        };
        write!(f, "{level}: {}: {}", self.key_path, self.message)
    }
}

fn ms(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}

/// Advice on `protection` under `traffic`; warnings first, each group in
/// the order the checks run. See the [module docs](self).
///
/// The checks:
///
/// * **bulkhead size from Little's law**: `qps × p99` calls are in flight at
///   the tail; a smaller `max-concurrent-calls` refuses normal traffic;
/// * **how long an outage runs before the breaker opens**: the failed calls
///   (and the seconds at `qps`) a window full of successes needs to reach the
///   failure-rate threshold, never fewer than `minimum-number-of-calls`;
/// * **a slow-call threshold at or above the timeout**: no call is ever slow,
///   the time limiter stops it first;
/// * **a time limiter at or above the deadline**: it never fires;
/// * **a retry without backoff**: every attempt lands on the struggling
///   downstream at once;
/// * **attempts × timeout + waits above the deadline**: the last attempts can
///   never finish.
pub fn advise(protection: &Protection<'_>, traffic: &Traffic) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut add = |severity, key_path: String, message: String| {
        out.push(Finding {
            severity,
            key_path,
            message,
        })
    };
    if let Some(b) = protection.bulkhead {
        let in_flight = (traffic.qps * traffic.p99.as_secs_f64()).ceil() as u64;
        let median = (traffic.qps * traffic.p50.as_secs_f64()).ceil() as u64;
        let key = protection.path("bulkhead", "max-concurrent-calls");
        if u64::from(b.max_concurrent_calls()) < in_flight {
            add(
                Severity::Warning,
                key,
                format!(
                    "{} is below the {in_flight} calls in flight at p99 (Little's law: {} qps × {}): \
                     normal traffic is refused; size it at {in_flight} or more",
                    b.max_concurrent_calls(),
                    traffic.qps,
                    ms(traffic.p99)
                ),
            );
        } else {
            add(
                Severity::Info,
                key,
                format!(
                    "{} covers the {in_flight} calls in flight at p99 ({median} at p50, Little's law)",
                    b.max_concurrent_calls()
                ),
            );
        }
    }
    if let (Some(cb), Some(tl)) = (protection.circuit_breaker, protection.time_limiter) {
        if cb.slow_call_duration_threshold() >= tl.timeout_duration() {
            add(
                Severity::Warning,
                protection.path("circuitbreaker", "slow-call-duration-threshold"),
                format!(
                    "{} is not below the time limiter's {}: no call is ever recorded as slow, \
                     the timeout stops it first; set it below the timeout",
                    ms(cb.slow_call_duration_threshold()),
                    ms(tl.timeout_duration())
                ),
            );
        }
    }
    if let (Some(tl), Some(deadline)) = (protection.time_limiter, traffic.deadline) {
        if tl.timeout_duration() >= deadline {
            add(
                Severity::Warning,
                protection.path("timelimiter", "timeout-duration"),
                format!(
                    "{} is not below the {} end-to-end deadline: it never fires",
                    ms(tl.timeout_duration()),
                    ms(deadline)
                ),
            );
        }
    }
    if let Some(r) = protection.retry {
        let waits: Duration = (1..r.max_attempts())
            .map(|n| r.interval_function().interval(n))
            .sum();
        if r.max_attempts() > 1 && waits.is_zero() && !r.has_interval_bi_function() {
            add(
                Severity::Warning,
                protection.path("retry", "wait-duration"),
                "the retry does not wait between attempts: a failing downstream gets every \
                 attempt at once; use an exponential backoff with jitter"
                    .to_string(),
            );
        }
        if let (Some(deadline), Some(tl)) = (traffic.deadline, protection.time_limiter) {
            let worst = tl.timeout_duration() * r.max_attempts() + waits;
            if worst > deadline {
                add(
                    Severity::Warning,
                    protection.path("retry", "max-attempts"),
                    format!(
                        "{} attempts × {} + {} of waits = {} exceeds the {} deadline: \
                         the last attempts can never finish",
                        r.max_attempts(),
                        ms(tl.timeout_duration()),
                        ms(waits),
                        ms(worst),
                        ms(deadline)
                    ),
                );
            }
        }
    }
    if let Some(cb) = protection.circuit_breaker {
        let threshold = f64::from(cb.failure_rate_threshold()) / 100.0;
        let window = match cb.sliding_window_type() {
            SlidingWindowType::CountBased => f64::from(cb.sliding_window_size()),
            SlidingWindowType::TimeBased => f64::from(cb.sliding_window_size()) * traffic.qps,
        };
        let failures =
            ((window * threshold).ceil() as u64).max(u64::from(cb.minimum_number_of_calls()));
        let seconds = failures as f64 / traffic.qps.max(f64::MIN_POSITIVE);
        add(
            Severity::Info,
            protection.path("circuitbreaker", "minimum-number-of-calls"),
            format!(
                "after an outage starts, about {failures} calls fail (≈{seconds:.1}s at {} qps) \
                 before the breaker opens",
                traffic.qps
            ),
        );
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn traffic() -> Traffic {
        Traffic::new(200.0, Duration::from_millis(40), Duration::from_millis(120))
            .deadline(Duration::from_secs(1))
    }

    fn keys(findings: &[Finding], severity: Severity) -> Vec<&str> {
        findings
            .iter()
            .filter(|f| f.severity == severity)
            .map(|f| f.key_path())
            .collect()
    }

    #[test]
    fn little_s_law_sizes_the_bulkhead() {
        let small = BulkheadConfig::builder()
            .max_concurrent_calls(23)
            .build()
            .unwrap();
        let f = advise(&Protection::new("inv").bulkhead(&small), &traffic());
        assert_eq!(
            f[0].to_string(),
            "warning: resilience4j.bulkhead.instances.inv.max-concurrent-calls: 23 is below the 24 \
             calls in flight at p99 (Little's law: 200 qps × 120ms): normal traffic is refused; \
             size it at 24 or more"
        );
        let enough = BulkheadConfig::builder()
            .max_concurrent_calls(24)
            .build()
            .unwrap();
        let f = advise(&Protection::new("inv").bulkhead(&enough), &traffic());
        assert_eq!(f[0].severity(), Severity::Info);
        assert!(f[0].message().contains("(8 at p50"));
    }

    #[test]
    fn the_breaker_s_time_to_open_follows_its_window_and_minimum() {
        // Resilience4j's defaults: a count window of 100, 50 %, minimum 100.
        let cb = CircuitBreakerConfig::default();
        let f = advise(&Protection::new("inv").circuit_breaker(&cb), &traffic());
        assert_eq!(
            f[0].message(),
            "after an outage starts, about 100 calls fail (≈0.5s at 200 qps) before the breaker opens"
        );
        let timed = CircuitBreakerConfig::builder()
            .sliding_window_type(SlidingWindowType::TimeBased)
            .sliding_window_size(10)
            .minimum_number_of_calls(10)
            .build()
            .unwrap();
        let f = advise(&Protection::new("inv").circuit_breaker(&timed), &traffic());
        assert!(
            f[0].message().contains("about 1000 calls fail (≈5.0s"),
            "{}",
            f[0]
        );
    }

    #[test]
    fn thresholds_that_defeat_each_other_are_warned_about() {
        let cb = CircuitBreakerConfig::builder()
            .slow_call_duration_threshold(Duration::from_secs(2))
            .build()
            .unwrap();
        let tl = TimeLimiterConfig::builder()
            .timeout_duration(Duration::from_secs(1))
            .build()
            .unwrap();
        let f = advise(
            &Protection::new("inv")
                .circuit_breaker(&cb)
                .time_limiter(&tl),
            &traffic(),
        );
        assert_eq!(
            keys(&f, Severity::Warning),
            [
                "resilience4j.circuitbreaker.instances.inv.slow-call-duration-threshold",
                "resilience4j.timelimiter.instances.inv.timeout-duration",
            ]
        );
    }

    #[test]
    fn a_retry_without_backoff_and_one_that_cannot_fit_the_deadline_are_warned_about() {
        let eager = RetryConfig::builder()
            .wait_duration(Duration::ZERO)
            .build()
            .unwrap();
        let tl = TimeLimiterConfig::builder()
            .timeout_duration(Duration::from_millis(300))
            .build()
            .unwrap();
        let f = advise(
            &Protection::new("inv").retry(&eager).time_limiter(&tl),
            &traffic(),
        );
        assert_eq!(
            keys(&f, Severity::Warning),
            ["resilience4j.retry.instances.inv.wait-duration"],
            "3 × 300 ms fits in 1 s"
        );
        let default = RetryConfig::default();
        let f = advise(
            &Protection::new("inv").retry(&default).time_limiter(&tl),
            &traffic(),
        );
        assert_eq!(
            f[0].message(),
            "3 attempts × 300ms + 1000ms of waits = 1900ms exceeds the 1000ms deadline: \
             the last attempts can never finish"
        );
        assert!(advise(&Protection::new("inv"), &traffic()).is_empty());
    }
}
