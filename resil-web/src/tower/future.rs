//! The response future: the layer's permits held inline, released on
//! completion, error, panic and cancellation by their own `Drop`.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use resil_core::bulkhead::{AcquirePermission, BulkheadPermit};
use resil_core::circuit_breaker::Permit;
use resil_core::time_limiter::{Nested, TimeLimited};
use resil_core::Error;
use tokio::time::Sleep;
use tower_service::Service;

use super::classify::{Classify, Verdict};
use super::layer::Shared;
use super::respond::{Refusal, Respond};
use super::service::body;

type Output<S, Req> = Result<<S as Service<Req>>::Response, Error<<S as Service<Req>>::Error>>;

pin_project! {
    /// The future of a [`Resilience`](super::Resilience) service's `call`.
    ///
    /// Holds the breaker's permit, the rate limiter's reserved wait, the
    /// time limiter's timer and the bulkhead's slot inline, in the
    /// attributes' order. Dropped before completion, it records nothing and
    /// gives back what it holds (a half-open probe slot, a bulkhead slot, a
    /// place in the bulkhead's queue).
    #[must_use = "futures do nothing unless polled"]
    pub struct ResponseFuture<S, Req, C: 'static, R: 'static>
    where
        S: Service<Req>,
    {
        #[pin]
        stage: Stage<S, Req>,
        permit: Option<Permit<'static>>,
        shared: &'static Shared<C, R>,
    }
}

pin_project! {
    #[project = StageProj]
    enum Stage<S, Req>
    where
        S: Service<Req>,
    {
        // Refused before the inner service was called.
        Refused { error: Option<Error<S::Error>> },
        // The rate limiter reserved a permit of a later cycle. The timer, the
        // service and the request wait in one box: only a waiting request
        // pays for it (one allocation, as the timer alone did), and every
        // other request's future is not as large as a `Sleep` plus an
        // `http::Request` (over 300 bytes), which it would carry and move.
        Throttled { wait: Pin<Box<Throttled<S, Req>>> },
        Timed { #[pin] fut: Nested<TimeLimited<'static, Body<S, Req>>> },
        Plain { #[pin] fut: Body<S, Req> },
    }
}

pin_project! {
    /// The bulkhead's part and the inner call.
    #[project = BodyProj]
    pub(crate) enum Body<S, Req>
    where
        S: Service<Req>,
    {
        Call { #[pin] fut: S::Future, permit: Option<BulkheadPermit<'static>> },
        // Boxed for the reason `Stage::Throttled` is: a waiting acquisition
        // already allocates (its place in the queue, its timer).
        Acquire { wait: Box<Acquiring<S, Req>> },
        Refused { error: Option<Error<S::Error>> },
        Done,
    }
}

pin_project! {
    /// A request waiting for the rate limiter's reserved permit.
    pub(crate) struct Throttled<S, Req> {
        #[pin]
        sleep: Sleep,
        svc: Option<S>,
        req: Option<Req>,
    }
}

/// A request waiting for a bulkhead slot.
pub(crate) struct Acquiring<S, Req> {
    acquire: AcquirePermission<'static>,
    svc: Option<S>,
    req: Option<Req>,
}

impl<S: Service<Req>, Req> Body<S, Req> {
    pub(crate) fn call(fut: S::Future, permit: Option<BulkheadPermit<'static>>) -> Self {
        Body::Call { fut, permit }
    }

    #[cold]
    pub(crate) fn acquire(acquire: AcquirePermission<'static>, svc: S, req: Req) -> Self {
        Body::Acquire {
            wait: Box::new(Acquiring {
                acquire,
                svc: Some(svc),
                req: Some(req),
            }),
        }
    }

    pub(crate) fn refused(error: Error<S::Error>) -> Self {
        Body::Refused { error: Some(error) }
    }
}

impl<S: Service<Req>, Req> Future for Body<S, Req> {
    type Output = Output<S, Req>;

    // Always inlined into the layer's poll: its result would otherwise come
    // back through memory, and reading it stalls on store forwarding.
    #[inline(always)]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            match self.as_mut().project() {
                BodyProj::Call { fut, .. } => {
                    let out = ready!(fut.poll(cx)).map_err(Error::Call);
                    // The slot is free as soon as the work is done. `set`
                    // drops the old state where it stands: a
                    // `project_replace` would first copy it out, and that
                    // wide read of fields just written stalls on store
                    // forwarding (the layer's largest cost, measured).
                    self.set(Body::Done);
                    return Poll::Ready(out);
                }
                BodyProj::Acquire { wait } => {
                    let w = &mut **wait;
                    match ready!(Pin::new(&mut w.acquire).poll(cx)) {
                        Ok(permit) => {
                            let (Some(mut svc), Some(req)) = (w.svc.take(), w.req.take()) else {
                                unreachable!("the service and request wait with the acquire");
                            };
                            let fut = svc.call(req);
                            self.set(Body::Call {
                                fut,
                                permit: Some(permit),
                            });
                        }
                        Err(refused) => {
                            self.set(Body::Done);
                            return Poll::Ready(Err(refused.into_error()));
                        }
                    }
                }
                BodyProj::Refused { error } => {
                    let error = error.take().expect("polled after completion");
                    self.set(Body::Done);
                    return Poll::Ready(Err(error));
                }
                BodyProj::Done => panic!("`ResponseFuture` polled after completion"),
            }
        }
    }
}

