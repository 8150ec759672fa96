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
use resil_core::hedging::HedgingConfigBuilder;
use resil_core::retry::RetryConfigBuilder;
use resil_core::ErrorKind;
use resil_options::case::snake_case;

use crate::config::FileConfig;
use crate::error::RegistryError;
use crate::http_status::StatusVerdicts;

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
    /// Other names config files may use for a class, as `(alias, class)`:
    /// typically the Java exception a Spring file lists
    /// (`("java.io.IOException", "io")`). `#[error_class(aliases = […])]`
    /// on a variant fills it in.
    fn error_class_aliases() -> &'static [(&'static str, &'static str)]
    where
        Self: Sized,
    {
        &[]
    }
    /// The HTTP status this error carries, when it wraps a downstream's
    /// answer: `#[error_class(http)]` on the variant holding a
    /// `resil::http::HttpError` (or any [`HttpStatus`](crate::HttpStatus))
    /// fills it in. The registry then classifies it by the
    /// `resil.http.instances.<name>` sets the file gives the breaker's or
    /// retry's name (an ignored status is not a failure and is not retried),
    /// so the rule is written once, in the file.
    fn http_status(&self) -> Option<u16> {
        None
    }
}

/// Java exception names Spring files list, and the `resil::Error` kind each
/// stands for. Any other Java name resolves by its simple name (see
/// [`java_simple_names`]), which already covers Resilience4j's own
/// exceptions (`CallNotPermittedException` → `call_not_permitted`).
pub const WELL_KNOWN_JAVA_NAMES: [(&str, &str); 5] = [
    (
        "io.github.resilience4j.circuitbreaker.CallNotPermittedException",
        "call_not_permitted",
    ),
    (
        "io.github.resilience4j.bulkhead.BulkheadFullException",
        "bulkhead_full",
    ),
    (
        "io.github.resilience4j.ratelimiter.RequestNotPermitted",
        "request_not_permitted",
    ),
    (
        "io.github.resilience4j.retry.MaxRetriesExceededException",
        "max_retries_exceeded",
    ),
    // What a time limiter's timeout is in Java.
    ("java.util.concurrent.TimeoutException", "timeout"),
];

/// The names a Java class name may stand for, best first: its simple name
/// (package and outer class dropped) in snake case, then the same without an
/// `Exception` or `Error` suffix. `com.example.InventoryConnectionException`
/// gives `inventory_connection_exception`, `inventory_connection`. A name
/// that is not written like a Java class gives nothing.
pub fn java_simple_names(name: &str) -> Vec<String> {
    let simple = name.rsplit(['.', '$']).next().unwrap_or(name);
    if simple.is_empty() || !simple.starts_with(|c: char| c.is_ascii_uppercase()) {
        return Vec::new();
    }
    let mut out = vec![snake_case(simple)];
    for suffix in ["Exception", "Error", "Throwable"] {
        if let Some(stem) = simple.strip_suffix(suffix).filter(|s| !s.is_empty()) {
            out.push(snake_case(stem));
        }
    }
    out
}

/// The names `resil::Error` kinds answer to in error lists.
pub const ERROR_KIND_NAMES: [(&str, ErrorKind); 8] = [
    ("call_not_permitted", ErrorKind::CallNotPermitted),
    ("bulkhead_full", ErrorKind::BulkheadFull),
    ("request_not_permitted", ErrorKind::RequestNotPermitted),
    ("timeout", ErrorKind::Timeout),
    ("retry_budget_exhausted", ErrorKind::RetryBudgetExhausted),
    ("max_retries_exceeded", ErrorKind::MaxRetriesExceeded),
    ("deadline_exceeded", ErrorKind::DeadlineExceeded),
    ("throttled", ErrorKind::Throttled),
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
    kind!("throttled", e::Throttled);
    b
}

type Names = Arc<[String]>;

