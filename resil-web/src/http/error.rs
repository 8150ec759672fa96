//! The error a classified HTTP call returns.

use std::fmt;
use std::time::Duration;

use http::StatusCode;
use resil_core::circuit_breaker::{Outcome, ResultTransition};

/// Why a classified HTTP call did not return a success: a response whose
/// status is a failure or ignored, or a transport error.
///
/// The circuit breaker records [`HttpError::Status`] as its classifier says
/// (ignored or failure) and every [`HttpError::Transport`] as a failure.
#[derive(Debug)]
#[non_exhaustive]
pub enum HttpError {
    /// The server answered with a status that is not a success.
    Status {
        /// The status.
        status: StatusCode,
        /// Failure or ignored (never success).
        outcome: Outcome,
        /// Its `Retry-After`, when the status is one that honours it.
        retry_after: Option<Duration>,
    },
    /// No response: connect refused, connection reset, timed out, a body
    /// that broke off.
    Transport(Box<dyn std::error::Error + Send + Sync>),
}

impl HttpError {
    /// A transport error.
    pub fn transport(error: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        register_error_type();
        HttpError::Transport(error.into())
    }

    /// The status, for a response.
    pub fn status(&self) -> Option<StatusCode> {
        match self {
            HttpError::Status { status, .. } => Some(*status),
            HttpError::Transport(_) => None,
        }
    }

    /// How the breaker records it.
    pub fn outcome(&self) -> Outcome {
        match self {
            HttpError::Status { outcome, .. } => *outcome,
            HttpError::Transport(_) => Outcome::Failure,
        }
    }

    /// Whether the breaker ignores it (and a retry does not retry it).
    pub fn is_ignored(&self) -> bool {
        self.outcome() == Outcome::Ignored
    }

    /// The response's `Retry-After`, when its status honours it.
    pub fn retry_after(&self) -> Option<Duration> {
        match self {
            HttpError::Status { retry_after, .. } => *retry_after,
            HttpError::Transport(_) => None,
        }
    }

    /// Its `error.type` in a trace (see `resil_core::trace`): the status
    /// code (`503`), or for a transport error `connect` (refused,
    /// unreachable), `timeout`, or `transport` (anything else: a reset, a
    /// body that broke off).
    ///
    /// ```
    /// use resil_web::http::HttpError;
    ///
    /// let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
    /// assert_eq!(HttpError::transport(refused).error_type(), "connect");
    /// ```
    pub fn error_type(&self) -> &str {
        match self {
            HttpError::Status { status, .. } => status.as_str(),
            HttpError::Transport(e) => transport_type(&**e),
        }
    }

    /// What it asks of the breaker: open for its `Retry-After`, or nothing.
    pub fn transition(&self) -> ResultTransition {
        match self.retry_after() {
            Some(wait) => ResultTransition::OpenFor(wait),
            None => ResultTransition::Stay,
        }
    }
}

impl fmt::Display for HttpError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HttpError::Status { status, .. } => write!(f, "the server answered {status}"),
            HttpError::Transport(e) => write!(f, "transport error: {e}"),
        }
    }
}

impl std::error::Error for HttpError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            HttpError::Transport(e) => Some(&**e),
            HttpError::Status { .. } => None,
        }
    }
}

/// `connect`, `timeout` or `transport` for a transport error: what reqwest
/// says it was, else the first I/O error in its chain of sources.
fn transport_type(error: &(dyn std::error::Error + 'static)) -> &'static str {
    #[cfg(feature = "reqwest")]
    if let Some(e) = error.downcast_ref::<reqwest::Error>() {
        if e.is_connect() {
            return "connect";
        }
        if e.is_timeout() {
            return "timeout";
        }
    }
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return resil_core::trace::io_error_type(io).unwrap_or("transport");
        }
        next = e.source();
    }
    "transport"
}

/// Gives [`HttpError`] its [`error_type`](HttpError::error_type) in resil's
/// spans (once per process; called where the error type comes into use: a
/// classifier is built, a transport error made).
pub(crate) fn register_error_type() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        resil_core::trace::register_error_type::<HttpError>(|e, label| label(e.error_type()))
    });
}
