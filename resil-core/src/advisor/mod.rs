//! A configuration advisor: what a set of primitives' configurations will do
//! under a given traffic, and the settings that work against each other
//! (beyond Resilience4j).
//!
//! [`advise`] is a pure function: configurations and a description of the
//! traffic in, [`Finding`]s out, each naming the Resilience4j key path it is
//! about (`resilience4j.bulkhead.instances.inventory.max-concurrent-calls`).
//! `resil::advise` runs it over every instance of a loaded config file.
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
//!
//! # The model
//!
//! * **Little's law**: `in flight ≈ arrival rate × latency`. At 200 qps and a
//!   40 ms median, 8 calls are in flight; at the 120 ms p99, 24. A bulkhead
//!   below the p99 figure refuses normal traffic; one many times above it
//!   bounds nothing a stalled downstream will notice (start near the p99
//!   figure with some headroom, then load-test; the downstream's connection
//!   pool is a limit too).
//! * **When the breaker opens**: resil's fixed order puts the retry outside
//!   the breaker, so every attempt is a sample. A count-based window full of
//!   successes opens after `ceil(size × failure-rate-threshold)` failed
//!   samples; a time-based window of `size` seconds once the failures' share
//!   of the last `size` seconds reaches the threshold, and never while it
//!   holds fewer than `minimum-number-of-calls` calls. From an empty window
//!   (after a restart, or just after closing) it takes
//!   `minimum-number-of-calls` failures. The seconds follow from the qps; a
//!   hung downstream adds one timeout, the time each failure takes to be
//!   recorded.
//! * **Budgets**: a timeout under the p99 cuts off healthy calls, one at or
//!   above the end-to-end deadline never fires, and `attempts × timeout +
//!   waits` above the deadline means the last attempts can never finish.

use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Duration;

use crate::bulkhead::BulkheadConfig;
use crate::circuit_breaker::{CircuitBreakerConfig, SlidingWindowType};
use crate::retry::RetryConfig;
use crate::time_limiter::TimeLimiterConfig;

#[cfg(test)]
mod tests;

/// A breaker that needs longer than this to open during a full outage gets a
/// warning: every call in that time waits for its own failure.
const SLOW_TO_OPEN: Duration = Duration::from_secs(30);

/// A bulkhead this many times above the calls in flight at p99 gets a note.
const OVERSIZED: u64 = 5;

/// The traffic an instance serves: calls per second and their latency.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Traffic {
    qps: f64,
    p50: Duration,
    p99: Duration,
    deadline: Option<Duration>,
}

impl Traffic {
    /// `qps` calls a second (a positive number) whose median latency is
    /// `p50` and 99th percentile `p99`.
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

    /// Calls per second.
    pub fn qps(&self) -> f64 {
        self.qps
    }

    /// The median latency.
    pub fn p50(&self) -> Duration {
        self.p50
    }

    /// The 99th-percentile latency.
    pub fn p99(&self) -> Duration {
        self.p99
    }

    /// The end-to-end deadline, if one was given.
    pub fn end_to_end_deadline(&self) -> Option<Duration> {
        self.deadline
    }

    /// Calls per second, never zero (so that divisions stay finite).
    fn rate(&self) -> f64 {
        if self.qps.is_finite() && self.qps > 0.0 {
            self.qps
        } else {
            f64::MIN_POSITIVE
        }
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
    retries_every_error: Option<bool>,
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
            retries_every_error: None,
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

    /// Whether the retry retries every error: `true` when it has neither a
    /// list of errors to retry (`retry-exceptions`) nor a predicate
    /// (`retry-exception-predicate`, `retry_on_error`). A config built in
    /// code does not tell, so without this the check is skipped.
    pub fn retries_every_error(mut self, every: bool) -> Self {
        self.retries_every_error = Some(every);
        self
    }

    fn path(&self, kind: &str, key: &str) -> String {
        format!("resilience4j.{kind}.instances.{}.{key}", self.name)
    }
}

/// How an instance takes part in the service's health (circuit breakers and
/// rate limiters), for [`advise_health`].
///
/// resil's defaults: the indicator is registered and not allowed to fail, so
/// an OPEN breaker shows DEGRADED and never turns the service DOWN.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HealthIndicator {
    registered: bool,
    allowed_to_fail: bool,
    on_liveness: bool,
}

