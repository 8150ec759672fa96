//! What the client's retry and hedging may replay: the methods, the
//! `Idempotency-Key` that makes any method replayable, and the largest body
//! kept for a replay.

use http::header::HeaderName;
use http::request::Parts;
use http::{HeaderMap, Method};

/// The largest request body the client buffers to replay it (64 KiB, as
/// Linkerd's replay buffer): a larger body is sent once, never retried or
/// hedged. Set with [`ClientBuilder::max_replay_body`](super::ClientBuilder::max_replay_body).
pub const DEFAULT_MAX_REPLAY_BODY: usize = 64 * 1024;

/// The header that makes a request of any method replayable
/// (draft-ietf-httpapi-idempotency-key-header): the server promises to apply
/// a request with the same key once. Set with
/// [`ClientBuilder::idempotency_header`](super::ClientBuilder::idempotency_header).
pub const DEFAULT_IDEMPOTENCY_HEADER: HeaderName = HeaderName::from_static("idempotency-key");

pub use crate::http::ReplayMethods;

/// The replay rules of one client layer.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ReplayPolicy {
    pub(crate) methods: ReplayMethods,
    pub(crate) idempotency_header: HeaderName,
    pub(crate) max_body: usize,
}

impl Default for ReplayPolicy {
    fn default() -> Self {
        ReplayPolicy {
            methods: ReplayMethods::default(),
            idempotency_header: DEFAULT_IDEMPOTENCY_HEADER,
            max_body: DEFAULT_MAX_REPLAY_BODY,
        }
    }
}

impl ReplayPolicy {
    /// Whether a request with these parts may be sent more than once.
    pub(crate) fn allows(&self, parts: &Parts) -> bool {
        self.allows_request(&parts.method, &parts.headers)
    }

    /// Whether a request with this method and these headers may be sent
    /// more than once.
    pub(crate) fn allows_request(&self, method: &Method, headers: &HeaderMap) -> bool {
        self.methods.allows(method) || headers.contains_key(&self.idempotency_header)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(method: Method, key: bool) -> Parts {
        let mut b = http::Request::builder().method(method).uri("/");
        if key {
            b = b.header("Idempotency-Key", "8e03978e");
        }
        b.body(()).unwrap().into_parts().0
    }

    #[test]
    fn by_default_unsafe_methods_are_replayed_only_with_an_idempotency_key() {
        let p = ReplayPolicy::default();
        for m in [
            Method::POST,
            Method::PATCH,
            Method::PUT,
            Method::DELETE,
            Method::CONNECT,
        ] {
            assert!(!p.allows(&parts(m.clone(), false)), "{m}");
            assert!(p.allows(&parts(m, true)));
        }
        for m in [Method::GET, Method::HEAD, Method::OPTIONS, Method::TRACE] {
            assert!(p.allows(&parts(m, false)));
        }
    }

    #[test]
    fn the_idempotent_rule_adds_put_and_delete_and_any_replays_everything() {
        assert!(ReplayMethods::Idempotent.allows(&Method::PUT));
        assert!(ReplayMethods::Idempotent.allows(&Method::DELETE));
        assert!(!ReplayMethods::Idempotent.allows(&Method::POST));
        assert!(ReplayMethods::Idempotent.allows(&Method::GET));
        assert!(ReplayMethods::Any.allows(&Method::POST));
        let custom = ReplayPolicy {
            idempotency_header: HeaderName::from_static("x-request-id"),
            ..ReplayPolicy::default()
        };
        let mut post = parts(Method::POST, true);
        assert!(!custom.allows(&post), "the default header no longer counts");
        post.headers.insert("x-request-id", "1".parse().unwrap());
        assert!(custom.allows(&post));
    }
}
