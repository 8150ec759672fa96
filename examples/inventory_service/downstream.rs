//! The downstream inventory API the service depends on: a real HTTP server
//! (axum) whose behaviour a request's `mode`, or an operator through the
//! control endpoint, switches.
//!
//! ```text
//! GET  /stock/{sku}[?mode=M]         200 {"sku":"SKU-1","available":17}, or as mode M says
//! POST /control/{mode}               the mode for requests that name none:
//!      success | fail | slow?ms=1200 | throttle?retry_after=30 | out-of-stock | hold | release
//! GET  /control                      {"mode":…, "stock_requests":n, "held":n}
//! ```
//!
//! | mode | answer |
//! |---|---|
//! | `success` | 200 with the stock level |
//! | `fail` | 503 (the inventory database is down) |
//! | `slow` | 200 after 1.2 s (`?ms=` on the control endpoint) |
//! | `throttle` | 429 with `Retry-After` |
//! | `out-of-stock` | 409, a business answer |
//! | `hold` | no answer until `release` (tests fill a bulkhead with it) |
//!
//! (`connect` is the client's: it dials an address where nothing listens.)

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::header::RETRY_AFTER;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use parking_lot::Mutex;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::watch;

use crate::serve::Server;

/// How the downstream answers a stock request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// 200 with the stock level.
    Success,
    /// 503 Service Unavailable.
    Failing,
    /// 200, after this long.
    Slow(Duration),
    /// 429 Too Many Requests with `Retry-After` (whole seconds).
    Throttled(Duration),
    /// 409 `{"error":"out_of_stock"}`: the API works, the item is gone.
    OutOfStock,
    /// No answer until released, then 200.
    Holding,
}

/// How long `slow` takes unless told otherwise (the time limiter gives up
/// at 800 ms).
pub const SLOW: Duration = Duration::from_millis(1200);

impl Mode {
    /// The mode's name, as `?mode=` and the control endpoint write it.
    pub fn label(self) -> String {
        match self {
            Mode::Success => "success".into(),
            Mode::Failing => "fail".into(),
            Mode::Slow(d) => format!("slow ({} ms)", d.as_millis()),
            Mode::Throttled(d) => format!("throttle (Retry-After: {})", d.as_secs()),
            Mode::OutOfStock => "out-of-stock".into(),
            Mode::Holding => "hold".into(),
        }
    }

    /// A mode by its name (`slow` takes 1.2 s, `throttle` asks for 30 s).
    pub fn parse(name: &str) -> Option<Mode> {
        Some(match name {
            "success" => Mode::Success,
            "fail" => Mode::Failing,
            "slow" => Mode::Slow(SLOW),
            "throttle" => Mode::Throttled(Duration::from_secs(30)),
            "out-of-stock" => Mode::OutOfStock,
            "hold" => Mode::Holding,
            _ => return None,
        })
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
            mode: Mutex::new(Mode::Success),
            stock_requests: AtomicU64::new(0),
            held: watch::Sender::new(0),
            releases: watch::Sender::new(0),
        });
        let app = Router::new()
            .route("/stock/{sku}", get(stock))
            .route("/control", get(status))
            .route("/control/{mode}", post(control))
            .with_state(Arc::clone(&downstream));
        let server = Server::start(addr, app).await?;
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

    /// Answers every held request (200) and makes the mode `success`.
    pub fn release(&self) {
        self.set_mode(Mode::Success);
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

    fn status(&self) -> Response {
        Json(json!({
            "mode": self.mode().label(),
            "stock_requests": self.stock_requests(),
            "held": *self.held.borrow(),
        }))
        .into_response()
    }
}

fn problem(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

#[derive(Deserialize)]
struct StockQuery {
    mode: Option<String>,
}

async fn stock(
    State(d): State<Arc<Downstream>>,
    Path(sku): Path<String>,
    Query(q): Query<StockQuery>,
) -> Response {
    d.stock_requests.fetch_add(1, Ordering::SeqCst);
    let mode = match q.mode.as_deref() {
        None => d.mode(),
        Some(name) => match Mode::parse(name) {
            Some(mode) => mode,
            None => return problem(StatusCode::BAD_REQUEST, format!("unknown mode `{name}`")),
        },
    };
    let available = |sku: &str| Json(json!({ "sku": sku, "available": stock_level(sku) }));
    match mode {
        Mode::Success => available(&sku).into_response(),
        Mode::Failing => problem(StatusCode::SERVICE_UNAVAILABLE, "inventory database down"),
        Mode::Slow(delay) => {
            tokio::time::sleep(delay).await;
            available(&sku).into_response()
        }
        Mode::Throttled(after) => {
            let mut r = problem(StatusCode::TOO_MANY_REQUESTS, "slow down");
            r.headers_mut().insert(RETRY_AFTER, after.as_secs().into());
            r
        }
        Mode::Holding => {
            let mut releases = d.releases.subscribe();
            releases.mark_unchanged();
            // Counted only once subscribed: a release after this is seen.
            let _held = Held::count(&d.held);
            let _ = releases.changed().await;
            available(&sku).into_response()
        }
        Mode::OutOfStock => (
            StatusCode::CONFLICT,
            Json(json!({ "error": "out_of_stock", "sku": sku })),
        )
            .into_response(),
    }
}

async fn status(State(d): State<Arc<Downstream>>) -> Response {
    d.status()
}

#[derive(Deserialize)]
struct ControlQuery {
    ms: Option<String>,
    retry_after: Option<String>,
}

async fn control(
    State(d): State<Arc<Downstream>>,
    Path(mode): Path<String>,
    Query(q): Query<ControlQuery>,
) -> Response {
    let number = |key: &str, value: &Option<String>, default: u64| match value {
        None => Ok(default),
        Some(v) => v
            .parse::<u64>()
            .map_err(|_| format!("`{key}` must be a whole number, got `{v}`")),
    };
    let mode = match mode.as_str() {
        "slow" => match number("ms", &q.ms, SLOW.as_millis() as u64) {
            Ok(ms) => Mode::Slow(Duration::from_millis(ms)),
            Err(why) => return problem(StatusCode::BAD_REQUEST, why),
        },
        "throttle" => match number("retry_after", &q.retry_after, 30) {
            Ok(s) => Mode::Throttled(Duration::from_secs(s)),
            Err(why) => return problem(StatusCode::BAD_REQUEST, why),
        },
        "release" => {
            d.release();
            return d.status();
        }
        other => match Mode::parse(other) {
            Some(mode) => mode,
            None => {
                return problem(
                    StatusCode::NOT_FOUND,
                    format!(
                        "unknown mode `{other}`: use success, fail, slow?ms=N, \
                         throttle?retry_after=S, out-of-stock, hold or release"
                    ),
                )
            }
        },
    };
    d.set_mode(mode);
    d.status()
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