impl HealthIndicator {
    /// `register-health-indicator` and `allow-health-indicator-to-fail`.
    pub fn new(registered: bool, allowed_to_fail: bool) -> Self {
        HealthIndicator {
            registered,
            allowed_to_fail,
            on_liveness: false,
        }
    }

    /// Whether the service's liveness probe follows these indicators (in a
    /// Spring file: `management.endpoint.health.group.liveness.include`
    /// names `circuitBreakers` or `rateLimiters`).
    pub fn on_liveness(mut self, on: bool) -> Self {
        self.on_liveness = on;
        self
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
    set_at: Option<String>,
}

impl Finding {
    fn new(severity: Severity, key_path: String, message: String) -> Self {
        Finding {
            severity,
            key_path,
            message,
            set_at: None,
        }
    }

    /// How much it matters.
    pub fn severity(&self) -> Severity {
        self.severity
    }

    /// The Resilience4j key path it concerns.
    pub fn key_path(&self) -> &str {
        &self.key_path
    }

    /// The option's own key: the key path's last segment
    /// (`max-concurrent-calls`).
    pub fn key(&self) -> &str {
        self.key_path
            .rsplit_once('.')
            .map_or(&*self.key_path, |(_, key)| key)
    }

    /// What was found, and what to do about it.
    pub fn message(&self) -> &str {
        &self.message
    }

    /// Where the value in force is written, when that is not
    /// [`key_path`](Self::key_path) itself (an inherited `base-config`, an
    /// environment variable, or `default` for a value set nowhere).
    pub fn set_at(&self) -> Option<&str> {
        self.set_at.as_deref()
    }

