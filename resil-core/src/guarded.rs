//! The future behind every `call_async` that takes a permit first: acquire on
//! the first poll (at once, or by awaiting a wait future), then poll the
//! protected future *in place*, then hand its result and the permit to a
//! finishing step.
//!
//! An `async fn call_async(&self, fut: F)` keeps its argument `fut` and the
//! `fut.await` it moves into as two separate fields of its state, so every
//! layer of a hand-composed stack doubles the size of the future it wraps (a
//! five-aspect stack measured 1.5 KB, a peer stack 0.3 KB), and each layer's
//! construction copies all of it. Here the protected future is stored once and
//! polled where it lies: a layer adds only its own permit and closures.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use pin_project_lite::pin_project;

use crate::error::Error;

/// What acquiring gave on the first poll.
pub(crate) enum Acquire<P, W> {
    /// The permit, at once.
    Now(P),
    /// A future that yields the permit (or a refusal) after waiting.
    Wait(W),
}

pin_project! {
    /// See the [module docs](self).
    #[must_use = "futures do nothing unless polled"]
    pub(crate) struct Guarded<F, W, P, A, D> {
        #[pin]
        fut: F,
        #[pin]
        wait: Option<W>,
        acquire: Option<A>,
        permit: Option<P>,
        finish: Option<D>,
    }
}

impl<F, W, P, A, D> Guarded<F, W, P, A, D> {
    /// `fut` guarded by `acquire` (run on the first poll) and `finish` (run
    /// with the permit and `fut`'s output once it completes, making the
    /// result).
    #[inline]
    pub(crate) fn new(fut: F, acquire: A, finish: D) -> Self {
        Guarded {
            fut,
            wait: None,
            acquire: Some(acquire),
            permit: None,
            finish: Some(finish),
        }
    }
}

impl<F, W, P, A, D, R, T, E> Future for Guarded<F, W, P, A, D>
where
    F: Future,
    W: Future<Output = Result<P, R>>,
    A: FnOnce() -> Result<Acquire<P, W>, R>,
    D: FnOnce(P, F::Output) -> Result<T, Error<E>>,
    Error<E>: From<R>,
{
    type Output = Result<T, Error<E>>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        // The permit is a local while the protected future is polled: a
        // future ready at once (the common case) hands it to `finish` without
        // it ever being stored in (and copied back out of) this future's
        // state. It is stored only when the future returns `Pending`. A panic
        // while polling drops it like any local, which releases it.
        let permit = if let Some(acquire) = this.acquire.take() {
            match acquire() {
                Ok(Acquire::Now(permit)) => permit,
                Ok(Acquire::Wait(wait)) => {
                    this.wait.set(Some(wait));
                    ready!(Self::poll_wait(this.wait.as_mut(), this.finish, cx))?
                }
                Err(refused) => {
                    this.finish.take();
                    return Poll::Ready(Err(refused.into()));
                }
            }
        } else if this.wait.is_some() {
            ready!(Self::poll_wait(this.wait.as_mut(), this.finish, cx))?
        } else {
            this.permit
                .take()
                .expect("a `call_async` future polled after it completed")
        };
        match this.fut.poll(cx) {
            Poll::Ready(out) => match this.finish.take() {
                Some(finish) => Poll::Ready(finish(permit, out)),
                None => unreachable!("the finishing step is taken only on completion"),
            },
            Poll::Pending => {
                *this.permit = Some(permit);
                Poll::Pending
            }
        }
    }
}

impl<F, W, P, A, D> Guarded<F, W, P, A, D> {
    /// Polls the wait for a permit; on a refusal, drops the finishing step
    /// and yields the refusal as the future's error.
    #[inline]
    fn poll_wait<R, E>(
        mut wait: Pin<&mut Option<W>>,
        finish: &mut Option<D>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<P, Error<E>>>
    where
        W: Future<Output = Result<P, R>>,
        Error<E>: From<R>,
    {
        let granted = match wait.as_mut().as_pin_mut() {
            Some(wait) => ready!(wait.poll(cx)),
            None => unreachable!("polled only while waiting"),
        };
        wait.set(None);
        Poll::Ready(granted.map_err(|refused| {
            finish.take();
            refused.into()
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::future::{pending, ready as ready_fut, Pending};
    use std::task::Waker;

    type Never = Pending<Result<u32, Error<()>>>;

    fn poll<F: Future>(f: Pin<&mut F>) -> Poll<F::Output> {
        f.poll(&mut Context::from_waker(Waker::noop()))
    }

    #[test]
    fn a_refused_call_never_polls_the_protected_future_and_runs_no_finish() {
        let mut finished = false;
        let g = Guarded::new(
            async { panic!("must not be polled") },
            || Err::<Acquire<u32, Never>, Error<()>>(Error::Call(())),
            |_, r: Result<(), ()>| {
                finished = true;
                r.map_err(Error::Call)
            },
        );
        assert!(matches!(
            poll(std::pin::pin!(g)),
            Poll::Ready(Err(Error::Call(())))
        ));
        assert!(!finished);
    }

    #[test]
    fn a_permit_granted_after_a_wait_reaches_finish_with_the_output() {
        let mut seen = None;
        let g = Guarded::new(
            ready_fut(Ok::<_, ()>(7)),
            || Ok::<_, Error<()>>(Acquire::Wait(ready_fut(Ok::<_, Error<()>>(3u32)))),
            |p, r: Result<u32, ()>| {
                seen = Some((p, r));
                r.map_err(Error::Call)
            },
        );
        assert_eq!(poll(std::pin::pin!(g)), Poll::Ready(Ok(7)));
        assert_eq!(seen, Some((3, Ok(7))));
    }

    #[test]
    fn dropping_while_the_protected_future_runs_drops_the_permit_without_finish() {
        struct Permit<'a>(&'a std::cell::Cell<bool>);
        impl Drop for Permit<'_> {
            fn drop(&mut self) {
                self.0.set(true);
            }
        }
        let released = std::cell::Cell::new(false);
        let mut finished = false;
        {
            let g = Guarded::new(
                pending::<Result<(), ()>>(),
                || {
                    Ok::<_, Error<()>>(Acquire::<_, Pending<Result<Permit<'_>, Error<()>>>>::Now(
                        Permit(&released),
                    ))
                },
                |_, r: Result<(), ()>| {
                    finished = true;
                    r.map_err(Error::Call)
                },
            );
            let mut g = std::pin::pin!(g);
            assert!(poll(g.as_mut()).is_pending());
            assert!(!released.get());
        }
        assert!(released.get(), "cancellation releases the permit");
        assert!(!finished);
    }
}
