//! Errors classified by name: the [`ErrorClass`] trait and the registry's list
//! of registered error types.
//!
//! Config files cannot name Rust types, so `record-errors`, `ignore-errors` and
//! `retry-errors` list *names*: each error type the program registers
//! ([`Registry::register_error_class`](crate::Registry::register_error_class))
//! tells which names its values carry, and a list of names becomes one typed
//! predicate per registered type. The kinds of [`resil::Error`](resil_core::Error)
//! (`timeout`, `call_not_permitted`, …) are names too.

use std::any::TypeId;
use std::collections::BTreeSet;
use std::sync::Arc;

use parking_lot::RwLock;
use resil_core::circuit_breaker::CircuitBreakerConfigBuilder;
use resil_core::retry::RetryConfigBuilder;
use resil_core::ErrorKind;

/// A stable name per error value, used by config files' `record-errors` /
/// `ignore-errors` / `retry-errors` lists.
///
/// `#[derive(resil::ErrorClass)]` implements it; a manual impl is a few lines:
///
/// ```
/// use resil_registry::ErrorClass;
///
/// enum InventoryError { Unavailable, NotFound }
///
/// impl ErrorClass for InventoryError {
///     fn error_class(&self) -> &'static str {
///         match self {
///             InventoryError::Unavailable => "unavailable",
///             InventoryError::NotFound => "not_found",
///         }
///     }
///     fn error_classes() -> &'static [&'static str] {
///         &["unavailable", "not_found"]
///     }
/// }
///
/// let registry = resil_registry::Registry::new();
/// registry.register_error_class::<InventoryError>();
/// assert!(registry.error_class_names().contains(&"not_found".to_owned()));
/// ```
pub trait ErrorClass: 'static {
    /// The name of this value's class.
    fn error_class(&self) -> &'static str;
    /// Every name [`error_class`](Self::error_class) can return.
    fn error_classes() -> &'static [&'static str]
    where
        Self: Sized;
}

/// The names `resil::Error` kinds answer to in error lists.
pub const ERROR_KIND_NAMES: [(&str, ErrorKind); 7] = [
    ("call_not_permitted", ErrorKind::CallNotPermitted),
    ("bulkhead_full", ErrorKind::BulkheadFull),
    ("request_not_permitted", ErrorKind::RequestNotPermitted),
    ("timeout", ErrorKind::Timeout),
    ("retry_budget_exhausted", ErrorKind::RetryBudgetExhausted),
    ("max_retries_exceeded", ErrorKind::MaxRetriesExceeded),
    ("deadline_exceeded", ErrorKind::DeadlineExceeded),
];

/// Adds, for each `resil::Error` kind named in `names`, a predicate on that
/// refusal's type: a breaker's nested call classifies an inner refusal (a
/// `Timeout` from a time limiter inside it, …) by predicates written for it.
fn breaker_kinds(
    mut b: CircuitBreakerConfigBuilder,
    ignore: bool,
    names: &[String],
) -> CircuitBreakerConfigBuilder {
    use resil_core::error as e;
    macro_rules! kind {
        ($label:literal, $ty:ty) => {
            if names.iter().any(|n| n == $label) {
                b = if ignore {
                    b.ignore_error(|_: &$ty| true)
                } else {
                    b.record_error(|_: &$ty| true)
                };
            }
        };
    }
    kind!("call_not_permitted", e::CallNotPermitted);
    kind!("bulkhead_full", e::BulkheadFull);
    kind!("request_not_permitted", e::RequestNotPermitted);
    kind!("timeout", e::Timeout);
    kind!("retry_budget_exhausted", e::RetryBudgetExhausted);
    kind!("max_retries_exceeded", e::MaxRetriesExceeded);
    kind!("deadline_exceeded", e::DeadlineExceeded);
    b
}

type Names = Arc<[String]>;

/// One registered error type, with its predicates monomorphised.
#[derive(Clone)]
struct Class {
    type_id: TypeId,
    names: &'static [&'static str],
    breaker_record: fn(CircuitBreakerConfigBuilder, Names) -> CircuitBreakerConfigBuilder,
    breaker_ignore: fn(CircuitBreakerConfigBuilder, Names) -> CircuitBreakerConfigBuilder,
    retry_on: fn(RetryConfigBuilder, Names) -> RetryConfigBuilder,
    retry_ignore: fn(RetryConfigBuilder, Names) -> RetryConfigBuilder,
}

fn matches<E: ErrorClass>(e: &E, names: &[String]) -> bool {
    let class = e.error_class();
    names.iter().any(|n| n == class)
}

impl Class {
    fn of<E: ErrorClass>() -> Class {
        Class {
            type_id: TypeId::of::<E>(),
            names: E::error_classes(),
            breaker_record: |b, names| b.record_error(move |e: &E| matches(e, &names)),
            breaker_ignore: |b, names| b.ignore_error(move |e: &E| matches(e, &names)),
            retry_on: |b, names| b.retry_on_error(move |e: &E| matches(e, &names)),
            retry_ignore: |b, names| b.ignore_error(move |e: &E| matches(e, &names)),
        }
    }
}

/// Which list a set of names came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorList {
    /// A breaker's `record-errors`.
    BreakerRecord,
    /// A breaker's `ignore-errors`.
    BreakerIgnore,
    /// A retry's `retry-errors`.
    RetryOn,
    /// A retry's `ignore-errors`.
    RetryIgnore,
}

/// The error types a registry knows by name.
#[derive(Default)]
#[doc(hidden)]
pub struct ErrorClasses {
    classes: RwLock<Vec<Class>>,
}

