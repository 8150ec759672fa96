//! Management across replicas through Redis (feature `redis`): an
//! operator's switch made on one replica (force-open, disable,
//! metrics-only, chaos on and off, a limit or a size, with its TTL and
//! reason) reaches every replica of the fleet, and a replica that starts
//! later applies what is in force.
//!
//! - **The change** goes out on a pub/sub channel (`{namespace}:changes`).
//! - **What is in force** is a hash (`{namespace}:switches`), one field per
//!   instance and switch, each value carrying its end on Redis's clock
//!   (`TIME`, never a replica's), so a replica that joins reads every
//!   switch still in force and applies it for the TTL left; ended ones are
//!   skipped and removed.
//! - **Audited once per replica**: each replica applies a change once (by
//!   its id) and writes one log line (target `resil::fleet`: who, what,
//!   reason, until when), besides the registry's own event.
//! - **Redis down**: the local switch is applied first, so local management
//!   keeps working; what could not be shared waits in an outbox, the gap is
//!   reported (one WARN line, [`Fleet::status`]) and the outbox is sent
//!   when Redis is back, before the fleet's switches are read again.
//!
//! A switch for an instance this replica has not created yet is kept and
//! applied once the instance exists (checked every second).
//!
//! A config version (a promoted shadow trial, a rollback) reaches the fleet
//! only when published ([`Fleet::publish_version`]; see `published.rs`).

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant, SystemTime};

use parking_lot::{Condvar, Mutex};
use redis::Commands;

use crate::error::RegistryError;
use crate::kind::Kind;
use crate::registry::{Inner, Registry};
use crate::switches::{Switch, SwitchAction};

mod published;

/// How often a replica retries an unreachable Redis and looks for
/// instances that did not exist yet.
const TICK: Duration = Duration::from_millis(200);

/// Where a fleet meets.
#[derive(Debug, Clone)]
pub struct FleetOptions {
    url: String,
    namespace: String,
    replica: String,
}

impl FleetOptions {
    /// The fleet at Redis `url` (`redis://127.0.0.1:6379/`) under
    /// `namespace` (the service's name: replicas of one service share it).
    pub fn new(url: &str, namespace: &str) -> Self {
        FleetOptions {
            url: url.to_owned(),
            namespace: namespace.to_owned(),
            replica: format!("{}-{:016x}", std::process::id(), fastrand_u64()),
        }
    }

    /// This replica's name in the audit lines (default: the process id and
    /// a random suffix).
    pub fn replica(mut self, name: &str) -> Self {
        self.replica = name.to_owned();
        self
    }
}

fn fastrand_u64() -> u64 {
    let t = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let x = t.as_nanos() as u64 ^ (u64::from(std::process::id()) << 32);
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let mut z = x.wrapping_add(COUNTER.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z ^ (z >> 27)
}

/// Why a replica could not join.
#[derive(Debug)]
#[non_exhaustive]
pub enum FleetError {
    /// The Redis URL does not parse.
    Url(String),
    /// The fleet's thread could not start.
    Thread(std::io::Error),
}

impl fmt::Display for FleetError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FleetError::Url(e) => write!(f, "invalid fleet Redis URL: {e}"),
            FleetError::Thread(e) => write!(f, "cannot start the fleet thread: {e}"),
        }
    }
}

impl std::error::Error for FleetError {}

/// Whether this replica is in touch with the fleet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FleetStatus {
    /// Whether Redis answers.
    pub connected: bool,
    /// Changes made here that the fleet has not received yet (the gap).
    pub unsent: usize,
    /// Since when it is (dis)connected (wall clock).
    pub since: SystemTime,
    /// Why Redis cannot be reached.
    pub error: Option<String>,
    /// Changes from other replicas applied here.
    pub applied_from_fleet: u64,
}

/// One change as it travels: an id, who, and the switch or its release.
#[derive(Debug, Clone, PartialEq)]
struct Record {
    id: String,
    who: String,
    release: bool,
    kind: Kind,
    name: String,
    action: Option<SwitchAction>,
    reason: String,
    /// The end, in ms on Redis's clock (set when published).
    until_ms: Option<u64>,
    /// The TTL asked for, and when (to subtract the time spent unsent).
    ttl: Option<Duration>,
    made: Instant,
}

impl Record {
    /// The hash field of a switch: one per instance and slot.
    fn field(&self) -> Option<String> {
        self.action
            .map(|a| format!("{}/{}/{}", self.kind.as_str(), self.name, slot(a)))
    }