    /// The same finding, noting where the value in force is written.
    pub fn with_set_at(mut self, at: impl Into<String>) -> Self {
        self.set_at = Some(at.into());
        self
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let level = match self.severity {
            Severity::Info => "info",
            Severity::Warning => "warning",
        };
        write!(f, "{level}: {}: {}", self.key_path, self.message)?;
        match self.set_at.as_deref() {
            None => Ok(()),
            Some("default") => f.write_str(" (the default)"),
            Some(at) => write!(f, " (set at {at})"),
        }
    }
}

fn ms(d: Duration) -> String {
    format!("{}ms", d.as_millis())
}

fn secs(s: f64) -> String {
    if s < 1.0 {
        format!("{s:.2}s")
    } else {
        format!("{s:.1}s")
    }
}

/// Advice on `protection` under `traffic`; warnings first, each group in
/// the order the checks run. See the [module docs](self) for the model.
///
/// The checks:
///
/// * **bulkhead size from Little's law**: `qps × p99` calls are in flight at
///   the tail; a smaller `max-concurrent-calls` refuses normal traffic, one
///   over five times larger is noted;
/// * **how long an outage runs before the breaker opens**: the failed calls
///   and the seconds at `qps`, from a window full of successes and from an
///   empty one; a warning when it takes over 30 s or can never happen at this
///   traffic (a time-based window that never holds
///   `minimum-number-of-calls`), and when a count window holds so few calls
///   that a short burst opens it;
/// * **a slow-call threshold at or above the timeout**: no call is ever slow,
///   the time limiter stops it first;
/// * **a time limiter under the p99** (it cuts off healthy calls) **or at or
///   above the deadline** (it never fires);
/// * **a retry without backoff** (a warning for no wait at all, a note for
///   equal waits), and **one that retries every error** (see
///   [`Protection::retries_every_error`]);
/// * **attempts × timeout + waits above the deadline**: the last attempts can
///   never finish.
pub fn advise(protection: &Protection<'_>, traffic: &Traffic) -> Vec<Finding> {
    let mut out = Vec::new();
    if let Some(b) = protection.bulkhead {
        bulkhead(protection, b, traffic, &mut out);
    }
    if let (Some(cb), Some(tl)) = (protection.circuit_breaker, protection.time_limiter) {
        if cb.slow_call_duration_threshold() >= tl.timeout_duration() {
            out.push(Finding::new(
                Severity::Warning,
                protection.path("circuitbreaker", "slow-call-duration-threshold"),
                format!(
                    "{} is not below the time limiter's {}: no call is ever recorded as slow, \
                     the timeout stops it first; set it below the timeout",
                    ms(cb.slow_call_duration_threshold()),
                    ms(tl.timeout_duration())
                ),
            ));
        }
    }
    if let Some(tl) = protection.time_limiter {
        time_limiter(protection, tl, traffic, &mut out);
    }
    if let Some(r) = protection.retry {
        retry(protection, r, traffic, &mut out);
    }
    if let Some(cb) = protection.circuit_breaker {
        breaker(protection, cb, traffic, &mut out);
    }
    out.sort_by_key(|f| std::cmp::Reverse(f.severity));
    out
}

fn bulkhead(p: &Protection<'_>, b: &BulkheadConfig, traffic: &Traffic, out: &mut Vec<Finding>) {
    let in_flight = (traffic.qps * traffic.p99.as_secs_f64()).ceil() as u64;
    let median = (traffic.qps * traffic.p50.as_secs_f64()).ceil() as u64;
    let max = u64::from(b.max_concurrent_calls());
    let key = p.path("bulkhead", "max-concurrent-calls");
    if max < in_flight {
        out.push(Finding::new(
            Severity::Warning,
            key,
            format!(
                "{max} is below the {in_flight} calls in flight at p99 (Little's law: {} qps × {}): \
                 normal traffic is refused; size it at {in_flight} or more",
                traffic.qps,
                ms(traffic.p99)
            ),
        ));
    } else if in_flight > 0 && max > OVERSIZED * in_flight {
        out.push(Finding::new(
            Severity::Info,
            key,
            format!(
                "{max} is over {OVERSIZED}× the {in_flight} calls in flight at p99 ({median} at p50, \
                 Little's law): a stalled downstream ties up {max} callers before anything is \
                 refused; start near {in_flight} with some headroom and load-test"
            ),
        ));
    } else {
        out.push(Finding::new(
            Severity::Info,
            key,
            format!("{max} covers the {in_flight} calls in flight at p99 ({median} at p50, Little's law)"),
        ));
    }
}

fn time_limiter(
    p: &Protection<'_>,
    tl: &TimeLimiterConfig,
    traffic: &Traffic,
    out: &mut Vec<Finding>,
) {
    let timeout = tl.timeout_duration();
    let key = p.path("timelimiter", "timeout-duration");
    if let Some(deadline) = traffic.deadline {
        if timeout >= deadline {
            out.push(Finding::new(
                Severity::Warning,
                key.clone(),
                format!(
                    "{} is not below the {} end-to-end deadline: it never fires; \
                     the caller gives up first and the call goes on holding its resources",
                    ms(timeout),
                    ms(deadline)
                ),
            ));
        }
    }
    if timeout < traffic.p99 {
        out.push(Finding::new(
            Severity::Warning,
            key,
            format!(
                "{} is below the {} p99: more than one healthy call in a hundred is cut off \
                 and counted as a failure; set it above the p99",
                ms(timeout),
                ms(traffic.p99)
            ),
        ));
    }
}

/// The waits a retry makes, first to last, at most [`MAX_WAITS`] of them;
/// `None` when its interval function panics (code given to a builder may).
fn waits(r: &RetryConfig) -> Option<Vec<Duration>> {
    let n = r.max_attempts().saturating_sub(1).min(MAX_WAITS);
    catch_unwind(AssertUnwindSafe(|| {
        (1..=n).map(|n| r.interval_function().interval(n)).collect()
    }))
    .ok()
}

/// The most waits [`waits`] reads: a retry of millions of attempts already
/// has findings, and its sum saturates.
const MAX_WAITS: u32 = 10_000;

fn retry(p: &Protection<'_>, r: &RetryConfig, traffic: &Traffic, out: &mut Vec<Finding>) {
    let Some(intervals) = waits(r) else {
        out.push(Finding::new(
            Severity::Warning,
            p.path("retry", "wait-duration"),
            "the retry's interval function panicked: every retry after a failure will panic too"
                .to_string(),
        ));
        return;
    };
    let waits = intervals
        .iter()
        .fold(Duration::ZERO, |sum, w| sum.saturating_add(*w));
    if r.max_attempts() > 1 && !r.has_interval_bi_function() {
        if waits.is_zero() {
            out.push(Finding::new(
                Severity::Warning,
                p.path("retry", "wait-duration"),
                "the retry does not wait between attempts: a failing downstream gets every \
                 attempt at once; use an exponential backoff with jitter"
                    .to_string(),
            ));
        } else if intervals.len() > 1 && intervals.windows(2).all(|w| w[0] == w[1]) {
            out.push(Finding::new(
                Severity::Info,
                p.path("retry", "wait-duration"),
                format!(
                    "every retry waits the same {}: no backoff, so a struggling downstream gets \
                     the retries in step; consider enable-exponential-backoff with \
                     enable-randomized-wait",
                    ms(intervals[0])
                ),
            ));
        }
    }
    if r.max_attempts() > 1 && p.retries_every_error == Some(true) {
        out.push(Finding::new(
            Severity::Warning,
            p.path("retry", "retry-exceptions"),
            format!(
                "no list of errors to retry and no predicate: every error is retried ({} attempts), \
                 business errors and refusals included, so a bug or an overload is multiplied; \
                 list the transient ones (a broken connection, a timeout)",
                r.max_attempts()
            ),
        ));
    }
    if let (Some(deadline), Some(tl)) = (traffic.deadline, p.time_limiter) {
        let worst = tl
            .timeout_duration()
            .saturating_mul(r.max_attempts())
            .saturating_add(waits);
        if worst > deadline {
            out.push(Finding::new(
                Severity::Warning,
                p.path("retry", "max-attempts"),
                format!(
                    "{} attempts × {} + {} of waits = {} exceeds the {} deadline: \
                     the last attempts can never finish",
                    r.max_attempts(),
                    ms(tl.timeout_duration()),
                    ms(waits),
                    ms(worst),
                    ms(deadline)
                ),
            ));
        }
    }
}

/// The time the breaker takes to open after an outage starts, at steady traffic.
enum Opening {
    /// After this many failed samples, this many seconds.
    After { failures: u64, seconds: f64 },
    /// The window never holds `minimum-number-of-calls` at this traffic.
    Never { most_in_window: f64 },
}

fn breaker(
    p: &Protection<'_>,
    cb: &CircuitBreakerConfig,
    traffic: &Traffic,
    out: &mut Vec<Finding>,
) {
    let qps = traffic.rate();
    let threshold = f64::from(cb.failure_rate_threshold()) / 100.0;
    let minimum = f64::from(cb.minimum_number_of_calls());
    let size = f64::from(cb.sliding_window_size());
    // The retry is outside the breaker: every attempt of a failing request is
    // a failed sample.
    let attempts = f64::from(p.retry.map_or(1, RetryConfig::max_attempts));
    let failing = qps * attempts;
    let opening = match cb.sliding_window_type() {
        SlidingWindowType::CountBased => {
            let failures = (size * threshold).ceil().max(1.0);
            Opening::After {
                failures: failures as u64,
                seconds: failures / failing,
            }
        }
        SlidingWindowType::TimeBased => {
            // After t seconds of outage the window holds `failing × t` failures
            // and `qps × (size − t)` successes.
            let by_rate = threshold * size / (attempts * (1.0 - threshold) + threshold);
            let held = |t: f64| failing * t + qps * (size - t);
            let t = if held(by_rate) >= minimum {
                Some(by_rate)
            } else if attempts > 1.0 {
                let t = (minimum / qps - size) / (attempts - 1.0);
                (t <= size).then_some(t.max(by_rate))
            } else {
                None
            };
            match t {
                Some(t) => Opening::After {
                    failures: (failing * t).ceil() as u64,
                    seconds: t,
                },
                None => Opening::Never {
                    most_in_window: held(size).max(qps * size),
                },
            }
        }
    };
    let key = p.path("circuitbreaker", "minimum-number-of-calls");
    let per_request = if attempts > 1.0 {
        format!(", {attempts} failed attempts a request: the retry is outside the breaker")
    } else {
        String::new()
    };
    let hung = p.time_limiter.map_or(String::new(), |tl| {
        format!(
            ", {} more if the downstream hangs (a failure is recorded when its timeout fires)",
            ms(tl.timeout_duration())
        )
    });
    match opening {
        Opening::Never { most_in_window } => out.push(Finding::new(
            Severity::Warning,
            key,
            format!(
                "the {}s time window holds at most {most_in_window:.0} calls at {} qps, fewer than \
                 minimum-number-of-calls {}: the breaker never opens, however long the outage; \
                 lower minimum-number-of-calls or widen the window",
                cb.sliding_window_size(),
                traffic.qps,
                cb.minimum_number_of_calls()
            ),
        )),
        Opening::After { failures, seconds } => {
            let empty = cb.minimum_number_of_calls().max(1);
            let slow = seconds > SLOW_TO_OPEN.as_secs_f64();
            out.push(Finding::new(
                if slow {
                    Severity::Warning
                } else {
                    Severity::Info
                },
                key,
                format!(
                    "after an outage starts, about {failures} calls fail (≈{} at {} qps{per_request}) \
                     before the breaker opens{hung}; from an empty window (after a restart or on \
                     closing) {empty}{}",
                    secs(seconds),
                    traffic.qps,
                    if slow {
                        "; every call until then waits for its own failure: lower \
                         minimum-number-of-calls and use a TIME_BASED window for this traffic"
                    } else {
                        ""
                    }
                ),
            ));
        }
    }
    if cb.sliding_window_type() == SlidingWindowType::CountBased && size < 20.0 && size < qps {
        out.push(Finding::new(
            Severity::Warning,
            p.path("circuitbreaker", "sliding-window-size"),
            format!(
                "a window of {} calls covers {} of traffic at {} qps: a short burst of {} failures \
                 opens the breaker; size the window for at least a second of calls, or make it \
                 TIME_BASED",
                cb.sliding_window_size(),
                ms(Duration::from_secs_f64(size / qps)),
                traffic.qps,
                (size * threshold).ceil()
            ),
        ));
    }
}

/// Advice on one health indicator: `instance_path` is the instance's key path
/// (`resilience4j.circuitbreaker.instances.inventory`).
///
/// An instance allowed to fail the health check turns it DOWN when its
/// breaker opens. On a liveness probe that restarts (or takes out of
/// rotation) every replica of this service for a downstream's outage: a
/// warning. Elsewhere it is a note that only a readiness check should follow
/// it. Nothing for resil's defaults (registered, not allowed to fail: an
/// OPEN breaker is DEGRADED).
pub fn advise_health(instance_path: &str, indicator: &HealthIndicator) -> Option<Finding> {
    if !(indicator.registered && indicator.allowed_to_fail) {
        return None;
    }
    let key_path = format!("{instance_path}.allow-health-indicator-to-fail");
    Some(if indicator.on_liveness {
        Finding::new(
            Severity::Warning,
            key_path,
            "this indicator may fail the health check, and the liveness probe follows it: \
             a downstream's outage restarts every replica of this service; keep instances off \
             liveness (leave this false, so an open breaker is DEGRADED) and follow them from \
             readiness only"
                .to_string(),
        )
    } else {
        Finding::new(
            Severity::Info,
            key_path,
            "this indicator turns the health check DOWN when it opens: only a readiness check \
             may follow it, never a liveness probe"
                .to_string(),
        )
    })
}

/// Advice on one circuit breaker that protects several downstreams
/// (`breaker_path`: `resilience4j.circuitbreaker.instances.catalog`): one
/// downstream's failures open it for all of them. `None` for fewer than two.
pub fn advise_shared_breaker(breaker_path: &str, downstreams: &[&str]) -> Option<Finding> {
    if downstreams.len() < 2 {
        return None;
    }
    Some(Finding::new(
        Severity::Warning,
        breaker_path.to_string(),
        format!(
            "one breaker for {} downstreams ({}): one of them failing opens it for all, and a \
             healthy one's successes hide another's failures; give each downstream (or each group \
             that fails together) its own breaker",
            downstreams.len(),
            downstreams.join(", ")
        ),
    ))
}
