//! What the registry needs of each of the nine kinds of primitive it holds
//! ([`Primitive`], sealed), one impl per resil-core type.

use std::fmt;
use std::sync::Arc;

use resil_core::bulkhead::{
    AdaptiveBulkhead, AdaptiveBulkheadConfig, AdaptiveBulkheadConfigBuilder, Bulkhead,
    BulkheadConfig, BulkheadConfigBuilder,
};
use resil_core::chaos::{Chaos, ChaosConfig, ChaosConfigBuilder};
use resil_core::circuit_breaker::{
    CircuitBreaker, CircuitBreakerConfig, CircuitBreakerConfigBuilder, State,
};
use resil_core::clock::SharedClock;
use resil_core::hedging::{Hedging, HedgingConfig, HedgingConfigBuilder};
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfig, RateLimiterConfigBuilder};
use resil_core::retry::{Retry, RetryConfig, RetryConfigBuilder};
use resil_core::thread_pool_bulkhead::{
    ThreadPoolBulkhead, ThreadPoolBulkheadConfig, ThreadPoolBulkheadConfigBuilder,
};
use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfig, TimeLimiterConfigBuilder};
use resil_core::ConfigError;

use crate::classes::{ErrorClasses, ErrorList};
use crate::config::{ErrorNames, FileConfig, Resolved, Section};
use crate::kind::Kind;
use crate::registry::Registry;
use crate::store::{Store, Stores};
use crate::telemetry::describe::Describe;

mod sealed {
    use std::sync::Arc;

    use resil_core::clock::SharedClock;

    use crate::registry::Registry;
    use crate::store::{Store, Stores};

    /// What the registry does differently per kind. Sealed: users cannot
    /// name it, so it can change freely.
    pub trait Sealed: Sized {
        /// This kind's store.
        fn store(stores: &Stores) -> &Store<Self>
        where
            Self: super::Primitive;

