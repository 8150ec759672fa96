//! The response future: the inner service's, holding the permit, or a
//! refusal ready at once.

use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::Response;
use pin_project_lite::pin_project;
use resil_core::inbound::{InboundPermit, Overloaded};

use super::service::overloaded_response;

pin_project! {
    /// The future of [`InboundGuardService`](super::InboundGuardService): the
    /// inner service's, holding the permit that keeps the request in flight
    /// until the response is complete (or the future dropped), or a refusal
    /// ready at once.
    #[must_use = "futures do nothing unless polled"]
    pub struct InboundFuture<F, B> {
        #[pin]
        state: State<F, B>,
    }
}

pin_project! {
    #[project = Proj]
    enum State<F, B> {
        Admitted { #[pin] fut: F, permit: Option<InboundPermit> },
        // The refusal, not its response: the future stays as small as the
        // inner one plus the permit, and the response is built when polled.
        Refused { refused: Option<Overloaded>, body: PhantomData<fn() -> B> },
    }
}

impl<F, B> InboundFuture<F, B> {
    pub(super) fn admitted(fut: F, permit: InboundPermit) -> Self {
        InboundFuture {
            state: State::Admitted {
                fut,
                permit: Some(permit),
            },
        }
    }

    pub(super) fn refused(refused: Overloaded) -> Self {
        InboundFuture {
            state: State::Refused {
                refused: Some(refused),
                body: PhantomData,
            },
        }
    }
}

impl<F, B, E> Future for InboundFuture<F, B>
where
    F: Future<Output = Result<Response<B>, E>>,
    B: Default,
{
    type Output = Result<Response<B>, E>;

    // Inlined, as the inner future's poll is: a result handed back through
    // memory stalls on store forwarding when the caller reads it.
    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            Proj::Admitted { fut, permit } => {
                let out = std::task::ready!(fut.poll(cx));
                // The response is complete: the request leaves the count. A
                // 503 or 429 from further in is a refusal, not a completion.
                if let Some(permit) = permit.take() {
                    match &out {
                        Ok(r) if matches!(r.status().as_u16(), 429 | 503) => permit.refused(),
                        _ => drop(permit),
                    }
                }
                Poll::Ready(out)
            }
            Proj::Refused { refused, .. } => answer_refused(refused),
        }
    }
}

/// The answer to a refused request, once.
#[cold]
fn answer_refused<B: Default, E>(refused: &mut Option<Overloaded>) -> Poll<Result<Response<B>, E>> {
    match refused.take() {
        Some(r) => Poll::Ready(Ok(overloaded_response(&r))),
        None => Poll::Pending,
    }
}
