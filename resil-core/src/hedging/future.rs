//! The future behind [`Hedging::call_async`](super::Hedging::call_async): the
//! first attempt polled in place, hedged attempts boxed (only a call that
//! hedges allocates), and one loop that decides when the next one starts.

use std::any::Any;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;

use super::event::{HedgingEvent, HedgingEventKind};
use super::metrics::Counters;
use super::Inner;
use crate::clock::Clock;
use crate::deadline;
use crate::error::Error;
use crate::trace;

/// Counts a call that never reached an outcome (dropped, or unwound by a
/// panic in an attempt, the attempt factory or a predicate) as cancelled.
struct CallGuard<'a> {
    inner: &'a Inner,
    done: bool,
}

impl Drop for CallGuard<'_> {
    fn drop(&mut self) {
        if !self.done {
            Counters::add(&self.inner.counters.cancelled);
        }
    }
}

pin_project! {
    /// A hedged call in progress. Dropping it drops every attempt still
    /// running, which gives back whatever permits they hold.
    #[must_use = "futures do nothing unless polled"]
    #[project = HedgedProj]
    pub(crate) struct Hedged<'a, F, Fut, C, X>
    where
        Fut: Future,
    {
        guard: CallGuard<'a>,
        factory: F,
        classify: C,
        exit: Option<X>,
        #[pin]
        primary: Option<Fut>,
        // The primary's `resil.attempt` span (disabled: nothing to do).
        primary_span: trace::LeanSpan,
        // Each hedge with its number and its span.
        hedges: Vec<(u32, trace::LeanSpan, Pin<Box<Fut>>)>,
        timer: Option<Pin<Box<dyn Future<Output = ()> + Send>>>,
        // Attempts started so far, the first included.
        started: u32,
        // No further hedge may start (the budget or the deadline said no).
        stopped: bool,
        // The outcome of the attempt that failed last.
        last: Option<Fut::Output>,
    }
}

impl<'a, F, Fut, C, X> Hedged<'a, F, Fut, C, X>
where
    Fut: Future,
{
    #[inline]
    pub(crate) fn new(inner: &'a Inner, factory: F, classify: C, exit: X) -> Self {
        Hedged {
            guard: CallGuard { inner, done: false },
            factory,
            classify,
            exit: Some(exit),
            primary: None,
            primary_span: trace::LeanSpan::none(),
            hedges: Vec::new(),
            timer: None,
            started: 0,
            stopped: false,
            last: None,
        }
    }
}

/// Records a failed attempt on its (enabled) span.
#[cold]
#[inline(never)]
fn traced<T, R>(span: &trace::LeanSpan, out: &Result<T, R>, classify: impl Fn(&R) -> &dyn Any) {
    if let Err(error) = out {
        trace::attempt_failed_any(span.span(), classify(error), std::any::type_name::<R>());
    }
}

/// Whether an attempt's outcome ends the call.
#[inline]
fn accepted<T: 'static, R>(
    inner: &Inner,
    out: &Result<T, R>,
    classify: impl Fn(&R) -> &dyn Any,
) -> bool {
    match out {
        Ok(value) => {
            !(inner.config.has_result_predicates()
                && inner.config.handles_result(value as &dyn Any))
        }
        Err(error) => !inner.config.handles_error(classify(error)),
    }
}

