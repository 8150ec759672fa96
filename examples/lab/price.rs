//! The adapter between HTTP and the lab's protected calls (the lab's
//! contract): 200 is the price, 403 is `BusinessRejected`, any other status
//! (and no answer at all) is `DependencyFailure`. A 503 that came back as a
//! normal reply would otherwise look like a success to every primitive.

use std::fmt;
use std::net::SocketAddr;

use hyper::StatusCode;
use resil::{ErrorKind, Rejection};

use crate::http::{self, Answer, Failure};

/// Why a price query failed. Each variant's class name is what `lab.yaml`'s
/// error lists say (`record-exceptions: [dependency_failure]`, …).
#[derive(Debug, Clone, PartialEq, Eq, resil::ErrorClass)]
pub enum PriceError {
    /// 403: this caller may not see the price. An answer, not an outage:
    /// never retried, never a breaker failure.
    #[error_class(name = "business_rejected")]
    BusinessRejected,
    /// Any other status, or no answer: the price service is unwell.
    #[error_class(name = "dependency_failure")]
    DependencyFailure(String),
    /// The request was cancelled before it completed (its connection was torn
    /// down underneath it): says nothing about the price service's health.
    #[error_class(name = "interrupted_call")]
    InterruptedCall,
    /// A resil primitive refused the call (an open breaker, a full bulkhead,
    /// a rate limit, a timeout, a spent retry budget).
    #[error_class(name = "refused")]
    Refused(Rejection),
}

impl From<Rejection> for PriceError {
    fn from(rejection: Rejection) -> PriceError {
        PriceError::Refused(rejection)
    }
}

impl From<Failure> for PriceError {
    fn from(failure: Failure) -> PriceError {
        match failure {
            Failure::Io(why) => PriceError::DependencyFailure(why),
            Failure::Canceled => PriceError::InterruptedCall,
        }
    }
}

impl fmt::Display for PriceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PriceError::BusinessRejected => f.write_str("business rejected (HTTP 403)"),
            PriceError::DependencyFailure(why) => write!(f, "dependency failure: {why}"),
            PriceError::InterruptedCall => f.write_str("interrupted call"),
            PriceError::Refused(rejection) => rejection.fmt(f),
        }
    }
}

impl std::error::Error for PriceError {}

impl PriceError {
    /// The name the Java lab prints for this outcome: its exception
    /// class, or Resilience4j's for a refusal.
    pub fn label(&self) -> &'static str {
        match self {
            PriceError::BusinessRejected => "BusinessRejected",
            PriceError::DependencyFailure(_) => "DependencyFailure",
            PriceError::InterruptedCall => "InterruptedCall",
            PriceError::Refused(rejection) => match rejection.kind() {
                ErrorKind::CallNotPermitted => "CallNotPermittedException",
                ErrorKind::BulkheadFull => "BulkheadFullException",
                ErrorKind::RequestNotPermitted => "RequestNotPermitted",
                ErrorKind::Timeout => "TimeoutException",
                ErrorKind::RetryBudgetExhausted => "RetryBudgetExhausted",
                _ => "Refused",
            },
        }
    }

    /// Whether a resil primitive refused the call with `kind`.
    pub fn is_refusal(&self, kind: ErrorKind) -> bool {
        matches!(self, PriceError::Refused(r) if r.kind() == kind)
    }
}

/// A price, or its failure, read from one HTTP reply.
pub fn adapt(answer: Answer) -> Result<u32, PriceError> {
    match answer.status {
        StatusCode::OK => answer.body.trim().parse().map_err(|_| {
            PriceError::DependencyFailure(format!("unreadable price `{}`", answer.body))
        }),
        StatusCode::FORBIDDEN => Err(PriceError::BusinessRejected),
        other => Err(PriceError::DependencyFailure(format!(
            "HTTP_{}",
            other.as_u16()
        ))),
    }
}

/// The unprotected call: `GET /price/{behaviour}` on the downstream.
pub async fn fetch(downstream: SocketAddr, behaviour: &str) -> Result<u32, PriceError> {
    adapt(http::get(downstream, &format!("/price/{behaviour}")).await?)
}

/// `GET /db/{behaviour}`: the same price service, through its database pool.
pub async fn fetch_db(downstream: SocketAddr, behaviour: &str) -> Result<u32, PriceError> {
    adapt(http::get(downstream, &format!("/db/{behaviour}")).await?)
}

/// A result as the lab prints it: the price, or the error's label.
pub fn label_of(result: &Result<u32, PriceError>) -> String {
    match result {
        Ok(price) => price.to_string(),
        Err(e) => e.label().to_owned(),
    }
}
