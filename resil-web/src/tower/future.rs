//! The response future: the layer's permits held inline, released on
//! completion, error, panic and cancellation by their own `Drop`.
//!
//! One flat state machine rather than futures nested in one another: the
//! inner call, a wait (boxed, out of line), a refusal, done. The time
//! limiter's side ([`Watch`]) sits beside the state instead of around it:
//! nested, its variant made every request's future match through two enums
//! and move the body between them, which cost about 25 ns a request in
//! process (measured: a layer of no aspect +108 → +83 ns over the
//! unprotected route).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use pin_project_lite::pin_project;
use resil_core::bulkhead::{AcquirePermission, AdaptivePermit, BulkheadPermit};
use resil_core::chaos::Injection;
use resil_core::circuit_breaker::Permit;
use resil_core::cold_box::ColdBox;
use resil_core::throttler::Permit as ThrottlePermit;
use resil_core::time_limiter::Watch;
use resil_core::trace::LeanSpan as Span;
use resil_core::Error;
use tokio::time::Sleep;
use tower_service::Service;

use super::classify::{Classify, Verdict};
use super::respond::{Refusal, Respond};
use super::shared::Shared;
use super::trace;

pin_project! {
    /// The future of a [`Resilience`](super::Resilience) service's `call`.
    ///
    /// Holds the breaker's permit, the time limiter's side and the
    /// bulkhead's slot inline; a request that waits (for the rate limiter's
    /// reserved permit or a bulkhead slot) keeps the wait, its service and
    /// its request in one box. Dropped before completion, it records
    /// nothing and gives back what it holds (a half-open probe slot, a
    /// bulkhead slot, a place in the bulkhead's queue).
    #[must_use = "futures do nothing unless polled"]
    pub struct ResponseFuture<S, Req, C: 'static, R: 'static>
    where
        S: Service<Req>,
    {
        #[pin]
        stage: Stage<S, Req>,
        // The time limiter's side, from the moment the timed part (the
        // bulkhead's wait and the inner call) starts: after the rate
        // limiter's wait, which the time limiter does not time.
        watch: Option<Watch<'static>>,
        permit: Option<Permit<'static>>,
        // The throttler's permit: records whether the downstream accepted.
        throttle: Option<ThrottlePermit<'static>>,
        shared: &'static Shared<C, R>,
        // The request's `resil.call` span, entered on every poll.
        span: Span,
    }
}

pin_project! {
    #[project = StageProj]
    pub(crate) enum Stage<S, Req>
    where
        S: Service<Req>,
    {
        // The inner call, holding the bulkhead's slot (and the adaptive
        // bulkhead's).
        Call {
            #[pin] fut: S::Future,
            slot: Option<BulkheadPermit<'static>>,
            adaptive: Option<AdaptivePermit<'static>>,
        },
        // Chaos injected a latency: waiting it out (holding the slots),
        // then its outcome or the call. Boxed, as a wait is.
        Delayed { wait: ColdBox<Delayed<S, Req>> },
        // The answer chaos injected in place of the call, holding the slots.
        Injected {
            out: Option<Result<S::Response, S::Error>>,
            slot: Option<BulkheadPermit<'static>>,
            adaptive: Option<AdaptivePermit<'static>>,
        },
        // Waiting for the rate limiter's reserved permit or for a bulkhead
        // slot, with the service and the request. Boxed: only a waiting
        // request pays for it (one allocation, as its timer or its place in
        // the queue does anyway), and every other request's future is not
        // as large as a `Sleep` plus an `http::Request` (over 300 bytes),
        // which it would carry and move; dropped out of line, so every
        // other future's drop is not theirs.
        Waiting { wait: ColdBox<Waiting<S, Req>> },
        // Refused before the inner service was called.
        Refused { error: Option<Error<S::Error>> },
        Done,
    }
}

