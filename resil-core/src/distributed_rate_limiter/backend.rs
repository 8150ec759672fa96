//! The connection to Redis, the per-call time limit, and what went wrong.

use std::fmt;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, ErrorKind, RedisError, ServerErrorKind};

#[cfg(any(feature = "redis-cluster", feature = "redis-sentinel"))]
use super::config::Topology;
use super::config::{mask_secret, url_error, DistributedRateLimiterConfig};
use super::script::{Ask, Quota, Verdict};
use crate::error::ConfigError;

/// Why Redis gave no verdict; the [failure policy](super::FailurePolicy)
/// decides instead.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BackendFailure {
    /// No answer within `redis_timeout`. The script may still run (and grant)
    /// later, so the acquire is not sent again.
    Timeout,
    /// No usable connection: the connection was refused or broke, the host
    /// does not resolve, or what answers is not a Redis server. Reported at
    /// once, not after `redis_timeout`.
    Unavailable,
    /// Redis refused the credentials (`WRONGPASS`), wants some (`NOAUTH`), or
    /// the user may not run the script (`NOPERM`). Reported at once.
    Auth,
    /// Redis answered with an error (script error, out of memory, read-only
    /// replica …).
    Error,
    /// A blocking `acquire`/`call` on a current-thread tokio runtime's thread,
    /// which cannot be blocked without stopping the I/O it would wait for.
    CannotBlock,
}

