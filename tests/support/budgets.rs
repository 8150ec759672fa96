//! The retry budget the keyed retry-budget tests give their retries: one
//! retry per key and window (a floor of 1/s over 1 s) and nothing per call,
//! so a key's second failing call is not retried until its window passes.
#![allow(dead_code)]

use std::time::Duration;

use resil::retry::{RetryBudget, RetryBudgetConfig};

/// One retry per window, nothing per call.
pub fn one_retry() -> RetryBudgetConfig {
    RetryBudgetConfig::builder()
        .min_retries_per_second(1)
        .window(Duration::from_secs(1))
        .retry_ratio(0.0)
        .build()
        .unwrap()
}

/// A budget of [`one_retry`] (what a retry's code settings take; a keyed
/// family takes its settings).
pub fn one_retry_budget() -> RetryBudget {
    RetryBudget::new(one_retry())
}