    fn encode(&self) -> String {
        let action = self.action.map(encode_action).unwrap_or_default();
        [
            "v1".to_owned(),
            esc(&self.id),
            esc(&self.who),
            if self.release { "release" } else { "switch" }.to_owned(),
            self.kind.as_str().to_owned(),
            esc(&self.name),
            action,
            self.until_ms.map(|u| u.to_string()).unwrap_or_default(),
            esc(&self.reason),
        ]
        .join("|")
    }

    fn decode(text: &str) -> Option<Record> {
        let parts: Vec<&str> = text.split('|').collect();
        let [v, id, who, op, kind, name, action, until, reason] = parts.as_slice() else {
            return None;
        };
        if *v != "v1" {
            return None;
        }
        let kind = Kind::ALL.into_iter().find(|k| k.as_str() == *kind)?;
        Some(Record {
            id: unesc(id),
            who: unesc(who),
            release: *op == "release",
            kind,
            name: unesc(name),
            action: decode_action(action),
            reason: unesc(reason),
            until_ms: until.parse().ok(),
            ttl: None,
            made: Instant::now(),
        })
    }
}

fn slot(action: SwitchAction) -> &'static str {
    match action {
        SwitchAction::ForceOpen | SwitchAction::Disable | SwitchAction::MetricsOnly => "mode",
        SwitchAction::ChaosOn | SwitchAction::ChaosOff => "chaos",
        SwitchAction::RateLimit(_) => "limit",
        SwitchAction::RateTimeout(_) => "timeout",
        SwitchAction::BulkheadSize(_) => "size",
    }
}

fn encode_action(action: SwitchAction) -> String {
    match action {
        SwitchAction::ForceOpen => "force_open".into(),
        SwitchAction::Disable => "disable".into(),
        SwitchAction::MetricsOnly => "metrics_only".into(),
        SwitchAction::ChaosOn => "chaos_on".into(),
        SwitchAction::ChaosOff => "chaos_off".into(),
        SwitchAction::RateLimit(n) => format!("rate_limit={n}"),
        SwitchAction::RateTimeout(d) => format!("rate_timeout={}", d.as_millis()),
        SwitchAction::BulkheadSize(n) => format!("bulkhead_size={n}"),
    }
}

fn decode_action(text: &str) -> Option<SwitchAction> {
    let (word, arg) = text.split_once('=').unwrap_or((text, ""));
    Some(match word {
        "force_open" => SwitchAction::ForceOpen,
        "disable" => SwitchAction::Disable,
        "metrics_only" => SwitchAction::MetricsOnly,
        "chaos_on" => SwitchAction::ChaosOn,
        "chaos_off" => SwitchAction::ChaosOff,
        "rate_limit" => SwitchAction::RateLimit(arg.parse().ok()?),
        "rate_timeout" => SwitchAction::RateTimeout(Duration::from_millis(arg.parse().ok()?)),
        "bulkhead_size" => SwitchAction::BulkheadSize(arg.parse().ok()?),
        _ => return None,
    })
}

fn esc(s: &str) -> String {
    s.replace('%', "%25").replace('|', "%7C")
}

fn unesc(s: &str) -> String {
    s.replace("%7C", "|").replace("%25", "%")
}

/// What a replica's [`Fleet`] handles and its thread share.
struct Shared {
    options: FleetOptions,
    next: AtomicU64,
    outbox: Mutex<VecDeque<Record>>,
    /// Published configs not shared yet ([`Fleet::publish_version`]).
    configs: Mutex<VecDeque<published::ConfigRecord>>,
    status: Mutex<FleetStatus>,
    changed: Condvar,
}

impl Shared {
    fn set_connected(&self, connected: bool, error: Option<String>) {
        let mut status = self.status.lock();
        let changed = status.connected != connected;
        if changed {
            status.connected = connected;
            status.since = SystemTime::now();
        }
        status.error = error.clone();
        status.unsent = self.outbox.lock().len() + self.configs.lock().len();
        let unsent = status.unsent;
        drop(status);
        self.changed.notify_all();
        match (changed, connected) {
            (false, _) => {}
            (true, true) => tracing::info!(
                target: "resil::fleet",
                replica = %self.options.replica,
                "fleet: Redis reachable, changes shared again"
            ),
            (true, false) => tracing::warn!(
                target: "resil::fleet",
                replica = %self.options.replica,
                error = error.as_deref().unwrap_or(""),
                unsent,
                "fleet: Redis unreachable; local management goes on, changes wait to be shared"
            ),
        }
    }

