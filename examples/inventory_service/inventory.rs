//! The protected call: one stock query to the downstream API over HTTP
//! (reqwest), its response classified by status (`resil_web::http`),
//! annotated with the registry's `inventory-query` instances; and the answer
//! the service gives for every way it can end.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use std::{fmt, io};

use resil::circuit_breaker::ResultTransition;
use resil::{ErrorClass, Registry, Rejection};
use resil_web::http::{HttpClassifier, HttpClassifierBuilder, HttpError, StatusSet};
use serde::Serialize;

/// The name of every instance protecting the stock query (one per kind, as
/// Resilience4j's annotations share one name).
pub const INSTANCE: &str = "inventory-query";

/// What can go wrong with a stock query. Each variant's class name is what
/// the config file's error lists use (`retry-exceptions =
/// ["inventory_connection"]`, …).
#[derive(Debug, Clone, PartialEq, Eq, resil::ErrorClass)]
pub enum InventoryError {
    /// No response at all: connect refused, reset, a body that broke off.
    /// Retried (the only error that is), and a failure for the breaker.
    #[error_class(name = "inventory_connection")]
    Connection(String),
    /// A response whose status is a failure (anything but 200 and 409): a
    /// failure for the breaker, not retried. A 429's or 503's `Retry-After`
    /// opens the breaker for that long.
    #[error_class(name = "inventory_unavailable")]
    Unavailable {
        /// The status.
        status: u16,
        /// Its `Retry-After`, when it had one.
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
            InventoryError::Connection(why) => write!(f, "inventory unreachable: {why}"),
            InventoryError::Unavailable { status, .. } => {
                write!(f, "inventory answered {status}")
            }
            InventoryError::OutOfStock => f.write_str("out of stock"),
        }
    }
}

impl From<HttpError> for InventoryError {
    fn from(e: HttpError) -> Self {
        match e.status() {
            None => InventoryError::Connection(e.to_string()),
            // The classifier ignores 409 alone.
            Some(_) if e.is_ignored() => InventoryError::OutOfStock,
            Some(status) => InventoryError::Unavailable {
                status: status.as_u16(),
                retry_after: e.retry_after(),
            },
        }
    }
}

/// How a stock query's answer is judged where the config file says nothing
/// (the shipped file says the same, as `resil.http.instances.inventory-query`
/// keys, which replace these sets key by key): 200 is the answer, 409 a
/// business "out of stock" the breaker ignores, any other status a
/// dependency failure; a 429's or 503's `Retry-After` is honoured.
pub fn classifier() -> HttpClassifierBuilder {
    HttpClassifier::builder()
        .success_status(StatusSet::parse("200").expect("a valid status set"))
        .ignore_status(StatusSet::parse("409").expect("a valid status set"))
}

/// The stock status of seed's `InventoryView`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum InventoryStatus {
    /// In stock, as the downstream confirmed.
    Available,
    /// Out of stock, as the downstream confirmed.
    OutOfStock,
    /// No trustworthy answer.
    Unknown,
}

/// What the service answers for a stock query:
/// `{"skuId":"SKU-1","status":"AVAILABLE","degraded":false,"reason":"CONFIRMED"}`,
/// or for a refusal or a downstream failure `UNKNOWN`, `degraded: true` and
/// the reason (the refusal's kind or the error's class name) — never a
/// made-up `AVAILABLE`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct InventoryView {
    /// The item.
    pub sku_id: String,
    /// Its status.
    pub status: InventoryStatus,
    /// Whether this is a fallback's answer.
    pub degraded: bool,
    /// `CONFIRMED` for the downstream's answer, else why not.
    pub reason: String,
}

impl InventoryView {
    fn confirmed(sku: &str, status: InventoryStatus) -> Self {
        InventoryView {
            sku_id: sku.to_owned(),
            status,
            degraded: false,
            reason: "CONFIRMED".to_owned(),
        }
    }

    fn unknown(sku: &str, reason: &str) -> Self {
        InventoryView {
            sku_id: sku.to_owned(),
            status: InventoryStatus::Unknown,
            degraded: true,
            reason: reason.to_owned(),
        }
    }
}

/// The downstream's HTTP client: a pooled reqwest client, and a count of
/// every attempt it made (what `/inventory/attempts` answers).
pub struct InventoryClient {
    http: reqwest::Client,
    downstream: SocketAddr,
    /// Where nothing listens: `?mode=connect` dials it, for a real
    /// "connection refused".
    unreachable: SocketAddr,
    classifier: HttpClassifier,
    attempts: AtomicU64,
}

