//! The downstream inventory API the service depends on: a real HTTP server
//! whose behaviour an operator (or the demo, or a test) switches through a
//! control endpoint.
//!
//! ```text
//! GET  /stock/{sku}                  200 {"sku":"SKU-1","available":17}
//! POST /control/healthy              back to normal
//! POST /control/fail                 503 to every stock request
//! POST /control/slow?ms=1500         answer after 1500 ms
//! POST /control/throttle?retry_after=30   429 with `Retry-After: 30`
//! POST /control/out-of-stock         409 {"error":"out_of_stock"} (a business answer)
//! POST /control/hold                 hold every stock request until …
//! POST /control/release              … this: the held ones answer 200, the mode is healthy
//! GET  /control                      {"mode":…, "stock_requests":n}
//! ```

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper::body::Incoming;
use hyper::header::{HeaderValue, RETRY_AFTER};
use hyper::{Method, Request, StatusCode};
use parking_lot::Mutex;
use serde_json::json;
use tokio::sync::watch;

use crate::http::{self, Reply, Server};

/// How the downstream answers stock requests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// 200 with the stock level.
    Healthy,
    /// 503 Service Unavailable.
    Failing,
    /// 200, after this long.
    Slow(Duration),
    /// 429 Too Many Requests with `Retry-After` (whole seconds).
    Throttled(Duration),
    /// 409 with `{"error":"out_of_stock"}`: the API works, the item is gone.
    OutOfStock,
    /// No answer until released, then 200 (tests fill a bulkhead with it).
    Holding,
}

impl Mode {
    /// The mode's name in the control endpoint.
    pub fn label(self) -> String {
        match self {
            Mode::Healthy => "healthy".into(),
            Mode::Failing => "fail".into(),
            Mode::Slow(d) => format!("slow ({} ms)", d.as_millis()),
            Mode::Throttled(d) => format!("throttle (Retry-After: {})", d.as_secs()),
            Mode::OutOfStock => "out-of-stock".into(),
            Mode::Holding => "hold".into(),
        }
    }
}

/// The downstream's state: its mode and how many stock requests reached it.
pub struct Downstream {
    mode: Mutex<Mode>,
    stock_requests: AtomicU64,
    /// How many stock requests are being held.
    held: watch::Sender<usize>,
    /// Bumped by every release: a held request waits for it to change.
    releases: watch::Sender<u64>,
}

impl Downstream {
    /// Starts the downstream on `addr` (port 0: any free port).
    pub async fn start(addr: SocketAddr) -> std::io::Result<(Arc<Downstream>, Server)> {
        let downstream = Arc::new(Downstream {
            mode: Mutex::new(Mode::Healthy),
            stock_requests: AtomicU64::new(0),
            held: watch::Sender::new(0),
            releases: watch::Sender::new(0),
        });
        let state = Arc::clone(&downstream);
        let server = Server::start(addr, move |req| Arc::clone(&state).handle(req)).await?;
        Ok((downstream, server))
    }

    /// The current mode.
    pub fn mode(&self) -> Mode {
        *self.mode.lock()
    }

    /// Switches the mode (the control endpoint does the same over HTTP).
    pub fn set_mode(&self, mode: Mode) {
        *self.mode.lock() = mode;
    }

    /// Answers every held request (200) and makes the mode healthy.
    pub fn release(&self) {
        self.set_mode(Mode::Healthy);
        self.releases.send_modify(|n| *n += 1);
    }

    /// Waits until `n` stock requests are being held (no sleeping: the
    /// downstream reports each one).
    #[allow(dead_code)] // the tests' (tests/inventory_service.rs) way to wait
    pub async fn held(&self, n: usize) {
        let mut held = self.held.subscribe();
        let _ = held.wait_for(|h| *h >= n).await;
    }

    /// How many stock requests reached the downstream so far.
    pub fn stock_requests(&self) -> u64 {
        self.stock_requests.load(Ordering::SeqCst)
    }

