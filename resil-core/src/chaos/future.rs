//! The future behind [`Chaos::call_async`](super::Chaos::call_async): while
//! injection is off, one load and the protected future polled in place.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use pin_project_lite::pin_project;

use super::Inner;
use crate::error::Error;

/// Where a call is.
enum Step<T, E> {
    /// Not polled yet: injection not decided.
    Start,
    /// Waiting out an injected latency; then the injected outcome, or the call.
    Delay(
        Pin<Box<dyn Future<Output = ()> + Send>>,
        Option<Result<T, E>>,
    ),
    /// Running the protected future.
    Run,
    /// Completed.
    Done,
}

pin_project! {
    /// A call through a [`Chaos`](super::Chaos) instance.
    #[must_use = "futures do nothing unless polled"]
    pub(crate) struct Injected<'a, F, X, T, E> {
        inner: &'a Inner,
        #[pin]
        fut: F,
        exit: X,
        step: Step<T, E>,
        _types: PhantomData<fn() -> (T, E)>,
    }
}

impl<'a, F, X, T, E> Injected<'a, F, X, T, E> {
    #[inline]
    pub(crate) fn new(inner: &'a Inner, fut: F, exit: X) -> Self {
        Injected {
            inner,
            fut,
            exit,
            step: Step::Start,
            _types: PhantomData,
        }
    }
}

impl<F, X, T, E, R> Future for Injected<'_, F, X, T, E>
where
    F: Future<Output = Result<T, R>>,
    X: Fn(Result<T, R>) -> Result<T, Error<E>>,
    T: 'static,
    E: 'static,
{
    type Output = Result<T, Error<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        loop {
            match this.step {
                Step::Start => {
                    if !this.inner.active() {
                        *this.step = Step::Run;
                        continue;
                    }
                    let plan = this.inner.plan::<T, E>();
                    match (plan.delay, plan.outcome) {
                        (Some(delay), then) => {
                            *this.step = Step::Delay(this.inner.clock_sleep(delay), then);
                        }
                        (None, Some(outcome)) => {
                            *this.step = Step::Done;
                            return Poll::Ready(outcome.map_err(Error::Call));
                        }
                        (None, None) => *this.step = Step::Run,
                    }
                }
                Step::Delay(sleep, then) => {
                    ready!(sleep.as_mut().poll(cx));
                    match then.take() {
                        Some(outcome) => {
                            *this.step = Step::Done;
                            return Poll::Ready(outcome.map_err(Error::Call));
                        }
                        None => *this.step = Step::Run,
                    }
                }
                Step::Run => {
                    let out = ready!(this.fut.as_mut().poll(cx));
                    *this.step = Step::Done;
                    return Poll::Ready((this.exit)(out));
                }
                Step::Done => panic!("a `Chaos::call_async` future polled after it completed"),
            }
        }
    }
}