/// One registered error type, with its predicates monomorphised.
#[derive(Clone)]
struct Class {
    type_id: TypeId,
    names: &'static [&'static str],
    aliases: &'static [(&'static str, &'static str)],
    breaker_record: fn(CircuitBreakerConfigBuilder, Names) -> CircuitBreakerConfigBuilder,
    breaker_ignore: fn(CircuitBreakerConfigBuilder, Names) -> CircuitBreakerConfigBuilder,
    retry_on: fn(RetryConfigBuilder, Names) -> RetryConfigBuilder,
    retry_ignore: fn(RetryConfigBuilder, Names) -> RetryConfigBuilder,
    hedge_on: fn(HedgingConfigBuilder, Names) -> HedgingConfigBuilder,
    breaker_http:
        fn(CircuitBreakerConfigBuilder, Arc<StatusVerdicts>) -> CircuitBreakerConfigBuilder,
    retry_http: fn(RetryConfigBuilder, Arc<StatusVerdicts>) -> RetryConfigBuilder,
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
            aliases: E::error_class_aliases(),
            breaker_record: |b, names| b.record_error(move |e: &E| matches(e, &names)),
            breaker_ignore: |b, names| b.ignore_error(move |e: &E| matches(e, &names)),
            retry_on: |b, names| b.retry_on_error(move |e: &E| matches(e, &names)),
            retry_ignore: |b, names| b.ignore_error(move |e: &E| matches(e, &names)),
            hedge_on: |b, names| b.handle_error(move |e: &E| matches(e, &names)),
            breaker_http: |b, sets| b.ignore_error(move |e: &E| sets.spares(e)),
            retry_http: |b, sets| b.ignore_error(move |e: &E| sets.spares(e)),
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
    /// A breaker's `record-failure-predicate`: names of registered predicates.
    BreakerRecordPredicate,
    /// A breaker's `ignore-exception-predicate`.
    BreakerIgnorePredicate,
    /// A breaker's `record-result-predicate` (on successful values).
    BreakerResultPredicate,
    /// A retry's `retry-exception-predicate`.
    RetryOnPredicate,
    /// A retry's `result-predicate` (on successful values).
    RetryResultPredicate,
    /// A hedging's `hedge-errors`: the error classes that start a hedge at
    /// once (others end the call).
    HedgeOn,
    /// A chaos instance's `errors`: injections registered with
    /// [`Registry::register_chaos_error`](crate::Registry::register_chaos_error),
    /// at the entry's `error-rate` (the `f64`'s bits, so the list stays `Eq`).
    ChaosErrors(u64),
    /// A chaos instance's `results`, registered with
    /// [`Registry::register_chaos_result`](crate::Registry::register_chaos_result),
    /// at the entry's `result-rate` (the `f64`'s bits).
    ChaosResults(u64),
}

impl ErrorList {
    /// Whether the list names predicates registered in code
    /// ([`Registry::register_predicate`](crate::Registry::register_predicate)),
    /// not error classes.
    pub fn is_predicate(self) -> bool {
        matches!(
            self,
            ErrorList::BreakerRecordPredicate
                | ErrorList::BreakerIgnorePredicate
                | ErrorList::BreakerResultPredicate
                | ErrorList::RetryOnPredicate
                | ErrorList::RetryResultPredicate
                | ErrorList::ChaosErrors(_)
                | ErrorList::ChaosResults(_)
        )
    }

    /// Whether the list names chaos results (`results`), not errors.
    pub(crate) fn is_chaos_result(self) -> bool {
        matches!(self, ErrorList::ChaosResults(_))
    }

    /// Whether the list names chaos injections (a subset of
    /// [`is_predicate`](Self::is_predicate)).
    pub fn is_chaos(self) -> bool {
        matches!(self, ErrorList::ChaosErrors(_) | ErrorList::ChaosResults(_))
    }
}

type ApplyBreaker = Arc<
    dyn Fn(CircuitBreakerConfigBuilder, ErrorList) -> CircuitBreakerConfigBuilder + Send + Sync,
