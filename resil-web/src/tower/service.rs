//! The service a [`ResilienceLayer`](super::ResilienceLayer) makes.

use std::fmt;
use std::task::{Context, Poll};

use resil_core::Error;
use resil_options::Aspect;
use tower_service::Service;

use super::classify::Classify;
use super::future::{body, ResponseFuture};
use super::layer::ResilienceLayer;
use super::respond::Respond;
use super::shared::Shared;
use super::trace;

// The layer's nesting is written in its code (`call` below, `body` and the
// response future in `future.rs`), a flat state machine rather than a loop
// over the table, for speed. Each assertion ties one step of that code to
// the one aspect table (`resil_options::ORDER`, which
// `ResilienceLayer::ORDER` is sorted by; together they fix all of it): a
// change of order there that the code does not follow fails to build here.
const _: () = {
    use Aspect::{Bulkhead, Chaos, CircuitBreaker, RateLimiter, Throttler, TimeLimiter};
    /// The aspect's position in the layer's order (it must have one).
    const fn at(aspect: Aspect) -> usize {
        let mut i = 0;
        while i < ResilienceLayer::ORDER.len() {
            if ResilienceLayer::ORDER[i] as u8 == aspect as u8 {
                return i;
            }
            i += 1;
        }
        panic!("the state machine applies an aspect `ResilienceLayer::ORDER` lacks")
    }
    // `call` asks the throttler first: its refusal takes no breaker permit,
    // and the breaker's refusal (dropping the throttler's permit) counts
    // nothing for the throttler.
    assert!(at(Throttler) < at(CircuitBreaker));
    // `call` asks the breaker next: its permit records the limiter's refusal.
    assert!(at(CircuitBreaker) < at(RateLimiter));
    // The time limiter's side starts after the limiter's wait (`running`,
    // and `watch` after the `Until::Permit` sleep), so that wait is untimed.
    assert!(at(RateLimiter) < at(TimeLimiter));
    // `body` (the bulkhead's slot) runs inside the timed part, so a wait
    // for a slot is timed.
    assert!(at(TimeLimiter) < at(Bulkhead));
    // `inside` draws chaos after both bulkheads' slots, so an injected
    // latency holds them, and every aspect sees an injected answer.
    assert!(at(Bulkhead) < at(Chaos));
};

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
        let span = trace::call_span(shared);
        // Outermost first (`ResilienceLayer::ORDER`, asserted above): the
        // throttler, the breaker, then the rate limiter. A refusal never
        // calls the inner service.
        let throttle = match &shared.throttler {
            Some(throttler) => match throttler.get().try_acquire_permission() {
                Ok(permit) => Some(permit),
                Err(refused) => {
                    return ResponseFuture::refused(shared, span, None, Error::Throttled(refused))
                }
            },
            None => None,
        };
        let permit = match &shared.breaker {
            Some(breaker) => {
                let breaker = breaker.get();
                match breaker.try_acquire_permission() {
                    Ok(permit) => Some(permit),
                    Err(refused) => {
                        return ResponseFuture::refused(
                            shared,
                            span,
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
                    return ResponseFuture::throttled(shared, span, permit, wait, self.take(), req)
                        .throttled_by(throttle)
                }
                Err(refused) => {
                    return ResponseFuture::refused(shared, span, permit, refused.into())
                }
            }
        }
        #[cfg(feature = "redis")]
        if let Some(redis) = &shared.redis {
            return ResponseFuture::acquiring(shared, span, permit, redis.get(), self.take(), req)
                .throttled_by(throttle);
        }
        let stage = span.in_scope(|| body(shared, &mut self.inner, req));
        ResponseFuture::running(shared, span, permit, stage).throttled_by(throttle)
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
