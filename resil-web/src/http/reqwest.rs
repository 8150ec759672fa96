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
