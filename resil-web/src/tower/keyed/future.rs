//! The keyed layer's response future: the key's permits held inline and
//! released by their own `Drop` on completion, error, panic and
//! cancellation.

use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};

use http::Response;
use pin_project_lite::pin_project;
use resil_core::circuit_breaker::OwnedPermit;
use resil_core::keyed::{BreakerHandle, BulkheadHandle, KeyPermit};
use tokio::time::Sleep;
use tower_service::Service;

use super::layer::{KeyedResponses, KeyedShared};
use super::service::{full, Admission};
use crate::tower::{Classify, Verdict};

pin_project! {
    /// The future of a [`KeyedService`](super::KeyedService)'s `call`: the
    /// inner call holding the key's breaker permit and bulkhead slot, a
    /// wait for a reserved rate-limiter permit (boxed: only a waiting
    /// request pays for it), or a refusal ready at once. Dropped before
    /// completion, it records nothing and gives back what it holds (a
    /// half-open probe, a bulkhead slot; a reserved permit stays taken, as
    /// in Resilience4j).
    #[must_use = "futures do nothing unless polled"]
    pub struct KeyedFuture<S, Req, B, X: 'static, P: 'static, R: 'static>
    where
        S: Service<Req>,
    {
        #[pin]
        state: State<S, Req, B>,
        breaker: Option<(BreakerHandle<'static>, OwnedPermit)>,
        slot: Option<KeyPermit>,
        shared: &'static KeyedShared<X, P, R>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<S, Req, B>
    where
        S: Service<Req>,
    {
        Call { #[pin] fut: S::Future },
        Waiting { wait: Pin<Box<Waiting<S, Req>>> },
        Ready { response: Option<Response<B>> },
    }
}

pin_project! {
    struct Waiting<S, Req> {
        #[pin]
        sleep: Sleep,
        svc: Option<S>,
        req: Option<Req>,
        bulkhead: Option<BulkheadHandle<'static>>,
    }
}

impl<S, Req, B, X: 'static, P: 'static, R: 'static> KeyedFuture<S, Req, B, X, P, R>
where
    S: Service<Req>,
{
    pub(super) fn ready(shared: &'static KeyedShared<X, P, R>, response: Response<B>) -> Self {
        KeyedFuture {
            state: State::Ready {
                response: Some(response),
            },
            breaker: None,
            slot: None,
            shared,
        }
    }

    pub(super) fn running(
        shared: &'static KeyedShared<X, P, R>,
        fut: S::Future,
        admission: Admission,
    ) -> Self {
        KeyedFuture {
            state: State::Call { fut },
            breaker: admission.breaker,
            slot: admission.slot,
            shared,
        }
    }

    #[cold]
    pub(super) fn waiting(
        shared: &'static KeyedShared<X, P, R>,
        svc: S,
        req: Req,
        admission: Admission,
    ) -> Self {
        KeyedFuture {
            state: State::Waiting {
                wait: Box::pin(Waiting {
                    sleep: tokio::time::sleep(admission.wait),
                    svc: Some(svc),
                    req: Some(req),
                    bulkhead: admission.bulkhead,
                }),
            },
            breaker: admission.breaker,
            slot: None,
            shared,
        }
    }
}

impl<S, Req, B, X: 'static, P: 'static, R> Future for KeyedFuture<S, Req, B, X, P, R>
where
    S: Service<Req, Response = Response<B>>,
    R: KeyedResponses<B>,
{
    type Output = Result<Response<B>, S::Error>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        loop {
            let this = self.as_mut().project();
            match this.state.project() {
                StateProj::Call { fut } => {
                    let out = ready!(fut.poll(cx));
                    if let Some((_handle, permit)) = this.breaker.take() {
                        let classify = &this.shared.classify;
                        let verdict = match &out {
                            Ok(response) => {
                                <_ as Classify<Response<B>, S::Error>>::classify_response(
                                    classify, response,
                                )
                            }
                            Err(e) => {
                                <_ as Classify<Response<B>, S::Error>>::classify_error(classify, e)
                            }
                        };
                        permit.record(|p| match verdict {
                            Verdict::Record(outcome, transition) => {
                                p.record_with(outcome, transition)
                            }
                            Verdict::Predicates => p.on_success(),
                        });
                    }
                    // The slot goes back with the response.
                    this.slot.take();
                    return Poll::Ready(out);
                }
                StateProj::Ready { response } => {
                    return match response.take() {
                        Some(r) => Poll::Ready(Ok(r)),
                        None => Poll::Pending,
                    }
                }
                StateProj::Waiting { wait } => {
                    let w = wait.as_mut().project();
                    ready!(w.sleep.poll(cx));
                    let (Some(mut svc), Some(req)) = (w.svc.take(), w.req.take()) else {
                        return Poll::Pending;
                    };
                    if let Some(bulkhead) = w.bulkhead.take() {
                        match bulkhead.try_acquire() {
                            Ok(slot) => *this.slot = Some(slot),
                            Err(refused) => {
                                // Refused by the key's own bulkhead: the
                                // breaker's permit goes back unrecorded.
                                this.breaker.take();
                                let response = this.shared.respond.refused(&full(refused));
                                self.as_mut().project().state.set(State::Ready {
                                    response: Some(response),
                                });
                                continue;
                            }
                        }
                    }
                    // The service was ready when it was moved here.
                    let fut = svc.call(req);
                    self.as_mut().project().state.set(State::Call { fut });
                }
            }
        }
    }
}
