//! `on = [...]` beside a `fallback`: the error classes the fallback list
//! takes over. An error of another class goes by every fallback untouched
//! (the call's own error as it is, a refusal through `E: From<Rejection>`)
//! and is not counted as a fallback call.

use std::marker::PhantomData;

use resil_core::Error;
use resil_registry::ErrorClass;

use super::fallback::{Covers, No};

/// The names `#[derive(ErrorClass)]` gives a type's classes, as the
/// associated constants of [`Names`](Self::Names), so `on = [upstream]` is
/// checked at compile time: a class the type lacks is rustc's "no associated
/// item named `upstream`" at the name as written, with a close one suggested.
#[diagnostic::on_unimplemented(
    message = "`on = [...]` names error classes of `{Self}`, which does not derive `resil::ErrorClass`",
    label = "a class of `{Self}`",
    note = "add `#[derive(resil::ErrorClass)]` to `{Self}` (a variant's class is its snake_case name), or list only refusals: `rejected` (every refusal), `timeout`, `call_not_permitted`, `bulkhead_full`, `request_not_permitted`, …"
)]
pub trait ErrorClassNames: ErrorClass {
    /// A type with one associated constant per class name.
    type Names;

    /// Whether a fallback with `on = [names]` takes `err`: a call error of
    /// a listed class, or a refusal listed by its kind or as `rejected`. A
    /// method of this trait, so a type without the derive is one error,
    /// this trait's message.
    #[inline]
    fn on_classes(err: &Error<Self>, names: &[&str]) -> bool
    where
        Self: Sized,
    {
        match err.as_call() {
            Some(e) => names.contains(&e.error_class()),
            None => refusal_listed(err, names),
        }
    }
}

/// [`ErrorClassNames::on_classes`] when `on` lists refusals only: no call error is taken.
#[inline]
pub fn on_refusals<E>(err: &Error<E>, names: &[&str]) -> bool {
    err.is_rejection() && refusal_listed(err, names)
}

fn refusal_listed<E>(err: &Error<E>, names: &[&str]) -> bool {
    let kind = err.kind();
    names.iter().any(|n| *n == "rejected" || kind == *n)
}

/// The coverage of fallbacks narrowed by an `on` that does not list
/// `rejected`: some refusal may be left, so the fn's error must carry one.
#[inline(always)]
pub fn some_refusal_left<C, R>(_: PhantomData<Covers<C, R>>) -> PhantomData<Covers<C, No>> {
    PhantomData
}

#[cfg(test)]
mod tests {
    use super::*;
    use resil_core::error::{BulkheadFull, Timeout};
    use std::time::Duration;

    #[derive(Debug)]
    enum PriceError {
        Upstream,
        NotFound,
    }

    impl ErrorClass for PriceError {
        fn error_class(&self) -> &'static str {
            match self {
                PriceError::Upstream => "upstream",
                PriceError::NotFound => "not_found",
            }
        }
        fn error_classes() -> &'static [&'static str] {
            &["upstream", "not_found"]
        }
    }

    impl ErrorClassNames for PriceError {
        type Names = ();
    }

    #[test]
    fn only_the_listed_classes_and_refusals_are_taken() {
        let on = ["upstream", "timeout"];
        let on_classes = PriceError::on_classes;
        assert!(on_classes(&Error::Call(PriceError::Upstream), &on));
        assert!(!on_classes(&Error::Call(PriceError::NotFound), &on));
        let timeout: Error<PriceError> = Timeout::new("p", Duration::from_secs(1)).into();
        let full: Error<PriceError> = BulkheadFull::new("p").into();
        assert!(on_classes(&timeout, &on));
        assert!(!on_classes(&full, &on));
        assert!(on_classes(&full, &["rejected"]));
        assert!(on_refusals(&full, &["bulkhead_full"]));
        assert!(!on_refusals(
            &Error::Call(PriceError::Upstream),
            &["rejected"]
        ));
    }
}