impl<F, Fut, C, X, T, R, E> Future for Hedged<'_, F, Fut, C, X>
where
    F: FnMut(u32) -> Fut,
    Fut: Future<Output = Result<T, R>>,
    C: Fn(&R) -> &dyn Any,
    X: FnOnce(Result<T, R>) -> Result<T, Error<E>>,
    T: 'static,
{
    type Output = Result<T, Error<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let inner = this.guard.inner;
        if *this.started == 0 {
            if let Some(budget) = inner.config.budget() {
                budget.deposit();
            }
            let span = trace::hedging_attempt(&inner.name, 1);
            this.primary.set(Some(span.in_scope(|| (this.factory)(0))));
            *this.primary_span = span;
            *this.started = 1;
        }
        loop {
            let mut failed = false;
            if let Some(primary) = this.primary.as_mut().as_pin_mut() {
                let span = &*this.primary_span;
                if let Poll::Ready(out) = span.in_scope(|| primary.poll(cx)) {
                    this.primary.set(None);
                    if !span.is_disabled() {
                        traced::<T, R>(span, &out, &*this.classify);
                    }
                    if accepted(inner, &out, &*this.classify) {
                        return Poll::Ready(Self::win(this, 0, out));
                    }
                    *this.last = Some(out);
                    failed = true;
                }
            }
            let mut i = 0;
            while i < this.hedges.len() {
                let (attempt, span, fut) = &mut this.hedges[i];
                let attempt = *attempt;
                if let Poll::Ready(out) = span.in_scope(|| fut.as_mut().poll(cx)) {
                    let (_, span, _) = this.hedges.remove(i);
                    if !span.is_disabled() {
                        traced::<T, R>(&span, &out, &*this.classify);
                    }
                    if accepted(inner, &out, &*this.classify) {
                        return Poll::Ready(Self::win(this, attempt, out));
                    }
                    *this.last = Some(out);
                    failed = true;
                } else {
                    i += 1;
                }
            }
            if !*this.stopped && *this.started <= inner.config.max_hedged_attempts() {
                let delay = inner.config.delay();
                let mut due = failed || delay.is_zero();
                if !due && delay != Duration::MAX {
                    let timer = this
                        .timer
                        .get_or_insert_with(|| inner.clock.sleep_async(delay));
                    due = timer.as_mut().poll(cx).is_ready();
                }
                if due {
                    *this.timer = None;
                    if Self::may_hedge(inner, *this.started) {
                        let attempt = *this.started;
                        *this.started += 1;
                        Counters::add(&inner.counters.hedges_started);
                        inner.events.publish_with(|| {
                            HedgingEvent::with_detail(
                                &inner.name,
                                HedgingEventKind::HedgeStarted,
                                attempt,
                            )
                        });
                        let span = trace::hedging_attempt(&inner.name, attempt + 1);
                        let fut = span.in_scope(|| (this.factory)(attempt));
                        this.hedges.push((attempt, span, Box::pin(fut)));
                        continue;
                    }
                    *this.stopped = true;
                }
            }
            if this.primary.is_none() && this.hedges.is_empty() {
                let last = this
                    .last
                    .take()
                    .expect("an attempt ended, and it failed, before every attempt was done");
                this.guard.done = true;
                *this.timer = None;
                Counters::add(&inner.counters.all_failed);
                let attempts = *this.started;
                inner.events.publish_with(|| {
                    HedgingEvent::with_detail(&inner.name, HedgingEventKind::AllFailed, attempts)
                });
                let exit = this.exit.take().expect("a hedged call completes once");
                return Poll::Ready(exit(last));
            }
            return Poll::Pending;
        }
    }
}

impl<F, Fut, C, X> Hedged<'_, F, Fut, C, X>
where
    Fut: Future,
{
    /// Whether the next hedge (`attempt`) may start: the task's deadline is
    /// not spent and the budget (if any) pays for it.
    fn may_hedge(inner: &Inner, attempt: u32) -> bool {
        if deadline::remaining().is_some_and(|left| left.is_zero()) {
            return false;
        }
        if let Some(budget) = inner.config.budget() {
            if !budget.withdraw() {
                Counters::add(&inner.counters.budget_refused);
                inner.events.publish_with(|| {
                    HedgingEvent::with_detail(
                        &inner.name,
                        HedgingEventKind::BudgetExhausted,
                        attempt,
                    )
                });
                return false;
            }
        }
        true
    }
}

impl<'a, F, Fut, C, X, T, R, E> Hedged<'a, F, Fut, C, X>
where
    Fut: Future<Output = Result<T, R>>,
    X: FnOnce(Result<T, R>) -> Result<T, Error<E>>,
{
    /// `attempt` won: drop every other attempt (giving back their permits)
    /// and the timer, count, and return its outcome.
    #[inline(always)]
    fn win(
        mut this: HedgedProj<'_, 'a, F, Fut, C, X>,
        attempt: u32,
        out: Result<T, R>,
    ) -> Result<T, Error<E>> {
        let inner = this.guard.inner;
        this.guard.done = true;
        if attempt == 0 {
            inner.counters.won_by_primary.increment();
            inner.events.publish_with(|| {
                HedgingEvent::with_detail(&inner.name, HedgingEventKind::WonByPrimary, 0)
            });
        } else {
            Self::won_by_hedge(inner, attempt);
        }
        if *this.started > 1 {
            this.primary.set(None);
            this.hedges.clear();
        }
        *this.timer = None;
        this.last.take();
        let exit = this.exit.take().expect("a hedged call completes once");
        exit(out)
    }

    #[cold]
    fn won_by_hedge(inner: &Inner, attempt: u32) {
        Counters::add(&inner.counters.won_by_hedge);
        inner.events.publish_with(|| {
            HedgingEvent::with_detail(&inner.name, HedgingEventKind::WonByHedge, attempt)
        });
    }
}
