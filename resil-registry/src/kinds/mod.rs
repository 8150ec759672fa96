//! One module per kind of primitive, and the one list of kinds.
//!
//! Everything the registry knows of a kind lives in that kind's module: how
//! its file options bind to its builder and render back, how a reload
//! rebuilds it or updates it in place, what settles it before install, its
//! error lists, its health and its metric descriptions. The generic
//! machinery (`config/`, `store.rs`, `registry/`, `telemetry/`) holds traits
//! and walks the list below; it names no kind.
//!
//! Adding a kind is one module here (its `Primitive`, `Hooks`, `Apply`, `Bind`,
//! `Render`, `Telemetry` and `Describe` impls), one line in [`kinds!`], and its `Kind`
//! variant and option rows in resil-options. The unit test
//! `unit_test_counter` does exactly that, and gets snapshot, health and
//! metrics for it.

mod adaptive_bulkhead;
mod bulkhead;
pub(crate) mod chaos;
pub(crate) mod circuit_breaker;
mod hedging;
pub(crate) mod rate_limiter;
pub(crate) mod retry;
mod thread_pool_bulkhead;
mod throttler;
mod time_limiter;
#[cfg(test)]
pub(crate) mod unit_test_counter;

/// The builder chaos injections apply to (the error classes keep them).
pub(crate) type ChaosBuilder = resil_core::chaos::ChaosConfigBuilder;

/// `Config => Builder { "file-key" => ValVariant: setter_and_getter, … }`,
/// in a kind's module.
macro_rules! bind {
    ($($config:ty => $builder:ty { $($key:literal => $val:ident: $name:ident,)+ })+) => {$(
        impl $crate::config::bind::Bind for $config {
            type Builder = $builder;

            fn apply_bound(
                mut b: $builder,
                values: &$crate::config::setting::Values,
            ) -> $builder {
                $(
                    if let Some($crate::config::schema::Val::$val(x)) =
                        values.get($key).map(|s| &s.val)
                    {
                        b = b.$name(*x);
                    }
                )+
                b
            }

            fn render_bound(&self) -> Vec<(&'static str, Option<$crate::config::schema::Val>)> {
                vec![$(($key, Some($crate::config::schema::Val::$val(self.$name())))),+]
            }
        }
    )+};
}
use bind;

/// The file options of a config that are all simple (bound, see [`bind!`]):
/// its builder starts from resil-core's defaults with every bound value
/// set, and renders back exactly its bound values.
macro_rules! plain_options {
    ($config:ty => $builder:ty, $kind:expr) => {
        impl $crate::config::apply::Apply for $config {
            fn builder_with(values: &$crate::config::setting::Values) -> $builder {
                <Self as $crate::config::bind::Bind>::apply_bound(<$config>::builder(), values)
            }

            fn build(builder: $builder) -> Result<Self, resil_core::ConfigError> {
                builder.build()
            }
        }

        impl $crate::config::render::Render for $config {
            const KIND: $crate::kind::Kind = $kind;

            fn found(&self) -> Vec<(&'static str, Option<$crate::config::schema::Val>)> {
                <Self as $crate::config::bind::Bind>::render_bound(self)
            }
        }
    };
}
use plain_options;

/// A new instance of `$ty` timed by `clock` when there is one (the
/// registry's manual clock in tests), else by the system clock.
macro_rules! created {
    ($ty:ident, $name:expr, $config:expr, $clock:expr) => {
        match $clock {
            Some(clock) => $ty::with_clock($name, $config, clock.clone()),
            None => $ty::new($name, $config),
        }
    };
}
use created;

/// The [`Primitive`](crate::primitive::Primitive) impl of a kind whose
/// config round-trips through `to_builder()` and which reads the registry's
/// clock: every kind but the time limiter and the thread-pool bulkhead.
macro_rules! primitive {
    ($ty:ident: $config:ident => $builder:ident, $kind:expr) => {
        impl $crate::primitive::Primitive for $ty {
            type Config = $config;
            type Builder = $builder;
            const KIND: $crate::kind::Kind = $kind;

            fn default_builder() -> $builder {
                $config::builder()
            }

            fn to_builder(config: &$config) -> $builder {
                config.to_builder()
            }

            fn create(
                name: std::sync::Arc<str>,
                config: $config,
                clock: Option<&resil_core::clock::SharedClock>,
            ) -> Self {
                $crate::kinds::created!($ty, name, config, clock)
            }

            // Some configs are returned by value, some by reference.
            #[allow(clippy::clone_on_copy)]
            fn config_of(&self) -> $config {
                self.config().clone()
            }
        }
    };
}
use primitive;

