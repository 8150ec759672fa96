//! The lab's downstream: a real HTTP price service on `127.0.0.1:0` whose
//! handler counts every request and can hold requests until the lab releases
//! them.
//!
//! ```text
//! GET /price/ok          200 "42"
//! GET /price/503         503            (the dependency is unwell)
//! GET /price/403         403            (this caller may not see the price)
//! GET /price/slow/250    200 "42", after 250 ms of the lab's clock
//! GET /price/hold        held until `release`, then 200 "42" (or 503, as released)
//! GET /db/…              the same, but each request first takes one of the
//!                        service's database connections (a small pool shared
//!                        by every endpoint), and 503s when none is free
//! ```
//!
//! A held request is the server's own work, on its own task: a client that
//! stops waiting (a time limiter, a dropped connection) does not stop it, as a
//! real server goes on with a request whose caller hung up.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use hyper::StatusCode;
use resil::clock::ManualClock;
use tokio::sync::{watch, OwnedSemaphorePermit, Semaphore};

use crate::http::{self, Server};

/// The price every healthy answer carries.
pub const PRICE: u32 = 42;

/// How many database connections the service has (the `shared` mode's
/// small pool).
pub const DB_POOL: usize = 2;

/// The downstream's counters and hold control.
pub struct State {
    clock: ManualClock,
    /// Answers 503 to everything (the bad instance of ten).
    broken: bool,
    requests: AtomicU32,
    /// Requests being worked on right now, held until released.
    held: watch::Sender<u32>,
    /// Held requests that finished their work (answered or not).
    completed: watch::Sender<u32>,
    /// Bumped by every release; a held request waits for it to change.
    releases: watch::Sender<u64>,
    /// How many of the requests released next answer 503.
    to_fail: AtomicU32,
    db: Arc<Semaphore>,
}

/// A running downstream: its counters, and its server (stopped when dropped).
pub struct Downstream {
    state: Arc<State>,
    server: Server,
}

impl Downstream {
    /// A healthy downstream. `clock` is the lab's: a slow answer moves it.
    pub async fn start(clock: &ManualClock) -> Downstream {
        Downstream::with(clock, false).await
    }

    /// A downstream that answers 503 to every request.
    pub async fn start_broken(clock: &ManualClock) -> Downstream {
        Downstream::with(clock, true).await
    }

    async fn with(clock: &ManualClock, broken: bool) -> Downstream {
        let state = Arc::new(State {
            clock: clock.clone(),
            broken,
            requests: AtomicU32::new(0),
            held: watch::Sender::new(0),
            completed: watch::Sender::new(0),
            releases: watch::Sender::new(0),
            to_fail: AtomicU32::new(0),
            db: Arc::new(Semaphore::new(DB_POOL)),
        });
        let handler = Arc::clone(&state);
        let server = Server::start(move |path| Arc::clone(&handler).handle(path))
            .await
            .expect("the lab binds 127.0.0.1:0");
        Downstream { state, server }
    }

    /// Where it listens.
    pub fn addr(&self) -> SocketAddr {
        self.server.addr()
    }

    /// How many requests reached the handler so far.
    pub fn requests(&self) -> u32 {
        self.state.requests.load(Ordering::SeqCst)
    }

    /// How many held requests are being worked on right now.
    pub fn active(&self) -> u32 {
        *self.state.held.borrow()
    }

    /// How many held requests have finished their work.
    pub fn finished(&self) -> u32 {
        *self.state.completed.borrow()
    }

    /// Free database connections.
    pub fn db_free(&self) -> usize {
        self.state.db.available_permits()
    }

    /// Waits until `n` requests are held (the handler reports each one: no
    /// sleeping, no polling).
    pub async fn held(&self, n: u32) {
        let mut held = self.state.held.subscribe();
        let _ = held.wait_for(|h| *h >= n).await;
    }

    /// Waits until `n` held requests have finished their work.
    pub async fn completed(&self, n: u32) {
        let mut completed = self.state.completed.subscribe();
        let _ = completed.wait_for(|c| *c >= n).await;
    }

    /// Lets every held request finish: 200 "42", except the first `failing`
    /// of them, which answer 503.
    pub fn release(&self, failing: u32) {
        self.state.to_fail.store(failing, Ordering::SeqCst);
        self.state.releases.send_modify(|n| *n += 1);
    }
}

impl State {
    async fn handle(self: Arc<Self>, path: String) -> http::Response {
        self.requests.fetch_add(1, Ordering::SeqCst);
        if self.broken {
            return http::reply(StatusCode::SERVICE_UNAVAILABLE, "instance broken");
        }
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        let (resource, behaviour) = match segments.split_first() {
            Some((resource, behaviour)) => (*resource, behaviour),
            None => return http::reply(StatusCode::NOT_FOUND, "no route"),
        };
        let connection = match resource {
            "price" => None,
            "db" => match Arc::clone(&self.db).try_acquire_owned() {
                Ok(connection) => Some(connection),
                Err(_) => {
                    return http::reply(StatusCode::SERVICE_UNAVAILABLE, "database pool exhausted")
                }
            },
            _ => return http::reply(StatusCode::NOT_FOUND, format!("no route for {path}")),
        };
        match behaviour {
            ["ok"] => ok(),
            ["503"] => http::reply(StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            ["403"] => http::reply(StatusCode::FORBIDDEN, "forbidden"),
            ["slow", ms] => match ms.parse() {
                Ok(ms) => {
                    // The lab's time passes while the request is served:
                    // the caller's breaker times the call on this clock.
                    self.clock.advance(Duration::from_millis(ms));
                    ok()
                }
                Err(_) => http::reply(StatusCode::BAD_REQUEST, "`slow/<ms>` needs a number"),
            },
            ["hold"] => self.hold(connection).await,
            _ => http::reply(StatusCode::NOT_FOUND, format!("no route for {path}")),
        }
    }

    /// Works on the request on its own task until the lab releases it.
    async fn hold(self: Arc<Self>, connection: Option<OwnedSemaphorePermit>) -> http::Response {
        let mut releases = self.releases.subscribe();
        releases.mark_unchanged();
        // Counted only once subscribed: a release after this is seen.
        self.held.send_modify(|h| *h += 1);
        let work = tokio::spawn(async move {
            let _ = releases.changed().await;
            let failed = self
                .to_fail
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok();
            drop(connection);
            self.held.send_modify(|h| *h -= 1);
            self.completed.send_modify(|c| *c += 1);
            failed
        });
        match work.await {
            Ok(false) => ok(),
            Ok(true) => http::reply(StatusCode::SERVICE_UNAVAILABLE, "unavailable"),
            Err(_) => http::reply(StatusCode::INTERNAL_SERVER_ERROR, "work lost"),
        }
    }
}

fn ok() -> http::Response {
    http::reply(StatusCode::OK, PRICE.to_string())
}