impl<S, Req, C: 'static, R: 'static> ResponseFuture<S, Req, C, R>
where
    S: Service<Req> + Clone,
{
    pub(crate) fn refused(
        shared: &'static Shared<C, R>,
        permit: Option<Permit<'static>>,
        error: Error<S::Error>,
    ) -> Self {
        ResponseFuture {
            stage: Stage::Refused { error: Some(error) },
            permit,
            shared,
        }
    }

    #[cold]
    pub(crate) fn throttled(
        shared: &'static Shared<C, R>,
        permit: Option<Permit<'static>>,
        wait: Duration,
        svc: S,
        req: Req,
    ) -> Self {
        ResponseFuture {
            stage: Stage::Throttled {
                wait: Box::pin(Throttled {
                    sleep: tokio::time::sleep(wait),
                    svc: Some(svc),
                    req: Some(req),
                }),
            },
            permit,
            shared,
        }
    }

    pub(crate) fn running(
        shared: &'static Shared<C, R>,
        permit: Option<Permit<'static>>,
        body: Body<S, Req>,
    ) -> Self {
        ResponseFuture {
            stage: timed(shared, body),
            permit,
            shared,
        }
    }
}

fn timed<S: Service<Req>, Req, C: 'static, R: 'static>(
    shared: &'static Shared<C, R>,
    body: Body<S, Req>,
) -> Stage<S, Req> {
    match &shared.time_limiter {
        Some(limiter) => Stage::Timed {
            fut: limiter.get().call_async_nested(body),
        },
        None => Stage::Plain { fut: body },
    }
}