>;
type ApplyRetry = Arc<dyn Fn(RetryConfigBuilder, ErrorList) -> RetryConfigBuilder + Send + Sync>;

/// A predicate registered in code under a name a file can use, as a Spring
/// file names a `Predicate<Throwable>` class.
#[derive(Clone)]
struct NamedPredicate {
    name: String,
    breaker: ApplyBreaker,
    retry: ApplyRetry,
}

/// Transforms a builder registered in code under a name a file can use,
/// at a rate: a chaos instance's injections (a file cannot build a Rust
/// value). `B` is the builder they apply to.
#[derive(Clone)]
struct Named<B> {
    name: String,
    /// A result (`results`), else an error (`errors`).
    result: bool,
    apply: Apply<B>,
}

/// Adds one registered injection to a builder, at a rate.
type Apply<B> = Arc<dyn Fn(B, f64) -> B + Send + Sync>;

/// The injections registered in code, by name.
pub(crate) struct Injections<B> {
    all: RwLock<Vec<Named<B>>>,
}

impl<B> Default for Injections<B> {
    fn default() -> Self {
        Injections {
            all: RwLock::new(Vec::new()),
        }
    }
}

impl<B> Injections<B> {
    /// Registers `apply` under `name` (a result when `result`, else an
    /// error); a later one of the same name and list replaces it.
    pub(crate) fn register(&self, name: &str, result: bool, apply: Apply<B>) {
        let mut all = self.all.write();
        all.retain(|i| i.name != name || i.result != result);
        all.push(Named {
            name: name.to_owned(),
            result,
            apply,
        });
    }

    /// The injection registered as `name` for results or errors.
    pub(crate) fn find(&self, result: bool, name: &str) -> Option<Apply<B>> {
        self.all
            .read()
            .iter()
            .find(|i| i.name == name && i.result == result)
            .map(|i| Arc::clone(&i.apply))
    }

    /// The names registered for results or errors, sorted.
    pub(crate) fn names(&self, result: bool) -> Vec<String> {
        let mut names: Vec<String> = self
            .all
            .read()
            .iter()
            .filter(|i| i.result == result)
            .map(|i| i.name.clone())
            .collect();
        names.sort();
        names
    }
}

/// The last segment of a Java-style name (`io.github.x.RecordFailurePredicate`
/// → `RecordFailurePredicate`).
fn simple(name: &str) -> &str {
    name.rsplit(['.', '$']).next().unwrap_or(name)
}

/// The error types a registry knows by name.
#[derive(Default)]
#[doc(hidden)]
pub struct ErrorClasses {
    classes: RwLock<Vec<Class>>,
    predicates: RwLock<Vec<NamedPredicate>>,
    /// The injections chaos lists may name.
    pub(crate) injections: Injections<crate::kinds::ChaosBuilder>,
}

impl ErrorClasses {
    pub(crate) fn register<E: ErrorClass>(&self) {
        let mut classes = self.classes.write();
        if classes.iter().all(|c| c.type_id != TypeId::of::<E>()) {
            classes.push(Class::of::<E>());
        }
    }

    /// Whether any error type is registered.
    pub(crate) fn any_registered(&self) -> bool {
        !self.classes.read().is_empty()
    }

