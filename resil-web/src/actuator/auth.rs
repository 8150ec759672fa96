//! The application's authorization check for state-changing endpoints.

use std::fmt;

use axum::http::request::Parts;

/// Why a management request is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Denied {
    /// 401: no credentials, or credentials that do not authenticate.
    Unauthorized,
    /// 403: authenticated, but not allowed to do this.
    Forbidden,
}

/// Decides whether a management request may go ahead. Implemented for any
/// `Fn(&Parts) -> Result<(), Denied>`; [`BearerToken`] checks a static token.
pub trait Authorize: Send + Sync + 'static {
    /// `Ok(())` lets the request change state.
    fn authorize(&self, request: &Parts) -> Result<(), Denied>;
}

impl<F> Authorize for F
where
    F: Fn(&Parts) -> Result<(), Denied> + Send + Sync + 'static,
{
    fn authorize(&self, request: &Parts) -> Result<(), Denied> {
        self(request)
    }
}

/// `Authorization: Bearer <token>` against one secret, compared in constant
/// time; a missing or malformed header is 401, a wrong token 403. The secret
/// never appears in `Debug` output.
#[derive(Clone)]
pub struct BearerToken {
    secret: String,
}

impl BearerToken {
    /// Accepts requests carrying `secret`.
    pub fn new(secret: impl Into<String>) -> Self {
        BearerToken {
            secret: secret.into(),
        }
    }
}

impl fmt::Debug for BearerToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("BearerToken(<redacted>)")
    }
}

impl Authorize for BearerToken {
    fn authorize(&self, request: &Parts) -> Result<(), Denied> {
        let header = request
            .headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .ok_or(Denied::Unauthorized)?;
        let token = header
            .strip_prefix("Bearer ")
            .ok_or(Denied::Unauthorized)?
            .trim();
        if constant_time_eq(token.as_bytes(), self.secret.as_bytes()) {
            Ok(())
        } else {
            Err(Denied::Forbidden)
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    let mut diff = a.len() ^ b.len();
    for i in 0..a.len().max(b.len()) {
        let x = a.get(i).copied().unwrap_or(0);
        let y = b.get(i).copied().unwrap_or(0);
        diff |= usize::from(x ^ y);
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(auth: Option<&str>) -> Parts {
        let mut b = axum::http::Request::builder();
        if let Some(a) = auth {
            b = b.header("authorization", a);
        }
        b.body(()).unwrap().into_parts().0
    }

    #[test]
    fn a_bearer_token_tells_missing_from_wrong_and_hides_its_secret() {
        let t = BearerToken::new("s3cret");
        assert_eq!(t.authorize(&parts(None)), Err(Denied::Unauthorized));
        assert_eq!(
            t.authorize(&parts(Some("Basic abc"))),
            Err(Denied::Unauthorized)
        );
        assert_eq!(
            t.authorize(&parts(Some("Bearer nope"))),
            Err(Denied::Forbidden)
        );
        assert_eq!(
            t.authorize(&parts(Some("Bearer s3cre"))),
            Err(Denied::Forbidden)
        );
        assert_eq!(t.authorize(&parts(Some("Bearer s3cret"))), Ok(()));
        assert!(!format!("{t:?}").contains("s3cret"));
    }
}
