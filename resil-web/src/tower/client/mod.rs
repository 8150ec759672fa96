//! The client side of the layer: retry and hedging over replayable
//! requests, gated by idempotency, and the task's deadline sent downstream.
//!
//! [`ClientLayer`] wraps a client's service (a hyper-util `Client`, a tonic
//! channel, any `Service<http::Request<B>>`) with the registry's instances
//! called `name`, in the attributes' fixed order ([`resil_options::ORDER`]):
//! Retry( Hedge( Throttler( CircuitBreaker( RateLimiter( TimeLimiter(
//! Bulkhead( service ))))))). Each attempt, retried or hedged, takes its own
//! breaker permit, limiter permission, timeout and bulkhead slot.
//!
//! ```
//! use resil_registry::Registry;
//! use resil_web::http::HttpClassifier;
//! use resil_web::tower::ResilienceLayer;
//!
//! let registry = Registry::new();
//! let layer = ResilienceLayer::builder(&registry, "prices")
//!     .retry()
//!     .circuit_breaker()
//!     .time_limiter()
//!     .classify(HttpClassifier::default())
//!     .build();
//! // `layer.layer(hyper_client)`: a `Service<http::Request<B>>` whose error
//! // is `resil::Error<hyper_util::client::legacy::Error>`.
//! # let _ = layer;
//! ```
//!
//! # What is replayed
//!
//! A request is sent more than once (retried or hedged) only when both hold:
//!
//! - **its method is safe** (RFC 9110 §9.2.1: `GET`, `HEAD`, `OPTIONS`,
//!   `TRACE`; `ReplayMethods::Idempotent` adds `PUT` and `DELETE`), or it
//!   carries an
//!   `Idempotency-Key` header (the server applies a key once), or the
//!   caller widened the rule ([`ReplayMethods::Any`]); [`ReplayMethods::Safe`]
//!   narrows it to the safe methods, as Microsoft's
//!   `DisableForUnsafeHttpMethods`. A `POST` or `PATCH` without the key is
//!   sent exactly once, and its failure (an error, or a `503`) is returned
//!   as it came;
//! - **its body fits the replay buffer**: the body is read into memory
//!   before the first attempt, up to [`DEFAULT_MAX_REPLAY_BODY`] (64 KiB,
//!   [`ClientBuilder::max_replay_body`]). A body that says it is larger is
//!   not read at all, one that turns out larger is sent once (the part read
//!   so far, then the rest as it comes), and one that breaks off is sent
//!   once and fails as it would have. Each attempt sends the same bytes and
//!   trailers (shared, not copied).
//!
//! A request that is not replayed still passes every other aspect once.
//!
//! # What is tried again
//!
//! The retry decides as the attribute's retry does, with the same code
//! ([`Retry::call_async_nested_judged`](resil_core::retry::Retry::call_async_nested_judged)):
//! an inner error (connect refused, reset) is judged by the retry's error
//! predicates (`retry_on_error`, `ignore_error`, the file's
//! `retry-exceptions`/`ignore-exceptions`; every error is retried without
//! any); a refusal of an inner aspect as its `retry_on_rejection` says
//! (timeouts only, by default; an open breaker is returned at once); a
//! response is a result. The classifier ([`ClientBuilder::classify`]; an
//! [`HttpClassifier`](crate::http::HttpClassifier) for HTTP) makes a
//! response it records as a failure (`408`, `429`, `5xx` by default) a
//! failed result, retried (or raced by a hedge) like a `retry_on_result`
//! match; any other response is left to the retry's `retry_on_result`
//! predicates. When the retry gives up on a failed result, the last
//! response is the answer (with `fail_after_max_attempts`,
//! `Error::MaxRetriesExceeded`).
//!
//! A failure the classifier gives a wait (a `429`/`503` with
//! `Retry-After`: its transition `OpenFor(wait)`) is retried 1 ms after
//! that wait instead of the interval, when the breaker it opened is
//! half-open. A wait longer than the retry's longest (its interval
//! function's [`max`](resil_core::IntervalFunction::max)) is not waited
//! for: the call ends on that response, as if the attempts had run out.
//! The retry's count, waits, budget and events are the registry
//! instance's, so the actuator shows them.
//!
//! # Deadlines
//!
//! Inside a [`resil_core::deadline`] (set by [`DeadlineLayer`] from the
//! request being served, or by `deadline::within`), each attempt sends what
//! is left of it less a margin ([`DEFAULT_DEADLINE_MARGIN`], 5 ms): as
//! `grpc-timeout` for a gRPC request, else in the millisecond header
//! ([`DEFAULT_TIMEOUT_HEADER`], `x-envoy-expected-rq-timeout-ms`). An
//! attempt with no more than the margin left is not sent: the call fails
//! with `Error::DeadlineExceeded`. The retry starts no attempt and no
//! backoff the deadline cannot hold, and when the deadline passes the whole
//! call is dropped: the caller stops waiting.
//!
//! [`DeadlineLayer`]: crate::tower::deadline::DeadlineLayer
//! [`DEFAULT_TIMEOUT_HEADER`]: crate::tower::deadline::DEFAULT_TIMEOUT_HEADER
//!
//! # Costs
//!
//! One box per request (the retry and hedging loops and the attempts'
//! futures), plus the buffered body (reference-counted across attempts).
//! Build the layer once, at start-up.

pub(crate) mod attempts;
mod body;
pub(crate) mod layer;
mod outbound;
mod policy;
mod service;
mod standard;

pub use self::body::ReplayBody;
pub use self::layer::{ClientBuilder, ClientLayer, RetryBudgetKey};
pub use self::outbound::DEFAULT_DEADLINE_MARGIN;
pub use self::policy::{ReplayMethods, DEFAULT_IDEMPOTENCY_HEADER, DEFAULT_MAX_REPLAY_BODY};
pub use self::service::{Client, ClientFuture};
pub use self::standard::{
    STANDARD_ATTEMPT_TIMEOUT, STANDARD_BREAK_DURATION, STANDARD_FAILURE_RATE_THRESHOLD,
    STANDARD_MAX_ATTEMPTS, STANDARD_MAX_CONCURRENT_CALLS, STANDARD_MINIMUM_NUMBER_OF_CALLS,
    STANDARD_RETRY_DELAY, STANDARD_SAMPLING_SECONDS, STANDARD_TOTAL_TIMEOUT,
};
