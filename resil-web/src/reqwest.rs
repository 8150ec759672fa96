//! The client side for reqwest: [`ResilienceMiddleware`], a
//! `reqwest_middleware::Middleware` running a
//! [`ClientLayer`]'s stack around each
//! request of a `reqwest_middleware::ClientWithMiddleware`.
//!
//! The stack is the client layer's: the registry's instances called `name`,
//! in the attributes' order, Retry( Hedge( Throttler( CircuitBreaker(
//! RateLimiter( TimeLimiter( Bulkhead( the rest of the chain ))))))),
//! classified by an [`HttpClassifier`] (the same sets as `resil.http` in the
//! file, with [`HttpClassifier::follow`]), with the same replay rules (an
//! safe method or an `Idempotency-Key`; a body reqwest can clone,
//! i.e. not a stream) and the task's deadline sent downstream.
//!
//! ```
//! use resil_registry::Registry;
//! use resil_web::http::HttpClassifier;
//! use resil_web::reqwest::ResilienceMiddleware;
//! use resil_web::tower::ResilienceLayer;
//!
//! let registry = Registry::new();
//! let prices = ResilienceLayer::builder(&registry, "prices")
//!     .retry()
//!     .circuit_breaker()
//!     .classify(HttpClassifier::follow(&registry, "prices"))
//!     .build();
//! let client = reqwest_middleware::ClientBuilder::new(reqwest::Client::new())
//!     .with(ResilienceMiddleware::new(prices))
//!     .build();
//! # let _ = client;
//! ```
//!
//! A refusal (an open breaker, a rate limit, a timeout, a spent deadline)
//! comes back as `reqwest_middleware::Error::Middleware` wrapping the
//! [`resil_core::Rejection`] (`error.downcast_ref::<Rejection>()`); the
//! rest of the chain's own errors come back as they were. Each attempt runs
//! the rest of the chain with a copy of the request's extensions (hedged
//! attempts run side by side), so what an inner middleware writes into them
//! does not reach the caller.
//!
//! reqwest's own retry (`reqwest::retry`, 0.13) sits inside the client,
//! beneath every middleware: keep it off where this middleware retries, or
//! each resil attempt becomes several requests that no resil instance sees.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use ::reqwest::{Request, Response};
use http::Extensions;
use reqwest_middleware::{Middleware, Next};
use resil_core::{Error, Rejection};
use tower_layer::Layer;
use tower_service::Service;

use crate::http::HttpClassifier;
use crate::tower::client::layer::ClientSettings;
use crate::tower::client::ClientLayer;
use crate::tower::{Classify, Verdict};

type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// A `reqwest_middleware::Middleware` running a [`ClientLayer`]'s stack
/// (see the [module docs](self)).
#[derive(Debug, Clone, Copy)]
pub struct ResilienceMiddleware {
    layer: ClientLayer<HttpClassifier>,
}

impl ResilienceMiddleware {
    /// The middleware running `layer`'s aspects, classifier, replay rules
    /// and deadline header.
    pub fn new(layer: ClientLayer<HttpClassifier>) -> Self {
        ResilienceMiddleware { layer }
    }
}

impl From<ClientLayer<HttpClassifier>> for ResilienceMiddleware {
    fn from(layer: ClientLayer<HttpClassifier>) -> Self {
        ResilienceMiddleware::new(layer)
    }
}

/// reqwest responses by status and `Retry-After`, as `http::Response`s are.
impl<E> Classify<Response, E> for HttpClassifier {
    #[inline]
    fn classify_response(&self, response: &Response) -> Verdict {
        let (outcome, transition) = self.judge(response);
        Verdict::Record(outcome, transition)
    }

    #[inline]
    fn classify_error(&self, _: &E) -> Verdict {
        Verdict::FAILURE
    }

    fn refused(&self, response: &Response) -> Option<bool> {
        Some(matches!(response.status().as_u16(), 429 | 503))
    }
}

/// The rest of the chain as a tower service, each call with its own copy
/// of the extensions.
#[derive(Clone)]
struct Rest<'a> {
    next: Next<'a>,
    extensions: Extensions,
}