    fn refresh_unsent(&self) {
        let unsent = self.outbox.lock().len() + self.configs.lock().len();
        self.status.lock().unsent = unsent;
        self.changed.notify_all();
    }
}

/// This replica's membership of a fleet: switches made through it reach
/// every replica. Cheap to clone; the fleet's thread ends with the registry.
#[derive(Clone)]
pub struct Fleet {
    registry: Weak<Inner>,
    shared: Arc<Shared>,
}

impl fmt::Debug for Fleet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Fleet")
            .field("namespace", &self.shared.options.namespace)
            .field("replica", &self.shared.options.replica)
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// Joins the fleet described by `options`: reads and applies the
    /// switches in force, then follows the fleet's changes on a thread of
    /// its own (see the [`fleet`](crate::fleet) module). Joining does not
    /// wait for Redis: an unreachable Redis is retried, and reported by
    /// [`Fleet::status`].
    pub fn join_fleet(&self, options: FleetOptions) -> Result<Fleet, FleetError> {
        let client = redis::Client::open(options.url.as_str())
            .map_err(|e| FleetError::Url(e.to_string()))?;
        let shared = Arc::new(Shared {
            options,
            next: AtomicU64::new(1),
            outbox: Mutex::new(VecDeque::new()),
            configs: Mutex::new(VecDeque::new()),
            status: Mutex::new(FleetStatus {
                connected: false,
                unsent: 0,
                since: SystemTime::now(),
                error: Some("not connected yet".into()),
                applied_from_fleet: 0,
            }),
            changed: Condvar::new(),
        });
        let fleet = Fleet {
            registry: Arc::downgrade(&self.inner),
            shared: Arc::clone(&shared),
        };
        let follower = Follower {
            registry: Arc::downgrade(&self.inner),
            shared,
            client,
            seen: HashSet::new(),
            pending: HashMap::new(),
        };
        std::thread::Builder::new()
            .name("resil-fleet".into())
            .spawn(move || follower.run())
            .map_err(FleetError::Thread)?;
        Ok(fleet)
    }
}

impl Fleet {
    fn registry(&self) -> Result<Registry, RegistryError> {
        self.registry
            .upgrade()
            .map(|inner| Registry { inner })
            .ok_or_else(|| RegistryError::IllegalOperation {
                kind: Kind::CircuitBreaker,
                name: String::new(),
                reason: "the registry is gone".into(),
            })
    }

    fn record(&self, who: &str, release: bool, kind: Kind, name: &str) -> Record {
        let seq = self.shared.next.fetch_add(1, Ordering::Relaxed);
        Record {
            id: format!("{}:{seq}", self.shared.options.replica),
            who: who.to_owned(),
            release,
            kind,
            name: name.to_owned(),
            action: None,
            reason: String::new(),
            until_ms: None,
            ttl: None,
            made: Instant::now(),
        }
    }

    /// Applies `switch` here (an error changes nothing anywhere), then
    /// shares it with the fleet, `who` named in every replica's audit line.
    pub fn switch(&self, switch: &Switch, who: &str) -> Result<(), RegistryError> {
        let registry = self.registry()?;
        registry.apply_switch(switch)?;
        let mut record = self.record(who, false, switch.action.kind(), &switch.name);
        record.action = Some(switch.action);
        record.reason = switch.reason.clone();
        record.ttl = switch.ttl;
        audit(&self.shared.options.replica, &record, "made here");
        self.shared.outbox.lock().push_back(record);
        self.shared.refresh_unsent();
        Ok(())
    }

    /// Releases every switch on the `kind` called `name` here, then on
    /// every replica. Whether there was one here.
    pub fn release(&self, kind: Kind, name: &str, who: &str) -> Result<bool, RegistryError> {
        let released = self.registry()?.release(kind, name)?;
        let record = self.record(who, true, kind, name);
        audit(&self.shared.options.replica, &record, "made here");
        self.shared.outbox.lock().push_back(record);
        self.shared.refresh_unsent();
        Ok(released)
    }

    /// Whether this replica is in touch with the fleet, and the gap.
    pub fn status(&self) -> FleetStatus {
        self.shared.status.lock().clone()
    }

    /// Waits until `done` holds for the status, at most `timeout`; whether
    /// it does (tests and health checks wait on the fleet this way).
    pub fn wait_for(&self, done: impl Fn(&FleetStatus) -> bool, timeout: Duration) -> bool {
        let deadline = Instant::now() + timeout;
        let mut status = self.shared.status.lock();
        while !done(&status) {
            if self
                .shared
                .changed
                .wait_until(&mut status, deadline)
                .timed_out()
            {
                return done(&status);
            }
        }
        true
    }
}

