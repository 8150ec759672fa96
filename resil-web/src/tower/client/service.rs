//! The service a [`ClientLayer`](super::ClientLayer) makes.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Buf, Bytes};
use http::request::Parts;
use http::{HeaderMap, Request};
use http_body::Body;
use resil_core::deadline;
use resil_core::error::DeadlineExceeded;
use resil_core::Error;
use tower_service::Service;

use super::attempts::attempts;
use super::body::{buffer, Buffered, ReplayBody};
use super::layer::{ClientSettings, ClientShared};
use crate::tower::classify::Classify;
use crate::tower::respond::AsErrors;
use crate::tower::service::Resilience;

/// The future of a [`Client`] service's `call`: one box per request (the
/// retry and hedging loops, the buffered body and every attempt's future).
pub type ClientFuture<Res, E> = Pin<Box<dyn Future<Output = Result<Res, Error<E>>> + Send>>;

/// A client service: retry and hedging over a
/// [`Resilience`](crate::tower::Resilience) stack, with replayable requests
/// and the task's deadline sent downstream. Its error is
/// `resil::Error<S::Error>`.
pub struct Client<S, C: 'static> {
    inner: Resilience<S, C, AsErrors>,
    shared: &'static ClientShared<C>,
}

impl<S, C: 'static> Client<S, C> {
    pub(crate) fn new(inner: Resilience<S, C, AsErrors>, shared: &'static ClientShared<C>) -> Self {
        Client { inner, shared }
    }

    /// The protected service.
    pub fn get_ref(&self) -> &S {
        self.inner.get_ref()
    }
}

impl<S: Clone, C: 'static> Clone for Client<S, C> {
    fn clone(&self) -> Self {
        Client {
            inner: self.inner.clone(),
            shared: self.shared,
        }
    }
}

impl<S: fmt::Debug, C: 'static> fmt::Debug for Client<S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("inner", &self.inner)
            .field("name", &self.shared.name)
            .finish()
    }
}

impl<S, C, B> Service<Request<B>> for Client<S, C>
where
    B: Body + Unpin + Send + 'static,
    B::Data: Buf + Send,
    B::Error: Send,
    S: Service<Request<ReplayBody<B>>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
    C: Classify<S::Response, S::Error>,
{
    type Response = S::Response;
    type Error = Error<S::Error>;
    type Future = ClientFuture<S::Response, S::Error>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<B>) -> Self::Future {
        // The ready service goes with the request; a clone stays (tower's
        // pattern for a call made later than `call`).
        let clone = self.inner.clone();
        let svc = std::mem::replace(&mut self.inner, clone);
        Box::pin(run(self.shared, svc, req))
    }
}

async fn run<S, C, B>(
    shared: &'static ClientShared<C>,
    svc: Resilience<S, C, AsErrors>,
    req: Request<B>,
) -> Result<S::Response, Error<S::Error>>
where
    B: Body + Unpin + Send + 'static,
    B::Data: Buf + Send,
    B::Error: Send,
    S: Service<Request<ReplayBody<B>>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
    C: Classify<S::Response, S::Error>,
{
    // The rules in force as the request starts, for all its attempts.
    let settings = shared.settings.get();
    let send = send(shared, settings, svc, req);
    match settings.total_timeout {
        None => send.await,
        Some(total) => shared.within_total(total, send).await,
    }
}

/// A request under the rules `settings`: replayed when they allow it, sent
/// once otherwise.
async fn send<S, C, B>(
    shared: &'static ClientShared<C>,
    settings: &'static ClientSettings,
    svc: Resilience<S, C, AsErrors>,
    req: Request<B>,
) -> Result<S::Response, Error<S::Error>>
where
    B: Body + Unpin + Send + 'static,
    B::Data: Buf + Send,
    B::Error: Send,
    S: Service<Request<ReplayBody<B>>> + Clone + Send + 'static,
    S::Future: Send + 'static,
    S::Response: Send + 'static,
    S::Error: Send + 'static,
    C: Classify<S::Response, S::Error>,
{
    let (parts, body) = req.into_parts();
    let replays = shared.retry.is_some() || shared.hedging.is_some();
    if !replays || !settings.policy.allows(&parts) {
        // Not replayable (or nothing would replay it): sent once, as it is.
        let req = Request::from_parts(parts, ReplayBody::stream(Bytes::new(), body));
        return once(shared, settings, svc, req).await;
    }
    let (data, trailers) = match buffer(body, settings.policy.max_body).await {
        Buffered::Whole(data, trailers) => (data, trailers),
        // Larger than the bound, or broken off: sent once.
        Buffered::Once(body) => {
            return once(shared, settings, svc, Request::from_parts(parts, body)).await
        }
    };
    // Each attempt clones the service; behind a lock so that the attempts'
    // closure is `Sync` (the hedging's futures share it) without asking
    // the same of the service.
    let svc = std::sync::Mutex::new(svc);
    let attempt = || {
        let mut svc = svc
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let req = copy(&parts, &data, &trailers);
        async move {
            let mut req = req;
            if settings.outbound.stamp(req.headers_mut()).is_err() {
                return Err(shared.deadline_exceeded());
            }
            std::future::poll_fn(|cx| svc.poll_ready(cx)).await?;
            svc.call(req).await
        }
    };
    let mut budget = None;
    attempts(
        shared.retry(parts.uri.host(), &parts.headers, &mut budget),
        shared.hedging.as_ref().map(|h| h.get()),
        &shared.resilience.classify,
        attempt,
    )
    .await
}

/// The one attempt of a request that is not replayed.
async fn once<S, C, B>(
    shared: &'static ClientShared<C>,
    settings: &ClientSettings,
    mut svc: Resilience<S, C, AsErrors>,
    mut req: Request<ReplayBody<B>>,
) -> Result<S::Response, Error<S::Error>>
where
    B: Body,
    S: Service<Request<ReplayBody<B>>> + Clone,
    S::Response: 'static,
    S::Error: 'static,
    C: Classify<S::Response, S::Error>,
{
    if settings.outbound.stamp(req.headers_mut()).is_err() {
        return Err(shared.deadline_exceeded());
    }
    svc.call(req).await
}

/// A fresh copy of a buffered request (the bytes are shared, not copied).
fn copy<B: Body>(
    parts: &Parts,
    data: &Bytes,
    trailers: &Option<HeaderMap>,
) -> Request<ReplayBody<B>> {
    Request::from_parts(
        parts.clone(),
        ReplayBody::whole(data.clone(), trailers.clone()),
    )
}

impl<C: 'static> ClientShared<C> {
    /// The refusal of a request whose deadline is spent.
    pub(crate) fn deadline_exceeded<E>(&self) -> Error<E> {
        Error::DeadlineExceeded(DeadlineExceeded::by(self.name.as_str()))
    }

    /// `call` within the total timeout `total` (inside any deadline the
    /// caller set): when it runs out, the call is dropped and the request
    /// fails with `Error::DeadlineExceeded` naming this client.
    pub(crate) async fn within_total<T, E>(
        &self,
        total: Duration,
        call: impl Future<Output = Result<T, Error<E>>>,
    ) -> Result<T, Error<E>> {
        deadline::within(total, call)
            .await
            .unwrap_or_else(|_| Err(self.deadline_exceeded()))
    }
}
