//! The service a [`DeadlineLayer`](super::DeadlineLayer) makes.

use std::task::{Context, Poll};
use std::time::Duration;

use http::header::HeaderName;
use http::{Request, Response};
use tower_service::Service;

use super::future::DeadlineFuture;
use super::wire::{budget_of, is_grpc};

/// A service whose requests run inside the deadline their headers give.
#[derive(Debug, Clone)]
pub struct Deadline<S> {
    inner: S,
    header: HeaderName,
}

impl<S> Deadline<S> {
    pub(crate) fn new(inner: S, header: HeaderName) -> Self {
        Deadline { inner, header }
    }

    /// The wrapped service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S, B, RB> Service<Request<B>> for Deadline<S>
where
    S: Service<Request<B>, Response = Response<RB>>,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
    RB: From<String> + 'static,
{
    type Response = Response<RB>;
    type Error = S::Error;
    type Future = DeadlineFuture<S::Future>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        let Some(budget) = budget_of(req.headers(), &self.header) else {
            return DeadlineFuture::plain(self.inner.call(req));
        };
        let grpc = is_grpc(req.headers());
        if budget == Duration::ZERO {
            return DeadlineFuture::spent(grpc);
        }
        // The handler's future is made here and first polled inside the
        // scope, where its code (and every resil primitive in it) runs.
        let fut = self.inner.call(req);
        DeadlineFuture::scoped(resil_core::deadline::within(budget, fut), grpc)
    }
}