/// One audit line for one change on one replica.
fn audit(replica: &str, record: &Record, how: &str) {
    let what = match (record.release, record.action) {
        (true, _) => "release".to_owned(),
        (false, Some(a)) => a.to_string(),
        (false, None) => "unknown".to_owned(),
    };
    tracing::info!(
        target: "resil::fleet",
        replica,
        id = %record.id,
        who = %record.who,
        what = %what,
        kind = record.kind.as_str(),
        name = %record.name,
        reason = %record.reason,
        until_ms = record.until_ms,
        ttl = ?record.ttl,
        "fleet switch {how}: {what} on {} {} by {}",
        record.kind.as_str(),
        record.name,
        record.who
    );
}

/// The fleet's thread.
struct Follower {
    registry: Weak<Inner>,
    shared: Arc<Shared>,
    client: redis::Client,
    /// Ids of records applied here (each once).
    seen: HashSet<String>,
    /// Switches for instances that do not exist here yet, by field.
    pending: HashMap<String, Record>,
}

impl Follower {
    fn alive(&self) -> bool {
        self.registry.strong_count() > 0
    }

    fn run(mut self) {
        while self.alive() {
            if let Err(e) = self.session() {
                self.shared.set_connected(false, Some(e.to_string()));
                self.retry_pending(None);
                std::thread::sleep(TICK);
            }
        }
    }

    /// One connection's life: subscribe, share the outbox, read what is in
    /// force, then follow the channel until an error.
    fn session(&mut self) -> redis::RedisResult<()> {
        let ns = self.shared.options.namespace.clone();
        let channel = format!("{ns}:changes");
        let mut sub = self
            .client
            .get_connection_with_timeout(Duration::from_secs(2))?;
        let mut cmd = self
            .client
            .get_connection_with_timeout(Duration::from_secs(2))?;
        cmd.set_read_timeout(Some(Duration::from_secs(2)))?;
        cmd.set_write_timeout(Some(Duration::from_secs(2)))?;
        let mut pubsub = sub.as_pubsub();
        pubsub.subscribe(&channel)?;
        pubsub.set_read_timeout(Some(TICK))?;
        self.flush(&mut cmd, &ns)?;
        self.flush_configs(&mut cmd, &ns)?;
        self.read_config(&mut cmd, &ns)?;
        self.read_in_force(&mut cmd, &ns)?;
        self.shared.set_connected(true, None);
        let mut last_tick = Instant::now();
        loop {
            if !self.alive() {
                return Ok(());
            }
            match pubsub.get_message() {
                Ok(msg) => {
                    let payload: String = msg.get_payload()?;
                    if let Some(record) = Record::decode(&payload) {
                        self.apply(record, Some(&mut cmd))?;
                    } else if let Some(record) = published::ConfigRecord::decode(&payload) {
                        self.apply_config(record);
                    }
                }
                Err(e) if e.is_timeout() => {}
                Err(e) => return Err(e),
            }
            self.flush(&mut cmd, &ns)?;
            self.flush_configs(&mut cmd, &ns)?;
            if last_tick.elapsed() >= TICK {
                last_tick = Instant::now();
                self.retry_pending(Some(&mut cmd));
            }
        }
    }

    /// Redis's clock, in ms.
    fn redis_now_ms(cmd: &mut redis::Connection) -> redis::RedisResult<u64> {
        let (secs, micros): (u64, u64) = redis::cmd("TIME").query(cmd)?;
        Ok(secs * 1000 + micros / 1000)
    }

    /// Shares every change made here that the fleet has not received.
    fn flush(&mut self, cmd: &mut redis::Connection, ns: &str) -> redis::RedisResult<()> {
        loop {
            let Some(mut record) = self.shared.outbox.lock().front().cloned() else {
                return Ok(());
            };
            let hash = format!("{ns}:switches");
            let now = Self::redis_now_ms(cmd)?;
            if let Some(ttl) = record.ttl {
                let left = ttl.saturating_sub(record.made.elapsed());
                record.until_ms = Some(now + left.as_millis() as u64);
            }
            if record.release {
                let prefix = format!("{}/{}/", record.kind.as_str(), record.name);
                let fields: Vec<String> = cmd.hkeys(&hash)?;
                for field in fields.iter().filter(|f| f.starts_with(&prefix)) {
                    let _: () = cmd.hdel(&hash, field)?;
                }
            } else if let Some(field) = record.field() {
                let _: () = cmd.hset(&hash, field, record.encode())?;
            }
            let _: () = cmd.publish(format!("{ns}:changes"), record.encode())?;
            self.seen.insert(record.id.clone());
            self.shared.outbox.lock().pop_front();
            self.shared.refresh_unsent();
        }
    }