impl InventoryClient {
    /// A client of the downstream at `downstream`, judging its answers with
    /// `classifier`.
    pub fn new(downstream: SocketAddr, classifier: HttpClassifier) -> io::Result<Self> {
        // A port that was just free and is closed again: connecting to it is
        // refused at once.
        let unreachable = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?;
        Ok(InventoryClient {
            http: reqwest::Client::new(),
            downstream,
            unreachable,
            classifier,
            attempts: AtomicU64::new(0),
        })
    }

    /// Every attempt made so far (a retried request counts each one).
    pub fn attempts(&self) -> u64 {
        self.attempts.load(Ordering::SeqCst)
    }

    /// One attempt: `GET /stock/{sku}` on the downstream, `mode` passed on
    /// (`connect` dials nowhere instead).
    async fn fetch(&self, sku: &str, mode: Option<&str>) -> Result<InventoryView, InventoryError> {
        self.attempts.fetch_add(1, Ordering::SeqCst);
        let addr = if mode == Some("connect") {
            self.unreachable
        } else {
            self.downstream
        };
        let mut url = reqwest::Url::parse(&format!("http://{addr}/stock/"))
            .expect("an address makes a valid URL");
        url.path_segments_mut()
            .expect("an http URL has path segments")
            .pop_if_empty()
            .push(sku);
        if let Some(mode) = mode.filter(|m| *m != "connect") {
            url.query_pairs_mut().append_pair("mode", mode);
        }
        let response = self
            .classifier
            .check_reqwest(self.http.get(url).send().await)?;
        let body: serde_json::Value = response.json().await.map_err(HttpError::from)?;
        let available = body["available"]
            .as_u64()
            .ok_or_else(|| InventoryError::Connection(format!("unreadable stock reply: {body}")))?;
        Ok(InventoryView::confirmed(
            sku,
            if available > 0 {
                InventoryStatus::Available
            } else {
                InventoryStatus::OutOfStock
            },
        ))
    }
}

/// The modes a request may ask for (`?mode=`), passed on to the downstream.
pub const MODES: &[&str] = &[
    "success",
    "fail",
    "connect",
    "slow",
    "throttle",
    "out-of-stock",
    "hold",
];

/// The protected stock query. Resilience4j's aspect order holds whatever
/// order the attributes are written in:
/// `Retry( CircuitBreaker( RateLimiter( TimeLimiter( Bulkhead( call )))))`.
/// So the breaker sees every attempt, the time limit is per attempt, and a
/// refusal from inside (open breaker, rate limit, full bulkhead) is returned
/// at once, never retried. The instances are the process-wide registry's
/// `inventory-query`, looked up once per call site.
#[resil::circuit_breaker(name = "inventory-query", fallback = [refused, failed])]
#[resil::retry(name = "inventory-query")]
#[resil::rate_limiter(name = "inventory-query")]
#[resil::time_limiter(name = "inventory-query")]
#[resil::bulkhead(name = "inventory-query")]
pub async fn query_stock(
    client: &InventoryClient,
    sku: &str,
    mode: Option<&str>,
) -> Result<InventoryView, InventoryError> {
    client.fetch(sku, mode).await
}

/// Fallback for every refusal (open breaker, rate limit, full bulkhead,
/// timeout): `UNKNOWN`, with the refusal's kind as the reason.
async fn refused(
    _client: &InventoryClient,
    sku: &str,
    _mode: Option<&str>,
    why: Rejection,
) -> Result<InventoryView, InventoryError> {
    Ok(InventoryView::unknown(sku, why.kind().as_str()))
}

/// Fallback for the call's own error, once the retry gave up: out of stock is
/// an answer; anything else is `UNKNOWN` with the error's class name.
async fn failed(
    _client: &InventoryClient,
    sku: &str,
    _mode: Option<&str>,
    why: InventoryError,
) -> Result<InventoryView, InventoryError> {
    Ok(match why {
        InventoryError::OutOfStock => InventoryView::confirmed(sku, InventoryStatus::OutOfStock),
        other => InventoryView::unknown(sku, other.error_class()),
    })
}

/// The breaker setting a file cannot express: a `Retry-After` opens the
/// breaker for exactly that long.
pub fn configure(registry: &Registry) -> Result<(), resil::registry_crate::RegistryError> {
    registry.configure_circuit_breaker(INSTANCE, |b| {
        b.transition_on_error(|e: &InventoryError| match e {
            InventoryError::Unavailable {
                retry_after: Some(after),
                ..
            } => ResultTransition::OpenFor(*after),
            _ => ResultTransition::Stay,
        })
    })?;
    // Created now rather than at the first request, so health, the actuator
    // and the dashboard see them from the start; the annotated fn's call site
    // finds these same instances by name.
    registry.circuit_breaker(INSTANCE);
    registry.retry(INSTANCE);
    registry.rate_limiter(INSTANCE);
    registry.time_limiter(INSTANCE);
    registry.bulkhead(INSTANCE);
    Ok(())
}
