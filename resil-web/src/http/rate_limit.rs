//! The IETF `RateLimit` and `RateLimit-Policy` fields
//! (draft-ietf-httpapi-ratelimit-headers): what a 429 tells a client beside
//! `Retry-After`, and what a downstream's tell resil.
//!
//! ```text
//! RateLimit-Policy: "inventory";q=10;w=1     quota 10 per 1 s window
//! RateLimit: "inventory";r=0;t=1             0 left, window resets in 1 s
//! ```

use std::time::Duration;

use http::{HeaderMap, HeaderName, HeaderValue};

/// `RateLimit`: the quota left and the seconds until it resets.
pub const RATELIMIT: HeaderName = HeaderName::from_static("ratelimit");
/// `RateLimit-Policy`: the quota and its window.
pub const RATELIMIT_POLICY: HeaderName = HeaderName::from_static("ratelimit-policy");

/// A rate limiter's quota as a 429 reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimitQuota {
    /// The policy's name: the limiter instance's.
    pub policy: String,
    /// Permits per window (`q`).
    pub limit: u32,
    /// The window (`w`, whole seconds, rounded up).
    pub window: Duration,
    /// Permits left in the current window (`r`).
    pub remaining: u32,
    /// Time until the next permit (`t`, whole seconds, rounded up).
    pub reset: Duration,
}

impl RateLimitQuota {
    /// The `RateLimit-Policy` and `RateLimit` header values.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resil_web::http::RateLimitQuota;
    ///
    /// let quota = RateLimitQuota {
    ///     policy: "inventory".into(),
    ///     limit: 10,
    ///     window: Duration::from_secs(1),
    ///     remaining: 0,
    ///     reset: Duration::from_millis(300),
    /// };
    /// let (policy, limit) = quota.header_values();
    /// assert_eq!(policy, "\"inventory\";q=10;w=1");
    /// assert_eq!(limit, "\"inventory\";r=0;t=1");
    /// ```
    pub fn header_values(&self) -> (HeaderValue, HeaderValue) {
        let name = sf_string(&self.policy);
        let policy = format!("{name};q={};w={}", self.limit, ceil_secs(self.window));
        let limit = format!("{name};r={};t={}", self.remaining, ceil_secs(self.reset));
        (
            HeaderValue::from_str(&policy).unwrap_or(HeaderValue::from_static("\"resil\"")),
            HeaderValue::from_str(&limit).unwrap_or(HeaderValue::from_static("\"resil\"")),
        )
    }

    /// Adds both fields to `headers`.
    pub fn insert_into(&self, headers: &mut HeaderMap) {
        let (policy, limit) = self.header_values();
        headers.insert(RATELIMIT_POLICY, policy);
        headers.insert(RATELIMIT, limit);
    }
}

fn ceil_secs(d: Duration) -> u64 {
    d.as_secs() + u64::from(d.subsec_nanos() > 0)
}

/// A Structured Field string: `"name"`, with `"` and `\` escaped and
/// anything not printable ASCII dropped.
fn sf_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars().filter(|c| (' '..='~').contains(c)) {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// How long a downstream's `RateLimit` field says to wait when its quota is
/// spent: the `t` of an item whose `r` is 0 (the longest, when several
/// policies are spent), as `Retry-After` would. `None` when no quota is spent
/// or the field is absent or unreadable. The earlier drafts' `remaining=0,
/// reset=N` form is read too.
///
/// ```
/// use std::time::Duration;
/// use resil_web::http::rate_limit_reset;
///
/// let mut headers = http::HeaderMap::new();
/// headers.insert("ratelimit", "\"day\";r=50;t=3600, \"burst\";r=0;t=2".parse().unwrap());
/// assert_eq!(rate_limit_reset(&headers), Some(Duration::from_secs(2)));
/// headers.insert("ratelimit", "limit=10, remaining=0, reset=7".parse().unwrap());
/// assert_eq!(rate_limit_reset(&headers), Some(Duration::from_secs(7)));
/// headers.insert("ratelimit", "\"day\";r=3;t=60".parse().unwrap());
/// assert_eq!(rate_limit_reset(&headers), None);
/// ```
pub fn rate_limit_reset(headers: &HeaderMap) -> Option<Duration> {
    let mut wait: Option<u64> = None;
    for value in headers.get_all(RATELIMIT) {
        let Ok(text) = value.to_str() else {
            continue;
        };
        let mut spend = |t: u64| wait = Some(wait.map_or(t, |w| w.max(t)));
        // Earlier drafts: one dictionary, `limit=…, remaining=…, reset=…`.
        let (mut remaining, mut reset) = (None, None);
        for member in text.split(',') {
            let member = member.trim();
            if let Some(v) = member.strip_prefix("remaining=") {
                remaining = v.trim().parse::<u64>().ok();
            } else if let Some(v) = member.strip_prefix("reset=") {
                reset = v.trim().parse::<u64>().ok();
            } else {
                // The current draft: a list of items, `"name";r=…;t=…`.
                let (mut r, mut t) = (None, None);
                for param in member.split(';').skip(1) {
                    match param.trim().split_once('=') {
                        Some(("r", v)) => r = v.trim().parse::<u64>().ok(),
                        Some(("t", v)) => t = v.trim().parse::<u64>().ok(),
                        _ => {}
                    }
                }
                if let (Some(0), Some(t)) = (r, t) {
                    spend(t);
                }
            }
        }
        if let (Some(0), Some(reset)) = (remaining, reset) {
            spend(reset);
        }
    }
    wait.map(Duration::from_secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_name_is_escaped_and_unreadable_fields_are_ignored() {
        assert_eq!(sf_string("a\"b\\c\u{e9}"), "\"a\\\"b\\\\c\"");
        let mut headers = HeaderMap::new();
        headers.insert(RATELIMIT, HeaderValue::from_static("\"x\";r=zero;t=1"));
        assert_eq!(rate_limit_reset(&headers), None);
        headers.append(RATELIMIT, HeaderValue::from_static("\"y\";r=0;t=9"));
        assert_eq!(rate_limit_reset(&headers), Some(Duration::from_secs(9)));
    }
}
