//! The protected call: one stock query to the downstream API, under the
//! registry's `inventory-query` instances, and the answer the service gives
//! for every way it can end.

use std::fmt;
use std::net::SocketAddr;
use std::time::Duration;

use hyper::header::RETRY_AFTER;
use hyper::StatusCode;
use resil::bulkhead::Bulkhead;
use resil::circuit_breaker::{CircuitBreaker, ResultTransition};
use resil::error::{BulkheadFull, RequestNotPermitted};
use resil::rate_limiter::RateLimiter;
use resil::retry::Retry;
use resil::time_limiter::TimeLimiter;
use resil::{Error, ErrorClass, Handle, Registry};
use serde_json::json;

use crate::http;

/// The name of every instance protecting the stock query (one per kind, as
/// Resilience4j's annotations share one name).
pub const INSTANCE: &str = "inventory-query";

/// What can go wrong with a stock query, as the downstream answered it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InventoryError {
    /// No answer, or a 5xx: the dependency is unwell. Retried, and a failure
    /// for the breaker.
    Connection(String),
    /// 429: the downstream asks us to back off, for `retry_after` when it
    /// says. Not retried; opens the breaker for that long.
    Throttled {
        /// The `Retry-After` header, when present.
        retry_after: Option<Duration>,
    },
    /// 409 "out of stock": a business answer, not an outage. Neither retried
    /// nor counted by the breaker.
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

/// The names the config file's error lists use for these errors
/// (`retry-exceptions = ["inventory_connection"]`, …).
impl ErrorClass for InventoryError {
    fn error_class(&self) -> &'static str {
        match self {
            InventoryError::Connection(_) => "inventory_connection",
            InventoryError::Throttled { .. } => "inventory_throttled",
            InventoryError::OutOfStock => "inventory_business",
        }
    }

    fn error_classes() -> &'static [&'static str] {
        &[
            "inventory_connection",
            "inventory_throttled",
            "inventory_business",
        ]
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

/// The registry's instances for the stock query, composed by hand in
/// Resilience4j's aspect order:
/// `Retry( CircuitBreaker( RateLimiter( TimeLimiter( Bulkhead( call )))))`.
pub struct Inventory {
    downstream: SocketAddr,
    retry: Handle<Retry>,
    breaker: Handle<CircuitBreaker>,
    rate_limiter: Handle<RateLimiter>,
    time_limiter: Handle<TimeLimiter>,
    bulkhead: Handle<Bulkhead>,
}

impl Inventory {
    /// Looks the instances up once (not per call) in `registry`.
    pub fn new(registry: &Registry, downstream: SocketAddr) -> Inventory {
        Inventory {
            downstream,
            retry: registry.retry(INSTANCE),
            breaker: registry.circuit_breaker(INSTANCE),
            rate_limiter: registry.rate_limiter(INSTANCE),
            time_limiter: registry.time_limiter(INSTANCE),
            bulkhead: registry.bulkhead(INSTANCE),
        }
    }

    /// The protected stock query. The breaker sees every attempt (retry is
    /// outermost), so one failing request adds `max-attempts` failures to its
    /// window; a refusal from inside (open breaker, rate limit, full
    /// bulkhead) is returned at once, never retried.
    pub async fn query(&self, sku: &str) -> Result<Stock, Error<InventoryError>> {
        self.retry
            .call_async_nested(|| {
                let call = fetch_stock(self.downstream, sku);
                let isolated = self.bulkhead.call_async(call);
                let timed = async {
                    self.time_limiter
                        .call_async(isolated)
                        .await
                        .map_err(Error::flatten)
                };
                let limited = async {
                    self.rate_limiter
                        .call_async(timed)
                        .await
                        .map_err(Error::flatten)
                };
                self.breaker.call_async_nested(limited)
            })
            .await
    }
}

/// The breaker settings a file cannot express:
///
/// - a 429's `Retry-After` opens the breaker for exactly that long;
/// - the service's own rate-limiter and bulkhead refusals (raised inside the
///   breaker, in Resilience4j's order) say nothing about the downstream's
///   health, so the breaker ignores them. Resilience4j would count them as
///   failures unless listed in `ignore-exceptions`. Timeouts stay failures.
pub fn configure(registry: &Registry) -> Result<(), resil::registry_crate::RegistryError> {
    registry.configure_circuit_breaker(INSTANCE, |b| {
        b.transition_on_error(|e: &InventoryError| match e {
            InventoryError::Throttled {
                retry_after: Some(after),
            } => ResultTransition::OpenFor(*after),
            _ => ResultTransition::Stay,
        })
        .ignore_error(|_: &RequestNotPermitted| true)
        .ignore_error(|_: &BulkheadFull| true)
    })
}

/// The service's answer for a stock query, whatever happened. A refusal or a
/// downstream failure is an explicit `UNKNOWN` with the reason — never a
/// made-up `AVAILABLE`.
pub fn answer(sku: &str, outcome: Result<Stock, Error<InventoryError>>) -> serde_json::Value {
    match outcome {
        Ok(stock) => json!({
            "sku": stock.sku,
            "status": if stock.available > 0 { "AVAILABLE" } else { "OUT_OF_STOCK" },
            "available": stock.available,
        }),
        Err(Error::Call(InventoryError::OutOfStock)) => {
            json!({ "sku": sku, "status": "OUT_OF_STOCK", "available": 0 })
        }
        Err(Error::Call(e)) => {
            json!({ "sku": sku, "status": "UNKNOWN", "reason": e.error_class() })
        }
        Err(refusal) => {
            json!({ "sku": sku, "status": "UNKNOWN", "reason": refusal.kind().as_str() })
        }
    }
}
