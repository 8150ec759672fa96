//! One atomic script per acquire: which script, with which key and
//! arguments, and what its reply means.
//!
//! The limits travel with every call (there is no configuration stored in
//! Redis to initialise, expire or wipe), and the script reads the time with
//! Redis's `TIME`, never from the client.

use std::time::Duration;

use parking_lot::RwLock;
use redis::aio::ConnectionLike;
use redis::{RedisResult, Script};

use super::config::{Algorithm, DistributedRateLimiterConfig};
use super::{gcra, sliding};

/// What one limiter sends: its key, its script and the fixed arguments.
pub(crate) struct Quota {
    key: String,
    script: &'static Script,
    /// The script's fixed arguments (the first `.1`), which a keyed
    /// family's tiers change in place ([`retune`](Self::retune)).
    args: RwLock<([u64; 3], usize)>,
}

/// The fixed arguments of `config`'s script.
fn args(config: &DistributedRateLimiterConfig) -> ([u64; 3], usize) {
    match config.algorithm() {
        Algorithm::SlidingWindow => (sliding::args(config), 3),
        Algorithm::Gcra => {
            let [emission, tolerance] = gcra::args(config);
            ([emission, tolerance, 0], 2)
        }
    }
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
    /// Permits taken: those asked for, or a lease's (up to its size).
    pub(crate) taken: u32,
    /// What a give-back of these permits names: the bucket end they count in
    /// (sliding window) or the TAT they left (GCRA); 0 when none were taken.
    pub(crate) token: u64,
    /// Permits of an earlier lease that went back before this decision.
    pub(crate) returned: u32,
}

/// A local lease's permits never handed out, given back with the next call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct GiveBack {
    pub(crate) token: u64,
    pub(crate) permits: u32,
}

impl Quota {
    pub(crate) fn new(name: &str, config: &DistributedRateLimiterConfig) -> Self {
        let algorithm = config.algorithm();
        let script = match algorithm {
            Algorithm::SlidingWindow => &*sliding::SCRIPT,
            Algorithm::Gcra => &*gcra::SCRIPT,
        };
        Quota {
            // The algorithm is part of the key: the two keep different types
            // of value, and switching must not hit WRONGTYPE.
            key: format!("{}{}:{}", config.key_prefix(), name, algorithm.as_str()),
            script,
            args: RwLock::new(args(config)),
        }
    }

    /// The quota of `key` in the keyed family `name`: the key inside the
    /// Redis key, as a hash tag (`{prefix}{name}:{{key}}:{algorithm}`), so
    /// each key's state sits in one Cluster slot whatever the family.
    pub(crate) fn keyed(name: &str, key: &str, config: &DistributedRateLimiterConfig) -> Self {
        let mut quota = Quota::new(name, config);
        quota.key = format!(
            "{}{}:{{{}}}:{}",
            config.key_prefix(),
            name,
            key,
            config.algorithm().as_str()
        );
        quota
    }

    /// The Redis key holding this limiter's state.
    pub(crate) fn key(&self) -> &str {
        &self.key
    }

    /// Sends `config`'s limits from the next call on (same algorithm and
    /// key): a keyed family's key given another limit by a tier.
    pub(crate) fn retune(&self, config: &DistributedRateLimiterConfig) {
        *self.args.write() = args(config);
    }

    /// Runs the script once for `permits`, which may be reserved up to
    /// `max_wait` ahead, or, with `lease` > 0 and the permits free now, taken
    /// as a lease of up to `lease`; `back` goes back first. `EVALSHA`, plus
    /// `SCRIPT LOAD` and a second `EVALSHA` only when Redis answers
    /// `NOSCRIPT`.
    pub(crate) async fn invoke<C: ConnectionLike>(
        &self,
        conn: &mut C,
        ask: Ask,
    ) -> RedisResult<Verdict> {
        let mut invocation = self.script.key(&self.key);
        // Sliding: limit, interval, width, permits, max wait, lease, back,
        // ceiling. GCRA: emission, tolerance, permits, max wait, lease,
        // back, ceiling.
        let max_wait = u64::try_from(ask.max_wait.as_micros()).unwrap_or(u64::MAX);
        let (fixed, n) = *self.args.read();
        invocation
            .arg(&fixed[..n])
            .arg(ask.permits)
            .arg(max_wait.min(1 << 52))
            .arg(ask.lease)
            .arg(ask.back.token)
            .arg(ask.back.permits)
            .arg(ask.ceiling);
        let (granted, remaining, wait, now, taken, token, returned): (
            i64,
            i64,
            i64,
            i64,
            i64,
            i64,
            i64,
        ) = invocation.invoke_async(conn).await?;
        Ok(Verdict {
            granted: granted == 1,
            remaining,
            wait: Duration::from_micros(u64::try_from(wait).unwrap_or(0)),
            server_time_micros: u64::try_from(now).unwrap_or(0),
            taken: u32::try_from(taken).unwrap_or(0),
            token: u64::try_from(token).unwrap_or(0),
            returned: u32::try_from(returned).unwrap_or(0),
        })
    }
}

/// What one script call asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Ask {
    pub(crate) permits: u32,
    pub(crate) max_wait: Duration,
    /// 0, or the lease size to take when the permits are free now.
    pub(crate) lease: u32,
    pub(crate) back: GiveBack,
    /// 0, or the class's ceiling: the permits a request of a class below
    /// its threshold may bring the quota to (see
    /// [`threshold`](super::DistributedRateLimiterConfig::threshold)),
    /// checked now, never reserved.
    pub(crate) ceiling: u32,
}

impl Ask {
    /// A plain acquire: `permits`, waiting at most `max_wait`.
    pub(crate) fn plain(permits: u32, max_wait: Duration) -> Self {
        Ask {
            permits,
            max_wait,
            lease: 0,
            back: GiveBack::default(),
            ceiling: 0,
        }
    }

    /// An acquire of `permits` by a class whose `ceiling` is below the
    /// quota's capacity: granted now or refused, never reserved or leased.
    pub(crate) fn within(permits: u32, ceiling: u32) -> Self {
        Ask {
            ceiling: ceiling.max(1),
            ..Ask::plain(permits, Duration::ZERO)
        }
    }
}
