//! Per-call-site state: each protected fn holds one `static Site` with a
//! handle per primitive, filled from the process-wide registry on the first call, so the registry is
//! consulted once per call site, never per call. A [`Handle`] keeps seeing the
//! instance a registry reload installs (one atomic load per call).

use std::sync::OnceLock;

use resil_core::bulkhead::{
    AdaptiveBulkhead, AdaptiveBulkheadConfigBuilder, Bulkhead, BulkheadConfigBuilder,
};
use resil_core::chaos::{Chaos, ChaosConfigBuilder};
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfigBuilder};
use resil_core::hedging::{Hedging, HedgingConfigBuilder};
use resil_core::retry::{Retry, RetryConfigBuilder};
use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadConfigBuilder};
use resil_core::throttler::{Throttler, ThrottlerConfigBuilder};
use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfigBuilder};
pub use resil_registry::AttributeSite;
use resil_registry::{registry, Handle};

/// The handles of one call site's primitives (a tuple of [`Handle`]s),
/// looked up on the site's first call.
pub struct Site<T>(OnceLock<T>);

impl<T> Site<T> {
    /// An empty site, for a `static`.
    #[allow(clippy::new_without_default)]
    pub const fn new() -> Self {
        Site(OnceLock::new())
    }

    /// The handles; `init` runs on the first call only.
    #[inline]
    pub fn get(&'static self, init: impl FnOnce() -> T) -> &'static T {
        self.0.get_or_init(init)
    }
}

macro_rules! lookups {
    ($($get:ident, $get_with:ident, $ty:ty, $builder:ty;)*) => {$(
        #[doc = concat!("The registry's `", stringify!($ty), "` called `name`.")]
        #[inline(never)]
        pub fn $get(name: &str) -> Handle<$ty> {
            registry().$get(name)
        }

        #[doc = concat!("The registry's `", stringify!($ty), "` called `name`, with the attribute's literal settings applied last.")]
        #[inline(never)]
        pub fn $get_with(
            name: &str,
            site: &'static AttributeSite,
            settings: impl Fn($builder) -> $builder + Send + Sync + 'static,
        ) -> Handle<$ty> {
            if let Err(error) = registry().configure_from_attribute::<$ty>(name, site, settings) {
                // The literals were checked at compile time; what is left is a
                // combination with the file's settings (e.g. a thread-pool
                // size below the file's core size), or another call site
                // giving the instance other literals. The instance keeps
                // what it had, and the reason is traced.
                tracing::error!(
                    instance = name,
                    %error,
                    "the settings written in a resil attribute were not applied"
                );
            }
            registry().$get(name)
        }
    )*};
}

lookups! {
    circuit_breaker, circuit_breaker_with, CircuitBreaker, CircuitBreakerConfigBuilder;
    retry, retry_with, Retry, RetryConfigBuilder;
    bulkhead, bulkhead_with, Bulkhead, BulkheadConfigBuilder;
    thread_pool_bulkhead, thread_pool_bulkhead_with, ThreadPoolBulkhead, ThreadPoolBulkheadConfigBuilder;
    adaptive_bulkhead, adaptive_bulkhead_with, AdaptiveBulkhead, AdaptiveBulkheadConfigBuilder;
    chaos, chaos_with, Chaos, ChaosConfigBuilder;
    hedging, hedging_with, Hedging, HedgingConfigBuilder;
    time_limiter, time_limiter_with, TimeLimiter, TimeLimiterConfigBuilder;
    throttler, throttler_with, Throttler, ThrottlerConfigBuilder;
}

/// The protected fn's return type, to register its error type with the
/// process-wide registry on the call site's first call when it implements
/// `ErrorClass` (`#[derive(ErrorClass)]`): its file lists and the
/// `resil.http` sets then classify it with no `register_error_class` line.
/// Chosen by method resolution (autoref specialization): for an error type
/// without `ErrorClass`, [`NoErrorClass`] applies and nothing happens.
pub struct ErrorTypeOf<R>(pub std::marker::PhantomData<R>);

/// Registers `E` (see [`ErrorTypeOf`]).
pub trait RegisterErrorClass {
    /// Registers the error type.
    fn register_error_class(&self);
}

impl<T, E: resil_registry::ErrorClass> RegisterErrorClass for ErrorTypeOf<Result<T, E>> {
    #[inline(never)]
    fn register_error_class(&self) {
        registry().register_error_class::<E>();
    }
}

/// Nothing to register (see [`ErrorTypeOf`]).
pub trait NoErrorClass {
    /// Does nothing.
    #[inline(always)]
    fn register_error_class(&self) {}
}

impl<R> NoErrorClass for &ErrorTypeOf<R> {}
