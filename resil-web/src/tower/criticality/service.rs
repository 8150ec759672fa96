//! The service: classify, record, scope.

use std::task::{Context, Poll};

use http::Request;
use resil_core::criticality::Scoped;
use resil_core::Criticality;
use tower_service::Service;

use super::layer::CriticalityLayer;

/// The service [`CriticalityLayer`] makes.
#[derive(Debug, Clone)]
pub struct CriticalityService<S> {
    pub(super) inner: S,
    pub(super) layer: CriticalityLayer,
}

/// The class [`CriticalityLayer`] gave a request, in its extensions; with
/// the `axum` feature, also an extractor (a handler without the layer gets
/// its task's class, `CRITICAL` by default).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RequestCriticality(pub Criticality);

impl<S> CriticalityService<S> {
    /// The class of a request with these headers.
    fn classify<B>(&self, req: &Request<B>) -> Criticality {
        let l = &self.layer;
        let named = l
            .header
            .as_ref()
            .and_then(|h| req.headers().get(h))
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<Criticality>().ok());
        named.unwrap_or(l.default).min(l.at_most)
    }
}

impl<S, B> Service<Request<B>> for CriticalityService<S>
where
    S: Service<Request<B>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Scoped<S::Future>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: Request<B>) -> Self::Future {
        let class = self.classify(&req);
        req.extensions_mut().insert(RequestCriticality(class));
        // The inner call itself runs in the scope too: a service that
        // decides in `call` (the resilience layer) sees the class.
        let inner = &mut self.inner;
        let fut = class.sync_scope(|| inner.call(req));
        class.scope(fut)
    }
}

#[cfg(feature = "axum")]
impl<S: Send + Sync> axum::extract::FromRequestParts<S> for RequestCriticality {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(
        parts: &mut http::request::Parts,
        _: &S,
    ) -> Result<Self, Self::Rejection> {
        Ok(parts
            .extensions
            .get::<RequestCriticality>()
            .copied()
            .unwrap_or(RequestCriticality(Criticality::current())))
    }
}
