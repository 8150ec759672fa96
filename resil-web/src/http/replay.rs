//! Which request methods may be sent twice (RFC 9110 §9.2): the rule the
//! client layers' retry and hedging replay by, and (feature `reqwest`) the
//! one `HttpClassifier::reqwest_retry` gives reqwest's own retry.

use http::Method;

/// Which methods the client's retry and hedging replay when the request
/// carries no idempotency key.
///
/// Whatever the rule, a request carrying the idempotency header is
/// replayable, and one whose body is larger than the bound (or breaks off
/// while it is buffered) is not.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplayMethods {
    /// RFC 9110 §9.2.2's idempotent methods: `GET`, `HEAD`, `OPTIONS`,
    /// `TRACE`, `PUT`, `DELETE`. `POST`, `PATCH`, `CONNECT` and every
    /// extension method are sent once.
    Idempotent,
    /// RFC 9110 §9.2.1's safe methods only: `GET`, `HEAD`, `OPTIONS`,
    /// `TRACE` (the default). `POST`, `PATCH`, `PUT`, `DELETE`, `CONNECT`
    /// and every extension method need the key, as with Microsoft's
    /// `DisableForUnsafeHttpMethods`: a `PUT` or `DELETE` is idempotent by
    /// the RFC, but only as far as the downstream implements it so.
    #[default]
    Safe,
    /// Every method: the caller says the downstream tolerates duplicates.
    Any,
}

impl ReplayMethods {
    /// The rule a file's `replay-methods` names: `idempotent`, `safe`, `any`.
    pub fn from_name(name: &str) -> Option<ReplayMethods> {
        match name {
            "idempotent" => Some(ReplayMethods::Idempotent),
            "safe" => Some(ReplayMethods::Safe),
            "any" => Some(ReplayMethods::Any),
            _ => None,
        }
    }

    /// Whether `method` is replayed without an idempotency key.
    pub fn allows(self, method: &Method) -> bool {
        let safe = matches!(
            *method,
            Method::GET | Method::HEAD | Method::OPTIONS | Method::TRACE
        );
        match self {
            ReplayMethods::Any => true,
            ReplayMethods::Safe => safe,
            ReplayMethods::Idempotent => safe || matches!(*method, Method::PUT | Method::DELETE),
        }
    }
}