impl BackendFailure {
    /// A short, stable label: `timeout`, `unavailable`, `auth`, `error`,
    /// `cannot_block`.
    pub const fn as_str(self) -> &'static str {
        match self {
            BackendFailure::Timeout => "timeout",
            BackendFailure::Unavailable => "unavailable",
            BackendFailure::Auth => "auth",
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

/// A failure with its cause in words (never containing the URL's password).
#[derive(Debug, Clone)]
pub(crate) struct Failure {
    pub(crate) kind: BackendFailure,
    pub(crate) cause: Arc<str>,
}

/// One multiplexed connection shared by every clone of the limiter, so
/// concurrent acquires pipeline on it (each sends its script without waiting
/// for the others' replies), opened on first use and re-opened after it
/// breaks.
///
/// A connection attempt that fails is reported to its caller at once (a
/// refused port, a wrong password, a host that does not resolve, a server
/// that does not speak Redis), and for a short back-off (20 ms doubling to
/// 500 ms) later callers get the same answer without trying again, so a dead
/// Redis costs nothing per acquire. A connection that silently stops
/// answering (a peer that vanished without closing, a black-holed route)
/// only produces timeouts; when nothing has answered for [`STALE_AFTER`] and
/// calls keep timing out, it is dropped and the next call opens a new one.
pub(crate) struct Backend {
    target: Target,
    url: Arc<str>,
    redis_timeout: Duration,
    state: Mutex<State>,
    /// Held while connecting: one attempt at a time.
    connecting: tokio::sync::Mutex<()>,
    /// What the last connection learnt of the server's eviction policy:
    /// 0 unknown, 1 keeps keys, 2 may evict the limiter's keys.
    evicts: AtomicU8,
}

/// Where the connection goes.
enum Target {
    Single(Client),
    #[cfg(feature = "redis-cluster")]
    Cluster(Box<redis::cluster::ClusterClient>),
    /// Asks the sentinels for the primary on every (re)connect.
    #[cfg(feature = "redis-sentinel")]
    Sentinel(Box<tokio::sync::Mutex<redis::sentinel::SentinelClient>>),
}

/// An open connection: to one server, or to a cluster (one client that
/// routes each call to the slot's primary, following `MOVED`/`ASK`).
#[derive(Clone)]
enum Conn {
    Single(MultiplexedConnection),
    #[cfg(feature = "redis-cluster")]
    Cluster(redis::cluster_async::ClusterConnection),
}

struct State {
    conn: Option<Conn>,
    /// The last answer, or the last time the connection was replaced.
    last_answer: Instant,
    /// The last failed connection attempt, until when it is not retried.
    failed: Option<(Instant, Failure)>,
    backoff: Duration,
}

/// How long calls may keep timing out, with no answer at all, before the
/// connection is replaced (at least this, and at least 10 × `redis_timeout`).
pub(crate) const STALE_AFTER: Duration = Duration::from_secs(2);

const MIN_BACKOFF: Duration = Duration::from_millis(20);
const MAX_BACKOFF: Duration = Duration::from_millis(500);

impl Backend {
    pub(crate) fn new(config: &DistributedRateLimiterConfig) -> Result<Self, ConfigError> {
        let url = config.redis_url();
        let redis_timeout = config.redis_timeout();
        let target = match config.topology() {
            #[cfg(feature = "redis-cluster")]
            Topology::Cluster => {
                let nodes: Vec<&str> = config.redis_urls().collect();
                let client = redis::cluster::ClusterClient::builder(nodes)
                    .connection_timeout(redis_timeout)
                    // The limiter times each call itself (`redis_timeout`).
                    .response_timeout(Duration::from_secs(3600))
                    // Redirects and reconnects after a failover; the
                    // limiter's timeout bounds what a caller waits. A resend
                    // after a lost reply can only take permits twice (fewer
                    // grants), never grant beyond the quota.
                    .retries(6)
                    .min_retry_wait(10)
                    .max_retry_wait(200)
                    .build()
                    .map_err(|e| url_error(url, &e))?;
                Target::Cluster(Box::new(client))
            }
            #[cfg(feature = "redis-sentinel")]
            Topology::Sentinel => {
                let sentinels: Vec<&str> = config.redis_urls().collect();
                let client = redis::sentinel::SentinelClient::build(
                    sentinels,
                    config.sentinel_master_name().to_owned(),
                    None,
                    redis::sentinel::SentinelServerType::Master,
                )
                .map_err(|e| url_error(url, &e))?;
                Target::Sentinel(Box::new(tokio::sync::Mutex::new(client)))
            }
            _ => Target::Single(Client::open(url).map_err(|e| url_error(url, &e))?),
        };
        Ok(Backend {
            target,
            url: Arc::from(url),
            redis_timeout,
            state: Mutex::new(State {
                conn: None,
                last_answer: Instant::now(),
                failed: None,
                backoff: MIN_BACKOFF,
            }),
            connecting: tokio::sync::Mutex::new(()),
            evicts: AtomicU8::new(0),
        })
    }

    /// Whether the server may evict the limiter's keys (`maxmemory` set with
    /// a policy other than `noeviction`); `None` before the first connection
    /// or when the server does not say.
    pub(crate) fn server_may_evict(&self) -> Option<bool> {
        match self.evicts.load(Ordering::Relaxed) {
            1 => Some(false),
            2 => Some(true),
            _ => None,
        }
    }

    /// One script call, bounded by `redis_timeout` (connecting included).
    pub(crate) async fn run(&self, quota: &Quota, ask: Ask) -> Result<Verdict, Failure> {
        let outcome = match tokio::time::timeout(self.redis_timeout, self.call(quota, ask)).await {
            Ok(outcome) => outcome,
            Err(_elapsed) => Err(self.timeout()),
        };
        match &outcome {
            Ok(_) => self.answered(),
            // An error reply is an answer too: the connection works.
            Err(f) if matches!(f.kind, BackendFailure::Error | BackendFailure::Auth) => {
                self.answered()
            }
            Err(f) if f.kind == BackendFailure::Timeout => self.timed_out(),
            Err(_) => {}
        }
        outcome
    }

    fn timeout(&self) -> Failure {
        Failure {
            kind: BackendFailure::Timeout,
            cause: Arc::from(format!("no answer within {:?}", self.redis_timeout)),
        }
    }

    async fn call(&self, quota: &Quota, ask: Ask) -> Result<Verdict, Failure> {
        let outcome = match self.connection().await? {
            Conn::Single(mut conn) => quota.invoke(&mut conn, ask).await,
            #[cfg(feature = "redis-cluster")]
            Conn::Cluster(mut conn) => quota.invoke(&mut conn, ask).await,
        };
        match outcome {
            Ok(verdict) => Ok(verdict),
            Err(e) => {
                let failure = self.classify(&e);
                if failure.kind == BackendFailure::Unavailable || e.code() == Some("READONLY") {
                    // The connection is broken, or reaches a replica (a
                    // demoted primary): the next call opens another (asking
                    // the sentinels again, with Topology::Sentinel).
                    self.state.lock().conn = None;
                }
                Err(failure)
            }
        }
    }

    /// The connection, opened when there is none.
    async fn connection(&self) -> Result<Conn, Failure> {
        if let Some(conn) = self.ready()? {
            return Ok(conn);
        }
        let _one_at_a_time = self.connecting.lock().await;
        if let Some(conn) = self.ready()? {
            return Ok(conn);
        }
        match self.connect().await {
            Ok(conn) => {
                let mut state = self.state.lock();
                state.conn = Some(conn.clone());
                state.failed = None;
                state.backoff = MIN_BACKOFF;
                state.last_answer = Instant::now();
                Ok(conn)
            }
            Err(failure) => {
                let mut state = self.state.lock();
                let until = Instant::now() + state.backoff;
                state.backoff = (state.backoff * 2).min(MAX_BACKOFF);
                state.failed = Some((until, failure.clone()));
                Err(failure)
            }
        }
    }

    /// The open connection, or the failure of an attempt still backing off,
    /// or neither (then connect).
    fn ready(&self) -> Result<Option<Conn>, Failure> {
        let state = self.state.lock();
        if let Some(conn) = &state.conn {
            return Ok(Some(conn.clone()));
        }
        match &state.failed {
            Some((until, failure)) if Instant::now() < *until => Err(failure.clone()),
            _ => Ok(None),
        }
    }

    /// Opens a connection and checks that a Redis server answers on it (which
    /// also learns its eviction policy): `INFO memory`.
    async fn connect(&self) -> Result<Conn, Failure> {
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.redis_timeout))
            // The limiter times each call itself (`redis_timeout`); a response
            // timeout of the connection would cut off the other calls
            // pipelined on it.
            .set_response_timeout(None);
        let connected = match &self.target {
            Target::Single(client) => {
                client
                    .get_multiplexed_async_connection_with_config(&config)
                    .await
            }
            #[cfg(feature = "redis-sentinel")]
            Target::Sentinel(client) => {
                client
                    .lock()
                    .await
                    .get_async_connection_with_config(&config)
                    .await
            }
            #[cfg(feature = "redis-cluster")]
            Target::Cluster(client) => {
                // The cluster client checks the nodes as it learns the slot
                // map; eviction policies are per node and not read here.
                let conn = client
                    .get_async_connection()
                    .await
                    .map_err(|e| self.classify(&e))?;
                return Ok(Conn::Cluster(conn));
            }
        };
        let mut conn = connected.map_err(|e| self.classify(&e))?;
        let info: Result<String, RedisError> = redis::cmd("INFO")
            .arg("memory")
            .query_async(&mut conn)
            .await;
        match info {
            Ok(info) => self.learn_eviction(&info),
            // A server that renamed or forbids INFO still runs scripts.
            Err(e) if e.kind() == ErrorKind::Server(ServerErrorKind::ResponseError) => {}
            Err(e) => return Err(self.classify(&e)),
        }
        Ok(Conn::Single(conn))
    }

