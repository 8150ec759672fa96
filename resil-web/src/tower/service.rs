//! The service a [`ResilienceLayer`](super::ResilienceLayer) makes.

use std::fmt;
use std::task::{Context, Poll};

use resil_core::Error;
use tower_service::Service;

use super::classify::Classify;
use super::future::{body, ResponseFuture};
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
        let stage = body(shared, &mut self.inner, req);
        ResponseFuture::running(shared, permit, stage)
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
