//! Typed closures stored type-erased.
//!
//! One circuit breaker or retry serves calls of many types, so a predicate
//! written for a concrete type (`|e: &io::Error| …`) is stored behind `&dyn Any`
//! and answers only for values of that type.

use std::any::Any;
use std::sync::Arc;

/// A closure written for one type: `Some(answer)` for a value of that type,
/// `None` for a value of any other type.
pub(crate) type Erased<R> = Arc<dyn Fn(&dyn Any) -> Option<R> + Send + Sync>;

/// Erases `f`, written for values of type `X`.
pub(crate) fn erase<X: 'static, R>(f: impl Fn(&X) -> R + Send + Sync + 'static) -> Erased<R> {
    Arc::new(move |any: &dyn Any| any.downcast_ref::<X>().map(&f))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_erased_closure_answers_only_for_its_own_type() {
        let even = erase(|n: &u32| n % 2 == 0);
        assert_eq!(even(&4u32), Some(true));
        assert_eq!(even(&3u32), Some(false));
        assert_eq!(even(&4u64), None);
    }
}
