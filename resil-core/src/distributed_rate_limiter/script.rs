//! One atomic script per acquire: which script, with which key and
//! arguments, and what its reply means.
//!
//! The limits travel with every call (there is no configuration stored in
//! Redis to initialise, expire or wipe), and the script reads the time with
//! Redis's `TIME`, never from the client.

use std::time::Duration;

use redis::aio::ConnectionLike;
use redis::{RedisResult, Script};

use super::config::{Algorithm, DistributedRateLimiterConfig};
use super::{gcra, sliding};

/// What one limiter sends: its key, its script and the fixed arguments.
pub(crate) struct Quota {
    key: String,
    script: &'static Script,
    args: Vec<u64>,
}

/// The script's answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Verdict {
    pub(crate) granted: bool,
    /// Permits left after a grant, or before a refused acquire; negative while
    /// reservations queue, or after the limit was lowered below what the
    /// window already holds.
    pub(crate) remaining: i64,
    /// Granted: until the reserved permits are the caller's (zero: now).
    /// Refused: until enough permits would come back.
    pub(crate) wait: Duration,
    /// Redis server time of the grant (a reservation's: in the future) or of
    /// the refusal, microseconds since the Unix epoch.
    pub(crate) server_time_micros: u64,
}

impl Quota {
    pub(crate) fn new(name: &str, config: &DistributedRateLimiterConfig) -> Self {
        let algorithm = config.algorithm();
        let (script, args) = match algorithm {
            Algorithm::SlidingWindow => (&*sliding::SCRIPT, sliding::args(config).to_vec()),
            Algorithm::Gcra => (&*gcra::SCRIPT, gcra::args(config).to_vec()),
        };
        Quota {
            // The algorithm is part of the key: the two keep different types
            // of value, and switching must not hit WRONGTYPE.
            key: format!("{}{}:{}", config.key_prefix(), name, algorithm.as_str()),
            script,
            args,
        }
    }

    /// The Redis key holding this limiter's state.
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// Runs the script once for `permits`, which may be reserved up to
    /// `max_wait` ahead: `EVALSHA`, plus `SCRIPT LOAD` and a second `EVALSHA`
    /// only when Redis answers `NOSCRIPT`.
    pub(crate) async fn invoke<C: ConnectionLike>(
        &self,
        conn: &mut C,
        permits: u32,
        max_wait: Duration,
    ) -> RedisResult<Verdict> {
        let mut invocation = self.script.key(&self.key);
        // Sliding: limit, interval, width, permits, max wait.
        // GCRA: emission, tolerance, permits, max wait.
        let max_wait = u64::try_from(max_wait.as_micros()).unwrap_or(u64::MAX);
        invocation
            .arg(&self.args[..])
            .arg(permits)
            .arg(max_wait.min(1 << 52));
        let (granted, remaining, wait, now): (i64, i64, i64, i64) =
            invocation.invoke_async(conn).await?;
        Ok(Verdict {
            granted: granted == 1,
            remaining,
            wait: Duration::from_micros(u64::try_from(wait).unwrap_or(0)),
            server_time_micros: u64::try_from(now).unwrap_or(0),
        })
    }
}
