//! The nine kinds of primitive a registry holds, by name: plain data below
//! every module that names a kind (the config file's sections, errors,
//! events, the stores). What the registry needs of each kind is
//! `primitive.rs`.

use std::fmt;

/// Which kind of primitive a registry entry is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// [`CircuitBreaker`](resil_core::circuit_breaker::CircuitBreaker).
    CircuitBreaker,
    /// [`Retry`](resil_core::retry::Retry).
    Retry,
    /// [`Bulkhead`](resil_core::bulkhead::Bulkhead) (semaphore).
    Bulkhead,
    /// [`ThreadPoolBulkhead`](resil_core::thread_pool_bulkhead::ThreadPoolBulkhead).
    ThreadPoolBulkhead,
    /// [`RateLimiter`](resil_core::rate_limiter::RateLimiter).
    RateLimiter,
    /// [`TimeLimiter`](resil_core::time_limiter::TimeLimiter).
    TimeLimiter,
    /// [`Hedging`](resil_core::hedging::Hedging).
    Hedging,
    /// [`AdaptiveBulkhead`](resil_core::bulkhead::AdaptiveBulkhead): a bulkhead whose limit follows latency (Vegas).
    AdaptiveBulkhead,
    /// [`Chaos`](resil_core::chaos::Chaos): fault injection for drills, off by default.
    Chaos,
}

impl Kind {
    /// Every kind, in a fixed order.
    pub const ALL: [Kind; 9] = [
        Kind::CircuitBreaker,
        Kind::Retry,
        Kind::Bulkhead,
        Kind::ThreadPoolBulkhead,
        Kind::RateLimiter,
        Kind::TimeLimiter,
        Kind::Hedging,
        Kind::AdaptiveBulkhead,
        Kind::Chaos,
    ];

    /// The stable snake_case label (`"circuit_breaker"`, `"thread_pool_bulkhead"`, …)
    /// used in errors, events, snapshots and logs.
    pub const fn as_str(self) -> &'static str {
        match self {
            Kind::CircuitBreaker => "circuit_breaker",
            Kind::Retry => "retry",
            Kind::Bulkhead => "bulkhead",
            Kind::ThreadPoolBulkhead => "thread_pool_bulkhead",
            Kind::RateLimiter => "rate_limiter",
            Kind::TimeLimiter => "time_limiter",
            Kind::Hedging => "hedging",
            Kind::AdaptiveBulkhead => "adaptive_bulkhead",
            Kind::Chaos => "chaos",
        }
    }

    /// The word Resilience4j's metric names use (`resilience4j_<word>_…`).
    pub const fn metric_word(self) -> &'static str {
        match self {
            Kind::CircuitBreaker => "circuitbreaker",
            Kind::Retry => "retry",
            Kind::Bulkhead => "bulkhead",
            Kind::ThreadPoolBulkhead => "thread_pool_bulkhead",
            Kind::RateLimiter => "ratelimiter",
            Kind::TimeLimiter => "timelimiter",
            // Not Resilience4j's: these publish under `resil_` names, the
            // adaptive bulkhead beside the bulkhead's (`bulkhead_adaptive_…`).
            Kind::Hedging => "hedging",
            Kind::AdaptiveBulkhead => "bulkhead_adaptive",
            Kind::Chaos => "chaos",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
