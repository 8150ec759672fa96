//! resil: Resilience4j's fault-tolerance semantics for Rust.
//!
//! The facade re-exports the primitives of `resil-core`; see the README for the
//! model and the semantics each primitive follows.
#![warn(missing_docs)]

pub use resil_core::{
    bulkhead, circuit_breaker, clock, deadline, error, event, rate_limiter, retry,
    thread_pool_bulkhead, time_limiter, ConfigError, Error, ErrorKind,
};
