//! `drain_permissions_on_result`: a predicate over a call's outcome, written
//! for concrete types and stored type-erased in the (shared) configuration.

use std::any::Any;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// `None` for an outcome of other types than the predicate's.
type Erased = Box<dyn Fn(Outcome<'_>) -> Option<bool> + Send + Sync>;

/// A call's outcome as the erased predicate sees it.
#[derive(Clone, Copy)]
enum Outcome<'a> {
    Value(&'a dyn Any),
    Error(&'a dyn Any),
}

/// Resilience4j's `drainPermissionsOnResult`: when it accepts a call's outcome,
/// the limiter's free permits are drained (e.g. after a 429 from the
/// dependency, stop sending until the next refill).
///
/// Written for one pair of types `(T, E)`; outcomes of other types never drain.
/// It looks inside a `resil::Error<E>` (a rate limiter around other resil
/// primitives), up to four levels deep: `Error::Call(e)` is shown as `e`.
#[derive(Clone)]
pub(crate) struct DrainOnResult(Arc<Drain>);

/// One pointer in the configuration (which every limiter keeps inline, so
/// its size is the limiter's).
struct Drain {
    test: Erased,
    /// `Result<T, E>`, the types the predicate is written for.
    written_for: &'static str,
}

impl DrainOnResult {
    pub(crate) fn new<T: 'static, E: 'static>(
        f: impl Fn(Result<&T, &E>) -> bool + Send + Sync + 'static,
    ) -> Self {
        DrainOnResult(Arc::new(Drain {
            test: Box::new(move |outcome| match outcome {
                Outcome::Value(v) => v.downcast_ref::<T>().map(|v| f(Ok(v))),
                Outcome::Error(e) => match e.downcast_ref::<E>() {
                    Some(e) => Some(f(Err(e))),
                    // Inside `resil::Error<E>`, however deep.
                    None => match crate::error::look_inside::<E>(e) {
                        Some((e, None)) => e.downcast_ref::<E>().map(|e| f(Err(e))),
                        // An inner refusal: the call's own types, not a match.
                        Some((_, Some(_))) => Some(false),
                        None => None,
                    },
                },
            }),
            written_for: std::any::type_name::<Result<T, E>>(),
        }))
    }

    /// Whether `result` should drain the limiter; `None` when the predicate
    /// is written for other types and can never match it.
    #[inline]
    pub(crate) fn check<T: 'static, E: 'static>(&self, result: &Result<T, E>) -> Option<bool> {
        match result {
            Ok(v) => (self.0.test)(Outcome::Value(v)),
            Err(e) => (self.0.test)(Outcome::Error(e)),
        }
    }

    /// Whether `result` should drain the limiter called `limiter`; a result
    /// of types the predicate is not written for is traced once (`warned`).
    /// What both limiters' `call` paths ask.
    #[inline]
    pub(crate) fn drains<T: 'static, E: 'static>(
        &self,
        result: &Result<T, E>,
        limiter: &str,
        warned: &AtomicBool,
    ) -> bool {
        match self.check(result) {
            Some(answer) => answer,
            None => {
                if !warned.load(Ordering::Relaxed) {
                    self.foreign::<T, E>(limiter, warned);
                }
                false
            }
        }
    }

    /// Whether `result` should drain the limiter.
    #[cfg(test)]
    fn holds<T: 'static, E: 'static>(&self, result: &Result<T, E>) -> bool {
        self.check(result) == Some(true)
    }

    /// Traces, once per limiter (`warned`), a call whose outcome's types the
    /// predicate is not written for: it can never drain on such calls.
    #[cold]
    pub(crate) fn foreign<T, E>(&self, limiter: &str, warned: &AtomicBool) {
        if warned.swap(true, Ordering::Relaxed) {
            return;
        }
        tracing::debug!(
            target: "resil_core::rate_limiter",
            rate_limiter = %limiter,
            "rate limiter '{limiter}': a call returned `{}`, but its drain_permissions_on_result \
             predicate is written for `{}` and can never match it",
            std::any::type_name::<Result<T, E>>(),
            self.0.written_for
        );
    }
}

impl PartialEq for DrainOnResult {
    /// The same predicate (a clone of one configuration), not equal behaviour.
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for DrainOnResult {}

impl Hash for DrainOnResult {
    fn hash<H: Hasher>(&self, state: &mut H) {
        (Arc::as_ptr(&self.0) as usize).hash(state);
    }
}

impl fmt::Debug for DrainOnResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "DrainOnResult({})", self.0.written_for)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[test]
    fn it_answers_for_its_own_types_and_looks_inside_a_resil_error() {
        let p = DrainOnResult::new(|r: Result<&u16, &String>| match r {
            Ok(status) => *status == 429,
            Err(e) => e == "throttled",
        });
        assert!(p.holds(&Ok::<u16, String>(429)));
        assert!(!p.holds(&Ok::<u16, String>(200)));
        assert!(p.holds(&Err::<u16, _>(String::from("throttled"))));
        assert!(p.holds(&Err::<u16, _>(Error::Call(String::from("throttled")))));
        assert!(!p.holds(&Ok::<u32, String>(429)), "another value type");
        assert!(!p.holds(&Err::<u16, _>("throttled")), "another error type");
        assert_eq!(p.check(&Err::<u16, _>("throttled")), None);
        assert_eq!(p.check(&Ok::<u16, String>(200)), Some(false));
        assert_eq!(p.clone(), p);
        assert_ne!(p, DrainOnResult::new(|_: Result<&u16, &String>| true));
    }
}
