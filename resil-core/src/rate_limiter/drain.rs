//! `drain_permissions_on_result`: a predicate over a call's outcome, written
//! for concrete types and stored type-erased in the (shared) configuration.

use std::any::Any;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use crate::error::Error;

type Erased = Arc<dyn Fn(Outcome<'_>) -> bool + Send + Sync>;

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
/// primitives): `Error::Call(e)` is shown as `e`.
#[derive(Clone)]
pub(crate) struct DrainOnResult(Erased);

impl DrainOnResult {
    pub(crate) fn new<T: 'static, E: 'static>(
        f: impl Fn(Result<&T, &E>) -> bool + Send + Sync + 'static,
    ) -> Self {
        DrainOnResult(Arc::new(move |outcome| match outcome {
            Outcome::Value(v) => v.downcast_ref::<T>().is_some_and(|v| f(Ok(v))),
            Outcome::Error(e) => match e.downcast_ref::<E>() {
                Some(e) => f(Err(e)),
                None => matches!(e.downcast_ref::<Error<E>>(), Some(Error::Call(e)) if f(Err(e))),
            },
        }))
    }

    /// Whether `result` should drain the limiter.
    #[inline]
    pub(crate) fn holds<T: 'static, E: 'static>(&self, result: &Result<T, E>) -> bool {
        match result {
            Ok(v) => (self.0)(Outcome::Value(v)),
            Err(e) => (self.0)(Outcome::Error(e)),
        }
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
        (Arc::as_ptr(&self.0) as *const () as usize).hash(state);
    }
}

impl fmt::Debug for DrainOnResult {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DrainOnResult")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        assert_eq!(p.clone(), p);
        assert_ne!(p, DrainOnResult::new(|_: Result<&u16, &String>| true));
    }
}
