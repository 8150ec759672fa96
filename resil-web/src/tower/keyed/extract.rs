//! What a request is keyed by: a header, a path parameter, an extension, a
//! closure (the peer's address is in `peer.rs`).

use std::borrow::Borrow;
use std::borrow::Cow;
use std::fmt;
use std::marker::PhantomData;

use http::header::HeaderName;
use http::Request;
use resil_core::keyed::Key;

/// Why a request has no key: what the extractor looked for and did not
/// find (its [`Display`](fmt::Display) names it, e.g. ``no `x-tenant`
/// header``).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MissingKey {
    reason: Cow<'static, str>,
}

impl MissingKey {
    /// A missing key, for the reason given (lowercase, no final period).
    pub fn new(reason: impl Into<Cow<'static, str>>) -> Self {
        MissingKey {
            reason: reason.into(),
        }
    }

    /// What was missing.
    pub fn reason(&self) -> &str {
        &self.reason
    }
}

impl fmt::Display for MissingKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.reason)
    }
}

impl std::error::Error for MissingKey {}

/// Finds a request's key, lending it to the caller so that a borrowed key
/// (a header's text) costs no allocation.
///
/// Implemented by [`by_header`], [`by_path_param`] (axum), [`by_peer_ip`](super::by_peer_ip),
/// [`by_extension`], [`key_fn`] (a closure) and [`KeyExtractorExt::or_key`]
/// (a shared key for requests that have none).
pub trait KeyExtractor<B>: Send + Sync + 'static {
    /// The key's type (`str` for a header, `IpAddr` for a peer).
    type Key: Key + ?Sized;

    /// Calls `f` with the request's key; when the request has none, gives
    /// `f` back with why.
    fn with_key<R, F: FnOnce(&Self::Key) -> R>(
        &self,
        req: &Request<B>,
        f: F,
    ) -> Result<R, (MissingKey, F)>;
}

/// What every extractor can do, whatever the request's body type.
pub trait KeyExtractorExt: Sized {
    /// The same extractor, keying a request that has no key by `key` (one
    /// shared key, e.g. `String::from("anonymous")`; for a `str` key any
    /// `K: Borrow<str>`), instead of answering it with the layer's
    /// missing-key response.
    fn or_key<K>(self, key: K) -> OrKey<Self, K> {
        OrKey { first: self, key }
    }
}

impl<X> KeyExtractorExt for X {}

/// An extractor with a shared key for requests that have none, from
/// [`KeyExtractorExt::or_key`].
#[derive(Debug, Clone)]
pub struct OrKey<X, K> {
    first: X,
    key: K,
}

impl<B, X, K> KeyExtractor<B> for OrKey<X, K>
where
    X: KeyExtractor<B>,
    K: Borrow<X::Key> + Send + Sync + 'static,
{
    type Key = X::Key;

    #[inline]
    fn with_key<R, F: FnOnce(&X::Key) -> R>(
        &self,
        req: &Request<B>,
        f: F,
    ) -> Result<R, (MissingKey, F)> {
        match self.first.with_key(req, f) {
            Ok(r) => Ok(r),
            Err((_, f)) => Ok(f(self.key.borrow())),
        }
    }
}

/// Keys a request by the text of its header `name` (the first value; a
/// value that is not visible ASCII counts as missing).
///
/// # Panics
///
/// If `name` is not a valid header name (a programming error, as with
/// `HeaderName::from_static`); use [`ByHeader::new`] for a name read at
/// run time.
pub fn by_header(name: &str) -> ByHeader {
    match ByHeader::new(name) {
        Ok(x) => x,
        Err(e) => panic!("{e}"),
    }
}

/// A header's text as the key: [`by_header`].
#[derive(Debug, Clone)]
pub struct ByHeader {
    name: HeaderName,
    missing: MissingKey,
}

impl ByHeader {
    /// Keys a request by its header `name`, or an error naming `name` when
    /// it is not a header name.
    pub fn new(name: &str) -> Result<Self, InvalidHeaderName> {
        let header = HeaderName::from_bytes(name.as_bytes()).map_err(|_| InvalidHeaderName {
            name: name.to_owned(),
        })?;
        Ok(ByHeader {
            missing: MissingKey::new(format!("no `{header}` header")),
            name: header,
        })
    }
}

/// A key extractor's header name is not one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidHeaderName {
    name: String,
}

impl fmt::Display for InvalidHeaderName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid header name `{}` for a key extractor; expected letters, digits and `-` (e.g. `x-tenant`)",
            self.name.escape_debug()
        )
    }
}

impl std::error::Error for InvalidHeaderName {}

impl<B> KeyExtractor<B> for ByHeader {
    type Key = str;

    #[inline]
    fn with_key<R, F: FnOnce(&str) -> R>(
        &self,
        req: &Request<B>,
        f: F,
    ) -> Result<R, (MissingKey, F)> {
        match req.headers().get(&self.name).map(|v| v.to_str()) {
            Some(Ok(text)) if !text.is_empty() => Ok(f(text)),
            _ => Err((self.missing.clone(), f)),
        }
    }
}

/// Keys a request by the extension of type `T` an earlier layer put there
/// (an authenticated `Principal`, a tenant id).
pub fn by_extension<T: Key + Clone + 'static>() -> ByExtension<T> {
    ByExtension { _t: PhantomData }
}

