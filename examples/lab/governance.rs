//! Three dependency-governance experiments: `shared` (isolation covers only what is split),
//! `shared-breaker` (what one breaker covers) and `amplification`
//! (stacked retries, and resil's retry budget against them).

use std::net::SocketAddr;

use hyper::StatusCode;
use resil::retry::{RetryBudget, RetryBudgetConfig};
use resil::ErrorKind;

use crate::downstream::{Downstream, PRICE};
use crate::http::{self, Server};
use crate::lab::Lab;
use crate::price::{self, PriceError};

// ---- shared --------------------------------------------------------------

/// The report API, isolated by its own bulkhead (`shared-reports`)…
#[resil::bulkhead(name = "shared-reports")]
async fn db_report(downstream: SocketAddr, behaviour: &'static str) -> Result<u32, PriceError> {
    price::fetch_db(downstream, behaviour).await
}

/// …and the payment API by another (`shared-payment`). Both are served from
/// one database with a pool of two connections.
#[resil::bulkhead(name = "shared-payment")]
async fn db_payment(downstream: SocketAddr, behaviour: &'static str) -> Result<u32, PriceError> {
    price::fetch_db(downstream, behaviour).await
}

/// Two held reports take both database connections. Payment's bulkhead is
/// untouched (2 free slots), and payment fails anyway: the isolation split
/// the callers' slots, not the database they share.
pub async fn shared(lab: &Lab) -> Vec<String> {
    let downstream = Downstream::start(&lab.clock).await;
    let at = downstream.addr();
    let registry = resil::registry();
    let (reports, payments) = (
        registry.bulkhead("shared-reports"),
        registry.bulkhead("shared-payment"),
    );
    let mut out = Vec::new();

    let held: Vec<_> = (0..2)
        .map(|_| tokio::spawn(db_report(at, "hold")))
        .collect();
    downstream.held(2).await;
    let paid = db_payment(at, "ok").await;
    out.push(format!(
        "held={} reportAvailable={} paymentAvailable={} payment={} sharedPoolFree={}",
        downstream.active(),
        reports.available_concurrent_calls(),
        payments.available_concurrent_calls(),
        price::label_of(&paid),
        downstream.db_free()
    ));

    downstream.release(0);
    for report in held {
        assert_eq!(report.await.expect("report task"), Ok(PRICE));
    }
    let paid = db_payment(at, "ok").await;
    out.push(format!(
        "recovered sharedPoolFree={} payment={}",
        downstream.db_free(),
        price::label_of(&paid)
    ));
    out
}

// ---- shared-breaker ------------------------------------------------------

/// The export endpoint, behind the catalog service's one breaker (`catalog`).
#[resil::circuit_breaker(name = "catalog")]
async fn export_shared(downstream: SocketAddr) -> Result<u32, PriceError> {
    price::fetch(downstream, "503").await // the export endpoint is down
}

/// The query endpoint, behind the same breaker.
#[resil::circuit_breaker(name = "catalog")]
async fn query_shared(downstream: SocketAddr) -> Result<u32, PriceError> {
    price::fetch(downstream, "ok").await // the query endpoint is healthy
}

/// The export endpoint with a breaker of its own (`catalog-export`).
#[resil::circuit_breaker(name = "catalog-export")]
async fn export_own(downstream: SocketAddr) -> Result<u32, PriceError> {
    price::fetch(downstream, "503").await
}

/// The query endpoint with a breaker of its own (`catalog-query`).
#[resil::circuit_breaker(name = "catalog-query")]
async fn query_own(downstream: SocketAddr) -> Result<u32, PriceError> {
    price::fetch(downstream, "ok").await
}

/// Two failing exports and two good queries fill one shared window at 50 %:
/// the breaker opens, and the healthy query endpoint is refused with it. With
/// a breaker each, only the export's opens.
pub async fn shared_breaker(lab: &Lab) -> Vec<String> {
    let downstream = Downstream::start(&lab.clock).await;
    let at = downstream.addr();
    let registry = resil::registry();
    let mut out = Vec::new();

    let (mut export_failed, mut query_succeeded) = (0, 0);
    for _ in 0..2 {
        export_failed += u32::from(export_shared(at).await.is_err());
        query_succeeded += u32::from(query_shared(at).await.is_ok());
    }
    let next = query_shared(at).await;
    out.push(format!(
        "oneBreaker exportFailed={export_failed} querySucceeded={query_succeeded} state={} nextQuery={}",
        registry.circuit_breaker("catalog").state(),
        price::label_of(&next)
    ));

    for _ in 0..4 {
        let _ = export_own(at).await;
        let _ = query_own(at).await;
    }
    let next = query_own(at).await;
    out.push(format!(
        "ownBreakers export={} query={} nextQuery={}",
        registry.circuit_breaker("catalog-export").state(),
        registry.circuit_breaker("catalog-query").state(),
        price::label_of(&next)
    ));
    out
}

