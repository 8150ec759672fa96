//! Error classes and named predicates: the names config files use for
//! errors and predicates written in code.

use resil_core::circuit_breaker::CircuitBreakerConfigBuilder;
use resil_core::retry::RetryConfigBuilder;

use crate::classes::{ErrorClass, ErrorList};
use crate::error::RegistryError;

use super::Registry;

impl Registry {
    /// Registers an error type whose class names config lists may use.
    pub fn register_error_class<E: ErrorClass>(&self) {
        self.inner.classes.register::<E>();
    }

    /// Registers a predicate under `name`, for config files to name it as a
    /// Spring file names a Java `Predicate` class: `record-failure-predicate`,
    /// `ignore-exception-predicate` and `retry-exception-predicate` apply it to
    /// errors of type `T`; `record-result-predicate` and `result-predicate`
    /// to successful values of type `T`. A file may write the name with a
    /// package (`io.github.robwin.exception.RecordFailurePredicate` finds
    /// `RecordFailurePredicate`). Register before loading the file; a name
    /// registered twice keeps the later predicate.
    ///
    /// ```
    /// # #[cfg(feature = "yaml")] {
    /// use resil_registry::{FileConfig, Registry};
    ///
    /// #[derive(Debug)]
    /// enum ApiError { Business, Down }
    ///
    /// let registry = Registry::new();
    /// registry.register_predicate("RecordFailurePredicate", |e: &ApiError| {
    ///     !matches!(e, ApiError::Business)
    /// });
    /// registry.reload(FileConfig::from_yaml_str("
    /// resilience4j.circuitbreaker.instances.backendB:
    ///   recordFailurePredicate: io.github.robwin.exception.RecordFailurePredicate
    /// ").unwrap()).unwrap();
    /// let breaker = registry.circuit_breaker("backendB");
    /// let _ = breaker.call(|| Err::<(), _>(ApiError::Business));
    /// let _ = breaker.call(|| Err::<(), _>(ApiError::Down));
    /// assert_eq!(breaker.metrics().failed_calls(), 1);
    /// # }
    /// ```
    pub fn register_predicate<T: 'static>(
        &self,
        name: &str,
        predicate: impl Fn(&T) -> bool + Send + Sync + 'static,
    ) {
        self.inner.classes.register_predicate(name, predicate);
    }

    /// Registers an error a chaos instance may inject, under `name`, for
    /// config files to list in `resilience4j.chaos.instances.<x>.errors`
    /// (a file cannot build a Rust value). While the instance is enabled,
    /// a call whose error type is `E` fails with `make()` at the entry's
    /// `error-rate`, without reaching the downstream. One injection per
    /// error type takes part in an instance: list one name per type.
    /// Register before loading the file; a name registered twice keeps the
    /// later factory.
    ///
    /// ```
    /// # #[cfg(feature = "yaml")] {
    /// use resil_registry::{FileConfig, Registry};
    ///
    /// #[derive(Debug, PartialEq)]
    /// enum InventoryError { Unavailable }
    ///
    /// let registry = Registry::new();
    /// registry.register_chaos_error("unavailable", || InventoryError::Unavailable);
    /// registry.reload(FileConfig::from_yaml_str("
    /// resilience4j.chaos.instances.inventory-query:
    ///   enabled: true
    ///   error-rate: 1.0
    ///   errors: [unavailable]
    /// ").unwrap()).unwrap();
    /// let chaos = registry.chaos("inventory-query");
    /// let out = chaos.call(|| Ok::<u32, InventoryError>(7));
    /// assert_eq!(out.unwrap_err().into_call(), Some(InventoryError::Unavailable));
    /// # }
    /// ```
    pub fn register_chaos_error<E: 'static>(
        &self,
        name: &str,
        make: impl Fn() -> E + Send + Sync + 'static,
    ) {
        self.inner.classes.injections.register_error(name, make);
    }

    /// Registers a result a chaos instance may return instead of calling the
    /// downstream, under `name`, for `resilience4j.chaos.instances.<x>.results`
    /// (at the entry's `result-rate`); as
    /// [`register_chaos_error`](Self::register_chaos_error), for successful
    /// values of type `T`.
    pub fn register_chaos_result<T: 'static>(
        &self,
        name: &str,
        make: impl Fn() -> T + Send + Sync + 'static,
    ) {
        self.inner.classes.injections.register_result(name, make);
    }

    /// Every name error lists may use: the registered error classes' names and
    /// the kinds of `resil::Error` (`timeout`, `call_not_permitted`, …), sorted.
    pub fn error_class_names(&self) -> Vec<String> {
        self.inner.classes.names()
    }

    /// Adds the predicates an error-name list stands for to a breaker builder
    /// (`record-errors` or `ignore-errors`): one typed predicate per registered
    /// error class whose names the list uses. An unknown name is an error
    /// listing every registered name; `used_in` names the list in that error.
    pub fn breaker_error_names(
        &self,
        builder: CircuitBreakerConfigBuilder,
        list: ErrorList,
        names: &[String],
        used_in: &str,
    ) -> Result<CircuitBreakerConfigBuilder, RegistryError> {
        self.check_error_names(names, used_in)?;
        Ok(self.inner.classes.apply_breaker(builder, list, names))
    }

    /// As [`breaker_error_names`](Self::breaker_error_names), for a retry's
    /// `retry-errors` or `ignore-errors`; `resil::Error` kind names in
    /// `retry-errors` (`timeout`, …) choose which refusals are retried.
    pub fn retry_error_names(
        &self,
        builder: RetryConfigBuilder,
        list: ErrorList,
        names: &[String],
        used_in: &str,
    ) -> Result<RetryConfigBuilder, RegistryError> {
        self.check_error_names(names, used_in)?;
        Ok(self.inner.classes.apply_retry(builder, list, names))
    }

    pub(crate) fn check_error_names(
        &self,
        names: &[String],
        used_in: &str,
    ) -> Result<(), RegistryError> {
        match self.inner.classes.unknown(names) {
            Some(unknown) => Err(RegistryError::UnknownErrorClass {
                name: unknown.to_owned(),
                used_in: used_in.to_owned(),
                known: self.inner.classes.names(),
            }),
            None => Ok(()),
        }
    }
}
