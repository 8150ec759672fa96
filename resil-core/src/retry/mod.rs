//! Retry: re-run a failed call with waits between attempts (Resilience4j `Retry`).

mod interval;

pub use self::interval::{IntervalFunction, DEFAULT_MULTIPLIER, DEFAULT_RANDOMIZATION_FACTOR};
