//! [`HttpError`] as the field of a variant marked `#[error_class(http)]`.

use resil_registry::HttpStatus;

use super::error::HttpError;

/// The status of a response the classifier did not accept; `None` for a
/// transport error (no answer).
///
/// ```
/// use resil_registry::HttpStatus;
/// use resil_web::http::HttpError;
///
/// let refused = HttpError::transport(std::io::Error::from(std::io::ErrorKind::ConnectionRefused));
/// assert_eq!(refused.http_status(), None);
/// ```
impl HttpStatus for HttpError {
    fn http_status(&self) -> Option<u16> {
        self.status().map(|s| s.as_u16())
    }
}