    pub(crate) fn register_predicate<T: 'static>(
        &self,
        name: &str,
        predicate: impl Fn(&T) -> bool + Send + Sync + 'static,
    ) {
        let f = Arc::new(predicate);
        let g = Arc::clone(&f);
        let named = NamedPredicate {
            name: name.to_owned(),
            breaker: Arc::new(move |b, list| {
                let f = Arc::clone(&f);
                match list {
                    ErrorList::BreakerIgnorePredicate => b.ignore_error(move |e: &T| f(e)),
                    ErrorList::BreakerResultPredicate => b.record_result(move |v: &T| f(v)),
                    _ => b.record_error(move |e: &T| f(e)),
                }
            }),
            retry: Arc::new(move |b, list| {
                let g = Arc::clone(&g);
                match list {
                    ErrorList::RetryResultPredicate => b.retry_on_result(move |v: &T| g(v)),
                    _ => b.retry_on_error(move |e: &T| g(e)),
                }
            }),
        };
        let mut all = self.predicates.write();
        all.retain(|p| p.name != name);
        all.push(named);
    }

    /// The registered predicates' names, sorted.
    pub(crate) fn predicate_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .predicates
            .read()
            .iter()
            .map(|p| p.name.clone())
            .collect();
        names.sort();
        names
    }

    /// The registered predicate `name` stands for: by its name, else by its
    /// simple name (`io.github.robwin.exception.RecordFailurePredicate`
    /// finds one registered as `RecordFailurePredicate`, and the reverse).
    fn predicate(&self, name: &str) -> Option<NamedPredicate> {
        let all = self.predicates.read();
        all.iter()
            .find(|p| p.name == name)
            .or_else(|| all.iter().find(|p| simple(&p.name) == simple(name)))
            .cloned()
    }

    /// Whether `name` is known for a list of kind `list`.
    pub(crate) fn knows(&self, list: ErrorList, name: &str) -> bool {
        if list.is_chaos() {
            self.injections.find(list.is_chaos_result(), name).is_some()
        } else if list.is_predicate() {
            self.predicate(name).is_some()
        } else {
            self.resolve(name).is_some()
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

    /// The first name in `names` nobody registered (under any spelling
    /// [`resolve`](Self::resolve) accepts).
    /// `Ok` when every name in `names` is known; else the error naming the
    /// first unknown one, the list it is `used_in` and every known name.
    pub(crate) fn check(&self, names: &[String], used_in: &str) -> Result<(), RegistryError> {
        match self.unknown(names) {
            Some(unknown) => Err(RegistryError::UnknownErrorClass {
                name: unknown.to_owned(),
                used_in: used_in.to_owned(),
                known: self.names(),
            }),
            None => Ok(()),
        }
    }

    pub(crate) fn unknown<'a>(&self, names: &'a [String]) -> Option<&'a str> {
        names
            .iter()
            .find(|n| self.resolve(n).is_none())
            .map(String::as_str)
    }

    /// The registered name (or error kind) a list entry stands for: the name
    /// itself; an alias a class declared; a well-known Java name
    /// ([`WELL_KNOWN_JAVA_NAMES`]); else a Java class name by its simple name
    /// ([`java_simple_names`]). `None` when nothing matches.
    pub(crate) fn resolve(&self, name: &str) -> Option<String> {
        let known = self.names();
        let name = name.trim();
        if known.binary_search_by(|k| k.as_str().cmp(name)).is_ok() {
            return Some(name.to_owned());
        }
        for class in self.classes.read().iter() {
            if let Some((_, to)) = class
                .aliases
                .iter()
                .find(|(a, _)| *a == name || a.rsplit('.').next() == Some(name))
            {
                return Some((*to).to_owned());
            }
        }
        if let Some((_, kind)) = WELL_KNOWN_JAVA_NAMES.iter().find(|(java, _)| *java == name) {
            return Some((*kind).to_owned());
        }
        java_simple_names(name)
            .into_iter()
            .find(|candidate| known.binary_search(candidate).is_ok())
    }

    /// `names` with every entry [`resolve`](Self::resolve)d (an unknown one
    /// kept as written: the caller reported it).
    fn resolve_all(&self, names: &[String]) -> Names {
        names
            .iter()
            .map(|n| self.resolve(n).unwrap_or_else(|| n.clone()))
            .collect()
    }

    /// Adds, for each registered error type, the breaker predicate of the
    /// `resil.http` sets `file` gives `name`: an error carrying a status
    /// they do not count as a failure is ignored. Nothing without sets.
    pub(crate) fn apply_http_breaker(
        &self,
        mut b: CircuitBreakerConfigBuilder,
        file: &FileConfig,
        name: &str,
    ) -> CircuitBreakerConfigBuilder {
        let Some(sets) = StatusVerdicts::for_name(file, name) else {
            return b;
        };
        let sets = Arc::new(sets);
        for class in self.classes.read().iter() {
            b = (class.breaker_http)(b, Arc::clone(&sets));
        }
        b
    }

    /// [`apply_http_breaker`](Self::apply_http_breaker) for a retry: an
    /// error carrying a status that is not a failure is not retried.
    pub(crate) fn apply_http_retry(
        &self,
        mut b: RetryConfigBuilder,
        file: &FileConfig,
        name: &str,
    ) -> RetryConfigBuilder {
        let Some(sets) = StatusVerdicts::for_name(file, name) else {
            return b;
        };
        let sets = Arc::new(sets);
        for class in self.classes.read().iter() {
            b = (class.retry_http)(b, Arc::clone(&sets));
        }
        b
    }

    /// Adds the predicates `names` stand for to a breaker builder.
    pub(crate) fn apply_breaker(
        &self,
        mut b: CircuitBreakerConfigBuilder,
        list: ErrorList,
        names: &[String],
    ) -> CircuitBreakerConfigBuilder {
        if list.is_predicate() {
            return names
                .iter()
                .filter_map(|n| self.predicate(n))
                .fold(b, |b, p| (p.breaker)(b, list));
        }
        let names = self.resolve_all(names);
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
        if list.is_predicate() {
            return names
                .iter()
                .filter_map(|n| self.predicate(n))
                .fold(b, |b, p| (p.retry)(b, list));
        }
        let names = self.resolve_all(names);
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
            // As in Resilience4j, a `retry-errors` list is the whole list of
            // what is retried: a refusal kind it does not name (a timeout,
            // say) is not retried either.
            if !names.is_empty() {
                b = b.retry_on_rejection(move |k| kinds.contains(&k));
            }
        }
        b
    }

    /// Adds the predicates of the error classes `names` stand for to a
    /// hedging builder: an error of a listed class starts the next hedge at
    /// once; one of a registered type's other classes ends the call.
    pub(crate) fn apply_hedging(
        &self,
        mut b: HedgingConfigBuilder,
        list: ErrorList,
        names: &[String],
    ) -> HedgingConfigBuilder {
        if list != ErrorList::HedgeOn {
            return b;
        }
        let names = self.resolve_all(names);
        for class in self.classes.read().iter() {
            if class.names.iter().any(|n| names.iter().any(|m| m == n)) {
                b = (class.hedge_on)(b, names.clone());
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
    fn java_class_names_resolve_by_their_simple_name() {
        assert_eq!(
            java_simple_names("com.example.order.InventoryConnectionException"),
            ["inventory_connection_exception", "inventory_connection"]
        );
        assert_eq!(
            java_simple_names("java.io.IOException"),
            ["io_exception", "io"]
        );
        assert_eq!(snake_case("HTTPError"), "http_error");
        assert_eq!(snake_case("HttpServerError"), "http_server_error");
        assert!(java_simple_names("db_timeout").is_empty());
        let classes = ErrorClasses::default();
        classes.register::<Db>();
        assert_eq!(
            classes.resolve("com.acme.DbTimeoutException").as_deref(),
            Some("db_timeout")
        );
        assert_eq!(
            classes.resolve("Outer$DbConstraintError").as_deref(),
            Some("db_constraint")
        );
        assert_eq!(
            classes
                .resolve("io.github.resilience4j.bulkhead.BulkheadFullException")
                .as_deref(),
            Some("bulkhead_full")
        );
        assert_eq!(
            classes
                .resolve("java.util.concurrent.TimeoutException")
                .as_deref(),
            Some("timeout")
        );
        assert_eq!(classes.resolve("com.acme.PaymentDeclinedException"), None);
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