    fn learn_eviction(&self, info: &str) {
        let field = |name: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .map(str::trim)
        };
        let (Some(maxmemory), Some(policy)) = (field("maxmemory"), field("maxmemory_policy"))
        else {
            return;
        };
        let evicts = maxmemory != "0" && policy != "noeviction";
        let before = self
            .evicts
            .swap(if evicts { 2 } else { 1 }, Ordering::Relaxed);
        if evicts && before != 2 {
            tracing::warn!(
                maxmemory,
                maxmemory_policy = policy,
                "the Redis server of a distributed rate limiter may evict its keys when \
                 memory runs out (they all have a TTL, which volatile-* policies evict \
                 first); an evicted key forgets the permits it counted, so more than the \
                 limit can pass: use maxmemory-policy noeviction for the limiter's server"
            );
        }
    }

    /// What a client error means, with its cause in words.
    fn classify(&self, e: &RedisError) -> Failure {
        let code = e.code();
        let (kind, what) = if e.is_timeout() {
            (BackendFailure::Timeout, "no answer in time")
        } else if e.kind() == ErrorKind::AuthenticationFailed
            || matches!(code, Some("NOAUTH" | "WRONGPASS" | "NOPERM"))
        {
            (BackendFailure::Auth, "authentication failed")
        } else if matches!(e.kind(), ErrorKind::Parse | ErrorKind::UnexpectedReturnType)
            && code.is_none()
        {
            (
                BackendFailure::Unavailable,
                "not a Redis server (its reply does not parse)",
            )
        } else if e.is_connection_refusal() {
            (BackendFailure::Unavailable, "connection refused")
        } else if e.is_io_error() || e.is_connection_dropped() || e.is_unrecoverable_error() {
            (BackendFailure::Unavailable, "connection failed")
        } else {
            (BackendFailure::Error, "Redis answered an error")
        };
        Failure {
            kind,
            cause: Arc::from(mask_secret(&self.url, &format!("{what}: {e}"))),
        }
    }

    fn answered(&self) {
        self.state.lock().last_answer = Instant::now();
    }

    /// A call timed out: replace a connection that has not answered for long.
    fn timed_out(&self) {
        let stale_after = STALE_AFTER.max(self.redis_timeout.saturating_mul(10));
        let mut state = self.state.lock();
        if state.last_answer.elapsed() > stale_after {
            state.conn = None;
            state.last_answer = Instant::now();
        }
    }
}