    async fn handle(self: Arc<Self>, req: Request<Incoming>) -> Reply {
        let path = req.uri().path().to_owned();
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        match (req.method(), segments.as_slice()) {
            (&Method::GET, ["stock", sku]) => self.stock(sku).await,
            (&Method::GET, ["control"]) => self.status(),
            (&Method::POST, ["control", mode]) => {
                let params = http::query(&req);
                let number = |key: &str, default: u64| -> Result<u64, String> {
                    match params.get(key) {
                        None => Ok(default),
                        Some(v) => v
                            .parse()
                            .map_err(|_| format!("`{key}` must be a whole number, got `{v}`")),
                    }
                };
                let mode = match *mode {
                    "healthy" => Mode::Healthy,
                    "fail" => Mode::Failing,
                    "slow" => match number("ms", 1500) {
                        Ok(ms) => Mode::Slow(Duration::from_millis(ms)),
                        Err(why) => return http::error(StatusCode::BAD_REQUEST, why),
                    },
                    "throttle" => match number("retry_after", 30) {
                        Ok(s) => Mode::Throttled(Duration::from_secs(s)),
                        Err(why) => return http::error(StatusCode::BAD_REQUEST, why),
                    },
                    "out-of-stock" => Mode::OutOfStock,
                    "hold" => Mode::Holding,
                    "release" => {
                        self.release();
                        return self.status();
                    }
                    other => {
                        return http::error(
                            StatusCode::NOT_FOUND,
                            format!(
                                "unknown mode `{other}`: use healthy, fail, slow?ms=N, \
                                 throttle?retry_after=S, out-of-stock, hold or release"
                            ),
                        )
                    }
                };
                self.set_mode(mode);
                self.status()
            }
            _ => http::error(StatusCode::NOT_FOUND, format!("no route for {path}")),
        }
    }

    fn status(&self) -> Reply {
        http::json(
            StatusCode::OK,
            &json!({
                "mode": self.mode().label(),
                "stock_requests": self.stock_requests(),
                "held": *self.held.borrow(),
            }),
        )
    }

    async fn stock(&self, sku: &str) -> Reply {
        self.stock_requests.fetch_add(1, Ordering::SeqCst);
        let available = || json!({ "sku": sku, "available": stock_level(sku) });
        match self.mode() {
            Mode::Healthy => http::json(StatusCode::OK, &available()),
            Mode::Failing => {
                http::error(StatusCode::SERVICE_UNAVAILABLE, "inventory database down")
            }
            Mode::Slow(delay) => {
                tokio::time::sleep(delay).await;
                http::json(StatusCode::OK, &available())
            }
            Mode::Throttled(after) => {
                let mut reply = http::error(StatusCode::TOO_MANY_REQUESTS, "slow down");
                reply
                    .headers_mut()
                    .insert(RETRY_AFTER, HeaderValue::from(after.as_secs()));
                reply
            }
            Mode::Holding => {
                let mut releases = self.releases.subscribe();
                releases.mark_unchanged();
                // Counted only once subscribed: a release after this is seen.
                let _held = Held::count(&self.held);
                let _ = releases.changed().await;
                http::json(StatusCode::OK, &available())
            }
            Mode::OutOfStock => http::json(
                StatusCode::CONFLICT,
                &json!({ "error": "out_of_stock", "sku": sku }),
            ),
        }
    }
}

/// One held request, counted until it ends or is dropped (the client hung up).
struct Held<'a>(&'a watch::Sender<usize>);

impl<'a> Held<'a> {
    fn count(held: &'a watch::Sender<usize>) -> Held<'a> {
        held.send_modify(|h| *h += 1);
        Held(held)
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.0.send_modify(|h| *h -= 1);
    }
}

/// A made-up but stable stock level per SKU.
pub fn stock_level(sku: &str) -> u32 {
    sku.bytes().map(u32::from).sum::<u32>() % 50 + 1
}
