//! Circuit breaker: stop calling a dependency whose recent calls mostly failed or
//! were slow (Resilience4j `CircuitBreaker`).
//!
//! # The state machine
//!
//! * **CLOSED** permits every call (a breaker never limits concurrency), times it
//!   and records it in a sliding window ([count or time
//!   based](SlidingWindowType)). Once the window holds `minimum_number_of_calls`
//!   (capped at the size of a count window), the failure rate and the slow-call
//!   rate are computed; either one at or above its threshold opens the breaker.
//!   A call is slow when it takes *strictly* longer than
//!   `slow_call_duration_threshold`.
//! * **OPEN** refuses every call with [`Error::CallNotPermitted`](crate::Error)
//!   and counts it as not permitted. Strictly after `wait_duration_in_open_state`
//!   (or the `wait_interval_function_in_open_state` of the number of counted
//!   OPEN periods; at least 1 ms either way), the next permission request moves
//!   it to HALF_OPEN; with
//!   `automatic_transition_from_open_to_half_open_enabled`, a tokio timer does it
//!   (one task per OPEN period when a runtime is current, never a thread), and
//!   [`CircuitBreaker::state`] applies a due transition too. OPEN keeps showing
//!   the metrics that opened it.
//! * **HALF_OPEN** hands out exactly `permitted_number_of_calls_in_half_open_state`
//!   probe permits, however many threads race for them, and decides as soon as
//!   `min(minimum_number_of_calls, permitted_number_of_calls_in_half_open_state)`
//!   of them completed (as Resilience4j's half-open metrics do): OPEN again if a
//!   threshold is reached, else CLOSED. An ignored error or an abandoned permit
//!   (cancelled future, a panic in the call or in a predicate) gives its slot
//!   back. With `max_wait_duration_in_half_open_state`, a round that does not
//!   finish in time moves to `transition_to_state_after_wait_duration` (OPEN by
//!   default, or CLOSED).
//! * **FORCED_OPEN** refuses everything, **DISABLED** permits everything and
//!   records nothing, **METRICS_ONLY** permits and records everything and
//!   publishes threshold events, but never opens.
//!
//! A [shadow] runs other settings beside a live breaker on the same
//! calls and records what they would have done, deciding nothing
//! ([`CircuitBreaker::start_shadow`]): a trial before new thresholds act.
//!
//! A breaker starts in `initial_state` (CLOSED by default). Manual transitions
//! (`transition_to_*`) follow Resilience4j's transition table: CLOSED →
//! HALF_OPEN, METRICS_ONLY → OPEN and METRICS_ONLY → HALF_OPEN are refused with
//! an [`IllegalTransition`] and change nothing (see [`State::can_transition_to`]).
//!
//! Every transition (and [`reset`](CircuitBreaker::reset)) starts a new
//! *epoch*. A permit remembers its epoch, and an outcome from an earlier epoch is
//! published as an event but not recorded: a CLOSED-era call finishing during
//! HALF_OPEN cannot decide the probe round. Transitioning to the current state
//! starts it afresh and publishes no transition event.
//!
//! # Classification
//!
//! Predicates are written for concrete types (`record_error(|e: &io::Error| …)`)
//! and stored type-erased, because one breaker serves calls of different types.
//! `ignore_error` is checked first (the call is not counted at all); then, if no
//! `record_error` predicate is configured every error is a failure, otherwise
//! only matching errors are, and every other error counts as a **success**.
//! `record_result` turns values into failures (HTTP 503 as a value), and
//! `transition_on_result` / `transition_on_error` let a result open the breaker
//! for the time it names (`Retry-After`).
//!
//! A breaker around other resil primitives sees their `resil::Error<E>`. Use
//! [`CircuitBreaker::call_nested`] / [`CircuitBreaker::call_async_nested`] for
//! such calls: `Error::Call(e)` is classified by the predicates written for `E`,
//! an inner rejection (`Timeout`, `BulkheadFull`, …) by predicates written for
//! its own type, and as a failure when there are none. When predicates are
//! configured but none is written for a type the breaker is shown (typically a
//! composed call made with plain `call`), a `tracing` debug event says so once
//! per breaker.
//!
//! # Cost
//!
//! Asking for permission is one atomic load in CLOSED. Every call is timed, by
//! default on the [`CoarseClock`](crate::clock::CoarseClock): a reading is one
//! atomic load, precise to about ±1 ms, so a call within a millisecond of
//! `slow_call_duration_threshold` may be classified either way. Pass
//! [`SystemClock`](crate::clock::SystemClock) (TSC, nanoseconds, ~9 ns a
//! reading) to [`CircuitBreaker::with_clock`] when thresholds are that tight.
//! Outcomes are recorded without a lock: a count window claims its slot with
//! one `fetch_add` and touches a total only when the outcome differs from the
//! one it replaces (so with 2 % failures, 98 % of calls cost that one atomic
//! add); a time window adds to its current second's bucket with atomics and
//! takes a lock once per second to move on. The lock is taken only to decide
//! a transition, when a failure or slow call entered the window. A fast
//! success arriving while a count window is full of fast successes changes
//! nothing and writes no shared memory at all, so a healthy breaker shared by
//! many threads does not bounce a cache line between them. No call allocates.
//! A count window costs one byte per call it holds, a time window 40 bytes per
//! second; a probe round keeps only running totals (a round never outlives its
//! decision), so `permitted_number_of_calls_in_half_open_state` costs no
//! memory.
//!
//! ```
//! use std::time::Duration;
//! use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig, State};
//! use resil_core::clock::ManualClock;
//!
//! let clock = ManualClock::new();
//! let config = CircuitBreakerConfig::builder()
//!     .sliding_window_size(4)
//!     .minimum_number_of_calls(4)
//!     .wait_duration_in_open_state(Duration::from_millis(400))
//!     .permitted_number_of_calls_in_half_open_state(2)
//!     .build()
//!     .unwrap();
//! let breaker = CircuitBreaker::with_clock("price", config, clock.clone());
//!
//! for _ in 0..4 {
//!     let _ = breaker.call(|| Err::<u32, _>("503"));
//! }
//! assert_eq!(breaker.state(), State::Open);
//! assert_eq!(breaker.metrics().failure_rate(), Some(100.0));
//!
//! clock.advance(Duration::from_millis(400));
//! assert!(breaker.call(|| Ok::<_, &str>(0)).is_err()); // OPEN until strictly after the wait
//! clock.advance(Duration::from_millis(1));
//! assert_eq!(breaker.call(|| Ok::<_, &str>(1)).unwrap(), 1); // first probe
//! assert_eq!(breaker.state(), State::HalfOpen);
//! breaker.call(|| Ok::<_, &str>(2)).unwrap(); // second probe decides
//! assert_eq!(breaker.state(), State::Closed);
//! ```

mod breaker;
mod calls;
mod config;
mod event;
mod metrics;
mod permit;
pub mod shadow;
mod state;
mod window;

pub use self::breaker::CircuitBreaker;
pub use self::calls::{histogram_bounds, CallKind, CallTimer, CallTotals};
pub use self::config::{
    CircuitBreakerConfig, CircuitBreakerConfigBuilder, FailureModel, Outcome, ResultTransition,
    SlidingWindowType, MAX_COUNT_WINDOW_SIZE, MAX_FAILURE_COUNT_THRESHOLD, MAX_TIME_WINDOW_SECONDS,
};
pub use self::event::{CircuitBreakerEvent, CircuitBreakerEventKind};
pub use self::metrics::Metrics;
pub use self::permit::{OwnedPermit, Permit};
pub use self::state::{IllegalTransition, State};