pin_project! {
    /// A request waiting, with what it waits for.
    pub(crate) struct Waiting<S, Req> {
        #[pin]
        until: Until,
        svc: Option<S>,
        req: Option<Req>,
    }
}

pin_project! {
    #[project = UntilProj]
    enum Until {
        // The rate limiter's reserved permit, at the end of the sleep.
        Permit { #[pin] sleep: Sleep },
        // A bulkhead slot.
        Slot { acquire: AcquirePermission<'static> },
        // A permit of the Redis-backed rate limiter: its acquire (a script
        // call, or a lease, then perhaps a reserved wait).
        Redis { acquire: RedisAcquire },
    }
}

/// A Redis-backed limiter's acquire, boxed (a round trip's state).
#[cfg(feature = "redis")]
type RedisAcquire = Pin<
    Box<
        dyn Future<
                Output = Result<
                    resil_core::distributed_rate_limiter::Grant,
                    resil_core::rate_limiter::AcquireError,
                >,
            > + Send,
    >,
>;

/// Without the `redis` feature, no request waits for Redis.
#[cfg(not(feature = "redis"))]
type RedisAcquire = std::convert::Infallible;

pin_project! {
    /// A request waiting out a latency chaos injected, with what comes
    /// after (nothing in it is pinned: the projection hands out each field).
    pub(crate) struct Delayed<S, Req>
    where
        S: Service<Req>,
    {
        sleep: Pin<Box<dyn Future<Output = ()> + Send>>,
        then: Option<Result<S::Response, S::Error>>,
        svc: Option<S>,
        req: Option<Req>,
        slot: Option<BulkheadPermit<'static>>,
        adaptive: Option<AdaptivePermit<'static>>,
    }
}

impl<S: Service<Req>, Req> Stage<S, Req> {
    #[inline]
    pub(crate) fn call(
        fut: S::Future,
        slot: Option<BulkheadPermit<'static>>,
        adaptive: Option<AdaptivePermit<'static>>,
    ) -> Self {
        Stage::Call {
            fut,
            slot,
            adaptive,
        }
    }

    /// What chaos drew for this call: a delay first (with the service and
    /// request, if the call runs after it), or its answer at once.
    #[cold]
    fn injected(
        injection: Injection<S::Response, S::Error>,
        svc: &mut S,
        req: Req,
        slot: Option<BulkheadPermit<'static>>,
        adaptive: Option<AdaptivePermit<'static>>,
    ) -> Self
    where
        S: Clone,
    {
        match injection.delay {
            Some(delay) => {
                let run = injection.outcome.is_none();
                let sleep = injection.sleep(delay);
                let svc = run.then(|| {
                    let clone = svc.clone();
                    std::mem::replace(svc, clone)
                });
                Stage::Delayed {
                    wait: ColdBox::pin(Delayed {
                        sleep,
                        then: injection.outcome,
                        svc,
                        req: run.then_some(req),
                        slot,
                        adaptive,
                    }),
                }
            }
            None => Stage::Injected {
                out: injection.outcome,
                slot,
                adaptive,
            },
        }
    }

    /// Waits for a bulkhead slot (the first poll of `acquire` joined the
    /// queue).
    #[cold]
    pub(crate) fn acquire(acquire: AcquirePermission<'static>, svc: S, req: Req) -> Self {
        Stage::Waiting {
            wait: ColdBox::pin(Waiting {
                until: Until::Slot { acquire },
                svc: Some(svc),
                req: Some(req),
            }),
        }
    }

    pub(crate) fn refused(error: Error<S::Error>) -> Self {
        Stage::Refused { error: Some(error) }
    }
}

/// The innermost part: the bulkhead's slot, then the inner call. A free slot
/// is taken now (polled once with a no-op waker: its first poll either takes
/// a slot, refuses, or joins the queue, and the next poll registers the
/// task's waker); a wait moves the ready service into the future.
#[inline(always)]
pub(crate) fn body<S, Req, C: 'static, R: 'static>(
    shared: &'static Shared<C, R>,
    svc: &mut S,
    req: Req,
) -> Stage<S, Req>
where
    S: Service<Req> + Clone,
    S::Response: 'static,
    S::Error: 'static,
{
    let Some(bulkhead) = &shared.bulkhead else {
        return inside(shared, svc, req, None);
    };
    let mut acquire = bulkhead.get().acquire_permission();
    let mut cx = Context::from_waker(std::task::Waker::noop());
    match Pin::new(&mut acquire).poll(&mut cx) {
        Poll::Ready(Ok(permit)) => inside(shared, svc, req, Some(permit)),
        Poll::Ready(Err(refused)) => Stage::refused(refused.into_error()),
        Poll::Pending => {
            let clone = svc.clone();
            Stage::acquire(acquire, std::mem::replace(svc, clone), req)
        }
    }
}

/// Inside the semaphore bulkhead's slot: the adaptive bulkhead's slot (taken
/// now or refused, as it never waits), chaos (innermost: it stands for the
/// downstream), then the inner call.
#[inline(always)]
fn inside<S, Req, C: 'static, R: 'static>(
    shared: &'static Shared<C, R>,
    svc: &mut S,
    req: Req,
    slot: Option<BulkheadPermit<'static>>,
) -> Stage<S, Req>
where
    S: Service<Req> + Clone,
    S::Response: 'static,
    S::Error: 'static,
{
    let adaptive = match &shared.adaptive {
        None => None,
        Some(adaptive) => match adaptive.get().try_acquire_permission() {
            Ok(permit) => Some(permit),
            Err(full) => return Stage::refused(Error::BulkheadFull(full)),
        },
    };
    if let Some(chaos) = &shared.chaos {
        if let Some(injection) = chaos.get().inject::<S::Response, S::Error>() {
            return Stage::injected(injection, svc, req, slot, adaptive);
        }
    }
    Stage::call(svc.call(req), slot, adaptive)
}

/// The time limiter's side for a timed part starting now, if the layer has
/// one.
#[inline]
fn watch<C, R>(shared: &'static Shared<C, R>) -> Option<Watch<'static>> {
    shared.time_limiter.as_ref().map(|l| l.get().watch())
}

impl<S, Req, C: 'static, R: 'static> ResponseFuture<S, Req, C, R>
where
    S: Service<Req> + Clone,
{
    /// Refused before the timed part (by the breaker or the rate limiter).
    pub(crate) fn refused(
        shared: &'static Shared<C, R>,
        span: Span,
        permit: Option<Permit<'static>>,
        error: Error<S::Error>,
    ) -> Self {
        ResponseFuture {
            stage: Stage::refused(error),
            watch: None,
            permit,
            throttle: None,
            shared,
            span,
        }
    }

    /// The rate limiter reserved a permit `wait` from now.
    #[cold]
    pub(crate) fn throttled(
        shared: &'static Shared<C, R>,
        span: Span,
        permit: Option<Permit<'static>>,
        wait: Duration,
        svc: S,
        req: Req,
    ) -> Self {
        ResponseFuture {
            stage: Stage::Waiting {
                wait: ColdBox::pin(Waiting {
                    until: Until::Permit {
                        sleep: tokio::time::sleep(wait),
                    },
                    svc: Some(svc),
                    req: Some(req),
                }),
            },
            watch: None,
            permit,
            throttle: None,
            shared,
            span,
        }
    }

    /// The Redis-backed rate limiter's permit, awaited before the timed part.
    #[cfg(feature = "redis")]
    #[cold]
    pub(crate) fn acquiring(
        shared: &'static Shared<C, R>,
        span: Span,
        permit: Option<Permit<'static>>,
        limiter: &'static resil_core::distributed_rate_limiter::DistributedRateLimiter,
        svc: S,
        req: Req,
    ) -> Self {
        ResponseFuture {
            stage: Stage::Waiting {
                wait: ColdBox::pin(Waiting {
                    until: Until::Redis {
                        acquire: Box::pin(limiter.acquire_async()),
                    },
                    svc: Some(svc),
                    req: Some(req),
                }),
            },
            watch: None,
            permit,
            throttle: None,
            shared,
            span,
        }
    }

    /// The timed part, started: `stage` is from [`body`].
    #[inline]
    pub(crate) fn running(
        shared: &'static Shared<C, R>,
        span: Span,
        permit: Option<Permit<'static>>,
        stage: Stage<S, Req>,
    ) -> Self {
        ResponseFuture {
            stage,
            watch: watch(shared),
            permit,
            throttle: None,
            shared,
            span,
        }
    }

    /// The throttler's permit, to record the downstream's answer with.
    #[inline(always)]
    pub(crate) fn throttled_by(mut self, throttle: Option<ThrottlePermit<'static>>) -> Self {
        self.throttle = throttle;
        self
    }
}

impl<S, Req, C: 'static, R: 'static> Future for ResponseFuture<S, Req, C, R>
where
    S: Service<Req> + Clone,
    S::Response: 'static,
    S::Error: 'static,
    C: Classify<S::Response, S::Error>,
    R: Respond<S::Response, S::Error>,
{
    type Output = Result<S::Response, R::Error>;

    #[inline]
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let mut this = self.project();
        let shared = *this.shared;
        let span = &*this.span;
        let _entered = span.enter();
        let out: Result<S::Response, Error<S::Error>> = loop {
            if let Some(watch) = this.watch.as_mut() {
                watch.before_poll();
            }
            let answer = match this.stage.as_mut().project() {
                StageProj::Call { fut, adaptive, .. } => {
                    let Poll::Ready(answer) = fut.poll(cx) else {
                        break ready!(pending_or_expired(this.watch, this.stage, cx));
                    };
                    if let Some(adaptive) = adaptive.take() {
                        adaptive.record_success();
                    }
                    answer
                }
                StageProj::Injected { out, adaptive, .. } => {
                    if let Some(adaptive) = adaptive.take() {
                        adaptive.record_success();
                    }
                    out.take().expect("polled after completion")
                }
                StageProj::Delayed { wait } => {
                    let d = wait.as_mut().project();
                    if d.sleep.as_mut().poll(cx).is_pending() {
                        break ready!(pending_or_expired(this.watch, this.stage, cx));
                    }
                    let (slot, adaptive) = (d.slot.take(), d.adaptive.take());
                    let next = match (d.then.take(), d.svc.take(), d.req.take()) {
                        (Some(out), _, _) => Stage::Injected {
                            out: Some(out),
                            slot,
                            adaptive,
                        },
                        (None, Some(mut svc), Some(req)) => {
                            Stage::call(svc.call(req), slot, adaptive)
                        }
                        (None, _, _) => unreachable!("a delay without an outcome keeps its call"),
                    };
                    this.stage.set(next);
                    continue;
                }
                StageProj::Waiting { wait } => {
                    let w = wait.as_mut().project();
                    match w.until.project() {
                        UntilProj::Permit { sleep } => {
                            ready!(sleep.poll(cx));
                            // The permit is ours: the timed part starts.
                            let (Some(mut svc), Some(req)) = (w.svc.take(), w.req.take()) else {
                                unreachable!("the service and request wait with the sleep");
                            };
                            let next = body(shared, &mut svc, req);
                            *this.watch = watch(shared);
                            this.stage.set(next);
                        }
                        #[cfg(feature = "redis")]
                        UntilProj::Redis { acquire } => match ready!(acquire.as_mut().poll(cx)) {
                            Ok(_grant) => {
                                // The permit is ours: the timed part starts.
                                let (Some(mut svc), Some(req)) = (w.svc.take(), w.req.take())
                                else {
                                    unreachable!("the service and request wait with the acquire");
                                };
                                let next = body(shared, &mut svc, req);
                                *this.watch = watch(shared);
                                this.stage.set(next);
                            }
                            Err(refused) => {
                                this.stage.set(Stage::Done);
                                break Err(refused.into());
                            }
                        },
                        #[cfg(not(feature = "redis"))]
                        UntilProj::Redis { acquire } => match *acquire {},
                        UntilProj::Slot { acquire } => match Pin::new(acquire).poll(cx) {
                            Poll::Ready(Ok(slot)) => {
                                let (Some(mut svc), Some(req)) = (w.svc.take(), w.req.take())
                                else {
                                    unreachable!("the service and request wait with the acquire");
                                };
                                let next = inside(shared, &mut svc, req, Some(slot));
                                this.stage.set(next);
                            }
                            Poll::Ready(Err(refused)) => {
                                this.stage.set(Stage::Done);
                                break finished(this.watch, Err(refused.into_error()));
                            }
                            Poll::Pending => {
                                break ready!(pending_or_expired(this.watch, this.stage, cx));
                            }
                        },
                    }
                    continue;
                }
                StageProj::Refused { error } => {
                    let error = error.take().expect("polled after completion");
                    this.stage.set(Stage::Done);
                    break finished(this.watch, Err(error));
                }
                StageProj::Done => panic!("`ResponseFuture` polled after completion"),
            };
            // The slot is free as soon as the work is done. `set` drops the
            // old state where it stands: moving it out first would be a
            // wide read of fields just written, which stalls on store
            // forwarding (measured).
            this.stage.set(Stage::Done);
            shared.counts.passed();
            if let Some(watch) = this.watch.as_ref() {
                watch.finished(answer.is_ok());
            }
            match answer {
                // The common path: the response goes out as the inner
                // future gave it, never through a `Result<_, Error<_>>`,
                // whose different layout moves it field by field, and the
                // caller's block copy of the response then stalls on those
                // stores (measured: about 15 ns a request in process).
                Ok(response) => {
                    if let Some(permit) = this.permit.take() {
                        record_response(&shared.classify, permit, &response);
                    }
                    if let Some(throttle) = this.throttle.take() {
                        match shared.classify.refused(&response) {
                            Some(true) => throttle.refused(),
                            Some(false) => throttle.accepted(),
                            None => throttle.on_value(&response),
                        }
                    }
                    if !span.is_disabled() {
                        // By value: a reference would keep the response in
                        // memory on every request.
                        let response = trace::responded(span.span(), shared, response);
                        return Poll::Ready(Ok(response));
                    }
                    return Poll::Ready(Ok(response));
                }
                Err(error) => break Err(Error::Call(error)),
            }
        };
        if let Some(permit) = this.permit.take() {
            record(&shared.classify, permit, &out);
        }
        if let Some(throttle) = this.throttle.take() {
            // Never `Ok` here (a response returns above); an inner local
            // refusal drops the permit and counts nothing.
            throttle.on_nested_result(&out);
        }
        let out = if span.is_disabled() {
            out
        } else {
            trace::ended(span.span(), shared, out)
        };
        Poll::Ready(finish(shared, out))
    }
}

/// The work is pending: pending while the time limiter's wait is not over
/// (or there is no time limiter), else the timeout, the work dropped in
/// place.
#[inline]
fn pending_or_expired<S: Service<Req>, Req, T>(
    watch: &mut Option<Watch<'static>>,
    mut stage: Pin<&mut Stage<S, Req>>,
    cx: &mut Context<'_>,
) -> Poll<Result<T, Error<S::Error>>> {
    let Some(watch) = watch else {
        return Poll::Pending;
    };
    ready!(watch.poll_expired(cx));
    // A timeout teaches the adaptive bulkhead that its limit is too high.
    let adaptive = match stage.as_mut().project() {
        StageProj::Call { adaptive, .. } | StageProj::Injected { adaptive, .. } => adaptive.take(),
        StageProj::Delayed { wait } => wait.as_mut().project().adaptive.take(),
        _ => None,
    };
    if let Some(adaptive) = adaptive {
        adaptive.record_dropped();
    }
    stage.set(Stage::Done);
    Poll::Ready(Err(watch.expired(true)))
}

/// A timed part that ended without a response from the inner call (a
/// bulkhead's refusal): the time limiter counts it as an error.
#[inline]
fn finished<T, E>(watch: &Option<Watch<'static>>, out: Result<T, Error<E>>) -> Result<T, Error<E>> {
    if let Some(watch) = watch {
        watch.finished(out.is_ok());
    }
    out
}

/// Records a result with the breaker's permit: the classifier's verdict on
/// a response or the inner error, the breaker's predicates on a refusal of
/// an inner aspect (a failure unless ignored), as the attributes record.
#[inline]
fn record<Res: 'static, E: 'static>(
    classify: &impl Classify<Res, E>,
    permit: Permit<'static>,
    out: &Result<Res, Error<E>>,
) {
    let verdict = match out {
        Ok(response) => return record_response(classify, permit, response),
        Err(Error::Call(error)) => classify.classify_error(error),
        Err(_) => Verdict::Predicates,
    };
    match verdict {
        Verdict::Predicates => permit.on_nested_result(out),
        Verdict::Record(outcome, transition) => permit.record_with(outcome, transition),
    }
}

/// Records a response with the breaker's permit: the classifier's verdict,
/// else the breaker's value predicates (as `record` does for `Ok`).
#[inline]
fn record_response<Res: 'static, E: 'static>(
    classify: &impl Classify<Res, E>,
    permit: Permit<'static>,
    response: &Res,
) {
    match classify.classify_response(response) {
        Verdict::Predicates => permit.on_value(response),
        Verdict::Record(outcome, transition) => permit.record_with(outcome, transition),
    }
}

/// The `Retry-After` of a throttler's refusal: its window moves in
/// one-second steps, so its rejection probability cannot fall sooner.
const THROTTLED_RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(1);

#[inline(always)]
fn finish<Res, E, C: 'static, R: Respond<Res, E>>(
    shared: &'static Shared<C, R>,
    out: Result<Res, Error<E>>,
) -> Result<Res, R::Error> {
    match out {
        Ok(response) => Ok(response),
        Err(error) => match error.into_rejection() {
            Err(error) => Err(shared.respond.error(error)),
            Ok(rejection) => {
                shared.counts.refused(&rejection);
                use resil_core::Rejection as Rj;
                let retry_after = match &rejection {
                    Rj::CallNotPermitted(_) => shared
                        .breaker
                        .as_ref()
                        .and_then(|b| b.remaining_open_wait()),
                    Rj::RequestNotPermitted(_) => {
                        shared.limiter.as_ref().map(|l| l.time_to_next_permit())
                    }
                    Rj::Throttled(_) => Some(THROTTLED_RETRY_AFTER),
                    _ => None,
                };
                let quota = match (&rejection, &shared.limiter) {
                    (Rj::RequestNotPermitted(_), Some(l)) => {
                        let config = l.config();
                        Some(super::respond::Quota {
                            limit: config.limit_for_period(),
                            window: config.limit_refresh_period(),
                            remaining: u32::try_from(l.available_permissions().max(0))
                                .unwrap_or(u32::MAX),
                        })
                    }
                    _ => None,
                };
                let refusal = Refusal::new(rejection, retry_after);
                shared.respond.refused(match quota {
                    Some(quota) => refusal.with_quota(quota),
                    None => refusal,
                })
            }
        },
    }
}

impl<S, Req, C: 'static, R: 'static> fmt::Debug for ResponseFuture<S, Req, C, R>
where
    S: Service<Req>,
{
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResponseFuture")
            .field("name", &self.shared.name)
            .field("permit", &self.permit.is_some())
            .finish_non_exhaustive()
    }
}
