//! One call's faults, drawn for a caller that runs the protected work
//! itself (a tower layer's state machine) instead of handing it to
//! [`Chaos::call_async`](super::Chaos::call_async).

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use super::Chaos;

/// What one call gets while injection is on: wait `delay` first (on the
/// instance's clock, [`Injection::sleep`]), then answer with `outcome`
/// instead of running the work, or run it when there is none.
#[derive(Debug)]
pub struct Injection<T, E> {
    /// The latency to wait before anything else.
    pub delay: Option<Duration>,
    /// The outcome to answer with instead of running the work.
    pub outcome: Option<Result<T, E>>,
    pub(super) chaos: Chaos,
}

impl<T, E> Injection<T, E> {
    /// The wait for `delay` on the chaos instance's clock (tokio's timer by
    /// default; a test clock's).
    pub fn sleep(&self, delay: Duration) -> Pin<Box<dyn Future<Output = ()> + Send>> {
        self.chaos.inner.clock_sleep(delay)
    }
}

impl Chaos {
    /// Draws this call's faults, counted and published as
    /// [`call_async`](Self::call_async) counts and publishes them; `None`
    /// while injection is off (one relaxed load), or when nothing was drawn.
    /// The caller then waits the delay and answers with the outcome (or
    /// runs the work) itself.
    #[inline]
    pub fn inject<T: 'static, E: 'static>(&self) -> Option<Injection<T, E>> {
        if !self.inner.active() {
            return None;
        }
        self.draw_injection()
    }

    #[cold]
    #[inline(never)]
    fn draw_injection<T: 'static, E: 'static>(&self) -> Option<Injection<T, E>> {
        let plan = self.inner.plan::<T, E>();
        if plan.delay.is_none() && plan.outcome.is_none() {
            return None;
        }
        Some(Injection {
            delay: plan.delay,
            outcome: plan.outcome,
            chaos: self.clone(),
        })
    }
}
