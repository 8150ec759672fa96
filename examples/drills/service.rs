//! The service the drills exercise: the inventory service's stock query, on
//! a registry loaded from its config file, in front of an in-process
//! downstream whose faults a chaos instance injects.
//!
//! The protected query is the inventory service's, in resil's fixed order:
//! `Retry( CircuitBreaker( RateLimiter( TimeLimiter( Bulkhead( Chaos( call
//! ))))))`, every instance named `inventory-query`. Chaos stands for the
//! downstream, so it is innermost: every primitive sees an injected fault
//! exactly as it would see a real one. A refusal or a failure the retry gave
//! up on is answered by the fallback: an explicit `UNKNOWN`, marked degraded.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use resil::chaos::{Chaos, ChaosConfig};
use resil::clock::TokioClock;
use resil::config::FileConfig;
use resil::{Error, Registry};

/// Every instance protecting the stock query.
pub const INSTANCE: &str = "inventory-query";

/// A second dependency with its own instances (resil's defaults): the core
/// call a full inventory bulkhead must not starve.
pub const PRICING: &str = "pricing";

/// What the downstream can answer, by the class names the config file's
/// error lists use.
#[derive(Debug, Clone, PartialEq, Eq, resil::ErrorClass)]
pub enum InventoryError {
    /// No answer, or a 5xx: the downstream is unwell.
    #[error_class(name = "inventory_connection")]
    Connection(&'static str),
    /// 429: the downstream asks us to back off.
    #[error_class(name = "inventory_throttled")]
    Throttled,
    /// 409 out of stock: a business answer, not an outage.
    #[error_class(name = "inventory_business")]
    OutOfStock,
}

impl std::fmt::Display for InventoryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            InventoryError::Connection(why) => write!(f, "inventory unavailable: {why}"),
            InventoryError::Throttled => f.write_str("inventory throttled us"),
            InventoryError::OutOfStock => f.write_str("out of stock"),
        }
    }
}

/// What the service answers for a stock query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StockView {
    /// The downstream's answer: units available.
    Known(u64),
    /// The downstream said "out of stock" (an answer, not a fallback).
    OutOfStock,
    /// The fallback: no trustworthy answer, and why. Never a made-up level.
    Unknown {
        /// The refusal's kind (`call_not_permitted`, …) or the error's class.
        reason: &'static str,
    },
}

impl StockView {
    /// How the service's response body would say it.
    pub fn describe(&self) -> String {
        match self {
            StockView::Known(n) => format!("AVAILABLE({n})"),
            StockView::OutOfStock => "OUT_OF_STOCK".to_owned(),
            StockView::Unknown { reason } => format!("UNKNOWN(reason={reason}, degraded=true)"),
        }
    }
}

/// The stock level every healthy answer carries.
pub const STOCK: u64 = 7;

/// The in-process downstream: counts the requests it serves and how many run
/// at once, and keeps reservations by idempotency key.
#[derive(Default)]
pub struct Downstream {
    served: AtomicU32,
    commits: AtomicU32,
    reservations: Mutex<HashMap<String, bool>>,
}

impl Downstream {
    /// `GET /stock/{sku}`.
    async fn stock(&self) -> Result<u64, InventoryError> {
        self.served.fetch_add(1, Ordering::Relaxed);
        Ok(STOCK)
    }

    /// Requests the downstream itself served (not answered by chaos).
    pub fn served(&self) -> u32 {
        self.served.load(Ordering::Relaxed)
    }

    /// Reservations committed.
    pub fn commits(&self) -> u32 {
        self.commits.load(Ordering::Relaxed)
    }

    /// `GET /reservations/{key}`: `Some(true)` once committed, `Some(false)`
    /// while being worked on, `None` if never received.
    pub fn reservation(&self, key: &str) -> Option<bool> {
        self.reservations.lock().get(key).copied()
    }
}

