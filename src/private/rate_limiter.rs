//! A `#[rate_limiter]` call site's limiter: the registry's local
//! [`RateLimiter`], or — when the settings for the name say
//! `backend = "redis"` and the `redis` feature is on — its
//! [`DistributedRateLimiter`](resil_core::distributed_rate_limiter::DistributedRateLimiter),
//! behind one type so the expansion does not depend on the feature.
//!
//! The backend is chosen once, on the site's first call; a reload keeps it
//! (the registry refuses a reload that would move a running limiter to the
//! other backend). Without the feature the enum has one variant and every
//! `match` below compiles to the local limiter's call.

use std::future::Future;

use resil_core::rate_limiter::{RateLimiter, RateLimiterConfigBuilder};
use resil_core::Error;
use resil_registry::{registry, Handle};

/// The limiter one `#[rate_limiter]` call site uses.
pub enum SiteRateLimiter {
    /// This process's own quota.
    Local(Handle<RateLimiter>),
    /// One quota in Redis shared by every process using the name.
    #[cfg(feature = "redis")]
    Redis(Handle<resil_core::distributed_rate_limiter::DistributedRateLimiter>),
}

impl SiteRateLimiter {
    /// The limiter `name` of the process-wide registry, on the backend its
    /// settings choose.
    #[inline(never)]
    pub fn lookup(name: &str) -> SiteRateLimiter {
        #[cfg(feature = "redis")]
        {
            let registry = registry();
            if registry.is_redis_backed(name) {
                match registry.distributed_rate_limiter(name) {
                    Ok(handle) => return SiteRateLimiter::Redis(handle),
                    // The file was validated when it was loaded: what is left
                    // is the cardinality cap or a code setting that does not
                    // fit the file. The site keeps protecting the call with a
                    // local limiter of the same quota, and says so.
                    Err(error) => tracing::error!(
                        instance = name,
                        %error,
                        "no redis-backed rate limiter for this call site: it uses a local one \
                         (a per-process quota)"
                    ),
                }
            }
        }
        SiteRateLimiter::Local(registry().rate_limiter(name))
    }

    /// A call with one permit around sync work (blocking while it waits).
    #[inline]
    pub fn call<T: 'static, E: 'static>(
        &self,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, Error<E>> {
        match self {
            SiteRateLimiter::Local(h) => h.get().call(f),
            #[cfg(feature = "redis")]
            SiteRateLimiter::Redis(h) => h.get().call(f),
        }
    }

    /// A call with one permit around a future, polled in place.
    #[cfg(not(feature = "redis"))]
    #[inline]
    pub fn call_async<'a, T: 'static, E: 'static, F>(
        &'a self,
        fut: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + 'a
    where
        F: Future<Output = Result<T, E>> + 'a,
    {
        let SiteRateLimiter::Local(h) = self;
        h.get().call_async(fut)
    }

    /// A call with one permit around a future.
    #[cfg(feature = "redis")]
    #[inline]
    pub async fn call_async<T: 'static, E: 'static>(
        &self,
        fut: impl Future<Output = Result<T, E>>,
    ) -> Result<T, Error<E>> {
        match self {
            SiteRateLimiter::Local(h) => h.get().call_async(fut).await,
            // Boxed: the Redis acquire's state (a round trip, a timer) would
            // otherwise size every call's future, local or not. One
            // allocation next to a network round trip.
            SiteRateLimiter::Redis(h) => Box::pin(h.get().call_async(fut)).await,
        }
    }

    /// A call with one permit around a protected future (one flat error),
    /// polled in place.
    #[cfg(not(feature = "redis"))]
    #[inline]
    pub fn call_async_nested<'a, T: 'static, E: 'static, F>(
        &'a self,
        fut: F,
    ) -> impl Future<Output = Result<T, Error<E>>> + 'a
    where
        F: Future<Output = Result<T, Error<E>>> + 'a,
    {
        let SiteRateLimiter::Local(h) = self;
        h.get().call_async_nested(fut)
    }

    /// A call with one permit around a protected future (one flat error).
    #[cfg(feature = "redis")]
    #[inline]
    pub async fn call_async_nested<T: 'static, E: 'static>(
        &self,
        fut: impl Future<Output = Result<T, Error<E>>>,
    ) -> Result<T, Error<E>> {
        match self {
            SiteRateLimiter::Local(h) => h.get().call_async_nested(fut).await,
            SiteRateLimiter::Redis(h) => Box::pin(h.get().call_async(fut))
                .await
                .map_err(Error::flatten),
        }
    }
}

/// `permits = <expr>`: the calls of a site that weighs each call, on
/// either backend. Out of the one-permit path, which stays as it was.
impl SiteRateLimiter {
    /// A call holding `permits` around sync work (blocking while it waits).
    pub fn call_n<T: 'static, E: 'static>(
        &self,
        permits: u32,
        f: impl FnOnce() -> Result<T, E>,
    ) -> Result<T, Error<E>> {
        match self {
            SiteRateLimiter::Local(h) => h.get().call_n(permits, f),
            #[cfg(feature = "redis")]
            SiteRateLimiter::Redis(h) => {
                let _grant = h.get().acquire_n(permits)?;
                f().map_err(Error::Call)
            }
        }
    }

    /// A call holding `permits` around a future; the future is not polled
    /// before they are there.
    pub async fn call_async_n<T: 'static, E: 'static>(
        &self,
        permits: u32,
        fut: impl Future<Output = Result<T, E>>,
    ) -> Result<T, Error<E>> {
        match self {
            SiteRateLimiter::Local(h) => h.get().call_async_n(permits, fut).await,
            #[cfg(feature = "redis")]
            SiteRateLimiter::Redis(h) => {
                let _grant = Box::pin(h.get().acquire_n_async(permits)).await?;
                fut.await.map_err(Error::Call)
            }
        }
    }

    /// A call holding `permits` around a protected future (one flat error).
    pub async fn call_async_nested_n<T: 'static, E: 'static>(
        &self,
        permits: u32,
        fut: impl Future<Output = Result<T, Error<E>>>,
    ) -> Result<T, Error<E>> {
        match self {
            SiteRateLimiter::Local(h) => h.get().call_async_nested_n(permits, fut).await,
            #[cfg(feature = "redis")]
            SiteRateLimiter::Redis(h) => {
                let _grant = Box::pin(h.get().acquire_n_async(permits)).await?;
                fut.await
            }
        }
    }
}

/// The site's limiter `name`.
#[inline(never)]
pub fn rate_limiter(name: &str) -> SiteRateLimiter {
    SiteRateLimiter::lookup(name)
}

/// The site's limiter `name`, with the attribute's literal settings applied
/// last (to the quota, whichever backend serves it).
#[inline(never)]
pub fn rate_limiter_with(
    name: &str,
    site: &'static super::site::AttributeSite,
    settings: impl Fn(RateLimiterConfigBuilder) -> RateLimiterConfigBuilder + Send + Sync + 'static,
) -> SiteRateLimiter {
    if let Err(error) = registry()
        .configure_from_attribute::<resil_core::rate_limiter::RateLimiter>(name, site, settings)
    {
        tracing::error!(
            instance = name,
            %error,
            "the settings written in a resil attribute were not applied"
        );
    }
    SiteRateLimiter::lookup(name)
}