        /// Every file-settable option of `config` as a file writes it.
        fn render(config: &<Self as super::Primitive>::Config) -> Vec<(&'static str, String)>
        where
            Self: super::Primitive;

        /// Applies `config` through the instance's run-time setters, when
        /// every difference is one a setter covers; whether it did (the
        /// instance is then kept, nothing it counts is lost).
        fn update_in_place(&self, _config: &<Self as super::Primitive>::Config) -> bool
        where
            Self: super::Primitive,
        {
            false
        }

        /// The instance that replaces `self` for `config`, and whether it
        /// carried `self`'s state over.
        fn rebuilt(
            &self,
            name: Arc<str>,
            config: <Self as super::Primitive>::Config,
            clock: Option<&SharedClock>,
        ) -> (Self, bool)
        where
            Self: super::Primitive,
        {
            (
                <Self as super::Primitive>::create(name, config, clock),
                false,
            )
        }

        /// After code settings of `name` changed (`code`, not yet applied):
        /// the Redis-backed twins to rebuild with them. Validates only.
        #[cfg(feature = "redis")]
        fn twin_rebuilds(
            _registry: &Registry,
            _code: &crate::store::CodeSettings<<Self as super::Primitive>::Builder>,
            _name: &str,
        ) -> Result<Vec<crate::distributed::Rebuild>, crate::RegistryError>
        where
            Self: super::Primitive,
        {
            Ok(Vec::new())
        }

        /// A reload from `old` to `new`: the Redis-backed twins it rebuilds,
        /// with an error for each that cannot be. Validates only.
        #[cfg(feature = "redis")]
        fn twin_reload(
            _registry: &Registry,
            _old: &crate::config::FileConfig,
            _new: &crate::config::FileConfig,
            _code: &crate::store::CodeSettings<<Self as super::Primitive>::Builder>,
            _errors: &mut Vec<crate::RegistryError>,
        ) -> Vec<crate::distributed::Rebuild>
        where
            Self: super::Primitive,
        {
            Vec::new()
        }

        /// Settles `next` before it replaces `previous` under `name`, while
        /// no handle sees it yet.
        fn before_install(
            _registry: &Registry,
            _name: &str,
            _previous: &Self,
            _next: &Self,
            _carried: bool,
        ) {
        }
    }
}

/// A primitive the registry can hold: one of the nine resil-core types.
///
/// Sealed; it lets the generic methods ([`Registry::get`](crate::Registry::get),
/// [`Registry::configure`](crate::Registry::configure), …) serve every kind
/// with one implementation.
pub trait Primitive:
    sealed::Sealed + Describe + Clone + Send + Sync + fmt::Debug + 'static
{
    /// The validated configuration.
    type Config: Clone + Send + Sync + fmt::Debug + 'static;
    /// Its builder, which code settings transform.
    type Builder: Clone + Send + Sync + fmt::Debug + 'static;
    /// Which kind this is.
    const KIND: Kind;

    /// A builder holding Resilience4j's defaults.
    fn default_builder() -> Self::Builder;
    /// Validates a builder.
    fn build(builder: Self::Builder) -> Result<Self::Config, ConfigError>;
    /// A builder starting from `config`.
    fn to_builder(config: &Self::Config) -> Self::Builder;
    /// A new instance; `clock` (the registry's, when it has one) times it.
    fn create(name: Arc<str>, config: Self::Config, clock: Option<&SharedClock>) -> Self;
    /// The configuration the instance runs with.
    fn config_of(&self) -> Self::Config;

    /// This kind's part of a config file.
    #[doc(hidden)]
    fn section(file: &FileConfig) -> &Section<Self::Config>;
    /// The builder a config file's entry resolved to.
    #[doc(hidden)]
    fn file_builder(entry: &Resolved<Self::Config>) -> Self::Builder;
    /// The error-name lists of a file entry, and the predicates they become.
    #[doc(hidden)]
    fn error_lists(_entry: &Resolved<Self::Config>) -> Vec<(ErrorNames<'_>, ErrorList)> {
        Vec::new()
    }
    /// Adds the predicates of one error-name list to a builder.
    #[doc(hidden)]
    fn apply_error_list(
        _classes: &ErrorClasses,
        builder: Self::Builder,
        _list: ErrorList,
        _names: &[String],
    ) -> Self::Builder {
        builder
    }
}

macro_rules! primitive {
    ($ty:ty, $config:ty, $builder:ty, $kind:expr, $section:ident, |$c:ident| $to_builder:expr $(, $extra:item)* $(; sealed: $($sealed:item)*)?) => {
        impl sealed::Sealed for $ty {
            fn store(stores: &Stores) -> &Store<Self> {
                &stores.$section
            }

            fn render(config: &$config) -> Vec<(&'static str, String)> {
                crate::config::rendered(config)
            }
            $($($sealed)*)?
        }

        impl Primitive for $ty {
            type Config = $config;
            type Builder = $builder;
            const KIND: Kind = $kind;

            fn default_builder() -> $builder {
                <$config>::builder()
            }

            fn build(builder: $builder) -> Result<$config, ConfigError> {
                builder.build()
            }

            fn to_builder($c: &$config) -> $builder {
                $to_builder
            }

            fn create(name: Arc<str>, config: $config, clock: Option<&SharedClock>) -> Self {
                match clock {
                    Some(clock) => <$ty>::with_clock(name, config, clock.clone()),
                    None => <$ty>::new(name, config),
                }
            }

            #[allow(clippy::clone_on_copy)]
            fn config_of(&self) -> $config {
                self.config().clone()
            }

            fn section(file: &FileConfig) -> &Section<$config> {
                file.$section()
            }

            fn file_builder(entry: &Resolved<$config>) -> $builder {
                entry.builder()
            }

            $($extra)*
        }
    };
}

primitive!(
    CircuitBreaker,
    CircuitBreakerConfig,
    CircuitBreakerConfigBuilder,
    Kind::CircuitBreaker,
    circuit_breaker,
    |c| c.to_builder(),
    fn error_lists(entry: &Resolved<CircuitBreakerConfig>) -> Vec<(ErrorNames<'_>, ErrorList)> {
        let mut lists = Vec::new();
        if let Some(names) = entry.record_errors() {
            lists.push((names, ErrorList::BreakerRecord));
        }
        if let Some(names) = entry.ignore_errors() {
            lists.push((names, ErrorList::BreakerIgnore));
        }
        for (key, list) in [
            (
                "record-failure-predicate",
                ErrorList::BreakerRecordPredicate,
            ),
            (
                "ignore-exception-predicate",
                ErrorList::BreakerIgnorePredicate,
            ),
            ("record-result-predicate", ErrorList::BreakerResultPredicate),
        ] {
            if let Some(names) = entry.predicate_names(key) {
                lists.push((names, list));
            }
        }
        lists
    },
    fn apply_error_list(
        classes: &ErrorClasses,
        builder: CircuitBreakerConfigBuilder,
        list: ErrorList,
        names: &[String],
    ) -> CircuitBreakerConfigBuilder {
        classes.apply_breaker(builder, list, names)
    };
    sealed:
    /// A window of the same type and size carries the state and window over.
    fn rebuilt(
        &self,
        _name: Arc<str>,
        config: CircuitBreakerConfig,
        _clock: Option<&SharedClock>,
    ) -> (Self, bool) {
        self.reconfigured(config)
    }

    /// A manual override (with its TTL) stays in force. Without one, a
    /// breaker whose state could not be carried over keeps the mode an
    /// operator or a transition set (DISABLED, METRICS_ONLY, FORCED_OPEN)
    /// and starts CLOSED otherwise.
    fn before_install(
        registry: &Registry,
        name: &str,
        previous: &Self,
        next: &Self,
        carried: bool,
    ) {
        if registry.reapply_override(name, next) || carried {
            return;
        }
        let _ = match previous.state() {
            State::Disabled => next.transition_to_disabled(),
            State::MetricsOnly => next.transition_to_metrics_only(),
            State::ForcedOpen => next.transition_to_forced_open(),
            _ => Ok(()),
        };
    }
);
primitive!(
    Retry,
    RetryConfig,
    RetryConfigBuilder,
    Kind::Retry,
    retry,
    |c| c.to_builder(),
    fn error_lists(entry: &Resolved<RetryConfig>) -> Vec<(ErrorNames<'_>, ErrorList)> {
        let mut lists = Vec::new();
        if let Some(names) = entry.retry_errors() {
            lists.push((names, ErrorList::RetryOn));
        }
        if let Some(names) = entry.ignore_errors() {
            lists.push((names, ErrorList::RetryIgnore));
        }
        for (key, list) in [
            ("retry-exception-predicate", ErrorList::RetryOnPredicate),
            ("result-predicate", ErrorList::RetryResultPredicate),
        ] {
            if let Some(names) = entry.predicate_names(key) {
                lists.push((names, list));
            }
        }
        lists
    },
    fn apply_error_list(
        classes: &ErrorClasses,
        builder: RetryConfigBuilder,
        list: ErrorList,
        names: &[String],
    ) -> RetryConfigBuilder {
        classes.apply_retry(builder, list, names)
    }
);
primitive!(
    Bulkhead,
    BulkheadConfig,
    BulkheadConfigBuilder,
    Kind::Bulkhead,
    bulkhead,
    |c| c.to_builder();
    sealed:
    /// Every bulkhead setting has a run-time setter.
    fn update_in_place(&self, config: &BulkheadConfig) -> bool {
        self.change_config(*config);
        true
    }
);
primitive!(
    RateLimiter,
    RateLimiterConfig,
    RateLimiterConfigBuilder,
    Kind::RateLimiter,
    rate_limiter,
    |c| c.to_builder();
    sealed:
    /// The limit and the timeout have run-time setters; a new refresh
    /// period needs a new instance.
    fn update_in_place(&self, next: &RateLimiterConfig) -> bool {
        let current = self.config();
        if current.limit_refresh_period() != next.limit_refresh_period() {
            return false;
        }
        if current.limit_for_period() != next.limit_for_period()
            && self.change_limit_for_period(next.limit_for_period()).is_err()
        {
            return false;
        }
        self.change_timeout_duration(next.timeout_duration());
        true
    }

    /// The Redis-backed limiter of the same name takes the new quota too.
    #[cfg(feature = "redis")]
    fn twin_rebuilds(
        registry: &Registry,
        code: &crate::store::CodeSettings<RateLimiterConfigBuilder>,
        name: &str,
    ) -> Result<Vec<crate::distributed::Rebuild>, crate::RegistryError> {
        Ok(registry.reconfigure_distributed(code, name)?.into_iter().collect())
    }

    #[cfg(feature = "redis")]
    fn twin_reload(
        registry: &Registry,
        old: &FileConfig,
        new: &FileConfig,
        code: &crate::store::CodeSettings<RateLimiterConfigBuilder>,
        errors: &mut Vec<crate::RegistryError>,
    ) -> Vec<crate::distributed::Rebuild> {
        registry.validate_distributed(old, new, code, errors)
    }
);
primitive!(
    TimeLimiter,
    TimeLimiterConfig,
    TimeLimiterConfigBuilder,
    Kind::TimeLimiter,
    time_limiter,
    |c| TimeLimiterConfig::builder()
        .timeout_duration(c.timeout_duration())
        .cancel_running_future(c.cancel_running_future())
);

primitive!(
    Hedging,
    HedgingConfig,
    HedgingConfigBuilder,
    Kind::Hedging,
    hedging,
    |c| c.to_builder(),
    fn error_lists(entry: &Resolved<HedgingConfig>) -> Vec<(ErrorNames<'_>, ErrorList)> {
        entry
            .names_of("hedge-errors")
            .map(|names| (names, ErrorList::HedgeOn))
            .into_iter()
            .collect()
    },
    fn apply_error_list(
        classes: &ErrorClasses,
        builder: HedgingConfigBuilder,
        list: ErrorList,
        names: &[String],
    ) -> HedgingConfigBuilder {
        classes.apply_hedging(builder, list, names)
    }
);
primitive!(
    AdaptiveBulkhead,
    AdaptiveBulkheadConfig,
    AdaptiveBulkheadConfigBuilder,
    Kind::AdaptiveBulkhead,
    adaptive_bulkhead,
    |c| c.to_builder()
);
primitive!(
    Chaos,
    ChaosConfig,
    ChaosConfigBuilder,
    Kind::Chaos,
    chaos,
    |c| c.to_builder(),
    fn error_lists(entry: &Resolved<ChaosConfig>) -> Vec<(ErrorNames<'_>, ErrorList)> {
        let mut lists = Vec::new();
        for (key, rate_key, list) in [
            ("errors", "error-rate", ErrorList::ChaosErrors as fn(u64) -> ErrorList),
            ("results", "result-rate", ErrorList::ChaosResults),
        ] {
            if let Some(names) = entry.names_of(key) {
                lists.push((names, list(entry.f64_of(rate_key).unwrap_or(0.0).to_bits())));
            }
        }
        lists
    },
    fn apply_error_list(
        classes: &ErrorClasses,
        builder: ChaosConfigBuilder,
        list: ErrorList,
        names: &[String],
    ) -> ChaosConfigBuilder {
        classes.apply_chaos(builder, list, names)
    };
    sealed:
    /// An operator's switch (on, with its TTL and reason) survives a
    /// reload or a `configure_chaos`: a drill is not ended by a config
    /// change, and its TTL still ends it.
    fn before_install(
        _registry: &Registry,
        _name: &str,
        previous: &Self,
        next: &Self,
        _carried: bool,
    ) {
        let status = previous.status();
        let (true, Some(reason)) = (status.enabled(), status.reason()) else {
            return;
        };
        match status.expires_in() {
            Some(ttl) => next.enable_for(ttl, reason),
            None => next.enable(reason),
        }
    }
);

impl sealed::Sealed for ThreadPoolBulkhead {
    fn store(stores: &Stores) -> &Store<Self> {
        &stores.thread_pool_bulkhead
    }

