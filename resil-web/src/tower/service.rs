//! The service a [`ResilienceLayer`](super::ResilienceLayer) makes.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use resil_core::Error;
use tower_service::Service;

use super::classify::Classify;
use super::future::{Body, ResponseFuture};
use super::layer::Shared;
use super::respond::Respond;

/// A service protected by a [`ResilienceLayer`](super::ResilienceLayer).
pub struct Resilience<S, C: 'static, R: 'static> {
    inner: S,
    shared: &'static Shared<C, R>,
}

impl<S, C: 'static, R: 'static> Resilience<S, C, R> {
    pub(crate) fn new(inner: S, shared: &'static Shared<C, R>) -> Self {
        Resilience { inner, shared }
    }

    /// The protected service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S: Clone, C: 'static, R: 'static> Clone for Resilience<S, C, R> {
    fn clone(&self) -> Self {
        Resilience {
            inner: self.inner.clone(),
            shared: self.shared,
        }
    }
}

impl<S: fmt::Debug, C: 'static, R: 'static> fmt::Debug for Resilience<S, C, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resilience")
            .field("inner", &self.inner)
            .field("name", &self.shared.name)
            .finish()
    }
}

impl<S, Req, C: 'static, R: 'static> Service<Req> for Resilience<S, C, R>
where
    S: Service<Req> + Clone,
    S::Response: 'static,
    S::Error: 'static,
    C: Classify<S::Response, S::Error>,
    R: Respond<S::Response, S::Error>,
{
    type Response = S::Response;
    type Error = R::Error;
    type Future = ResponseFuture<S, Req, C, R>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), R::Error>> {
        match self.inner.poll_ready(cx) {
            Poll::Ready(Ok(())) => Poll::Ready(Ok(())),
            Poll::Ready(Err(e)) => Poll::Ready(Err(self.shared.respond.error(e))),
            Poll::Pending => Poll::Pending,
        }
    }

    #[inline]
    fn call(&mut self, req: Req) -> Self::Future {
        let shared = self.shared;
        // Outermost first: the breaker, then the rate limiter, as the
        // attributes order them. A refusal never calls the inner service.
        let permit = match &shared.breaker {
            Some(breaker) => {
                let breaker = breaker.get();
                match breaker.try_acquire_permission() {
                    Ok(permit) => Some(permit),
                    Err(refused) => {
                        return ResponseFuture::refused(
                            shared,
                            None,
                            Error::CallNotPermitted(refused),
                        )
                    }
                }
            }
            None => None,
        };
        if let Some(limiter) = &shared.limiter {
            match limiter.get().reserve_permission(1) {
                Ok(wait) if wait.is_zero() => {}
                Ok(wait) => {
                    return ResponseFuture::throttled(shared, permit, wait, self.take(), req)
                }
                Err(refused) => return ResponseFuture::refused(shared, permit, refused.into()),
            }
        }
        let body = body(shared, &mut self.inner, req);
        ResponseFuture::running(shared, permit, body)
    }
}

impl<S: Clone, C: 'static, R: 'static> Resilience<S, C, R> {
    /// The ready inner service, leaving a clone in its place (tower's
    /// pattern for a call made later than `call`).
    fn take(&mut self) -> S {
        let clone = self.inner.clone();
        std::mem::replace(&mut self.inner, clone)
    }
}

/// The innermost part: the bulkhead's slot, then the inner call. A free slot
/// is taken now (polled once with a no-op waker: its first poll either takes
/// a slot, refuses, or joins the queue, and the next poll registers the
/// task's waker); a wait moves the ready service into the future.
#[inline(always)]
pub(crate) fn body<S, Req, C: 'static, R: 'static>(
    shared: &'static Shared<C, R>,
    svc: &mut S,
    req: Req,
) -> Body<S, Req>
where
    S: Service<Req> + Clone,
{
    let Some(bulkhead) = &shared.bulkhead else {
        return Body::call(svc.call(req), None);
    };
    let mut acquire = bulkhead.get().acquire_permission();
    let mut cx = Context::from_waker(Waker::noop());
    match Pin::new(&mut acquire).poll(&mut cx) {
        Poll::Ready(Ok(permit)) => Body::call(svc.call(req), Some(permit)),
        Poll::Ready(Err(refused)) => Body::refused(refused.into_error()),
        Poll::Pending => {
            let clone = svc.clone();
            Body::acquire(acquire, std::mem::replace(svc, clone), req)
        }
    }
}