    /// Applies every switch in force in the fleet's hash (and removes the
    /// ended ones).
    fn read_in_force(&mut self, cmd: &mut redis::Connection, ns: &str) -> redis::RedisResult<()> {
        let hash = format!("{ns}:switches");
        let all: HashMap<String, String> = cmd.hgetall(&hash)?;
        let now = Self::redis_now_ms(cmd)?;
        for (field, value) in all {
            let Some(record) = Record::decode(&value) else {
                continue;
            };
            if record.until_ms.is_some_and(|u| u <= now) {
                let _: () = cmd.hdel(&hash, &field)?;
                continue;
            }
            self.apply(record, Some(cmd))?;
        }
        Ok(())
    }

    /// Applies a record from the fleet once (its own records are already
    /// applied here).
    fn apply(
        &mut self,
        record: Record,
        cmd: Option<&mut redis::Connection>,
    ) -> redis::RedisResult<()> {
        if self.seen.contains(&record.id) {
            return Ok(());
        }
        let Some(inner) = self.registry.upgrade() else {
            return Ok(());
        };
        let registry = Registry { inner };
        let ttl = match (record.until_ms, cmd) {
            (None, _) => None,
            (Some(until), Some(cmd)) => {
                let now = Self::redis_now_ms(cmd)?;
                if until <= now {
                    self.seen.insert(record.id.clone());
                    if let Some(field) = record.field() {
                        self.pending.remove(&field);
                    }
                    return Ok(());
                }
                Some(Duration::from_millis(until - now))
            }
            // A TTL is measured on Redis's clock: wait until it answers.
            (Some(_), None) => {
                if let Some(field) = record.field() {
                    self.pending.insert(field, record);
                }
                return Ok(());
            }
        };
        if record.release {
            let prefix = format!("{}/{}/", record.kind.as_str(), record.name);
            self.pending.retain(|field, _| !field.starts_with(&prefix));
        }
        let result = if record.release {
            registry.release(record.kind, &record.name).map(|_| ())
        } else {
            let Some(action) = record.action else {
                return Ok(());
            };
            registry.apply_switch(&Switch {
                name: record.name.clone(),
                action,
                reason: record.reason.clone(),
                ttl,
            })
        };
        match result {
            Ok(()) => {
                self.seen.insert(record.id.clone());
                if let Some(field) = record.field() {
                    self.pending.remove(&field);
                }
                audit(
                    &self.shared.options.replica,
                    &record,
                    "applied from the fleet",
                );
                self.shared.status.lock().applied_from_fleet += 1;
                self.shared.changed.notify_all();
            }
            Err(RegistryError::NotFound { .. }) => {
                if let Some(field) = record.field() {
                    self.pending.insert(field, record);
                }
            }
            Err(e) => {
                self.seen.insert(record.id.clone());
                tracing::error!(
                    target: "resil::fleet",
                    id = %record.id,
                    error = %e,
                    "fleet switch refused here"
                );
            }
        }
        Ok(())
    }

    /// Applies the switches whose instance now exists.
    fn retry_pending(&mut self, mut cmd: Option<&mut redis::Connection>) {
        if self.pending.is_empty() {
            return;
        }
        let pending: Vec<Record> = self.pending.values().cloned().collect();
        for record in pending {
            let _ = self.apply(record, cmd.as_deref_mut());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_survives_its_encoding_with_separators_in_its_text() {
        let record = Record {
            id: "r1:7".into(),
            who: "alice|ops".into(),
            release: false,
            kind: Kind::CircuitBreaker,
            name: "inventory".into(),
            action: Some(SwitchAction::RateTimeout(Duration::from_millis(250))),
            reason: "100% down | paging".into(),
            until_ms: Some(1234),
            ttl: None,
            made: Instant::now(),
        };
        let back = Record::decode(&record.encode()).unwrap();
        assert_eq!(back.who, record.who);
        assert_eq!(back.reason, record.reason);
        assert_eq!(back.action, record.action);
        assert_eq!(back.until_ms, Some(1234));
        assert_eq!(back.field().unwrap(), "circuit_breaker/inventory/timeout");
    }
}
