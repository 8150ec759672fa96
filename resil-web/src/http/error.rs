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
