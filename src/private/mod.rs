//! What the attribute macros' expansions call, and nothing else. Not a public
//! API: names and signatures change without notice. Expansions name only
//! `::resil::__private::…`, never `resil_core` or `resil_registry`.
//!
//! The traits generated checks rely on live in `resil::checks`, which
//! expansions name directly: rustc prints the path an item is reached by, so
//! a compile error names `resil::checks::Fallback`, never this module.

mod keyed;
mod layers;
mod rate_limiter;
mod site;
mod trace;

pub use self::keyed::*;
pub use self::layers::*;
pub use self::rate_limiter::*;
pub use self::site::*;
pub use self::trace::*;

pub use resil_core::bulkhead::{AdaptiveBulkhead, Bulkhead};
pub use resil_core::chaos::Chaos;
pub use resil_core::circuit_breaker::CircuitBreaker;
pub use resil_core::hedging::Hedging;
pub use resil_core::retry::Retry;
pub use resil_core::thread_pool_bulkhead::ThreadPoolBulkhead;
pub use resil_core::throttler::Throttler;
pub use resil_core::time_limiter::TimeLimiter;
pub use resil_core::{Criticality, Error, Rejection};
pub use resil_registry::Handle;

/// Pins the type of a body's value to the protected fn's return type, so
/// `?` and `return` inside an async block or closure know their target.
#[inline(always)]
pub fn returns<R>(value: R) -> R {
    value
}