/// An extension as the key: [`by_extension`].
pub struct ByExtension<T> {
    _t: PhantomData<fn() -> T>,
}

impl<T> Clone for ByExtension<T> {
    fn clone(&self) -> Self {
        ByExtension { _t: PhantomData }
    }
}

impl<T> fmt::Debug for ByExtension<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ByExtension<{}>", std::any::type_name::<T>())
    }
}

impl<B, T: Key + Clone + 'static> KeyExtractor<B> for ByExtension<T> {
    type Key = T;

    #[inline]
    fn with_key<R, F: FnOnce(&T) -> R>(
        &self,
        req: &Request<B>,
        f: F,
    ) -> Result<R, (MissingKey, F)> {
        match req.extensions().get::<T>() {
            Some(key) => Ok(f(key)),
            None => Err((
                MissingKey::new(format!(
                    "no `{}` extension on the request",
                    std::any::type_name::<T>()
                )),
                f,
            )),
        }
    }
}

/// Keys a request by what `f` returns (`None`: no key).
///
/// ```
/// use resil_web::tower::keyed::key_fn;
///
/// // The API key's first 8 characters name the tenant.
/// let extract = key_fn(|req: &http::Request<()>| {
///     let key = req.headers().get("x-api-key")?.to_str().ok()?;
///     Some(key.get(..8)?.to_owned())
/// });
/// # let _ = extract;
/// ```
pub fn key_fn<F>(f: F) -> KeyFn<F> {
    KeyFn(f)
}

/// A closure as the extractor: [`key_fn`].
#[derive(Clone)]
pub struct KeyFn<F>(F);

impl<F> fmt::Debug for KeyFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("KeyFn")
    }
}

impl<B, K, G> KeyExtractor<B> for KeyFn<G>
where
    G: Fn(&Request<B>) -> Option<K> + Send + Sync + 'static,
    K: Key,
{
    type Key = K;

    #[inline]
    fn with_key<R, F: FnOnce(&K) -> R>(
        &self,
        req: &Request<B>,
        f: F,
    ) -> Result<R, (MissingKey, F)> {
        match (self.0)(req) {
            Some(key) => Ok(f(&key)),
            None => Err((MissingKey::new("the key function found no key"), f)),
        }
    }
}

/// Keys a request by the path parameter `name` of the route it matched
/// (`/tenants/{tenant}/orders` → `tenant`), as written in the path (still
/// percent-encoded).
///
/// Reads axum's [`MatchedPath`](axum::extract::MatchedPath), which only a
/// layer applied after routing sees: put the layer on the route
/// (`get(handler).layer(…)`) or the router's routes (`Router::route_layer`),
/// not `Router::layer`. A request that matched no route, or a route
/// without `{name}`, has no key.
#[cfg(feature = "axum")]
pub fn by_path_param(name: &str) -> ByPathParam {
    ByPathParam {
        param: format!("{{{name}}}"),
        missing: MissingKey::new(format!("no `{{{name}}}` parameter in the matched route")),
    }
}

/// A path parameter as the key: [`by_path_param`].
#[cfg(feature = "axum")]
#[derive(Debug, Clone)]
pub struct ByPathParam {
    /// `{name}`, as the route template writes it.
    param: String,
    missing: MissingKey,
}

#[cfg(feature = "axum")]
impl ByPathParam {
    /// The segment of `path` where `template` has this parameter.
    fn find<'p>(&self, template: &str, path: &'p str) -> Option<&'p str> {
        let mut path = path.split('/');
        for part in template.split('/') {
            let seg = path.next()?;
            if part.starts_with("{*") {
                return None;
            }
            if part == self.param {
                return Some(seg).filter(|s| !s.is_empty());
            }
        }
        None
    }
}

#[cfg(feature = "axum")]
impl<B> KeyExtractor<B> for ByPathParam {
    type Key = str;

    fn with_key<R, F: FnOnce(&str) -> R>(
        &self,
        req: &Request<B>,
        f: F,
    ) -> Result<R, (MissingKey, F)> {
        let ext = req.extensions();
        let Some(matched) = ext.get::<axum::extract::MatchedPath>() else {
            return Err((self.missing.clone(), f));
        };
        // Under `Router::nest` the URI lost the prefix the template keeps.
        let path = match ext.get::<axum::extract::OriginalUri>() {
            Some(original) => original.0.path(),
            None => req.uri().path(),
        };
        match self.find(matched.as_str(), path) {
            Some(seg) => Ok(f(seg)),
            None => Err((self.missing.clone(), f)),
        }
    }
}

#[cfg(all(test, feature = "axum"))]
mod tests {
    use super::*;

    #[test]
    fn a_path_parameter_is_the_segment_its_template_names() {
        let x = by_path_param("tenant");
        assert_eq!(x.find("/t/{tenant}/o", "/t/acme/o"), Some("acme"));
        assert_eq!(x.find("/t/{tenant}", "/t/"), None);
        assert_eq!(x.find("/t/{other}", "/t/acme"), None);
        assert_eq!(x.find("/{*rest}/{tenant}", "/a/b"), None);
    }
}
