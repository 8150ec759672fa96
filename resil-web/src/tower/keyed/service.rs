//! The service a [`KeyedLayer`](super::KeyedLayer) makes: the request's key,
//! then its breaker, rate limiter and bulkhead, in the layer's order.

use std::fmt;
use std::task::{Context, Poll};
use std::time::Duration;

use http::{Request, Response};
use resil_core::circuit_breaker::OwnedPermit;
use resil_core::keyed::{BreakerHandle, BulkheadHandle, Key, KeyPermit};
use resil_core::Rejection;
use tower_service::Service;

use super::extract::KeyExtractor;
use super::future::KeyedFuture;
use super::layer::{Cost, KeyedResponses, KeyedShared};
use crate::tower::{Quota, Refusal};

/// A service protected per key by a [`KeyedLayer`](super::KeyedLayer).
pub struct KeyedService<S, X: 'static, P: 'static, R: 'static> {
    inner: S,
    shared: &'static KeyedShared<X, P, R>,
}

impl<S, X: 'static, P: 'static, R: 'static> KeyedService<S, X, P, R> {
    pub(crate) fn new(inner: S, shared: &'static KeyedShared<X, P, R>) -> Self {
        KeyedService { inner, shared }
    }

    /// The protected service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }
}

impl<S: Clone, X: 'static, P: 'static, R: 'static> Clone for KeyedService<S, X, P, R> {
    fn clone(&self) -> Self {
        KeyedService {
            inner: self.inner.clone(),
            shared: self.shared,
        }
    }
}

impl<S: fmt::Debug, X: 'static, P: 'static, R: 'static> fmt::Debug for KeyedService<S, X, P, R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyedService")
            .field("inner", &self.inner)
            .field("name", &self.shared.name)
            .finish()
    }
}

/// What an admitted request holds: the key's breaker permit (with the
/// handle that keeps the key from eviction), the wait for a reserved rate
/// limiter permit, and the key's bulkhead slot (taken after that wait).
pub(crate) struct Admission {
    pub(crate) breaker: Option<(BreakerHandle<'static>, OwnedPermit)>,
    pub(crate) wait: Duration,
    pub(crate) bulkhead: Option<BulkheadHandle<'static>>,
    pub(crate) slot: Option<KeyPermit>,
}

/// The key's breaker, rate limiter, then bulkhead (the attributes' order:
/// `ResilienceLayer::ORDER`). A refusal by the key's own rate limiter or
/// bulkhead is not the downstream's failure: the breaker's permit is given
/// back unrecorded, so a tenant over its quota does not open its breaker.
fn admit<X, P, R, Q: Key + ?Sized>(
    shared: &'static KeyedShared<X, P, R>,
    key: &Q,
    cost: u32,
) -> Result<Admission, Refusal> {
    let breaker = match &shared.breaker {
        Some(family) => {
            let handle = family.get(key);
            match handle.try_acquire_owned_permission() {
                Ok(permit) => Some((handle, permit)),
                Err(refused) => {
                    let wait = handle.remaining_open_wait();
                    return Err(Refusal::new(Rejection::CallNotPermitted(refused), wait));
                }
            }
        }
        None => None,
    };
    let mut wait = Duration::ZERO;
    if let Some(family) = &shared.limiter {
        // The handle-free form: no reference count on the hot path.
        match family.reserve(key, cost) {
            Ok(w) => wait = w,
            Err(refused) => return Err(rate_limited(family, &family.get(key), refused)),
        }
    }
    let mut admission = Admission {
        breaker,
        wait,
        bulkhead: None,
        slot: None,
    };
    if let Some(family) = &shared.bulkhead {
        let handle = family.get(key);
        if wait.is_zero() {
            admission.slot = Some(handle.try_acquire().map_err(full)?);
        } else {
            admission.bulkhead = Some(handle);
        }
    }
    Ok(admission)
}

#[cold]
fn rate_limited(
    family: &resil_core::keyed::KeyedRateLimiter,
    handle: &resil_core::keyed::LimiterHandle<'_>,
    refused: resil_core::error::RequestNotPermitted,
) -> Refusal {
    let retry_after = handle.time_to_next_cycle();
    let refusal = Refusal::new(Rejection::RequestNotPermitted(refused), Some(retry_after));
    match handle.limit_for_period() {
        Some(limit) => refusal.with_quota(Quota {
            limit,
            window: family.config().limit_refresh_period(),
            remaining: u32::try_from(handle.available_permissions().max(0)).unwrap_or(u32::MAX),
        }),
        None => refusal,
    }
}

#[cold]
pub(crate) fn full(refused: resil_core::error::BulkheadFull) -> Refusal {
    Refusal::new(Rejection::BulkheadFull(refused), None)
}

impl<S, X, P, R, ReqB, ResB> Service<Request<ReqB>> for KeyedService<S, X, P, R>
where
    S: Service<Request<ReqB>, Response = Response<ResB>> + Clone,
    X: KeyExtractor<ReqB>,
    P: Cost<ReqB>,
    R: KeyedResponses<ResB>,
{
    type Response = Response<ResB>;
    type Error = S::Error;
    type Future = KeyedFuture<S, Request<ReqB>, ResB, X, P, R>;

    #[inline]
    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: Request<ReqB>) -> Self::Future {
        let shared = self.shared;
        let cost = match &shared.limiter {
            Some(_) => shared.cost.cost(&req),
            None => 0,
        };
        let admitted = shared
            .extract
            .with_key(&req, |key| admit(shared, key, cost));
        match admitted {
            Err((missing, _)) => KeyedFuture::ready(shared, shared.respond.missing_key(&missing)),
            Ok(Err(refusal)) => KeyedFuture::ready(shared, shared.respond.refused(&refusal)),
            Ok(Ok(admission)) if admission.wait.is_zero() => {
                let fut = self.inner.call(req);
                KeyedFuture::running(shared, fut, admission)
            }
            Ok(Ok(admission)) => {
                // The reserved permit is the request's at the end of the
                // wait: the ready service goes with it (tower's
                // clone-and-swap), a clone stays.
                let clone = self.inner.clone();
                let svc = std::mem::replace(&mut self.inner, clone);
                KeyedFuture::waiting(shared, svc, req, admission)
            }
        }
    }
}
