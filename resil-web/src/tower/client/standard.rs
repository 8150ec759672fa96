//! The standard client pipeline: Microsoft's `AddStandardResilienceHandler`
//! defaults (Microsoft.Extensions.Http.Resilience over Polly v8) as a
//! preset, every value overridable from the file.

use std::time::Duration;

use resil_core::bulkhead::Bulkhead;
use resil_core::circuit_breaker::{CircuitBreaker, SlidingWindowType};
use resil_core::retry::Retry;
use resil_core::time_limiter::TimeLimiter;
use resil_core::IntervalFunction;
use resil_registry::config::FileGives;
use resil_registry::{Registry, RegistryError};

use super::layer::ClientBuilder;
use crate::http::HttpClassifier;
use crate::tower::layer::ResilienceLayer;

/// The standard pipeline's concurrency limit (Microsoft's rate limiter: a
/// concurrency limiter of 1 000 permits, no queue): the bulkhead's
/// `max-concurrent-calls`.
pub const STANDARD_MAX_CONCURRENT_CALLS: u32 = 1000;
/// The standard pipeline's total request timeout (30 s): the client's
/// `total-timeout`.
pub const STANDARD_TOTAL_TIMEOUT: Duration = Duration::from_secs(30);
/// The standard retry's attempts: the first and Polly's 3 retries.
pub const STANDARD_MAX_ATTEMPTS: u32 = 4;
/// The standard retry's first wait (2 s), doubled each retry with jitter.
pub const STANDARD_RETRY_DELAY: Duration = Duration::from_secs(2);
/// The standard breaker's failure ratio (10 %).
pub const STANDARD_FAILURE_RATE_THRESHOLD: f32 = 10.0;
/// The standard breaker's minimum throughput (100 calls in the window).
pub const STANDARD_MINIMUM_NUMBER_OF_CALLS: u32 = 100;
/// The standard breaker's sampling duration (a time-based window of 30 s).
pub const STANDARD_SAMPLING_SECONDS: u32 = 30;
/// The standard breaker's break duration (5 s).
pub const STANDARD_BREAK_DURATION: Duration = Duration::from_secs(5);
/// The standard attempt timeout (10 s).
pub const STANDARD_ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);

/// The retry's backoff keys: a file that gives any of them describes the
/// whole backoff, and the preset's stands aside.
const BACKOFF_KEYS: [&str; 6] = [
    "wait-duration",
    "enable-exponential-backoff",
    "exponential-backoff-multiplier",
    "enable-randomized-wait",
    "randomized-wait-factor",
    "exponential-max-wait-duration",
];

impl ResilienceLayer {
    /// The standard client pipeline for the instances called `name`, as
    /// Microsoft's `AddStandardResilienceHandler` builds it: a total request
    /// timeout (30 s) around a retry (4 attempts: the first and 3 retries,
    /// exponential backoff with jitter from 2 s, on `408`, `429`, `5xx`,
    /// transport errors and attempt timeouts, honouring `Retry-After`), a
    /// circuit breaker (10 % failures over a 30 s window of at least 100
    /// calls, open for 5 s), an attempt timeout (10 s) and a concurrency
    /// limit (1 000 calls, no queue). Responses are classified by an
    /// [`HttpClassifier`] following `resil.http.instances.<name>`.
    ///
    /// Every value is a default beneath the file: a key the file gives the
    /// instance (under `resilience4j.<kind>.instances.<name>`, a named
    /// config it inherits, or an environment override) wins, key by key,
    /// and so does `total-timeout` under `resil.http-client.instances.<name>`;
    /// code on the returned builder wins over both. The preset is set in
    /// the registry ([`Registry::configure_defaults`]), so every later
    /// look-up of these names gets it too, and reloads re-apply it.
    ///
    /// The aspects run in resil's fixed order, Retry( CircuitBreaker(
    /// TimeLimiter( Bulkhead( client )))) inside the total timeout, where
    /// Microsoft puts its limiter outermost: here each attempt takes a
    /// slot, and a retry's wait holds none. A `Retry-After` longer than
    /// the total timeout leaves ends the call with `DeadlineExceeded` at
    /// once, where Polly would wait until its total timeout fires.
    ///
    /// Errors when the file and the preset together leave an instance
    /// invalid (the registry's error, naming it).
    pub fn standard_client<'r>(
        registry: &'r Registry,
        name: &str,
    ) -> Result<ClientBuilder<'r, HttpClassifier>, RegistryError> {
        install(registry, name)?;
        let mut builder = ResilienceLayer::builder(registry, name)
            .retry()
            .circuit_breaker()
            .time_limiter()
            .bulkhead()
            .classify(HttpClassifier::follow(registry, name));
        builder.preset.total_timeout = Some(STANDARD_TOTAL_TIMEOUT);
        Ok(builder)
    }
}

/// `set` applied to `b` unless the file gives `key`.
fn unless<B>(b: B, file: &FileGives<'_>, key: &str, set: impl FnOnce(B) -> B) -> B {
    if file.key(key) {
        b
    } else {
        set(b)
    }
}

/// The preset's values as the registry's defaults for `name`.
fn install(registry: &Registry, name: &str) -> Result<(), RegistryError> {
    registry.configure_defaults::<Retry>(name, |b, file| {
        let b = unless(b, file, "max-attempts", |b| {
            b.max_attempts(STANDARD_MAX_ATTEMPTS)
        });
        if BACKOFF_KEYS.iter().any(|k| file.key(k)) {
            return b;
        }
        // Polly's exponential backoff doubles; its jitter spreads each
        // wait around the doubled value, as an exponential random interval.
        b.interval_function(IntervalFunction::exponential_random(
            STANDARD_RETRY_DELAY,
            2.0,
            resil_core::retry::DEFAULT_RANDOMIZATION_FACTOR,
        ))
    })?;
    registry.configure_defaults::<CircuitBreaker>(name, |b, file| {
        let b = unless(b, file, "failure-rate-threshold", |b| {
            b.failure_rate_threshold(STANDARD_FAILURE_RATE_THRESHOLD)
        });
        let b = unless(b, file, "minimum-number-of-calls", |b| {
            b.minimum_number_of_calls(STANDARD_MINIMUM_NUMBER_OF_CALLS)
        });
        let b = unless(b, file, "sliding-window-type", |b| {
            b.sliding_window_type(SlidingWindowType::TimeBased)
        });
        let b = unless(b, file, "sliding-window-size", |b| {
            b.sliding_window_size(STANDARD_SAMPLING_SECONDS)
        });
        unless(b, file, "wait-duration-in-open-state", |b| {
            b.wait_duration_in_open_state(STANDARD_BREAK_DURATION)
        })
    })?;
    registry.configure_defaults::<TimeLimiter>(name, |b, file| {
        unless(b, file, "timeout-duration", |b| {
            b.timeout_duration(STANDARD_ATTEMPT_TIMEOUT)
        })
    })?;
    registry.configure_defaults::<Bulkhead>(name, |b, file| {
        unless(b, file, "max-concurrent-calls", |b| {
            b.max_concurrent_calls(STANDARD_MAX_CONCURRENT_CALLS)
        })
    })
}
