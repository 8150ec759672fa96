//! The retry and hedging loops over one replayable request, shared by the
//! tower client and the reqwest middleware.

use std::future::Future;

use resil_core::circuit_breaker::Outcome;
use resil_core::hedging::Hedging;
use resil_core::retry::OnBudget;
use resil_core::Error;

use crate::tower::classify::{Classify, Verdict};

/// What one attempt gives the retry and the hedging: a response the
/// classifier calls a failure travels as an error, so that they try again,
/// and comes back as the response when they stop.
enum Attempt<Res, E> {
    /// The inner service's own error.
    Error(E),
    /// A response the classifier records as a failure (a 503).
    Failed(Res),
}

/// Runs `attempt` under the retry (outer, on the budget it was given) and
/// the hedging (inner), each if given, in the attributes' order: Retry(
/// Hedge( attempt )).  A response
/// `classify` records as a failure is tried again; when the retry and the
/// hedging stop, the last one is the answer.
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
    let judged = || {
        let fut = attempt();
        async move { judge(classify, fut.await) }
    };
    let out = match (retry, hedging) {
        (Some(retry), Some(hedging)) => {
            retry
                .call_async_nested(|| hedging.call_async_nested(|_| judged()))
                .await
        }
        (Some(retry), None) => retry.call_async_nested(judged).await,
        (None, Some(hedging)) => hedging.call_async_nested(|_| judged()).await,
        (None, None) => judged().await,
    };
    match out {
        Ok(response) => Ok(response),
        Err(error) => match error.into_rejection() {
            Ok(rejection) => Err(rejection.into()),
            Err(Attempt::Error(error)) => Err(Error::Call(error)),
            // The last attempt's failing response is the answer.
            Err(Attempt::Failed(response)) => Ok(response),
        },
    }
}

/// An attempt's result as the retry and the hedging judge it.
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
