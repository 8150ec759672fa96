//! resil's attribute macros. Use them through the `resil` facade
//! (`#[resil::circuit_breaker(…)]`), whose documentation shows each one with
//! the code it expands to; this crate only routes each entry point to the
//! pipeline in `entry.rs`: parse (`attr.rs`, `item.rs`) → model
//! (`model.rs`, siblings collected) → validate (`valid.rs`, every rule) →
//! expand (`expand.rs`, `check.rs`).
#![warn(missing_docs)]

use proc_macro::TokenStream;

mod attr;
mod check;
mod derive_error_class;
mod diag;
mod entry;
mod expand;
mod fallback;
mod item;
mod model;
mod order;
mod valid;

use crate::order::Aspect;

/// Protects a fn with the registry's circuit breaker `name`. See `resil::circuit_breaker`.
#[proc_macro_attribute]
pub fn circuit_breaker(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(Aspect::CircuitBreaker, args.into(), item.into()).into()
}

/// Retries a fn with the registry's retry `name`. See `resil::retry`.
#[proc_macro_attribute]
pub fn retry(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(Aspect::Retry, args.into(), item.into()).into()
}

/// Limits a fn's concurrency with the registry's bulkhead `name`. See `resil::bulkhead`.
#[proc_macro_attribute]
pub fn bulkhead(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(Aspect::Bulkhead, args.into(), item.into()).into()
}

/// Limits a fn's call rate with the registry's rate limiter `name`. See `resil::rate_limiter`.
#[proc_macro_attribute]
pub fn rate_limiter(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(Aspect::RateLimiter, args.into(), item.into()).into()
}

/// Bounds an async fn's duration with the registry's time limiter `name`. See `resil::time_limiter`.
#[proc_macro_attribute]
pub fn time_limiter(args: TokenStream, item: TokenStream) -> TokenStream {
    entry::expand(Aspect::TimeLimiter, args.into(), item.into()).into()
}

/// Implements `resil::ErrorClass` for an enum: one stable name per variant.
/// See `resil::ErrorClass`.
#[proc_macro_derive(ErrorClass, attributes(error_class))]
pub fn derive_error_class(input: TokenStream) -> TokenStream {
    derive_error_class::expand(input.into()).into()
}
