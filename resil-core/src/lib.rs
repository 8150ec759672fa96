//! The fault-tolerance primitives behind `resil`: Resilience4j's circuit breaker,
//! retry, bulkheads, rate limiter and time limiter, with the same defaults and
//! semantics, plus two protections Resilience4j lacks (a retry budget and
//! task-scoped end-to-end deadlines).
//!
//! This crate holds no global state and no macros: every primitive is a value you
//! create with `new(name, config)` (or `with_clock` to inject time) and share by
//! cloning its handle. Named instances, configuration files and the process-wide
//! registry live in `resil-registry`; the attribute macros in `resil-macros`.
//!
//! Every primitive speaks the same error type, [`Error<E>`]: `Call(E)` carries the
//! protected call's own error, and each rejection carries the name of the instance
//! that refused.
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs, rust_2018_idioms, unreachable_pub)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod advisor;
pub mod bulkhead;
pub mod chaos;
pub mod circuit_breaker;
pub mod clock;
pub mod cold_box;
pub mod criticality;
pub mod deadline;
#[cfg(feature = "redis")]
#[cfg_attr(docsrs, doc(cfg(feature = "redis")))]
pub mod distributed_rate_limiter;
mod erased;
pub mod error;
pub mod event;
mod guarded;
pub mod hedging;
pub mod inbound;
pub mod interval;
pub mod keyed;
pub mod log;
pub mod rate_limiter;
pub mod rejection;
pub mod retry;
pub mod shadow;
mod striped;
pub mod thread_pool_bulkhead;
pub mod throttler;
pub mod time_limiter;
pub mod trace;

pub use crate::criticality::Criticality;
pub use crate::error::{ConfigError, Error, ErrorKind};
pub use crate::interval::IntervalFunction;
pub use crate::rejection::Rejection;
pub use crate::striped::Counter;
