//! gRPC outcome classification: tonic [`Status`] codes as failures, ignored
//! calls or successes.
//!
//! By default `UNAVAILABLE`, `DEADLINE_EXCEEDED`, `RESOURCE_EXHAUSTED`,
//! `INTERNAL`, `UNKNOWN`, `DATA_LOSS` and `ABORTED` are failures (the
//! dependency's trouble), `OK` a success, and every other code
//! (`INVALID_ARGUMENT`, `NOT_FOUND`, `PERMISSION_DENIED`, `UNAUTHENTICATED`,
//! `FAILED_PRECONDITION`, `ALREADY_EXISTS`, `OUT_OF_RANGE`, `UNIMPLEMENTED`,
//! `CANCELLED`) is ignored: the caller's problem says nothing about the
//! server's health.
//!
//! ```
//! use resil_web::grpc::GrpcClassifier;
//! use resil_core::circuit_breaker::Outcome;
//! use tonic::Code;
//!
//! let classifier = GrpcClassifier::default();
//! assert_eq!(classifier.outcome(Code::Unavailable), Outcome::Failure);
//! assert_eq!(classifier.outcome(Code::NotFound), Outcome::Ignored);
//! assert_eq!(classifier.outcome(Code::Ok), Outcome::Success);
//! ```
//!
//! A server's push-back (`grpc-retry-pushback-ms`, gRPC's `Retry-After`)
//! opens the breaker for that long and sets the retry's wait.

use std::time::Duration;

use resil_core::circuit_breaker::{CircuitBreakerConfigBuilder, Outcome, ResultTransition};
use resil_core::retry::RetryConfigBuilder;
use resil_core::IntervalFunction;
use tonic::{Code, Status};

/// Classifies gRPC status codes (see the [module docs](self)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GrpcClassifier {
    // Bit `code as i32` for each failure code (17 codes).
    failures: u32,
    // Bit per code recorded as a success besides OK.
    successes: u32,
}

const fn bit(code: Code) -> u32 {
    1 << (code as i32)
}

impl Default for GrpcClassifier {
    fn default() -> Self {
        GrpcClassifier {
            failures: bit(Code::Unavailable)
                | bit(Code::DeadlineExceeded)
                | bit(Code::ResourceExhausted)
                | bit(Code::Internal)
                | bit(Code::Unknown)
                | bit(Code::DataLoss)
                | bit(Code::Aborted),
            successes: bit(Code::Ok),
        }
    }
}

impl GrpcClassifier {
    /// Records `codes` as failures (replacing the default failure codes);
    /// every other non-OK code is ignored.
    pub fn record_codes(mut self, codes: &[Code]) -> Self {
        self.failures = codes.iter().fold(0, |acc, c| acc | bit(*c));
        self
    }

    /// Counts `code` as a success (instead of failure or ignored).
    pub fn success_code(mut self, code: Code) -> Self {
        self.successes |= bit(code);
        self.failures &= !bit(code);
        self
    }

    /// How the breaker records a call that ended with `code`.
    pub fn outcome(&self, code: Code) -> Outcome {
        if self.successes & bit(code) != 0 {
            Outcome::Success
        } else if self.failures & bit(code) != 0 {
            Outcome::Failure
        } else {
            Outcome::Ignored
        }
    }

    /// How the breaker records `status`, and what it asks (open for its
    /// push-back, when it is a failure carrying one).
    pub fn judge(&self, status: &Status) -> (Outcome, ResultTransition) {
        let outcome = self.outcome(status.code());
        let transition = match (outcome, pushback(status)) {
            (Outcome::Failure, Some(wait)) => ResultTransition::OpenFor(wait),
            _ => ResultTransition::Stay,
        };
        (outcome, transition)
    }

    /// Adds to a breaker's configuration: ignored codes ignored, successes
    /// recorded as successes, a push-back opening the breaker for that long.
    pub fn circuit_breaker(
        &self,
        builder: CircuitBreakerConfigBuilder,
    ) -> CircuitBreakerConfigBuilder {
        let me = *self;
        let me2 = *self;
        builder
            .ignore_error(move |s: &Status| me.outcome(s.code()) == Outcome::Ignored)
            .transition_on_error(move |s: &Status| me2.judge(s).1)
    }

    /// Adds to a retry's configuration: only failure codes are retried, and
    /// the wait is the server's push-back when it sent one, else
    /// `interval`'s. `T` is the protected call's `Ok` type.
    pub fn retry<T: 'static>(
        &self,
        builder: RetryConfigBuilder,
        interval: IntervalFunction,
    ) -> RetryConfigBuilder {
        let me = *self;
        let fallback = interval.clone();
        builder
            .interval_function(interval)
            .retry_on_error(move |s: &Status| me.outcome(s.code()) == Outcome::Failure)
            .interval_bi_function(move |attempt, outcome: Result<&T, &Status>| match outcome {
                // Just past the push-back, as `HttpClassifier::retry` waits.
                Err(s) => Some(match pushback(s) {
                    Some(wait) => wait + Duration::from_millis(1),
                    None => fallback.interval(attempt),
                }),
                Ok(_) => Some(fallback.interval(attempt)),
            })
    }
}

/// The server's `grpc-retry-pushback-ms`, when it sent a valid one.
pub fn pushback(status: &Status) -> Option<Duration> {
    let ms = status
        .metadata()
        .get("grpc-retry-pushback-ms")?
        .to_str()
        .ok()?;
    ms.trim().parse::<u64>().ok().map(Duration::from_millis)
}

/// A gRPC response over the tower layer: the code in `grpc-status` (a
/// trailers-only response, which is how servers answer an error), a success
/// when the headers carry none (the status then comes in trailers, after the
/// breaker has recorded the call). The inner error (no response) is a failure.
#[cfg(feature = "tower")]
impl<B, E> crate::tower::Classify<http::Response<B>, E> for GrpcClassifier {
    fn classify_response(&self, response: &http::Response<B>) -> crate::tower::Verdict {
        let Some(code) = response
            .headers()
            .get("grpc-status")
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<i32>().ok())
        else {
            return crate::tower::Verdict::SUCCESS;
        };
        let status = Status::from_header_map(response.headers())
            .unwrap_or_else(|| Status::new(Code::from(code), ""));
        let (outcome, transition) = self.judge(&status);
        crate::tower::Verdict::Record(outcome, transition)
    }

    fn classify_error(&self, _: &E) -> crate::tower::Verdict {
        crate::tower::Verdict::FAILURE
    }
}
