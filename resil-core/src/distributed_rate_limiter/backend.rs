//! The connection to Redis and the per-call time limit.

use std::fmt;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::Client;

use super::script::{Quota, Verdict};

/// Why Redis gave no verdict; the [failure policy](super::FailurePolicy)
/// decides instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BackendFailure {
    /// No answer within `redis_timeout`. The script may still run (and grant)
    /// later, so the acquire is not sent again.
    Timeout,
    /// The connection failed or was refused (Redis down, restarting, network).
    Unavailable,
    /// Redis answered with an error (script error, out of memory, read-only
    /// replica …).
    Error,
    /// A blocking `acquire`/`call` on a current-thread tokio runtime's thread,
    /// which cannot be blocked without stopping the I/O it would wait for.
    CannotBlock,
}

impl BackendFailure {
    /// A short, stable label: `timeout`, `unavailable`, `error`, `cannot_block`.
    pub const fn as_str(self) -> &'static str {
        match self {
            BackendFailure::Timeout => "timeout",
            BackendFailure::Unavailable => "unavailable",
            BackendFailure::Error => "error",
            BackendFailure::CannotBlock => "cannot_block",
        }
    }
}

impl fmt::Display for BackendFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A lazily opened, automatically reconnecting connection (the `redis`
/// crate's `ConnectionManager`: one multiplexed TCP connection shared by
/// every clone of the limiter, so concurrent acquires pipeline on it).
///
/// The manager reconnects when the connection breaks (an RST, a refused
/// connect). A connection that silently stops answering (a peer that vanished
/// without closing, a black-holed route) only produces timeouts; when nothing
/// has answered for [`STALE_AFTER`] and calls keep timing out, the connection
/// is dropped and the next call opens a new one.
pub(crate) struct Backend {
    client: Client,
    redis_timeout: Duration,
    conn: Mutex<Conn>,
}

struct Conn {
    manager: Option<ConnectionManager>,
    /// The last answer, or the last time the connection was replaced.
    last_answer: Instant,
}

/// How long calls may keep timing out, with no answer at all, before the
/// connection is replaced (at least this, and at least 10 × `redis_timeout`).
pub(crate) const STALE_AFTER: Duration = Duration::from_secs(2);

impl Backend {
    pub(crate) fn new(client: Client, redis_timeout: Duration) -> Self {
        Backend {
            client,
            redis_timeout,
            conn: Mutex::new(Conn {
                manager: None,
                last_answer: Instant::now(),
            }),
        }
    }

    /// The connection, created on first use (so a limiter can be built before
    /// Redis is up, and outside any runtime).
    fn connection(&self) -> Result<ConnectionManager, BackendFailure> {
        let mut conn = self.conn.lock();
        if let Some(manager) = &conn.manager {
            return Ok(manager.clone());
        }
        let config = ConnectionManagerConfig::new()
            // Reconnect quickly after a restart; the per-call timeout, not the
            // reconnect schedule, bounds what a caller waits.
            .set_min_delay(Duration::from_millis(20))
            .set_max_delay(Duration::from_millis(500))
            .set_number_of_retries(usize::MAX)
            .set_connection_timeout(Some(self.redis_timeout.max(Duration::from_millis(250))))
            // The limiter times each call itself (`redis_timeout`); the
            // manager's own response timeout would also tear the connection
            // down, cutting off the other calls pipelined on it.
            .set_response_timeout(None);
        let manager = ConnectionManager::new_lazy_with_config(self.client.clone(), config)
            .map_err(|_| BackendFailure::Error)?;
        conn.manager = Some(manager.clone());
        Ok(manager)
    }

    fn answered(&self) {
        self.conn.lock().last_answer = Instant::now();
    }

    /// A call timed out: replace a connection that has not answered for long.
    fn timed_out(&self) {
        let stale_after = STALE_AFTER.max(self.redis_timeout.saturating_mul(10));
        let mut conn = self.conn.lock();
        if conn.last_answer.elapsed() > stale_after {
            conn.manager = None;
            conn.last_answer = Instant::now();
        }
    }

    /// One script call, bounded by `redis_timeout`.
    pub(crate) async fn run(&self, quota: &Quota, permits: u32) -> Result<Verdict, BackendFailure> {
        let outcome = self.call(quota, permits).await;
        match outcome {
            Err(BackendFailure::Timeout) => self.timed_out(),
            // An error reply is an answer too: the connection works.
            Ok(_) | Err(BackendFailure::Error) => self.answered(),
            Err(_) => {}
        }
        outcome
    }

    async fn call(&self, quota: &Quota, permits: u32) -> Result<Verdict, BackendFailure> {
        let mut conn = self.connection()?;
        match tokio::time::timeout(self.redis_timeout, quota.invoke(&mut conn, permits)).await {
            Err(_elapsed) => Err(BackendFailure::Timeout),
            Ok(Ok(verdict)) => Ok(verdict),
            Ok(Err(e)) if e.is_timeout() => Err(BackendFailure::Timeout),
            Ok(Err(e))
                if e.is_io_error()
                    || e.is_connection_dropped()
                    || e.is_connection_refusal()
                    || e.is_unrecoverable_error() =>
            {
                Err(BackendFailure::Unavailable)
            }
            Ok(Err(_)) => Err(BackendFailure::Error),
        }
    }
}
