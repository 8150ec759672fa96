//! The inbound deadline's response future.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::{HeaderValue, Response, StatusCode};
use pin_project_lite::pin_project;
use resil_core::error::DeadlineExceeded;

type Scoped<T> = Pin<Box<dyn Future<Output = Result<T, DeadlineExceeded>> + Send>>;

pin_project! {
    /// The future of a [`Deadline`](super::Deadline) service's `call`: the
    /// handler's own future when the request sent no budget, else the
    /// handler inside its deadline's scope (boxed), or an answer at once for
    /// a budget already spent.
    #[must_use = "futures do nothing unless polled"]
    pub struct DeadlineFuture<F: Future> {
        #[pin]
        state: State<F>,
    }
}

pin_project! {
    #[project = StateProj]
    enum State<F: Future> {
        Plain { #[pin] fut: F },
        Scoped { fut: Scoped<F::Output>, grpc: bool },
        Spent { grpc: bool },
    }
}

impl<F: Future> DeadlineFuture<F> {
    pub(crate) fn plain(fut: F) -> Self {
        DeadlineFuture {
            state: State::Plain { fut },
        }
    }

    pub(crate) fn scoped(
        fut: impl Future<Output = Result<F::Output, DeadlineExceeded>> + Send + 'static,
        grpc: bool,
    ) -> Self {
        DeadlineFuture {
            state: State::Scoped {
                fut: Box::pin(fut),
                grpc,
            },
        }
    }

    pub(crate) fn spent(grpc: bool) -> Self {
        DeadlineFuture {
            state: State::Spent { grpc },
        }
    }
}

impl<F, RB, E> Future for DeadlineFuture<F>
where
    F: Future<Output = Result<Response<RB>, E>>,
    RB: From<String>,
{
    type Output = Result<Response<RB>, E>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().state.project() {
            StateProj::Plain { fut } => fut.poll(cx),
            StateProj::Scoped { fut, grpc } => match fut.as_mut().poll(cx) {
                Poll::Pending => Poll::Pending,
                Poll::Ready(Ok(out)) => Poll::Ready(out),
                Poll::Ready(Err(_)) => Poll::Ready(Ok(expired(*grpc))),
            },
            StateProj::Spent { grpc } => Poll::Ready(Ok(expired(*grpc))),
        }
    }
}

/// The answer to a request whose deadline passed: 504, or gRPC's
/// trailers-only `DEADLINE_EXCEEDED`.
fn expired<RB: From<String>>(grpc: bool) -> Response<RB> {
    if grpc {
        let mut response = Response::new(RB::from(String::new()));
        let headers = response.headers_mut();
        headers.insert(
            http::header::CONTENT_TYPE,
            HeaderValue::from_static("application/grpc"),
        );
        headers.insert("grpc-status", HeaderValue::from_static("4"));
        headers.insert(
            "grpc-message",
            HeaderValue::from_static("deadline%20exceeded"),
        );
        return response;
    }
    let mut response = Response::new(RB::from("deadline exceeded".to_owned()));
    *response.status_mut() = StatusCode::GATEWAY_TIMEOUT;
    response.headers_mut().insert(
        http::header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

impl<F: Future> fmt::Debug for DeadlineFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("DeadlineFuture").finish_non_exhaustive()
    }
}
