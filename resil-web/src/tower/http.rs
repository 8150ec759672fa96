//! The layer over HTTP services: refusals as responses, statuses classified.

use std::fmt;
use std::marker::PhantomData;
use std::time::Duration;

use http::header::{CONTENT_TYPE, RETRY_AFTER};
use http::{HeaderValue, Response, StatusCode};
use resil_core::circuit_breaker::Outcome;
use resil_core::Rejection;

use super::classify::{Classify, Verdict};
use super::respond::{Refusal, Respond};
use crate::http::{retry_after_header_value, HttpClassifier, RateLimitQuota};

/// The response a server sends for a refusal: 503 with `Retry-After` (the
/// remaining open wait) for an open breaker, 429 with `Retry-After` (the
/// time to the next permit) and the IETF `RateLimit-Policy`/`RateLimit`
/// fields (the limiter's quota, window, permits left and reset) for a rate
/// limit, 503 for a full bulkhead, 503 with `Retry-After: 1` for a
/// throttler's local refusal (the downstream it protects keeps refusing:
/// the service is unavailable for now, the client did nothing wrong, so it
/// is not a 429; the throttler's window moves in one-second steps), 504
/// for a timeout or a spent deadline; a short `text/plain` body naming the
/// instance.
pub fn default_refusal_response<B: From<String>>(refusal: &Refusal) -> Response<B> {
    let status = match refusal.rejection() {
        Rejection::RequestNotPermitted(_) => StatusCode::TOO_MANY_REQUESTS,
        Rejection::Timeout(_) | Rejection::DeadlineExceeded(_) => StatusCode::GATEWAY_TIMEOUT,
        // An overloaded downstream shed locally, not the client's quota.
        Rejection::Throttled(_) => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::SERVICE_UNAVAILABLE,
    };
    let mut response = Response::new(B::from(refusal.rejection().to_string()));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    if let Some(wait) = refusal.retry_after() {
        headers.insert(RETRY_AFTER, retry_after_header_value(wait));
    }
    // A rate limit's quota, as the IETF `RateLimit-Policy` and `RateLimit`
    // fields (draft-ietf-httpapi-ratelimit-headers).
    if let (Some(quota), Some(policy)) = (refusal.quota(), refusal.rejection().name()) {
        RateLimitQuota {
            policy: policy.to_owned(),
            limit: quota.limit,
            window: quota.window,
            remaining: quota.remaining,
            reset: refusal.retry_after().unwrap_or(Duration::ZERO),
        }
        .insert_into(headers);
    }
    response
}

/// Refusals as HTTP responses, for servers (axum `Router::layer` /
/// `route_layer`): the layer's error stays the inner service's.
///
/// ```
/// use resil_web::tower::{RefusalResponses, Refusal};
///
/// // The default mapping:
/// let responses = RefusalResponses::<axum::body::Body>::new();
/// // Or your own, for some refusals:
/// let custom = RefusalResponses::with(|r: &Refusal| {
///     let mut response = resil_web::tower::default_refusal_response::<axum::body::Body>(r);
///     response.headers_mut().insert("x-refused-by", r.kind().to_string().parse().unwrap());
///     response
/// });
/// # let _ = (responses, custom);
/// ```
pub struct RefusalResponses<B, F = fn(&Refusal) -> Response<B>> {
    map: F,
    _body: PhantomData<fn() -> B>,
}

impl<B: From<String>> RefusalResponses<B> {
    /// The [`default_refusal_response`] mapping.
    pub fn new() -> Self {
        RefusalResponses {
            map: default_refusal_response::<B>,
            _body: PhantomData,
        }
    }
}

impl<B: From<String>> Default for RefusalResponses<B> {
    fn default() -> Self {
        Self::new()
    }
}

impl<B, F: Fn(&Refusal) -> Response<B>> RefusalResponses<B, F> {
    /// Refusals answered by `map`.
    pub fn with(map: F) -> Self {
        RefusalResponses {
            map,
            _body: PhantomData,
        }
    }
}

impl<B, F> fmt::Debug for RefusalResponses<B, F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("RefusalResponses")
    }
}

impl<B, E, F> Respond<Response<B>, E> for RefusalResponses<B, F>
where
    B: 'static,
    F: Fn(&Refusal) -> Response<B> + Send + Sync + 'static,
{
    type Error = E;

    #[inline]
    fn error(&self, error: E) -> E {
        error
    }

    fn refused(&self, refusal: Refusal) -> Result<Response<B>, E> {
        Ok((self.map)(&refusal))
    }
}

/// Responses by status and `Retry-After`; the inner service's error (no
/// response at all: connect refused, reset) is a failure.
impl<B, E> Classify<Response<B>, E> for HttpClassifier {
    #[inline]
    fn classify_response(&self, response: &Response<B>) -> Verdict {
        let (outcome, transition) = self.judge(response);
        Verdict::Record(outcome, transition)
    }

    #[inline]
    fn classify_error(&self, _: &E) -> Verdict {
        Verdict::FAILURE
    }

    fn error_type(&self, response: &Response<B>, label: &mut dyn FnMut(&str)) {
        if self.outcome_of(response.status(), response.headers()) != Outcome::Success {
            label(response.status().as_str());
        }
    }

    /// 429 Too Many Requests and 503 Service Unavailable are the
    /// downstream's refusals (the SRE book's "rejected for lack of
    /// capacity"); every other answer was accepted.
    #[inline]
    fn refused(&self, response: &Response<B>) -> Option<bool> {
        Some(matches!(response.status().as_u16(), 429 | 503))
    }
}
