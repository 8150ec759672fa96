//! The `reqwest::Response` adapter.

use http::{HeaderMap, StatusCode};

use super::classifier::{HttpClassifier, StatusLike};
use super::error::HttpError;

impl StatusLike for reqwest::Response {
    fn status(&self) -> StatusCode {
        reqwest::Response::status(self)
    }
    fn headers(&self) -> &HeaderMap {
        reqwest::Response::headers(self)
    }
}

/// Every reqwest error is a transport error for the breaker (connect,
/// timeout, reset, a body that broke off); a status is classified by
/// [`HttpClassifier::check`], never by `error_for_status`.
impl From<reqwest::Error> for HttpError {
    fn from(error: reqwest::Error) -> Self {
        HttpError::transport(error)
    }
}

impl HttpClassifier {
    /// A reqwest send's result as a classified call's result:
    ///
    /// ```no_run
    /// # async fn demo(client: reqwest::Client) -> Result<(), resil_web::http::HttpError> {
    /// use resil_web::http::HttpClassifier;
    ///
    /// let classifier = HttpClassifier::default();
    /// let response = classifier.check_reqwest(client.get("http://prices/sku-1").send().await)?;
    /// # let _ = response; Ok(()) }
    /// ```
    pub fn check_reqwest(
        &self,
        sent: Result<reqwest::Response, reqwest::Error>,
    ) -> Result<reqwest::Response, HttpError> {
        self.check(sent?)
    }
}

impl HttpClassifier {
    /// reqwest's own retry (`reqwest::retry`, 0.13) judged by this
    /// classifier, for a client that keeps it (one without resil's retry:
    /// with [`ResilienceMiddleware`](crate::reqwest::ResilienceMiddleware)'s
    /// retry, turn reqwest's off with `reqwest::retry::never()`, or each
    /// resil attempt becomes several requests no resil instance sees).
    /// `scoped` is reqwest's builder for the hosts it applies to
    /// (`reqwest::retry::for_host("prices.internal")`), with its budget and
    /// per-request limit; this sets its classifier:
    ///
    /// - a response is retried when this classifier records its status as
    ///   a failure (`408`, `429`, `5xx` by default; the status sets and the
    ///   file's `resil.http` entry, through a reload, as for the breaker)
    ///   **and** its method is safe (RFC 9110 §9.2.1: `GET`, `HEAD`,
    ///   `OPTIONS`, `TRACE`), resil's default replay rule;
    /// - a request that got no response (refused, reset) is retried when
    ///   its method is safe;
    /// - nothing else is.
    ///
    /// reqwest's retry shows its classifier no header, and it waits not at
    /// all between attempts: a `Retry-After` cannot drive it, nor can the
    /// code predicates (`classify_with`), which see no headers here; its
    /// budget (20 % extra load by default) is what bounds it. For waits,
    /// `Retry-After` and a retry the actuator shows, use resil's retry
    /// (the middleware or the attribute) instead.
    ///
    /// ```
    /// use resil_web::http::HttpClassifier;
    ///
    /// let classifier = HttpClassifier::default();
    /// let client = reqwest::Client::builder()
    ///     .retry(classifier.reqwest_retry(reqwest::retry::for_host("prices.internal")))
    ///     .build()
    ///     .unwrap();
    /// # let _ = client;
    /// ```
    pub fn reqwest_retry(&self, scoped: reqwest::retry::Builder) -> reqwest::retry::Builder {
        let classifier = self.clone();
        scoped.classify_fn(move |attempt| {
            let safe = super::ReplayMethods::Safe.allows(attempt.method());
            let failed = match attempt.status() {
                Some(status) => {
                    classifier.outcome(status) == resil_core::circuit_breaker::Outcome::Failure
                }
                None => true,
            };
            if safe && failed {
                attempt.retryable()
            } else {
                attempt.success()
            }
        })
    }
}