/// `PUT /reservations/{key}`, idempotent by key: the server's own work, on
/// its own task, slowed by `server_chaos`. A client that stops waiting does
/// not stop it, as a real server goes on with a request whose caller hung up.
pub async fn reserve(
    downstream: &Arc<Downstream>,
    server_chaos: &Chaos,
    key: &str,
) -> Result<(), InventoryError> {
    let first = {
        let mut all = downstream.reservations.lock();
        match all.get(key) {
            Some(true) => return Ok(()),
            Some(false) => false,
            None => {
                all.insert(key.to_owned(), false);
                true
            }
        }
    };
    let (done_tx, done_rx) = tokio::sync::oneshot::channel();
    let server = Arc::clone(downstream);
    let chaos = server_chaos.clone();
    let key = key.to_owned();
    tokio::spawn(async move {
        let work = async {
            if first {
                server.commits.fetch_add(1, Ordering::Relaxed);
                server.reservations.lock().insert(key, true);
            }
            Ok::<(), InventoryError>(())
        };
        // The injected latency runs before the commit: the server is slow.
        let out = chaos.call_async(work).await.map_err(|e| match e {
            Error::Call(e) => e,
            _ => InventoryError::Connection("server refused"),
        });
        let _ = done_tx.send(out);
    });
    done_rx
        .await
        .unwrap_or(Err(InventoryError::Connection("server gone")))
}

/// A registry of the inventory service's instances, from `file`, on tokio's
/// (paused) clock.
pub fn registry(file: &str) -> Result<Registry, String> {
    let registry = Registry::builder().clock(TokioClock::new()).build();
    registry.register_error_class::<InventoryError>();
    let config = FileConfig::from_file(file).map_err(|e| format!("{file}: {e}"))?;
    registry
        .reload(config)
        .map_err(|e| format!("{file}: {e}"))?;
    Ok(registry)
}

/// The service: its registry, the downstream, the chaos instance standing
/// for the downstream, and what happened.
pub struct Service {
    /// The instances.
    pub registry: Registry,
    /// The downstream.
    pub downstream: Arc<Downstream>,
    /// The injected errors and results in front of the downstream.
    pub chaos: Chaos,
    /// The injected latency in front of the downstream (its own switch).
    pub latency: Chaos,
    reached: AtomicU32,
    in_flight: AtomicU32,
    peak: AtomicU32,
    fallbacks: AtomicU32,
    /// The service's record of stock levels: written only from a real answer.
    stock_writes: AtomicU32,
}