// ---- amplification -------------------------------------------------------

/// The lab's own call to the first service (`layer-1`: 3 attempts).
#[resil::retry(name = "layer-1")]
async fn layer_1(next: SocketAddr) -> Result<u32, PriceError> {
    price::fetch(next, "503").await
}

/// The first service's call to the second (`layer-2`: 3 attempts).
#[resil::retry(name = "layer-2")]
async fn layer_2(next: SocketAddr) -> Result<u32, PriceError> {
    price::fetch(next, "503").await
}

/// The second service's call to the bottom one (`layer-3`: 3 attempts).
#[resil::retry(name = "layer-3")]
async fn layer_3(next: SocketAddr) -> Result<u32, PriceError> {
    price::fetch(next, "503").await
}

/// A service's answer for its own protected call's outcome.
fn relay(result: Result<u32, PriceError>) -> http::Response {
    match result {
        Ok(price) => http::reply(StatusCode::OK, price.to_string()),
        Err(PriceError::BusinessRejected) => http::reply(StatusCode::FORBIDDEN, "forbidden"),
        Err(e) => http::reply(StatusCode::SERVICE_UNAVAILABLE, e.to_string()),
    }
}

/// Each retry's budget: retries up to 20 % of its first attempts, and no
/// floor, so the bound is visible in a few calls.
///
/// In code, not in lab.yaml: a retry budget is resil's own addition, and the
/// config file's keys are Resilience4j's.
fn budget(lab: &Lab) -> RetryBudget {
    let config = RetryBudgetConfig::builder()
        .retry_ratio(0.2)
        .min_retries_per_second(0)
        .build()
        .expect("a valid budget");
    RetryBudget::with_clock(config, lab.clock.clone())
}

/// Three real services in a chain over a bottom one that always answers 503,
/// each retrying 3 times: one call becomes 27 requests at the bottom. Then
/// the same chain with a retry budget in each layer.
pub async fn amplification(lab: &Lab) -> Vec<String> {
    let bottom = Downstream::start(&lab.clock).await;
    let to_bottom = bottom.addr();
    let second = Server::start(move |_| async move { relay(layer_3(to_bottom).await) })
        .await
        .expect("the lab binds 127.0.0.1:0");
    let to_second = second.addr();
    let first = Server::start(move |_| async move { relay(layer_2(to_second).await) })
        .await
        .expect("the lab binds 127.0.0.1:0");
    let to_first = first.addr();
    let mut out = Vec::new();

    let attempts = resil::registry().retry("layer-1").config().max_attempts();
    assert!(layer_1(to_first).await.is_err());
    out.push(format!(
        "layers=3 maxAttempts={attempts} calls=1 bottomRequests={}",
        bottom.requests()
    ));

    let before = bottom.requests();
    for _ in 0..10 {
        let _ = layer_1(to_first).await;
    }
    out.push(format!(
        "withoutBudget calls=10 bottomRequests={}",
        bottom.requests() - before
    ));

    let registry = resil::registry();
    for layer in ["layer-1", "layer-2", "layer-3"] {
        let budget = budget(lab);
        registry
            .configure_retry(layer, move |retry| retry.budget(budget.clone()))
            .expect("a valid retry");
    }
    let before = bottom.requests();
    let mut exhausted = 0;
    for _ in 0..10 {
        let refused = layer_1(to_first).await;
        exhausted +=
            u32::from(refused.is_err_and(|e| e.is_refusal(ErrorKind::RetryBudgetExhausted)));
    }
    out.push(format!(
        "withBudget retryRatio=0.2 calls=10 bottomRequests={} budgetExhausted={exhausted}",
        bottom.requests() - before
    ));
    out
}