impl<'a> Service<Request> for Rest<'a> {
    type Response = Response;
    type Error = reqwest_middleware::Error;
    type Future = BoxFuture<'a, reqwest_middleware::Result<Response>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: Request) -> Self::Future {
        let next = self.next.clone();
        let mut extensions = self.extensions.clone();
        Box::pin(async move { next.run(req, &mut extensions).await })
    }
}

impl Middleware for ResilienceMiddleware {
    fn handle<'life0, 'life1, 'life2, 'async_trait>(
        &'life0 self,
        req: Request,
        extensions: &'life1 mut Extensions,
        next: Next<'life2>,
    ) -> BoxFuture<'async_trait, reqwest_middleware::Result<Response>>
    where
        'life0: 'async_trait,
        'life1: 'async_trait,
        'life2: 'async_trait,
        Self: 'async_trait,
    {
        let rest = Rest {
            next,
            extensions: extensions.clone(),
        };
        Box::pin(async move { run(self.layer, rest, req).await.map_err(to_middleware) })
    }
}

async fn run(
    layer: ClientLayer<HttpClassifier>,
    rest: Rest<'_>,
    req: Request,
) -> Result<Response, Error<reqwest_middleware::Error>> {
    let (_, shared) = layer.parts();
    // The rules in force as the request starts, for all its attempts.
    let settings = shared.settings.get();
    let send = send(layer, settings, rest, req);
    match settings.total_timeout {
        None => send.await,
        Some(total) => shared.within_total(total, send).await,
    }
}

/// A request under the rules `settings`: replayed when they allow it, sent
/// once otherwise.
async fn send(
    layer: ClientLayer<HttpClassifier>,
    settings: &ClientSettings,
    rest: Rest<'_>,
    mut req: Request,
) -> Result<Response, Error<reqwest_middleware::Error>> {
    let (resilience, shared) = layer.parts();
    let mut svc = resilience.layer(rest);
    let replays = (shared.retry.is_some() || shared.hedging.is_some())
        && settings.policy.allows_request(req.method(), req.headers())
        && fits(&req, settings.policy.max_body);
    if !replays {
        if settings.outbound.stamp(req.headers_mut()).is_err() {
            return Err(shared.deadline_exceeded());
        }
        std::future::poll_fn(|cx| svc.poll_ready(cx)).await?;
        return svc.call(req).await;
    }
    let svc = std::sync::Mutex::new(svc);
    let req = &req;
    let attempt = || {
        let mut svc = svc
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone();
        let copy = req.try_clone();
        async move {
            // `fits` cloned it once; a body that clones once clones again.
            let Some(mut req) = copy else {
                return Err(Error::Call(reqwest_middleware::Error::middleware(
                    std::io::Error::other("the request body cannot be replayed"),
                )));
            };
            if settings.outbound.stamp(req.headers_mut()).is_err() {
                return Err(shared.deadline_exceeded());
            }
            std::future::poll_fn(|cx| svc.poll_ready(cx)).await?;
            svc.call(req).await
        }
    };
    let mut budget = None;
    crate::tower::client::attempts::attempts(
        shared.retry(req.url().host_str(), req.headers(), &mut budget),
        shared.hedging.as_ref().map(|h| h.get()),
        &shared.resilience.classify,
        attempt,
    )
    .await
}

/// Whether reqwest can clone the request (its body is not a stream) and
/// its body is within the replay bound.
fn fits(req: &Request, max: usize) -> bool {
    req.try_clone().is_some()
        && req
            .body()
            .and_then(|b| b.as_bytes())
            .is_none_or(|bytes| bytes.len() <= max)
}

/// A resil outcome as the middleware chain's error.
fn to_middleware(error: Error<reqwest_middleware::Error>) -> reqwest_middleware::Error {
    match error.into_rejection() {
        Ok(rejection) => reqwest_middleware::Error::middleware::<Rejection>(rejection),
        Err(error) => error,
    }
}