impl ErrorClasses {
    pub(crate) fn register<E: ErrorClass>(&self) {
        let mut classes = self.classes.write();
        if classes.iter().all(|c| c.type_id != TypeId::of::<E>()) {
            classes.push(Class::of::<E>());
        }
    }

    /// Every name a list may use, sorted: registered classes and error kinds.
    pub(crate) fn names(&self) -> Vec<String> {
        let mut all: BTreeSet<String> = ERROR_KIND_NAMES
            .iter()
            .map(|(n, _)| (*n).to_owned())
            .collect();
        for class in self.classes.read().iter() {
            all.extend(class.names.iter().map(|n| (*n).to_owned()));
        }
        all.into_iter().collect()
    }

    /// The first name in `names` nobody registered.
    pub(crate) fn unknown<'a>(&self, names: &'a [String]) -> Option<&'a str> {
        let known = self.names();
        names
            .iter()
            .find(|n| known.binary_search(n).is_err())
            .map(String::as_str)
    }

    /// Adds the predicates `names` stand for to a breaker builder.
    pub(crate) fn apply_breaker(
        &self,
        mut b: CircuitBreakerConfigBuilder,
        list: ErrorList,
        names: &[String],
    ) -> CircuitBreakerConfigBuilder {
        let names: Names = names.iter().cloned().collect();
        for class in self.classes.read().iter() {
            if !class.names.iter().any(|n| names.iter().any(|m| m == n)) {
                continue;
            }
            b = match list {
                ErrorList::BreakerIgnore => (class.breaker_ignore)(b, names.clone()),
                _ => (class.breaker_record)(b, names.clone()),
            };
        }
        breaker_kinds(b, list == ErrorList::BreakerIgnore, &names)
    }

    /// Adds the predicates `names` stand for to a retry builder; error-kind
    /// names choose which refusals are retried.
    pub(crate) fn apply_retry(
        &self,
        mut b: RetryConfigBuilder,
        list: ErrorList,
        names: &[String],
    ) -> RetryConfigBuilder {
        let names: Names = names.iter().cloned().collect();
        for class in self.classes.read().iter() {
            if !class.names.iter().any(|n| names.iter().any(|m| m == n)) {
                continue;
            }
            b = match list {
                ErrorList::RetryIgnore => (class.retry_ignore)(b, names.clone()),
                _ => (class.retry_on)(b, names.clone()),
            };
        }
        if list == ErrorList::RetryOn {
            let kinds: Vec<ErrorKind> = ERROR_KIND_NAMES
                .iter()
                .filter(|(n, _)| names.iter().any(|m| m == n))
                .map(|(_, k)| *k)
                .collect();
            if !kinds.is_empty() {
                b = b.retry_on_rejection(move |k| kinds.contains(&k));
            }
        }
        b
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use resil_core::circuit_breaker::{CircuitBreakerConfig, Outcome};

    #[derive(Debug)]
    enum Db {
        Timeout,
        Constraint,
    }

    impl ErrorClass for Db {
        fn error_class(&self) -> &'static str {
            match self {
                Db::Timeout => "db_timeout",
                Db::Constraint => "db_constraint",
            }
        }
        fn error_classes() -> &'static [&'static str] {
            &["db_timeout", "db_constraint"]
        }
    }

    #[test]
    fn names_include_registered_classes_and_error_kinds_and_unknown_finds_the_stray() {
        let classes = ErrorClasses::default();
        classes.register::<Db>();
        classes.register::<Db>();
        let names = classes.names();
        assert!(names.contains(&"db_timeout".to_owned()));
        assert!(names.contains(&"timeout".to_owned()));
        assert_eq!(names.iter().filter(|n| *n == "db_timeout").count(), 1);
        let list = vec!["db_timeout".to_owned(), "db_timout".to_owned()];
        assert_eq!(classes.unknown(&list), Some("db_timout"));
    }

    #[test]
    fn a_record_list_becomes_a_typed_predicate() {
        let classes = ErrorClasses::default();
        classes.register::<Db>();
        let b = classes.apply_breaker(
            CircuitBreakerConfig::builder(),
            ErrorList::BreakerRecord,
            &["db_timeout".to_owned()],
        );
        let config = b.build().unwrap();
        assert_eq!(config.classify_error(&Db::Timeout), Outcome::Failure);
        assert_eq!(config.classify_error(&Db::Constraint), Outcome::Success);
        let b = classes.apply_breaker(
            CircuitBreakerConfig::builder(),
            ErrorList::BreakerIgnore,
            &["db_constraint".to_owned()],
        );
        let config = b.build().unwrap();
        assert_eq!(config.classify_error(&Db::Constraint), Outcome::Ignored);
        assert_eq!(config.classify_error(&Db::Timeout), Outcome::Failure);
    }

    #[test]
    fn an_error_kind_name_becomes_a_predicate_on_that_refusal() {
        let classes = ErrorClasses::default();
        let full = resil_core::error::BulkheadFull::new("db");
        let b = classes.apply_breaker(
            CircuitBreakerConfig::builder(),
            ErrorList::BreakerIgnore,
            &["bulkhead_full".to_owned()],
        );
        let config = b.build().unwrap();
        assert_eq!(config.classify_error(&full), Outcome::Ignored);
        let b = classes.apply_breaker(
            CircuitBreakerConfig::builder(),
            ErrorList::BreakerRecord,
            &["bulkhead_full".to_owned()],
        );
        let config = b.build().unwrap();
        assert_eq!(config.classify_error(&full), Outcome::Failure);
        assert_eq!(
            config.classify_error(&"other"),
            Outcome::Success,
            "only what the list names"
        );
    }
}
