//! The protected call: one stock query to the downstream API, annotated with
//! the registry's `inventory-query` instances, and the answer the service
//! gives for every way it can end.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use hyper::header::RETRY_AFTER;
use hyper::StatusCode;
use resil::circuit_breaker::ResultTransition;
use resil::{ErrorClass, Registry, Rejection};
use serde_json::json;

use crate::http;

/// The name of every instance protecting the stock query (one per kind, as
/// Resilience4j's annotations share one name).
pub const INSTANCE: &str = "inventory-query";

/// What can go wrong with a stock query, as the downstream answered it.
/// Each variant's class name is what the config file's error lists use
/// (`retry-exceptions = ["inventory_connection"]`, …).
#[derive(Debug, Clone, PartialEq, Eq, resil::ErrorClass)]
pub enum InventoryError {
    /// No answer, or a 5xx: the dependency is unwell. Retried, and a failure
    /// for the breaker.
    #[error_class(name = "inventory_connection")]
    Connection(String),
    /// 429: the downstream asks us to back off, for `retry_after` when it
    /// says. Not retried; opens the breaker for that long.
    #[error_class(name = "inventory_throttled")]
    Throttled {
        /// The `Retry-After` header, when present.
        retry_after: Option<Duration>,
    },
    /// 409 "out of stock": a business answer, not an outage. Neither retried
    /// nor counted by the breaker.
    #[error_class(name = "inventory_business")]
    OutOfStock,
}

impl fmt::Display for InventoryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InventoryError::Connection(why) => write!(f, "inventory unavailable: {why}"),
            InventoryError::Throttled { retry_after } => {
                write!(f, "inventory throttled us (retry after {retry_after:?})")
            }
            InventoryError::OutOfStock => f.write_str("out of stock"),
        }
    }
}

/// A stock level, as the downstream reported it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stock {
    /// The item.
    pub sku: String,
    /// Units available.
    pub available: u64,
}

/// The unprotected call: `GET /stock/{sku}` on the downstream.
pub async fn fetch_stock(downstream: SocketAddr, sku: &str) -> Result<Stock, InventoryError> {
    let path = format!("/stock/{}", http::encode(sku));
    let answer = http::get(downstream, &path)
        .await
        .map_err(|e| InventoryError::Connection(e.to_string()))?;
    match answer.status {
        StatusCode::OK => {
            let available = answer.json()["available"].as_u64().ok_or_else(|| {
                InventoryError::Connection(format!("unreadable stock reply: {}", answer.body))
            })?;
            Ok(Stock {
                sku: sku.to_owned(),
                available,
            })
        }
        StatusCode::CONFLICT => Err(InventoryError::OutOfStock),
        StatusCode::TOO_MANY_REQUESTS => Err(InventoryError::Throttled {
            retry_after: answer
                .headers
                .get(RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .and_then(|v| v.trim().parse().ok())
                .map(Duration::from_secs),
        }),
        other => Err(InventoryError::Connection(format!("HTTP {other}"))),
    }
}

/// What the service answers for a stock query: the real level, a business
/// "out of stock", or an explicit `UNKNOWN` with the reason — never a
/// made-up `AVAILABLE`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StockView {
    /// The downstream's stock level (`OUT_OF_STOCK` when it is 0).
    Known(Stock),
    /// The downstream said "out of stock" (409).
    OutOfStock(String),
    /// No trustworthy answer; `reason` is the refusal's kind
    /// (`call_not_permitted`, `timeout`, …) or the error's class name.
    Unknown {
        /// The item.
        sku: String,
        /// Why.
        reason: &'static str,
    },
}

impl StockView {
    /// The JSON body.
    pub fn to_json(&self) -> serde_json::Value {
        match self {
            StockView::Known(stock) => json!({
                "sku": stock.sku,
                "status": if stock.available > 0 { "AVAILABLE" } else { "OUT_OF_STOCK" },
                "available": stock.available,
            }),
            StockView::OutOfStock(sku) => {
                json!({ "sku": sku, "status": "OUT_OF_STOCK", "available": 0 })
            }
            StockView::Unknown { sku, reason } => {
                json!({ "sku": sku, "status": "UNKNOWN", "reason": reason })
            }
        }
    }
}

/// The protected stock query. Resilience4j's aspect order holds whatever
/// order the attributes are written in:
/// `Retry( CircuitBreaker( RateLimiter( TimeLimiter( Bulkhead( call )))))`.
/// So the breaker sees every attempt (one failing request adds
/// `max-attempts` failures to its window), the time limit is per attempt,
/// and a refusal from inside (open breaker, rate limit, full bulkhead) is
/// returned at once, never retried. The instances are the process-wide
/// registry's `inventory-query`, looked up once per call site.
#[resil::circuit_breaker(name = "inventory-query", fallback = [stock_refused, stock_failed])]
#[resil::retry(name = "inventory-query")]
#[resil::rate_limiter(name = "inventory-query")]
#[resil::time_limiter(name = "inventory-query")]
#[resil::bulkhead(name = "inventory-query")]
pub async fn query_stock(downstream: SocketAddr, sku: &str) -> Result<StockView, InventoryError> {
    fetch_stock(downstream, sku).await.map(StockView::Known)
}

/// Fallback for every refusal (open breaker, rate limit, full bulkhead,
/// timeout): `UNKNOWN`, with the refusal's kind as the reason.
async fn stock_refused(
    _downstream: SocketAddr,
    sku: &str,
    why: Rejection,
) -> Result<StockView, InventoryError> {
    Ok(StockView::Unknown {
        sku: sku.to_owned(),
        reason: why.kind().as_str(),
    })
}

/// Fallback for the call's own error, once the retry gave up: out of stock is
/// an answer; anything else is `UNKNOWN` with the error's class name.
async fn stock_failed(
    _downstream: SocketAddr,
    sku: &str,
    why: InventoryError,
) -> Result<StockView, InventoryError> {
    Ok(match why {
        InventoryError::OutOfStock => StockView::OutOfStock(sku.to_owned()),
        other => StockView::Unknown {
            sku: sku.to_owned(),
            reason: other.error_class(),
        },
    })
}

/// The breaker setting a file cannot express: a 429's `Retry-After` opens
/// the breaker for exactly that long.
pub fn configure(registry: &Registry) -> Result<(), resil::registry_crate::RegistryError> {
    registry.configure_circuit_breaker(INSTANCE, |b| {
        b.transition_on_error(|e: &InventoryError| match e {
            InventoryError::Throttled {
                retry_after: Some(after),
            } => ResultTransition::OpenFor(*after),
            _ => ResultTransition::Stay,
        })
    })?;
    // Created now rather than at the first request, so health, the snapshot
    // and the management endpoints see them from the start; the annotated
    // fn's call site finds these same instances by name.
    registry.circuit_breaker(INSTANCE);
    registry.retry(INSTANCE);
    registry.rate_limiter(INSTANCE);
    registry.time_limiter(INSTANCE);
    registry.bulkhead(INSTANCE);
    Ok(())
}
