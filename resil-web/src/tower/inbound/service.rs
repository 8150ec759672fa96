//! The service and the extractor.

use std::task::{Context, Poll};

use http::header::RETRY_AFTER;
use http::{Request, Response, StatusCode};
use resil_core::inbound::{InboundGuard, InboundPermit, Overloaded};
use tower_service::Service;

use super::future::InboundFuture;
use crate::http::retry_after_header_value;

/// The service [`InboundGuardLayer`](super::InboundGuardLayer) makes.
#[derive(Debug, Clone)]
pub struct InboundGuardService<S> {
    pub(super) inner: S,
    pub(super) guard: InboundGuard,
}

/// The answer to a refused request: `503 Service Unavailable`, `Retry-After`
/// in whole seconds (rounded up), an empty body.
pub fn overloaded_response<B: Default>(refused: &Overloaded) -> Response<B> {
    let mut response = Response::new(B::default());
    *response.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
    response
        .headers_mut()
        .insert(RETRY_AFTER, retry_after_header_value(refused.retry_after));
    response
}

impl<S, ReqB, ResB> Service<Request<ReqB>> for InboundGuardService<S>
where
    S: Service<Request<ReqB>, Response = Response<ResB>>,
    ResB: Default,
{
    type Response = Response<ResB>;
    type Error = S::Error;
    type Future = InboundFuture<S::Future, ResB>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    #[inline]
    fn call(&mut self, req: Request<ReqB>) -> Self::Future {
        match self.guard.try_enter() {
            Ok(permit) => InboundFuture::admitted(self.inner.call(req), permit),
            Err(refused) => InboundFuture::refused(refused),
        }
    }
}

/// An axum extractor admitting one handler's request through the
/// application's [`InboundGuard`] (from the router's state, through
/// `FromRef`): a refused request is answered 503 with `Retry-After` before
/// the handler runs; an admitted one holds this permit until the handler
/// returns.
#[derive(Debug)]
pub struct Admitted(pub InboundPermit);

#[cfg(feature = "axum")]
impl<S> axum::extract::FromRequestParts<S> for Admitted
where
    S: Send + Sync,
    InboundGuard: axum::extract::FromRef<S>,
{
    type Rejection = Response<axum::body::Body>;

    async fn from_request_parts(
        _: &mut http::request::Parts,
        state: &S,
    ) -> Result<Self, Self::Rejection> {
        let guard = <InboundGuard as axum::extract::FromRef<S>>::from_ref(state);
        guard
            .try_enter()
            .map(Admitted)
            .map_err(|refused| overloaded_response(&refused))
    }
}