/// The one list of kinds, in the registry's fixed order (the order of
/// [`Kind::ALL`](crate::Kind::ALL)): each line is the kind's field name,
/// its three registry accessors (`get`, `try_get`, `configure`), the
/// primitive, its config and its builder. `kinds!(callback)` hands the list
/// to `callback!`, which generates what one generic module needs: the stores
/// (`store.rs`), the file sections (`config/mod.rs`), the accessors
/// (`registry/mod.rs`).
macro_rules! kinds {
    ($callback:ident) => {
        $callback! {
            /// The circuit breaker called `name`, created on first use.
            circuit_breaker, try_circuit_breaker, configure_circuit_breaker:
                resil_core::circuit_breaker::CircuitBreaker,
                resil_core::circuit_breaker::CircuitBreakerConfig,
                resil_core::circuit_breaker::CircuitBreakerConfigBuilder;
            /// The retry called `name`, created on first use.
            retry, try_retry, configure_retry:
                resil_core::retry::Retry,
                resil_core::retry::RetryConfig,
                resil_core::retry::RetryConfigBuilder;
            /// The semaphore bulkhead called `name`, created on first use.
            bulkhead, try_bulkhead, configure_bulkhead:
                resil_core::bulkhead::Bulkhead,
                resil_core::bulkhead::BulkheadConfig,
                resil_core::bulkhead::BulkheadConfigBuilder;
            /// The thread-pool bulkhead called `name`, created on first use (no
            /// thread starts before its first task).
            thread_pool_bulkhead, try_thread_pool_bulkhead, configure_thread_pool_bulkhead:
                resil_core::thread_pool_bulkhead::ThreadPoolBulkhead,
                resil_core::thread_pool_bulkhead::ThreadPoolBulkheadConfig,
                resil_core::thread_pool_bulkhead::ThreadPoolBulkheadConfigBuilder;
            /// The rate limiter called `name`, created on first use.
            rate_limiter, try_rate_limiter, configure_rate_limiter:
                resil_core::rate_limiter::RateLimiter,
                resil_core::rate_limiter::RateLimiterConfig,
                resil_core::rate_limiter::RateLimiterConfigBuilder;
            /// The time limiter called `name`, created on first use.
            time_limiter, try_time_limiter, configure_time_limiter:
                resil_core::time_limiter::TimeLimiter,
                resil_core::time_limiter::TimeLimiterConfig,
                resil_core::time_limiter::TimeLimiterConfigBuilder;
            /// The hedging called `name` (`resilience4j.hedging.instances.<name>`),
            /// created on first use.
            hedging, try_hedging, configure_hedging:
                resil_core::hedging::Hedging,
                resil_core::hedging::HedgingConfig,
                resil_core::hedging::HedgingConfigBuilder;
            /// The adaptive bulkhead called `name`
            /// (`resilience4j.adaptive-bulkhead.instances.<name>`; the attribute's
            /// `#[resil::bulkhead(kind = "adaptive")]`), created on first use.
            adaptive_bulkhead, try_adaptive_bulkhead, configure_adaptive_bulkhead:
                resil_core::bulkhead::AdaptiveBulkhead,
                resil_core::bulkhead::AdaptiveBulkheadConfig,
                resil_core::bulkhead::AdaptiveBulkheadConfigBuilder;
            /// The chaos instance called `name`
            /// (`resilience4j.chaos.instances.<name>`), created on first use:
            /// off unless its `enabled` says otherwise or an operator switches it
            /// on ([`enable_chaos`](Self::enable_chaos)).
            chaos, try_chaos, configure_chaos:
                resil_core::chaos::Chaos,
                resil_core::chaos::ChaosConfig,
                resil_core::chaos::ChaosConfigBuilder;
            /// The adaptive client-side throttler called `name`
            /// (`resilience4j.throttler.instances.<name>`), created on first use.
            throttler, try_throttler, configure_throttler:
                resil_core::throttler::Throttler,
                resil_core::throttler::ThrottlerConfig,
                resil_core::throttler::ThrottlerConfigBuilder;
            /// The unit tests' own kind (`kinds/unit_test_counter.rs`).
            [cfg(test)] unit_test_counter, try_unit_test_counter, configure_unit_test_counter:
                crate::kinds::unit_test_counter::types::Counter,
                crate::kinds::unit_test_counter::types::CounterConfig,
                crate::kinds::unit_test_counter::types::CounterConfigBuilder;
        }
    };
}
pub(crate) use kinds;

#[cfg(test)]
mod tests;
