//! The layer's stack around an axum handler, as an axum `Handler` itself.
//!
//! `get(handler.layer(layer))` goes through axum's tower plumbing for a
//! layered handler: per request, a `HandlerService`, a `Oneshot` (its
//! `poll_ready` state machine) and two `Map`s, each moving the request and
//! the response once more. [`ResilienceLayer::handler`] applies the same
//! stack, with the same instances, order, classification and refusal
//! responses, as a `Handler` that calls the inner handler directly: what
//! axum's `Identity` layer costs through `Handler::layer` (measured in
//! `benches/tower_e2e.rs`) is not paid.

use std::convert::Infallible;
use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use axum::extract::Request;
use axum::handler::Handler;
use axum::response::Response;
use pin_project_lite::pin_project;
use tower_service::Service;

use super::classify::Classify;
use super::future::ResponseFuture;
use super::layer::ResilienceLayer;
use super::respond::Respond;
use super::service::Resilience;

impl<C: 'static, R: 'static> ResilienceLayer<C, R> {
    /// The layer's stack around an axum handler, as a handler: for
    /// `get(layer.handler(inventory))` where `get(inventory.layer(layer))`
    /// would go through axum's tower plumbing (see the module's *Costs*).
    /// The same instances, order, permits, classification and refusal
    /// responses; the layer's error type must be the handler's
    /// (`Infallible`), as with [`RefusalResponses`](super::RefusalResponses).
    ///
    /// ```
    /// use axum::{routing::get, Router};
    /// use resil_registry::Registry;
    /// use resil_web::http::HttpClassifier;
    /// use resil_web::tower::{RefusalResponses, ResilienceLayer};
    ///
    /// async fn inventory() -> &'static str {
    ///     "AVAILABLE"
    /// }
    ///
    /// let registry: &'static Registry = Box::leak(Box::new(Registry::new()));
    /// let layer = ResilienceLayer::builder(registry, "inventory")
    ///     .circuit_breaker()
    ///     .bulkhead()
    ///     .classify(HttpClassifier::default())
    ///     .respond(RefusalResponses::new())
    ///     .build();
    /// let app: Router = Router::new().route("/inventory", get(layer.handler(inventory)));
    /// # let _ = app;
    /// ```
    pub fn handler<H>(self, handler: H) -> ProtectedHandler<H, C, R> {
        ProtectedHandler {
            handler,
            layer: self,
        }
    }
}

/// An axum handler behind a [`ResilienceLayer`]'s stack: see
/// [`ResilienceLayer::handler`].
pub struct ProtectedHandler<H, C: 'static, R: 'static> {
    handler: H,
    layer: ResilienceLayer<C, R>,
}

impl<H: Clone, C: 'static, R: 'static> Clone for ProtectedHandler<H, C, R> {
    fn clone(&self) -> Self {
        ProtectedHandler {
            handler: self.handler.clone(),
            layer: self.layer,
        }
    }
}

impl<H, C: 'static, R: 'static> fmt::Debug for ProtectedHandler<H, C, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ProtectedHandler")
            .field("layer", &self.layer)
            .finish_non_exhaustive()
    }
}

impl<H, T, S, C, R> Handler<T, S> for ProtectedHandler<H, C, R>
where
    H: Handler<T, S>,
    T: 'static,
    S: Clone + Send + Sync + 'static,
    C: Classify<Response, Infallible> + Send + Sync,
    R: Respond<Response, Infallible, Error = Infallible>,
{
    type Future = HandlerFuture<H, T, S, C, R>;

    #[inline]
    fn call(self, req: Request, state: S) -> Self::Future {
        let inner = Call {
            parts: Some((self.handler, state)),
            _marker: PhantomData,
        };
        // `Call` is always ready, so `poll_ready` has nothing to wait for.
        HandlerFuture {
            inner: Resilience::new(inner, self.layer.shared()).call(req),
        }
    }
}

/// The inner handler as the stack's inner service: called once, with the
/// request's state (moved, not cloned, on the common path; a request that
/// waits keeps the service, which a clone would serve).
struct Call<H, T, S> {
    parts: Option<(H, S)>,
    _marker: PhantomData<fn() -> T>,
}

impl<H: Clone, T, S: Clone> Clone for Call<H, T, S> {
    fn clone(&self) -> Self {
        Call {
            parts: self.parts.clone(),
            _marker: PhantomData,
        }
    }
}

impl<H, T, S> Service<Request> for Call<H, T, S>
where
    H: Handler<T, S>,
    S: Clone + Send + Sync + 'static,
{
    type Response = Response;
    type Error = Infallible;
    type Future = CallFuture<H::Future>;

    #[inline]
    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
        Poll::Ready(Ok(()))
    }

    #[inline]
    fn call(&mut self, req: Request) -> Self::Future {
        let (handler, state) = self.parts.take().expect("a handler is called once");
        CallFuture {
            fut: handler.call(req, state),
        }
    }
}

pin_project! {
    /// The inner handler's future, its response as the service's `Ok`.
    struct CallFuture<F> {
        #[pin]
        fut: F,
    }
}

impl<F: Future<Output = Response>> Future for CallFuture<F> {
    type Output = Result<Response, Infallible>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Poll::Ready(Ok(ready!(self.project().fut.poll(cx))))
    }
}

pin_project! {
    /// The future of a [`ProtectedHandler`]: the handler's response, or the
    /// response for a refusal.
    #[must_use = "futures do nothing unless polled"]
    pub struct HandlerFuture<H, T, S, C: 'static, R: 'static>
    where
        H: Handler<T, S>,
        S: Clone,
        S: Send,
        S: Sync,
        S: 'static,
    {
        #[pin]
        inner: ResponseFuture<Call<H, T, S>, Request, C, R>,
    }
}

impl<H, T, S, C, R> Future for HandlerFuture<H, T, S, C, R>
where
    H: Handler<T, S>,
    S: Clone + Send + Sync + 'static,
    C: Classify<Response, Infallible>,
    R: Respond<Response, Infallible, Error = Infallible>,
{
    type Output = Response;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Response> {
        match ready!(self.project().inner.poll(cx)) {
            Ok(response) => Poll::Ready(response),
            Err(never) => match never {},
        }
    }
}

impl<H, T, S, C: 'static, R: 'static> fmt::Debug for HandlerFuture<H, T, S, C, R>
where
    H: Handler<T, S>,
    S: Clone + Send + Sync + 'static,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HandlerFuture")
            .field("inner", &self.inner)
            .finish()
    }
}