    fn render(config: &ThreadPoolBulkheadConfig) -> Vec<(&'static str, String)> {
        crate::config::rendered(config)
    }
}

impl Primitive for ThreadPoolBulkhead {
    type Config = ThreadPoolBulkheadConfig;
    type Builder = ThreadPoolBulkheadConfigBuilder;
    const KIND: Kind = Kind::ThreadPoolBulkhead;

    fn default_builder() -> Self::Builder {
        ThreadPoolBulkheadConfig::builder()
    }

    fn build(builder: Self::Builder) -> Result<Self::Config, ConfigError> {
        builder.build()
    }

    fn to_builder(c: &Self::Config) -> Self::Builder {
        ThreadPoolBulkheadConfig::builder()
            .core_thread_pool_size(c.core_thread_pool_size())
            .max_thread_pool_size(c.max_thread_pool_size())
            .queue_capacity(c.queue_capacity())
            .keep_alive_duration(c.keep_alive_duration())
    }

    /// The thread-pool bulkhead reads no clock (its keep-alive is a real
    /// condition-variable wait), so the registry's clock does not apply.
    fn create(name: Arc<str>, config: Self::Config, _clock: Option<&SharedClock>) -> Self {
        ThreadPoolBulkhead::new(name, config)
    }

    fn config_of(&self) -> Self::Config {
        self.config().clone()
    }

    fn section(file: &FileConfig) -> &Section<Self::Config> {
        file.thread_pool_bulkhead()
    }

    fn file_builder(entry: &Resolved<Self::Config>) -> Self::Builder {
        entry.builder()
    }
}
