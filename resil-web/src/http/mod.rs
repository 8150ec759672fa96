//! HTTP outcome classification: which statuses are failures, which are
//! ignored, and what a `Retry-After` asks of the breaker and the retry.
//!
//! ```
//! use resil_web::http::{HttpClassifier, StatusSet};
//! use resil_core::circuit_breaker::Outcome;
//!
//! // 200 is the answer, 403 a business refusal that says nothing about the
//! // dependency's health, any other status a dependency failure.
//! let classifier = HttpClassifier::builder()
//!     .success_status(StatusSet::parse("200").unwrap())
//!     .ignore_status(StatusSet::parse("403").unwrap())
//!     .build();
//! assert_eq!(classifier.outcome(http::StatusCode::OK), Outcome::Success);
//! assert_eq!(classifier.outcome(http::StatusCode::FORBIDDEN), Outcome::Ignored);
//! assert_eq!(classifier.outcome(http::StatusCode::NOT_FOUND), Outcome::Failure);
//! assert_eq!(classifier.outcome(http::StatusCode::BAD_GATEWAY), Outcome::Failure);
//! ```
//!
//! # The rules, in order
//!
//! 1. A status in `ignore-status` is **ignored** (checked first, as
//!    Resilience4j checks `ignoreExceptions` before `recordExceptions`).
//! 2. A status in `record-status` is a **failure**.
//! 3. When a `success-status` set is given, any status outside it is a
//!    **failure** (seed 003's "any other status is a dependency failure").
//! 4. Anything else is a **success**.
//!
//! Without any set, `record-status` is `500-599, 408, 429`: a server error,
//! a request timeout and a rate limit are the dependency's trouble; a 404 or
//! a 400 is the caller's and leaves the breaker alone. A transport error
//! (connect, reset, timeout; [`HttpError::Transport`]) is always a failure.
//!
//! # In a config file
//!
//! The same sets as file keys, under `resil.http.instances.<name>` (resil's
//! own namespace beside Resilience4j's `resilience4j`): `record-status:
//! [500-599, 408]`, `ignore-status: [400-499]`, `success-status`,
//! `retry-after-status`. The config loader checks them with the
//! `resilience4j` tree: an unknown key, a set that does not parse or a name
//! that is no instance the file configures is an error with its key path,
//! line and a did-you-mean (see [`FILE_PREFIX`]).
//! [`HttpClassifier::follow`] gives a classifier that follows a registry's
//! file through its reloads; [`HttpClassifier::from_file`] reads one file
//! once.
//!
//! # `Retry-After`
//!
//! A 429 or 503 response carrying `Retry-After` (either form: delay seconds
//! or an HTTP date) opens the breaker for that long
//! ([`ResultTransition::OpenFor`](resil_core::circuit_breaker::ResultTransition::OpenFor)),
//! and a retry waits that long before its next attempt
//! ([`HttpClassifier::retry`]). The statuses honoured are settable
//! ([`HttpClassifierBuilder::retry_after_status`]).
//!
//! # With the attributes
//!
//! A protected fn returns `Result<T, HttpError>` (or an error built from
//! one); [`HttpClassifier::check`] turns a response into that result, and
//! [`HttpClassifier::circuit_breaker`] / [`HttpClassifier::retry`] add the
//! matching predicates to the instances' configuration:
//!
//! ```
//! use resil_registry::Registry;
//! use resil_web::http::HttpClassifier;
//!
//! let classifier = HttpClassifier::default();
//! let registry = Registry::new();
//! let c = classifier.clone();
//! registry.configure_circuit_breaker("prices", move |b| c.circuit_breaker(b)).unwrap();
//! ```
//!
//! With the `tower` feature the classifier is also a
//! [`Classify`](crate::tower::Classify) for the layer.

mod classifier;
mod error;
mod file;
mod rate_limit;
mod replay;
mod retry_after;
mod status_of;
mod status_set;

#[cfg(feature = "client")]
pub(crate) use self::classifier::PAST_RETRY_AFTER;
pub use self::classifier::{
    HttpClassifier, HttpClassifierBuilder, StatusLike, DEFAULT_RECORD_STATUS,
};
pub use self::error::HttpError;
pub use self::file::{FILE_KEYS, FILE_PREFIX};
pub use self::rate_limit::{rate_limit_reset, RateLimitQuota, RATELIMIT, RATELIMIT_POLICY};
pub use self::replay::ReplayMethods;
pub use self::retry_after::{parse_retry_after, retry_after, retry_after_header_value};
pub use self::status_set::{StatusSet, StatusSetError};

#[cfg(feature = "reqwest")]
mod reqwest;