impl<S, Req, C: 'static, R: 'static> Future for ResponseFuture<S, Req, C, R>
where
    S: Service<Req> + Clone,
    S::Response: 'static,
    S::Error: 'static,
    C: Classify<S::Response, S::Error>,
    R: Respond<S::Response, S::Error>,
{
    type Output = Result<S::Response, R::Error>;

    #[inline]
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let out = loop {
            let this = self.as_mut().project();
            let shared = *this.shared;
            let permit = this.permit;
            match this.stage.project() {
                StageProj::Refused { error } => {
                    break Err(error.take().expect("polled after completion"));
                }
                StageProj::Throttled { wait } => {
                    let w = wait.as_mut().project();
                    ready!(w.sleep.poll(cx));
                    let (Some(mut svc), Some(req)) = (w.svc.take(), w.req.take()) else {
                        unreachable!("the service and request wait with the sleep");
                    };
                    let body = body(shared, &mut svc, req);
                    self.as_mut().project().stage.set(timed(shared, body));
                }
                StageProj::Timed { fut } => break ready!(fut.poll(cx)),
                StageProj::Plain { mut fut } => {
                    // The common path, the inner call answering: its
                    // response goes out as the inner future gave it, never
                    // through a `Result<_, Error<_>>`, whose different layout
                    // moves it field by field, and the caller's block copy
                    // of the response then stalls on those stores
                    // (measured: about 15 ns a request in process).
                    if let BodyProj::Call { fut: inner, .. } = fut.as_mut().project() {
                        let answer = ready!(inner.poll(cx));
                        // The slot is free as soon as the work is done.
                        fut.set(Body::Done);
                        match answer {
                            Ok(response) => {
                                if let Some(permit) = permit.take() {
                                    record_response(&shared.classify, permit, &response);
                                }
                                return Poll::Ready(Ok(response));
                            }
                            Err(error) => break Err(Error::Call(error)),
                        }
                    }
                    break ready!(fut.poll(cx));
                }
            }
        };
        // The stage is left as it ended (refused with its error taken, or
        // its body `Done`: either panics if polled again): the bulkhead's slot and the inner future
        // are already dropped, and rewriting the whole stage would copy it
        // out first (see `Body::poll`).
        let this = self.project();
        let shared = *this.shared;
        if let Some(permit) = this.permit.take() {
            record(&shared.classify, permit, &out);
        }
        Poll::Ready(finish(shared, out))
    }
}

/// Records a result with the breaker's permit: the classifier's verdict on
/// a response or the inner error, the breaker's predicates on a refusal of
/// an inner aspect (a failure unless ignored), as the attributes record.
#[inline]
fn record<Res: 'static, E: 'static>(
    classify: &impl Classify<Res, E>,
    permit: Permit<'static>,
    out: &Result<Res, Error<E>>,
) {
    let verdict = match out {
        Ok(response) => return record_response(classify, permit, response),
        Err(Error::Call(error)) => classify.classify_error(error),
        Err(_) => Verdict::Predicates,
    };
    match verdict {
        Verdict::Predicates => permit.on_nested_result(out),
        Verdict::Record(outcome, transition) => permit.record_with(outcome, transition),
    }
}

/// Records a response with the breaker's permit: the classifier's verdict,
/// else the breaker's value predicates (as `record` does for `Ok`).
#[inline]
fn record_response<Res: 'static, E: 'static>(
    classify: &impl Classify<Res, E>,
    permit: Permit<'static>,
    response: &Res,
) {
    match classify.classify_response(response) {
        Verdict::Predicates => permit.on_value(response),
        Verdict::Record(outcome, transition) => permit.record_with(outcome, transition),
    }
}

#[inline(always)]
fn finish<Res, E, C: 'static, R: Respond<Res, E>>(
    shared: &'static Shared<C, R>,
    out: Result<Res, Error<E>>,
) -> Result<Res, R::Error> {
    match out {
        Ok(response) => Ok(response),
        Err(error) => match error.into_rejection() {
            Err(error) => Err(shared.respond.error(error)),
            Ok(rejection) => {
                use resil_core::Rejection as Rj;
                let retry_after = match &rejection {
                    Rj::CallNotPermitted(_) => shared
                        .breaker
                        .as_ref()
                        .and_then(|b| b.remaining_open_wait()),
                    Rj::RequestNotPermitted(_) => {
                        shared.limiter.as_ref().map(|l| l.time_to_next_permit())
                    }
                    _ => None,
                };
                shared.respond.refused(Refusal::new(rejection, retry_after))
            }
        },
    }
}

impl<S, Req, C: 'static, R: 'static> fmt::Debug for ResponseFuture<S, Req, C, R>
where
    S: Service<Req>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("name", &self.shared.name)
            .field("permit", &self.permit.is_some())
            .finish_non_exhaustive()
    }
}