/// Counts an attempt in flight until dropped (a cancelled attempt too).
struct InFlight<'a>(&'a Service);

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.in_flight.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Service {
    /// A service on `file`'s instances whose downstream faults come from
    /// `chaos` (errors, results) and `latency` (each off until a drill
    /// enables it).
    pub fn new(file: &str, chaos: ChaosConfig, latency: ChaosConfig) -> Result<Service, String> {
        Ok(Service {
            registry: registry(file)?,
            downstream: Arc::default(),
            chaos: Chaos::with_clock(INSTANCE, chaos, TokioClock::new()),
            latency: Chaos::with_clock(INSTANCE, latency, TokioClock::new()),
            reached: AtomicU32::new(0),
            in_flight: AtomicU32::new(0),
            peak: AtomicU32::new(0),
            fallbacks: AtomicU32::new(0),
            stock_writes: AtomicU32::new(0),
        })
    }

    /// Attempts that got past every primitive to the downstream (or to the
    /// chaos standing in front of it).
    pub fn reached(&self) -> u32 {
        self.reached.load(Ordering::Relaxed)
    }

    /// Attempts at the downstream right now.
    pub fn in_flight(&self) -> u32 {
        self.in_flight.load(Ordering::Relaxed)
    }

    /// Starts counting the most attempts at once afresh.
    pub fn reset_peak(&self) {
        self.peak.store(self.in_flight(), Ordering::Relaxed);
    }

    /// The most attempts at the downstream at once.
    pub fn peak(&self) -> u32 {
        self.peak.load(Ordering::Relaxed)
    }

    /// Answers given by the fallback.
    pub fn fallbacks(&self) -> u32 {
        self.fallbacks.load(Ordering::Relaxed)
    }

    /// Writes to the service's stock record.
    pub fn stock_writes(&self) -> u32 {
        self.stock_writes.load(Ordering::Relaxed)
    }

    async fn attempt(&self) -> Result<u64, Error<InventoryError>> {
        self.reached.fetch_add(1, Ordering::Relaxed);
        let now = self.in_flight.fetch_add(1, Ordering::Relaxed) + 1;
        self.peak.fetch_max(now, Ordering::Relaxed);
        let _in_flight = InFlight(self);
        self.latency
            .call_async_nested(self.chaos.call_async(self.downstream.stock()))
            .await
    }

    /// The protected stock query, with its fallback.
    pub async fn query(&self) -> StockView {
        let registry = &self.registry;
        let retry = registry.retry(INSTANCE);
        let breaker = registry.circuit_breaker(INSTANCE);
        let limiter = registry.rate_limiter(INSTANCE);
        let time_limiter = registry.time_limiter(INSTANCE);
        let bulkhead = registry.bulkhead(INSTANCE);
        let out = retry
            .call_async_nested(|| async {
                breaker
                    .call_async_nested(limiter.call_async_nested(
                        time_limiter.call_async_nested(bulkhead.call_async_nested(self.attempt())),
                    ))
                    .await
            })
            .await;
        match out {
            Ok(level) => {
                self.stock_writes.fetch_add(1, Ordering::Relaxed);
                StockView::Known(level)
            }
            Err(Error::Call(InventoryError::OutOfStock)) => StockView::OutOfStock,
            Err(e) => {
                self.fallbacks.fetch_add(1, Ordering::Relaxed);
                let reason = match &e {
                    Error::Call(InventoryError::Connection(_)) => "inventory_connection",
                    Error::Call(InventoryError::Throttled) => "inventory_throttled",
                    other => other.kind().as_str(),
                };
                StockView::Unknown { reason }
            }
        }
    }

    /// The core dependency's call: its own bulkhead and breaker, a healthy
    /// downstream.
    pub async fn price(&self) -> Result<u32, Error<InventoryError>> {
        let breaker = self.registry.circuit_breaker(PRICING);
        let bulkhead = self.registry.bulkhead(PRICING);
        breaker
            .call_async_nested(bulkhead.call_async(async { Ok::<_, InventoryError>(42) }))
            .await
    }

    /// The inventory bulkhead's free permits, and its size.
    pub fn permits(&self) -> (u32, u32) {
        let bulkhead = self.registry.bulkhead(INSTANCE);
        (
            bulkhead.available_concurrent_calls(),
            bulkhead.config().max_concurrent_calls(),
        )
    }

    /// The inventory breaker's state and counts, as evidence.
    pub fn breaker(&self) -> String {
        let m = self.registry.circuit_breaker(INSTANCE).metrics();
        format!(
            "state={} buffered={} failed={} slow={} failureRate={} slowRate={} notPermitted={}",
            m.state(),
            m.buffered_calls(),
            m.failed_calls(),
            m.slow_calls(),
            rate(m.failure_rate()),
            rate(m.slow_call_rate()),
            m.not_permitted_calls()
        )
    }

    /// The breaker's state name.
    pub fn state(&self) -> String {
        self.registry.circuit_breaker(INSTANCE).state().to_string()
    }

    /// The end-of-drill line: calls that reached the downstream, fallbacks,
    /// permits back.
    pub fn totals(&self) -> String {
        let (free, size) = self.permits();
        format!(
            "totals reached={} served={} fallbacks={} permits={free}/{size}",
            self.reached(),
            self.downstream.served(),
            self.fallbacks()
        )
    }
}

fn rate(r: Option<f32>) -> String {
    r.map_or("-1.0".to_owned(), |r| format!("{r:.1}"))
}

/// Lets `d` of (paused) tokio time pass.
pub async fn wait(d: Duration) {
    tokio::time::sleep(d).await;
}
