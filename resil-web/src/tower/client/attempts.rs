//! The retry and hedging loops over one replayable request, shared by the
//! tower client and the reqwest middleware.
//!
//! The retry decides as the attributes' retry does, with the same code
//! ([`Retry::call_async_nested_judged`]): the inner service's error is the
//! call's own error, seen by the retry's error predicates
//! (`retry_on_error`, `ignore_error`, the file's `retry-exceptions` and
//! `ignore-exceptions`), an inner aspect's refusal is seen as its struct
//! (`retry_on_rejection`), and a response is a result value, seen by the
//! `retry_on_result` predicates. The classifier adds one rule: a response
//! it records as a failure (a 503) is a failed result, retried after the
//! wait it asks for (its `Retry-After`) or the retry's interval.

use std::future::Future;
use std::time::Duration;

use resil_core::circuit_breaker::{Outcome, ResultTransition};
use resil_core::hedging::Hedging;
use resil_core::retry::{OnBudget, ResultVerdict};
use resil_core::Error;

use crate::http::PAST_RETRY_AFTER;
use crate::tower::classify::{Classify, Verdict};

/// What one attempt gives the hedging: a response the classifier calls a
/// failure travels as an error, so that the next hedge starts, and comes
/// back as the response when the hedging stops.
enum Attempt<Res, E> {
    /// The inner service's own error.
    Error(E),
    /// A response the classifier records as a failure (a 503).
    Failed(Res),
}

/// Runs `attempt` under the retry (outer, on the budget it was given) and
/// the hedging (inner), each if given, in the attributes' order: Retry(
/// Hedge( attempt )). When the retry and the hedging stop on a response the
/// classifier records as a failure, that response is the answer.
pub(crate) async fn attempts<Res, E, C, F, Fut>(
    retry: Option<OnBudget<'_>>,
    hedging: Option<&Hedging>,
    classify: &C,
    attempt: F,
) -> Result<Res, Error<E>>
where
    Res: 'static,
    E: 'static,
    C: Classify<Res, E>,
    F: Fn() -> Fut,
    Fut: Future<Output = Result<Res, Error<E>>>,
{
    let hedged = |hedging| hedge(hedging, classify, &attempt);
    match (retry, hedging) {
        (Some(retry), Some(hedging)) => {
            let cap = max_wait(retry);
            retry
                .call_async_nested_judged(|| hedged(hedging), |r| verdict(classify, cap, r))
                .await
        }
        (Some(retry), None) => {
            let cap = max_wait(retry);
            retry
                .call_async_nested_judged(&attempt, |r| verdict(classify, cap, r))
                .await
        }
        (None, Some(hedging)) => hedged(hedging).await,
        (None, None) => attempt().await,
    }
}

/// One attempt, hedged: a failing response travels through the hedging as
/// an error and comes back as the response.
async fn hedge<Res, E, C, F, Fut>(
    hedging: &Hedging,
    classify: &C,
    attempt: &F,
) -> Result<Res, Error<E>>
where
    Res: 'static,
    E: 'static,
    C: Classify<Res, E>,
    F: Fn() -> Fut,
    Fut: Future<Output = Result<Res, Error<E>>>,
{
    let out = hedging
        .call_async_nested(|_| {
            let fut = attempt();
            async move { judge(classify, fut.await) }
        })
        .await;
    unjudge(out)
}

/// The longest wait a response may ask of `retry`: its interval
/// function's maximum (`exponential-max-wait-duration`), when it has one.
fn max_wait(retry: OnBudget<'_>) -> Option<Duration> {
    retry.retry().config().interval_function().max()
}

/// What the retry makes of a response: a failure by the classifier is a
/// failed result, retried just past the wait it asks for (as
/// [`HttpClassifier::retry`](crate::http::HttpClassifier::retry) waits:
/// a breaker the same response opened for that long is half-open by then),
/// or after the retry's interval when it asks for none; a wait longer than
/// `cap` is not worth waiting for, and the response is the answer. Any
/// other response is left to the retry's result predicates.
fn verdict<Res, E, C: Classify<Res, E>>(
    classify: &C,
    cap: Option<Duration>,
    response: &Res,
) -> ResultVerdict {
    match classify.classify_response(response) {
        Verdict::Record(Outcome::Failure, ResultTransition::OpenFor(wait)) => match cap {
            Some(cap) if wait > cap => ResultVerdict::Stop,
            _ => ResultVerdict::Retry(Some(wait + PAST_RETRY_AFTER)),
        },
        Verdict::Record(Outcome::Failure, _) => ResultVerdict::Retry(None),
        _ => ResultVerdict::Predicates,
    }
}

/// An attempt's result as the hedging judges it.
fn judge<Res: 'static, E: 'static, C: Classify<Res, E>>(
    classify: &C,
    out: Result<Res, Error<E>>,
) -> Result<Res, Error<Attempt<Res, E>>> {
    match out {
        Ok(response) => match classify.classify_response(&response) {
            Verdict::Record(Outcome::Failure, _) => Err(Error::Call(Attempt::Failed(response))),
            _ => Ok(response),
        },
        Err(error) => Err(error.map_call(Attempt::Error)),
    }
}

/// The hedging's outcome as an attempt's: its last failing response is a
/// response again.
fn unjudge<Res, E>(out: Result<Res, Error<Attempt<Res, E>>>) -> Result<Res, Error<E>> {
    match out {
        Ok(response) => Ok(response),
        Err(error) => match error.into_rejection() {
            Ok(rejection) => Err(rejection.into()),
            Err(Attempt::Error(error)) => Err(Error::Call(error)),
            Err(Attempt::Failed(response)) => Ok(response),
        },
    }
}
