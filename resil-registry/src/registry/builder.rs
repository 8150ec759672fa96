//! Building a registry: its clock, cap and event settings.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use parking_lot::{Mutex, RwLock};
use resil_core::clock::{Clock, SharedClock};

use crate::classes::ErrorClasses;
use crate::config::FileConfig;
use crate::overrides::Overrides;
use crate::store::{Stores, DEFAULT_EVENT_BUFFER_SIZE};

use super::{Inner, Registry, DEFAULT_MAX_INSTANCES_PER_KIND};
use crate::event::Publisher;
use crate::telemetry::ring::WallClock;

/// Builds a [`Registry`] with a clock or a different cap.
#[derive(Debug, Clone, Default)]
pub struct RegistryBuilder {
    clock: Option<SharedClock>,
    max_per_kind: Option<usize>,
    event_buffer_size: Option<usize>,
    record_instance_events: bool,
    percentiles_histogram: bool,
    wall_clock_origin: Option<SystemTime>,
    refusal_log_interval: Option<Duration>,
    config_history: Option<usize>,
    watch_config: bool,
    watch_debounce: Option<Duration>,
}

impl RegistryBuilder {
    /// Times every instance (except thread-pool bulkheads, which read no clock)
    /// and the registry's own timers (management TTLs) with `clock`: a
    /// [`ManualClock`](resil_core::clock::ManualClock) in tests. Without it each
    /// primitive uses its own default clock.
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Some(SharedClock::new(clock));
        self
    }

    /// The cap on instances per kind (default
    /// [`DEFAULT_MAX_INSTANCES_PER_KIND`]). Names used as business ids
    /// (one breaker per customer) grow without bound; the cap turns that
    /// into an error ([`RegistryError::CardinalityExceeded`](crate::RegistryError::CardinalityExceeded)) and a counted
    /// refusal instead of a slow memory leak.
    pub fn max_instances_per_kind(mut self, max: usize) -> Self {
        self.max_per_kind = Some(max);
        self
    }

    /// How many events the snapshot keeps per instance, in its history of
    /// notable events and in its ring of recent per-call events each
    /// (default [`DEFAULT_EVENT_BUFFER_SIZE`]; at least 1).
    pub fn event_buffer_size(mut self, size: usize) -> Self {
        self.event_buffer_size = Some(size);
        self
    }

    /// Also record each instance's per-call events (calls, rejections,
    /// retries) in its ring of recent events, logged at DEBUG when they are
    /// collected (on each snapshot, health check or metrics publication,
    /// and by [`Registry::collect_instance_events`]). Off by default:
    /// subscribing makes every primitive build and send an event per call,
    /// which is a cost on the call path.
    ///
    /// Notable events need no recording: a breaker's transitions and resets
    /// and a chaos instance's switches are kept in the instance's history
    /// when they happen, whatever this says, and logged by the primitive.
    pub fn record_instance_events(mut self, on: bool) -> Self {
        self.record_instance_events = on;
        self
    }

    /// Keeps a percentile histogram of the breakers' call durations
    /// (`resilience4j_circuitbreaker_calls_seconds_bucket{le}`, Micrometer's
    /// buckets from 1 ms to 30 s), as Spring's
    /// `management.metrics.distribution.percentiles-histogram.resilience4j.circuitbreaker.calls: true`
    /// does (a config file's key, when present, decides). Off by default: a
    /// histogram costs a bucket search and a shared atomic add per call.
    pub fn percentiles_histogram(mut self, on: bool) -> Self {
        self.percentiles_histogram = on;
        self
    }

    /// The wall-clock time that the registry clock's reading at build
    /// stands for (default: now). Events' wall-clock `creation_time` is this
    /// plus the registry clock's time since; with a
    /// [`ManualClock`](resil_core::clock::ManualClock) a test controls both.
    /// (On the system clock, timestamps follow monotonic time from the
    /// registry's start: a wall-clock adjustment after it does not move
    /// them.)
    pub fn wall_clock_origin(mut self, at: SystemTime) -> Self {
        self.wall_clock_origin = Some(at);
        self
    }

    /// How often, at most, each instance logs one aggregated line about the
    /// calls it refused (a breaker not permitting, a bulkhead full, a rate
    /// limiter out of permits); default
    /// [`DEFAULT_REFUSAL_LOG_INTERVAL`](resil_core::log::DEFAULT_REFUSAL_LOG_INTERVAL),
    /// 10 s. Process-wide (see [`resil_core::log`]): building a registry
    /// with it sets it for every instance.
    pub fn refusal_log_interval(mut self, every: Duration) -> Self {
        self.refusal_log_interval = Some(every);
        self
    }

    /// How many config versions the registry keeps (default
    /// [`DEFAULT_CONFIG_HISTORY`](crate::DEFAULT_CONFIG_HISTORY); at least 1;
    /// the version in force is never dropped).
    pub fn config_history(mut self, versions: usize) -> Self {
        self.config_history = Some(versions);
        self
    }

    /// Watches the config file this registry loads
    /// ([`Registry::reload_file`]) and reloads it when it changes
    /// (feature `watch`; see `Registry::watch_file`). The file key
    /// `resil.config.watch: true` turns it on too.
    pub fn watch_config(mut self, on: bool) -> Self {
        self.watch_config = on;
        self
    }

    /// How long the watcher waits for a burst of file events to settle
    /// before it reloads once (default
    /// [`DEFAULT_WATCH_DEBOUNCE`](crate::DEFAULT_WATCH_DEBOUNCE); the file
    /// key `resil.config.watch-debounce` overrides it).
    pub fn watch_debounce(mut self, debounce: Duration) -> Self {
        self.watch_debounce = Some(debounce);
        self
    }

    /// The registry.
    pub fn build(self) -> Registry {
        let ttl_clock = self.clock.clone().unwrap_or_else(SharedClock::system);
        if let Some(every) = self.refusal_log_interval {
            resil_core::log::set_refusal_log_interval(every);
        }
        let wall = WallClock::new(
            ttl_clock.clone(),
            self.wall_clock_origin.unwrap_or_else(SystemTime::now),
        );
        Registry {
            inner: Arc::new(Inner {
                stores: Stores::default(),
                ttl_clock: ttl_clock.clone(),
                clock: self.clock,
                overrides: Overrides::default(),
                max_per_kind: self.max_per_kind.unwrap_or(DEFAULT_MAX_INSTANCES_PER_KIND),
                event_buffer_size: self.event_buffer_size.unwrap_or(DEFAULT_EVENT_BUFFER_SIZE),
                record_instance_events: self.record_instance_events,
                percentiles_histogram: self.percentiles_histogram,
                layers: Default::default(),
                classes: ErrorClasses::default(),
                events: Publisher::new(wall),
                file: RwLock::new(Arc::new(FileConfig::default())),
                reload_lock: Mutex::new(()),
                loaded: Default::default(),
                followers: Mutex::new(Vec::new()),
                sites: Mutex::new(HashMap::new()),
                audit: Default::default(),
                keyed: Default::default(),
                inbound: Default::default(),
                versions: crate::versions::History::new(
                    self.config_history
                        .unwrap_or(crate::versions::DEFAULT_CONFIG_HISTORY),
                ),
                watch: crate::watch::WatchState::new(self.watch_config, self.watch_debounce),
                shadow: Mutex::new(None),
            }),
        }
    }
}
