//! `Retry-After` (RFC 9110 §10.2.3): delay seconds or an HTTP date.

use std::time::{Duration, SystemTime};

use http::header::RETRY_AFTER;
use http::{HeaderMap, HeaderValue};

/// Parses a `Retry-After` value: delay seconds (`"120"`) or an HTTP date
/// (`"Wed, 21 Oct 2026 07:28:00 GMT"`, the wait being the date minus `now`,
/// zero when it has passed). `None` when it is neither.
///
/// ```
/// use std::time::{Duration, UNIX_EPOCH};
/// use resil_web::http::parse_retry_after;
///
/// let now = UNIX_EPOCH + Duration::from_secs(1_445_412_400); // 21 Oct 2015 07:26:40 GMT
/// assert_eq!(parse_retry_after("120", now), Some(Duration::from_secs(120)));
/// assert_eq!(
///     parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now),
///     Some(Duration::from_secs(80))
/// );
/// assert_eq!(parse_retry_after("soon", now), None);
/// ```
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // Saturate absurdly long delays instead of refusing them.
        return Some(Duration::from_secs(value.parse().unwrap_or(u64::MAX)));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// The `Retry-After` of `headers`, read at `now` (see [`parse_retry_after`]).
pub fn retry_after(headers: &HeaderMap, now: SystemTime) -> Option<Duration> {
    let value = headers.get(RETRY_AFTER)?.to_str().ok()?;
    parse_retry_after(value, now)
}

/// The delay-seconds form of `wait`, rounded up (a client told "0" while the
/// wait is 300 ms would come back too early).
pub fn retry_after_header_value(wait: Duration) -> HeaderValue {
    let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
    HeaderValue::from(secs)
}
