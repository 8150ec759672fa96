//! The registry: six maps of named instances, get-or-create, code settings and
//! the events that announce changes.

use std::any::Any;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use dashmap::mapref::entry::Entry as MapEntry;
use dashmap::DashMap;
use parking_lot::{Mutex, RwLock};
use resil_core::bulkhead::{Bulkhead, BulkheadConfigBuilder};
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfigBuilder};
use resil_core::clock::{Clock, SharedClock};
use resil_core::event::{EventPublisher, EventStream};
use resil_core::rate_limiter::{RateLimiter, RateLimiterConfigBuilder};
use resil_core::retry::{Retry, RetryConfigBuilder};
use resil_core::thread_pool_bulkhead::{ThreadPoolBulkhead, ThreadPoolBulkheadConfigBuilder};
use resil_core::time_limiter::{TimeLimiter, TimeLimiterConfigBuilder};

use crate::classes::{ErrorClass, ErrorClasses, ErrorList};
use crate::config::{FileConfig, Resolved};
use crate::error::RegistryError;
use crate::event::{RegistryEvent, RegistryEventKind};
use crate::handle::{Handle, Slot};
use crate::kind::{Kind, Primitive};
use crate::manage::Overrides;
use crate::telemetry::describe::Describe;
use crate::telemetry::ring::{RecordedEvent, Ring};

/// The name of the config every instance and config without a `base-config`
/// inherits from.
pub const DEFAULT_CONFIG: &str = "default";

/// Default cap on instances per kind (see
/// [`RegistryBuilder::max_instances_per_kind`]).
pub const DEFAULT_MAX_INSTANCES_PER_KIND: usize = 10_000;

/// A code setting: a builder transformation attached to a config or instance.
pub(crate) type CodeFn<B> = Arc<dyn Fn(B) -> B + Send + Sync>;

/// A config registered in code: its base and its code settings.
pub(crate) struct CodeConfig<B> {
    pub(crate) base: Option<String>,
    pub(crate) settings: Vec<CodeFn<B>>,
}

/// Code settings attached to one instance name.
pub(crate) struct InstanceCode<B> {
    /// The config the instance is built from, when chosen in code.
    pub(crate) config: Option<String>,
    /// The `configure_*` closure, applied last.
    pub(crate) settings: Option<CodeFn<B>>,
    /// Set by `circuit_breaker_for(id, group)` when `id` has no settings of
    /// its own: resolve as `group` would be.
    pub(crate) group: Option<String>,
    /// Tags set in code (labels in metrics, shown in the snapshot).
    pub(crate) tags: BTreeMap<String, String>,
    /// Whether the instance takes part in the health summary.
    pub(crate) health_indicator: Option<bool>,
    /// Whether its DOWN may make the summary DOWN.
    pub(crate) allow_health_indicator_to_fail: Option<bool>,
}

impl<B> Default for InstanceCode<B> {
    fn default() -> Self {
        InstanceCode {
            config: None,
            settings: None,
            group: None,
            tags: BTreeMap::new(),
            health_indicator: None,
            allow_health_indicator_to_fail: None,
        }
    }
}

impl<B> InstanceCode<B> {
    /// Whether code chose a config or settings for this name.
    fn has_settings(&self) -> bool {
        self.config.is_some() || self.settings.is_some()
    }
}

/// Everything set in code for one kind.
pub(crate) struct CodeSettings<B> {
    pub(crate) configs: HashMap<String, CodeConfig<B>>,
    pub(crate) instances: HashMap<String, InstanceCode<B>>,
}

impl<B> Default for CodeSettings<B> {
    fn default() -> Self {
        CodeSettings {
            configs: HashMap::new(),
            instances: HashMap::new(),
        }
    }
}

/// One registry entry.
pub(crate) struct Entry<P: Primitive> {
    pub(crate) slot: Arc<Slot<P>>,
    /// Recent events about this instance, for the snapshot.
    pub(crate) ring: Ring,
    /// A subscription to the instance's own events, when the registry
    /// records them (drained into `ring` on each snapshot).
    pub(crate) capture: Option<Mutex<EventStream<<P as Describe>::Event>>>,
}

/// Default size of each instance's ring of recent events (Resilience4j's
/// `event-consumer-buffer-size` default is 100).
pub const DEFAULT_EVENT_BUFFER_SIZE: usize = 100;

/// The instances and settings of one kind.
pub(crate) struct Store<P: Primitive> {
    pub(crate) entries: DashMap<Arc<str>, Entry<P>, NameHasher>,
    /// Held for reading while an instance is created and for writing while
    /// settings change, so a creation never uses settings a concurrent
    /// `configure_*` has already replaced.
    pub(crate) code: RwLock<CodeSettings<P::Builder>>,
    pub(crate) len: AtomicUsize,
    pub(crate) refused: AtomicU64,
    /// The configuration every name nothing configures gets, resolved once
    /// per loaded file: the file it was resolved from (held, so a reload's
    /// new file is never mistaken for it), the config and the ring size.
    /// Used only while no code config exists and the file's default entry
    /// lists no error names (whose predicates depend on registered classes).
    default_config: Mutex<Option<DefaultConfig<P>>>,
}

/// How instance names are hashed: foldhash (hashbrown's own default), seeded
/// per process. SipHash cost a third of creating an instance; names are
/// bounded by the per-kind cap, so flooding one map is bounded too.
pub(crate) type NameHasher = foldhash::fast::RandomState;

type DefaultConfig<P> = (Arc<FileConfig>, <P as Primitive>::Config, Option<usize>);

impl<P: Primitive> Default for Store<P> {
    fn default() -> Self {
        Store {
            entries: DashMap::with_hasher(NameHasher::default()),
            code: RwLock::new(CodeSettings::default()),
            len: AtomicUsize::new(0),
            refused: AtomicU64::new(0),
            default_config: Mutex::new(None),
        }
    }
}

pub(crate) struct Inner {
    breakers: Store<CircuitBreaker>,
    retries: Store<Retry>,
    bulkheads: Store<Bulkhead>,
    pools: Store<ThreadPoolBulkhead>,
    rate_limiters: Store<RateLimiter>,
    time_limiters: Store<TimeLimiter>,
    /// Redis-backed rate limiters (`Registry::distributed_rate_limiter`).
    #[cfg(feature = "redis")]
    pub(crate) distributed:
        DashMap<Arc<str>, Arc<Slot<resil_core::distributed_rate_limiter::DistributedRateLimiter>>>,
    /// How many distributed limiters exist, counted under the entry's shard
    /// lock against the cap.
    #[cfg(feature = "redis")]
    pub(crate) distributed_len: AtomicUsize,
    pub(crate) clock: Option<SharedClock>,
    /// The registry's clock for its own timers (override TTLs): `clock`, or
    /// the system clock.
    pub(crate) ttl_clock: SharedClock,
    pub(crate) overrides: Overrides,
    pub(crate) max_per_kind: usize,
    pub(crate) event_buffer_size: usize,
    pub(crate) record_instance_events: bool,
    pub(crate) classes: ErrorClasses,
    events: EventPublisher<RegistryEvent>,
    seq: AtomicU64,
    /// The loaded config file (an empty one before any load). Read while an
    /// instance is resolved, under its kind's settings lock; replaced by a
    /// reload while every kind's settings lock is held for writing.
    pub(crate) file: RwLock<Arc<FileConfig>>,
    /// One load or reload at a time.
    pub(crate) reload_lock: Mutex<()>,
    /// The first attribute call site that set literals for each instance.
    pub(crate) sites: Mutex<HashMap<(Kind, String), &'static AttributeSite>>,
}

/// Whether an instance takes part in [`Registry::health`] unless its
/// `register-health-indicator` says otherwise: yes, so the summary shows every
/// instance's state.
pub const DEFAULT_REGISTER_HEALTH_INDICATOR: bool = true;

/// Whether an instance may turn [`Registry::health`] DOWN unless its
/// `allow-health-indicator-to-fail` says otherwise: no. An OPEN breaker means
/// a *downstream* is failing; an orchestrator reading DOWN would take this
/// service out of rotation (or restart it), turning the downstream's outage
/// into this service's. Such an instance shows DEGRADED instead; opt in per
/// instance where a dependency really is essential (a readiness check).
pub const DEFAULT_ALLOW_HEALTH_INDICATOR_TO_FAIL: bool = false;

/// Where a resil attribute is written and the literal settings it gives its
/// instance, as the macros record it (one `static` per call site).
#[derive(Debug)]
pub struct AttributeSite {
    /// `src/inventory.rs:12`.
    pub location: &'static str,
    /// `(setter, value as written)`: `("max_attempts", "2")`.
    pub literals: &'static [(&'static str, &'static str)],
}

impl AttributeSite {
    /// The keys on which `self` and `other` differ (a key one of them sets
    /// and the other does not counts), sorted.
    pub fn differences(&self, other: &AttributeSite) -> Vec<String> {
        let mut keys: Vec<String> = Vec::new();
        let value = |site: &AttributeSite, key: &str| {
            site.literals
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| *v)
        };
        for (key, _) in self.literals.iter().chain(other.literals) {
            if value(self, key) != value(other, key) && !keys.iter().any(|k| k == key) {
                keys.push((*key).to_owned());
            }
        }
        keys.sort();
        keys
    }
}

/// Named, shared instances of the six primitives and their configuration.
///
/// Look-ups are get-or-create: the first look-up of a name builds the
/// instance from its settings (the `default` config when nothing names it),
/// every later look-up of the same name returns a handle to the same instance,
/// also when many threads race on a new name (one instance is created and one
/// [`Added`](RegistryEventKind::Added) event published).
///
/// ```
/// use resil_registry::Registry;
///
/// let registry = Registry::new();
/// registry
///     .configure_circuit_breaker("inventory", |b| b.failure_rate_threshold(60.0))
///     .unwrap();
/// let a = registry.circuit_breaker("inventory");
/// let b = registry.circuit_breaker("inventory");
/// assert!(resil_registry::Handle::same_entry(&a, &b));
/// assert_eq!(a.config().failure_rate_threshold(), 60.0);
/// ```
///
/// Tests build their own isolated registries; programs usually use the
/// process-wide one, [`registry()`](crate::registry()).
pub struct Registry {
    pub(crate) inner: Arc<Inner>,
}

/// Builds a [`Registry`] with a clock or a different cap.
#[derive(Debug, Clone, Default)]
pub struct RegistryBuilder {
    clock: Option<SharedClock>,
    max_per_kind: Option<usize>,
    event_buffer_size: Option<usize>,
    record_instance_events: bool,
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
    /// into an error ([`RegistryError::CardinalityExceeded`]) and a counted
    /// refusal instead of a slow memory leak.
    pub fn max_instances_per_kind(mut self, max: usize) -> Self {
        self.max_per_kind = Some(max);
        self
    }

    /// How many recent events the snapshot keeps per instance (default
    /// [`DEFAULT_EVENT_BUFFER_SIZE`]; at least 1).
    pub fn event_buffer_size(mut self, size: usize) -> Self {
        self.event_buffer_size = Some(size);
        self
    }

    /// Also record each instance's own events (calls, rejections, state
    /// transitions) in its ring of recent events, and log transitions and
    /// rejections with `tracing` when they are collected (on each snapshot,
    /// health check or metrics publication, and by
    /// [`Registry::collect_instance_events`]). Off by default: subscribing
    /// makes every primitive build and send an event per call, which is a
    /// cost on the call path.
    pub fn record_instance_events(mut self, on: bool) -> Self {
        self.record_instance_events = on;
        self
    }

    /// The registry.
    pub fn build(self) -> Registry {
        Registry {
            inner: Arc::new(Inner {
                breakers: Store::default(),
                retries: Store::default(),
                bulkheads: Store::default(),
                pools: Store::default(),
                rate_limiters: Store::default(),
                time_limiters: Store::default(),
                #[cfg(feature = "redis")]
                distributed: DashMap::new(),
                #[cfg(feature = "redis")]
                distributed_len: AtomicUsize::new(0),
                ttl_clock: self.clock.clone().unwrap_or_else(SharedClock::system),
                clock: self.clock,
                overrides: Overrides::default(),
                max_per_kind: self.max_per_kind.unwrap_or(DEFAULT_MAX_INSTANCES_PER_KIND),
                event_buffer_size: self.event_buffer_size.unwrap_or(DEFAULT_EVENT_BUFFER_SIZE),
                record_instance_events: self.record_instance_events,
                classes: ErrorClasses::default(),
                events: EventPublisher::default(),
                seq: AtomicU64::new(0),
                file: RwLock::new(Arc::new(FileConfig::default())),
                reload_lock: Mutex::new(()),
                sites: Mutex::new(HashMap::new()),
            }),
        }
    }
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Registry");
        for kind in Kind::ALL {
            d.field(kind.as_str(), &self.len(kind));
        }
        d.finish()
    }
}

macro_rules! accessors {
    ($($(#[$doc:meta])* $get:ident, $try_get:ident, $configure:ident, $ty:ty, $builder:ty;)*) => {$(
        $(#[$doc])*
        pub fn $get(&self, name: &str) -> Handle<$ty> {
            self.get::<$ty>(name)
        }

        #[doc = concat!("As [`", stringify!($get), "`](Self::", stringify!($get), "), but a refusal by the cardinality guard is an error.")]
        pub fn $try_get(&self, name: &str) -> Result<Handle<$ty>, RegistryError> {
            self.try_get::<$ty>(name)
        }

        #[doc = concat!("Code-only settings for the `", stringify!($ty), "` called `name`, applied last (after the file's and the configs' settings). If the instance exists it is rebuilt and replaced, as a reload would; if the result is invalid nothing changes and the error says why. See [`configure`](Self::configure).")]
        pub fn $configure(
            &self,
            name: &str,
            f: impl Fn($builder) -> $builder + Send + Sync + 'static,
        ) -> Result<(), RegistryError> {
            self.configure::<$ty>(name, f)
        }
    )*};
}

impl Registry {
    /// An empty registry: no configs but the built-in defaults, no instances.
    pub fn new() -> Registry {
        RegistryBuilder::default().build()
    }

    /// A builder (clock, cardinality cap).
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    accessors! {
        /// The circuit breaker called `name`, created on first use.
        circuit_breaker, try_circuit_breaker, configure_circuit_breaker, CircuitBreaker, CircuitBreakerConfigBuilder;
        /// The retry called `name`, created on first use.
        retry, try_retry, configure_retry, Retry, RetryConfigBuilder;
        /// The semaphore bulkhead called `name`, created on first use.
        bulkhead, try_bulkhead, configure_bulkhead, Bulkhead, BulkheadConfigBuilder;
        /// The thread-pool bulkhead called `name`, created on first use (no
        /// thread starts before its first task).
        thread_pool_bulkhead, try_thread_pool_bulkhead, configure_thread_pool_bulkhead, ThreadPoolBulkhead, ThreadPoolBulkheadConfigBuilder;
        /// The rate limiter called `name`, created on first use.
        rate_limiter, try_rate_limiter, configure_rate_limiter, RateLimiter, RateLimiterConfigBuilder;
        /// The time limiter called `name`, created on first use.
        time_limiter, try_time_limiter, configure_time_limiter, TimeLimiter, TimeLimiterConfigBuilder;
    }

    pub(crate) fn store<P: Primitive>(&self) -> &Store<P> {
        let inner = &*self.inner;
        let store: &dyn Any = match P::KIND {
            Kind::CircuitBreaker => &inner.breakers,
            Kind::Retry => &inner.retries,
            Kind::Bulkhead => &inner.bulkheads,
            Kind::ThreadPoolBulkhead => &inner.pools,
            Kind::RateLimiter => &inner.rate_limiters,
            Kind::TimeLimiter => &inner.time_limiters,
        };
        store
            .downcast_ref()
            .expect("each kind's store holds exactly that kind")
    }

    /// The instance of kind `P` called `name`, created on first use.
    ///
    /// The fast path is one shard read lock of a concurrent map. When the
    /// cardinality guard refuses a new name, the refusal is logged (`tracing`
    /// error) and counted, and the caller gets a *detached* instance built from
    /// the default config: it protects the call but is not registered, so it
    /// is not shared, observed or managed. Use [`try_get`](Self::try_get) to
    /// handle the refusal instead.
    pub fn get<P: Primitive>(&self, name: &str) -> Handle<P> {
        match self.try_get::<P>(name) {
            Ok(handle) => handle,
            Err(e) => {
                // Bounded logging: a flood of business-id names logs at the
                // 1st, 2nd, 4th, 8th, … refusal; `refused_by_cap` counts them all.
                let refused = self.refused_by_cap(P::KIND);
                if !matches!(e, RegistryError::CardinalityExceeded { .. })
                    || refused.is_power_of_two()
                {
                    tracing::error!(kind = %P::KIND, name, error = %e, refused, "registry refused a new instance");
                }
                let config = P::build(P::default_builder())
                    .expect("Resilience4j's defaults are a valid configuration");
                let name: Arc<str> = name.into();
                let instance = P::create(name.clone(), config, self.inner.clock.as_ref());
                Handle::from_slot(Arc::new(Slot::new(name, instance)))
            }
        }
    }

    /// The default configuration, when `name` is one nothing configures (no
    /// code setting, no file entry, no code config) and the file's default
    /// entry has no error lists: resolved once per file, then cloned. The
    /// registry bench creates 100 000 names this way.
    fn cached_default<P: Primitive>(
        &self,
        store: &Store<P>,
        file: &Arc<FileConfig>,
        code: &CodeSettings<P::Builder>,
        name: &str,
    ) -> Option<(P::Config, Option<usize>)> {
        let section = P::section(file);
        if !code.configs.is_empty()
            || code.instances.contains_key(name)
            || section.instance(name).is_some()
            || section.config(name).is_some()
            || !P::error_lists(section.default_config()).is_empty()
        {
            return None;
        }
        let mut cache = store.default_config.lock();
        if let Some((cached_file, config, ring)) = &*cache {
            if Arc::ptr_eq(cached_file, file) {
                return Some((config.clone(), *ring));
            }
        }
        let (config, ring) = self.resolve_full::<P>(file, code, name).ok()?;
        *cache = Some((Arc::clone(file), config.clone(), ring));
        Some((config, ring))
    }

    /// As [`get`](Self::get), but a refusal by the cardinality guard (or
    /// settings that cannot be built) is an error.
    pub fn try_get<P: Primitive>(&self, name: &str) -> Result<Handle<P>, RegistryError> {
        let store = self.store::<P>();
        if let Some(entry) = store.entries.get(name) {
            return Ok(Handle::from_slot(Arc::clone(&entry.slot)));
        }
        let code = store.code.read();
        let file = self.file();
        let (config, ring_capacity) = match self.cached_default::<P>(store, &file, &code, name) {
            Some(found) => found,
            None => self.resolve_full::<P>(&file, &code, name)?,
        };
        let ring_capacity = ring_capacity.unwrap_or(self.inner.event_buffer_size);
        match store.entries.entry(Arc::from(name)) {
            MapEntry::Occupied(o) => Ok(Handle::from_slot(Arc::clone(&o.get().slot))),
            MapEntry::Vacant(v) => {
                if store.len.fetch_add(1, Ordering::Relaxed) >= self.inner.max_per_kind {
                    store.len.fetch_sub(1, Ordering::Relaxed);
                    store.refused.fetch_add(1, Ordering::Relaxed);
                    return Err(RegistryError::CardinalityExceeded {
                        kind: P::KIND,
                        name: name.to_owned(),
                        limit: self.inner.max_per_kind,
                    });
                }
                let name = Arc::clone(v.key());
                let instance = P::create(Arc::clone(&name), config, self.inner.clock.as_ref());
                let capture = self
                    .inner
                    .record_instance_events
                    .then(|| Mutex::new(instance.subscribe_events()));
                let slot = Arc::new(Slot::new(Arc::clone(&name), instance));
                v.insert(Entry {
                    slot: Arc::clone(&slot),
                    ring: Ring::new(ring_capacity),
                    capture,
                });
                // Published while the shard is still locked: nobody can remove
                // or replace this name before `Added` is out. Not kept in the
                // instance's ring (its existence says as much), which saves
                // the ring's buffer for the many instances nothing happens to.
                self.publish(P::KIND, name, RegistryEventKind::Added, None);
                Ok(Handle::from_slot(slot))
            }
        }
    }

    /// The circuit breaker `id` of the group `group`, with Spring Cloud
    /// CircuitBreakerFactory's precedence: `id`'s own settings if it has any,
    /// else the settings of `group` (a named config, or an instance, called
    /// `group`), else the default config. Same `id` → same instance.
    pub fn circuit_breaker_for(&self, id: &str, group: &str) -> Handle<CircuitBreaker> {
        if let Some(existing) = self.find::<CircuitBreaker>(id) {
            return existing;
        }
        {
            let mut code = self.store::<CircuitBreaker>().code.write();
            let entry = code.instances.entry(id.to_owned()).or_default();
            if !entry.has_settings() {
                entry.group = Some(group.to_owned());
            }
        }
        self.get::<CircuitBreaker>(id)
    }

    /// Sets the tags of the instance of kind `P` called `name` (replacing
    /// earlier code tags; a file's tags for the same key are overridden).
    /// Tags label its metrics and appear in the snapshot.
    pub fn set_tags<P: Primitive, K: Into<String>, V: Into<String>>(
        &self,
        name: &str,
        tags: impl IntoIterator<Item = (K, V)>,
    ) {
        let mut code = self.store::<P>().code.write();
        code.instances.entry(name.to_owned()).or_default().tags = tags
            .into_iter()
            .map(|(k, v)| (k.into(), v.into()))
            .collect();
    }

    /// The tags of the instance of kind `P` called `name`: the config
    /// file's (kind-level, inherited, its own), then those set in code.
    pub fn tags<P: Primitive>(&self, name: &str) -> BTreeMap<String, String> {
        let code = self.store::<P>().code.read();
        let file = self.file();
        let mut tags: BTreeMap<String, String> = plan::<P>(&file, &code, name)
            .map(|p| {
                p.entry
                    .tags()
                    .map(|(k, v)| (k.to_owned(), v.to_owned()))
                    .collect()
            })
            .unwrap_or_default();
        if let Some(i) = code.instances.get(name) {
            tags.extend(i.tags.clone());
        }
        tags
    }

    /// The existing instance called `name`, without creating one.
    pub fn find<P: Primitive>(&self, name: &str) -> Option<Handle<P>> {
        self.store::<P>()
            .entries
            .get(name)
            .map(|e| Handle::from_slot(Arc::clone(&e.slot)))
    }

    /// Code-only settings for the instance of kind `P` called `name`: `f`
    /// receives the builder resolved from the defaults, the configs and the
    /// file, and its result is the instance's configuration. Replaces any
    /// earlier `configure` for that name. Predicates, interval functions and
    /// other values a file cannot express go here.
    ///
    /// `f` is called now (to validate), whenever the instance is (re)built,
    /// and must not call back into this registry.
    pub fn configure<P: Primitive>(
        &self,
        name: &str,
        f: impl Fn(P::Builder) -> P::Builder + Send + Sync + 'static,
    ) -> Result<(), RegistryError> {
        let store = self.store::<P>();
        let mut code = store.code.write();
        let f: CodeFn<P::Builder> = Arc::new(f);
        let previous = code
            .instances
            .entry(name.to_owned())
            .or_default()
            .settings
            .replace(f);
        let built = self.resolve::<P>(&self.file(), &code, name);
        // The Redis-backed limiter of the name takes the new quota too.
        #[cfg(feature = "redis")]
        let built = built.and_then(|config| {
            let code: &dyn Any = &*code;
            match code
                .downcast_ref::<CodeSettings<resil_core::rate_limiter::RateLimiterConfigBuilder>>()
            {
                Some(code) => Ok((config, self.reconfigure_distributed(code, name)?)),
                None => Ok((config, None)),
            }
        });
        match built {
            #[cfg(not(feature = "redis"))]
            Ok(config) => {
                let _ = self.replace_with::<P>(name, config, "configure");
                Ok(())
            }
            #[cfg(feature = "redis")]
            Ok((config, rebuild)) => {
                let _ = self.replace_with::<P>(name, config, "configure");
                self.apply_distributed(rebuild.into_iter().collect(), "configure");
                Ok(())
            }
            Err(e) => {
                code.instances.entry(name.to_owned()).or_default().settings = previous;
                Err(e)
            }
        }
    }

    /// Registers (or replaces) a named config of kind `P` in code: instances
    /// and configs naming it inherit from it. `base` is the config it inherits
    /// from (`None`: [`DEFAULT_CONFIG`]); `f` holds its code settings. Every
    /// existing instance is re-resolved, and a change that would leave any of
    /// them invalid (or a `base` chain with a cycle or an unknown config) is
    /// refused without changing anything.
    ///
    /// ```
    /// use resil_registry::Registry;
    ///
    /// let registry = Registry::new();
    /// registry.add_config::<resil_core::retry::Retry>("backend", None, |b| b.max_attempts(5)).unwrap();
    /// registry.use_config::<resil_core::retry::Retry>("payments", "backend").unwrap();
    /// assert_eq!(registry.retry("payments").config().max_attempts(), 5);
    /// ```
    pub fn add_config<P: Primitive>(
        &self,
        name: &str,
        base: Option<&str>,
        f: impl Fn(P::Builder) -> P::Builder + Send + Sync + 'static,
    ) -> Result<(), RegistryError> {
        if name == DEFAULT_CONFIG && base.is_some() {
            return Err(RegistryError::CyclicConfig {
                kind: P::KIND,
                chain: vec![
                    DEFAULT_CONFIG.to_owned(),
                    base.unwrap_or_default().to_owned(),
                ],
            });
        }
        let store = self.store::<P>();
        let mut code = store.code.write();
        let previous = code.configs.insert(
            name.to_owned(),
            CodeConfig {
                base: base.map(str::to_owned),
                settings: vec![Arc::new(f)],
            },
        );
        let validated = config_chain(P::KIND, &code, Some(name), &|_| false)
            .and_then(|_| self.resolve_all::<P>(&code));
        match validated {
            Ok(configs) => {
                for (instance, config) in configs {
                    let _ = self.replace_with::<P>(&instance, config, "configure");
                }
                Ok(())
            }
            Err(e) => {
                match previous {
                    Some(p) => code.configs.insert(name.to_owned(), p),
                    None => code.configs.remove(name),
                };
                Err(e)
            }
        }
    }

    /// Builds the instance `instance` of kind `P` from the named config
    /// `config` (Resilience4j's `base-config` on an instance, set in code).
    /// Replaces the instance if it exists.
    pub fn use_config<P: Primitive>(
        &self,
        instance: &str,
        config: &str,
    ) -> Result<(), RegistryError> {
        let store = self.store::<P>();
        let mut code = store.code.write();
        let previous = code
            .instances
            .entry(instance.to_owned())
            .or_default()
            .config
            .replace(config.to_owned());
        match self.resolve::<P>(&self.file(), &code, instance) {
            Ok(built) => {
                let _ = self.replace_with::<P>(instance, built, "configure");
                Ok(())
            }
            Err(e) => {
                code.instances
                    .entry(instance.to_owned())
                    .or_default()
                    .config = previous;
                Err(e)
            }
        }
    }

    /// Resolves every existing instance of kind `P`: all or the first error.
    fn resolve_all<P: Primitive>(
        &self,
        code: &CodeSettings<P::Builder>,
    ) -> Result<Vec<(String, P::Config)>, RegistryError> {
        let file = self.file();
        let names: Vec<String> = self
            .store::<P>()
            .entries
            .iter()
            .map(|e| e.key().to_string())
            .collect();
        names
            .into_iter()
            .map(|n| self.resolve::<P>(&file, code, &n).map(|c| (n, c)))
            .collect()
    }

    /// The loaded config file.
    pub(crate) fn file(&self) -> Arc<FileConfig> {
        Arc::clone(&self.inner.file.read())
    }

    /// Resolves the configuration of instance `name`: the config file's entry
    /// for it (with its error-name lists as predicates), then the code
    /// settings of every config in its chain (root first), then its own code
    /// settings.
    pub(crate) fn resolve<P: Primitive>(
        &self,
        file: &FileConfig,
        code: &CodeSettings<P::Builder>,
        name: &str,
    ) -> Result<P::Config, RegistryError> {
        self.resolve_full::<P>(file, code, name)
            .map(|(config, _)| config)
    }

    /// As `resolve`, plus the size of the ring of recent events the file asks for.
    fn resolve_full<P: Primitive>(
        &self,
        file: &FileConfig,
        code: &CodeSettings<P::Builder>,
        name: &str,
    ) -> Result<(P::Config, Option<usize>), RegistryError> {
        let plan = plan::<P>(file, code, name)?;
        let ring_capacity = plan.entry.event_consumer_buffer_size();
        let mut builder = P::file_builder(plan.entry);
        for (names, list) in P::error_lists(plan.entry) {
            if !list.is_predicate() {
                self.check_error_names(names.names(), names.path())?;
            }
            builder = P::apply_error_list(&self.inner.classes, builder, list, names.names());
        }
        let applied = |b: P::Builder, f: &CodeFn<P::Builder>, at: &str| {
            catch_unwind(AssertUnwindSafe(|| f(b))).map_err(|_| RegistryError::SettingsPanicked {
                kind: P::KIND,
                name: at.to_owned(),
            })
        };
        for config in &plan.chain {
            if let Some(c) = code.configs.get(config) {
                for f in &c.settings {
                    builder = applied(builder, f, config)?;
                }
            }
        }
        if let Some(f) = plan.settings {
            builder = applied(builder, f, name)?;
        }
        let config = P::build(builder).map_err(|source| RegistryError::InvalidConfig {
            kind: P::KIND,
            name: name.to_owned(),
            source,
        })?;
        Ok((config, ring_capacity))
    }

    /// Installs a new instance built from `config` under `name`, if the name
    /// exists; handles follow it.
    ///
    /// A circuit breaker whose window shape is unchanged carries its state and
    /// window over ([`CircuitBreaker::reconfigured`]); returns whether it did.
    pub(crate) fn replace_with<P: Primitive>(
        &self,
        name: &str,
        config: P::Config,
        cause: &str,
    ) -> bool {
        let store = self.store::<P>();
        let mut carried = false;
        if let Some(entry) = store.entries.get(name) {
            let name = Arc::clone(entry.key());
            let current: &dyn Any = entry.slot.load();
            let instance = match (
                current.downcast_ref::<CircuitBreaker>(),
                (&config as &dyn Any)
                    .downcast_ref::<resil_core::circuit_breaker::CircuitBreakerConfig>(),
            ) {
                (Some(breaker), Some(next)) => {
                    let (next, kept) = breaker.reconfigured(next.clone());
                    carried = kept;
                    let boxed: Box<dyn Any> = Box::new(next);
                    *boxed
                        .downcast::<P>()
                        .expect("a circuit breaker entry holds circuit breakers")
                }
                _ => P::create(Arc::clone(&name), config, self.inner.clock.as_ref()),
            };
            if let Some(breaker) = (&instance as &dyn Any).downcast_ref::<CircuitBreaker>() {
                self.reapply_override(&name, breaker);
            }
            self.drain_instance_events(&entry);
            if let Some(capture) = &entry.capture {
                *capture.lock() = instance.subscribe_events();
            }
            entry.slot.replace(instance);
            self.publish(
                P::KIND,
                name,
                RegistryEventKind::Replaced {
                    cause: cause.into(),
                    state_carried_over: carried,
                },
                Some(&entry.ring),
            );
        }
        carried
    }

    /// Replaces the instance of kind `P` called `name` with `instance`, built
    /// by hand (Resilience4j's `registry.replace`): every handle sees it on
    /// its next use; the old one is retired. The name must exist. A later
    /// reload or `configure_*` rebuilds it from the settings again.
    pub fn replace<P: Primitive>(&self, name: &str, instance: P) -> Result<(), RegistryError> {
        let store = self.store::<P>();
        let Some(entry) = store.entries.get(name) else {
            return Err(RegistryError::NotFound {
                kind: P::KIND,
                name: name.to_owned(),
            });
        };
        self.drain_instance_events(&entry);
        if let Some(capture) = &entry.capture {
            *capture.lock() = instance.subscribe_events();
        }
        entry.slot.replace(instance);
        self.publish(
            P::KIND,
            Arc::clone(entry.key()),
            RegistryEventKind::Replaced {
                cause: "replace".into(),
                state_carried_over: false,
            },
            Some(&entry.ring),
        );
        Ok(())
    }

    /// Removes the instance of kind `P` called `name`. Handles still holding
    /// it keep working with it; the next look-up by name creates a new one.
    pub fn remove<P: Primitive>(&self, name: &str) -> Result<(), RegistryError> {
        let store = self.store::<P>();
        // Remove and publish under the shard lock, so a concurrent re-creation
        // of the name announces `Added` after this `Removed`.
        let removed = store.entries.remove_if(name, |key, _| {
            self.publish(P::KIND, Arc::clone(key), RegistryEventKind::Removed, None);
            true
        });
        match removed {
            Some(_) => {
                store.len.fetch_sub(1, Ordering::Relaxed);
                Ok(())
            }
            None => Err(RegistryError::NotFound {
                kind: P::KIND,
                name: name.to_owned(),
            }),
        }
    }

    /// Moves the events the instance published since the last collection
    /// into its ring, logging transitions and rejections.
    pub(crate) fn drain_instance_events<P: Primitive>(&self, entry: &Entry<P>) {
        let Some(capture) = &entry.capture else {
            return;
        };
        let events = capture.lock().drain();
        let at = std::time::Duration::from_nanos(self.inner.ttl_clock.now_nanos());
        for event in events {
            let description = format!("{event:?}");
            if is_notable(&description) {
                tracing::info!(kind = %P::KIND, name = entry.slot.load_name(), event = %description, "instance event");
            }
            entry.ring.push(RecordedEvent {
                at,
                source: "instance",
                description,
            });
        }
    }

    /// Collects every instance's own events into its ring now (see
    /// [`RegistryBuilder::record_instance_events`]).
    pub fn collect_instance_events(&self) {
        fn kind<P: Primitive>(r: &Registry) {
            for entry in r.store::<P>().entries.iter() {
                r.drain_instance_events(&entry);
            }
        }
        kind::<CircuitBreaker>(self);
        kind::<Retry>(self);
        kind::<Bulkhead>(self);
        kind::<ThreadPoolBulkhead>(self);
        kind::<RateLimiter>(self);
        kind::<TimeLimiter>(self);
    }

    /// Whether the instance of kind `P` called `name` takes part in the
    /// health summary ([`DEFAULT_REGISTER_HEALTH_INDICATOR`]: yes).
    /// Resilience4j's `register-health-indicator`; set here, it wins over the
    /// config file's key.
    pub fn set_health_indicator<P: Primitive>(&self, name: &str, enabled: bool) {
        let mut code = self.store::<P>().code.write();
        code.instances
            .entry(name.to_owned())
            .or_default()
            .health_indicator = Some(enabled);
    }

    /// Whether the instance's DOWN may make the summary DOWN
    /// ([`DEFAULT_ALLOW_HEALTH_INDICATOR_TO_FAIL`]: no, it shows DEGRADED, so
    /// a downstream's outage never takes this service out of rotation).
    /// Resilience4j's `allow-health-indicator-to-fail`; set here, it wins
    /// over the config file's key.
    pub fn allow_health_indicator_to_fail<P: Primitive>(&self, name: &str, allow: bool) {
        let mut code = self.store::<P>().code.write();
        code.instances
            .entry(name.to_owned())
            .or_default()
            .allow_health_indicator_to_fail = Some(allow);
    }

    /// `(takes part, may fail)` for an instance: code
    /// ([`set_health_indicator`](Self::set_health_indicator),
    /// [`allow_health_indicator_to_fail`](Self::allow_health_indicator_to_fail))
    /// over the file's `register-health-indicator` and
    /// `allow-health-indicator-to-fail`, over the defaults: every instance
    /// takes part, and none may fail ([`DEFAULT_ALLOW_HEALTH_INDICATOR_TO_FAIL`]).
    pub(crate) fn health_settings<P: Primitive>(&self, name: &str) -> (bool, bool) {
        let code = self.store::<P>().code.read();
        let i = code.instances.get(name);
        let file = self.file();
        let entry = plan::<P>(&file, &code, name).ok().map(|p| p.entry);
        (
            i.and_then(|i| i.health_indicator)
                .or_else(|| entry.and_then(|e| e.register_health_indicator()))
                .unwrap_or(DEFAULT_REGISTER_HEALTH_INDICATOR),
            i.and_then(|i| i.allow_health_indicator_to_fail)
                .or_else(|| entry.and_then(|e| e.allow_health_indicator_to_fail()))
                .unwrap_or(DEFAULT_ALLOW_HEALTH_INDICATOR_TO_FAIL),
        )
    }

    /// Where each configuration value of an instance came from, by key, when
    /// a config file set it: `(value as the snapshot writes it, source)`.
    pub(crate) fn provenance<P: Primitive>(
        &self,
        name: &str,
    ) -> HashMap<&'static str, (String, String, String)> {
        let code = self.store::<P>().code.read();
        let file = self.file();
        let Ok(plan) = plan::<P>(&file, &code, name) else {
            return HashMap::new();
        };
        let sources: HashMap<String, (String, String)> = plan
            .entry
            .provenance()
            .into_iter()
            .map(|p| {
                let location = p.location.unwrap_or_else(|| "default".to_owned());
                (p.key, (p.source.to_string(), location))
            })
            .collect();
        crate::telemetry::describe::describe_config(plan.entry.config())
            .into_iter()
            .filter_map(|(key, value)| {
                let (source, location) = sources.get(key)?;
                Some((key, (value, source.clone(), location.clone())))
            })
            .collect()
    }

    /// Where a code setting of instance `name` was written, when a resil
    /// attribute set it (`attribute at src/inventory.rs:12`).
    pub(crate) fn code_location<P: Primitive>(&self, name: &str, key: &str) -> Option<String> {
        let sites = self.inner.sites.lock();
        let site = sites.get(&(P::KIND, name.to_owned()))?;
        site.literals
            .iter()
            .any(|(k, _)| k.replace('_', "-") == key)
            .then(|| format!("attribute at {}", site.location))
    }

    /// [`configure`](Self::configure) for the literal settings a resil
    /// attribute writes (`#[resil::retry(name = "x", max_attempts = 2)]`):
    /// the first site to run sets them; a later site naming the same
    /// instance with the same literals changes nothing; one with other
    /// literals is refused with [`RegistryError::AttributeConflict`] and an
    /// [`AttributeConflict`](RegistryEventKind::AttributeConflict) event
    /// naming both sites and the keys, and the first site's settings stay.
    ///
    /// Attribute literals are code settings, so they win over the config
    /// file, as Resilience4j's code customizers win over properties; the
    /// snapshot shows each value's `location` (`attribute at src/x.rs:12`)
    /// so an operator sees why a file value is not in force.
    pub fn configure_from_attribute<P: Primitive>(
        &self,
        name: &str,
        site: &'static AttributeSite,
        f: impl Fn(P::Builder) -> P::Builder + Send + Sync + 'static,
    ) -> Result<(), RegistryError> {
        {
            let mut sites = self.inner.sites.lock();
            match sites.get(&(P::KIND, name.to_owned())) {
                Some(first) if first.location == site.location => return Ok(()),
                Some(first) => {
                    let keys = site.differences(first);
                    if keys.is_empty() {
                        return Ok(());
                    }
                    let first = first.location;
                    drop(sites);
                    self.publish(
                        P::KIND,
                        Arc::from(name),
                        RegistryEventKind::AttributeConflict {
                            first,
                            second: site.location,
                            keys: keys.clone(),
                        },
                        None,
                    );
                    return Err(RegistryError::AttributeConflict {
                        kind: P::KIND,
                        name: name.to_owned(),
                        first,
                        second: site.location,
                        keys,
                    });
                }
                None => {
                    sites.insert((P::KIND, name.to_owned()), site);
                }
            }
        }
        let result = self.configure::<P>(name, f);
        if result.is_err() {
            self.inner.sites.lock().remove(&(P::KIND, name.to_owned()));
        }
        result
    }

    /// Where each key the file sets for instance `name` of kind `P` came
    /// from (`instance`, a config's name, an env variable); keys the file
    /// leaves unset are absent.
    #[cfg_attr(not(feature = "redis"), allow(dead_code))]
    pub(crate) fn file_sources<P: Primitive>(&self, name: &str) -> HashMap<String, String> {
        let code = self.store::<P>().code.read();
        let file = self.file();
        let Ok(plan) = plan::<P>(&file, &code, name) else {
            return HashMap::new();
        };
        plan.entry
            .provenance()
            .into_iter()
            .filter(|p| p.path.is_some())
            .map(|p| (p.key, p.source.to_string()))
            .collect()
    }

    /// Registers an error type whose class names config lists may use.
    pub fn register_error_class<E: ErrorClass>(&self) {
        self.inner.classes.register::<E>();
    }

    /// Registers a predicate under `name`, for config files to name it as a
    /// Spring file names a Java `Predicate` class: `record-failure-predicate`,
    /// `ignore-exception-predicate` and `retry-exception-predicate` apply it to
    /// errors of type `T`; `record-result-predicate` and `result-predicate`
    /// to successful values of type `T`. A file may write the name with a
    /// package (`io.github.robwin.exception.RecordFailurePredicate` finds
    /// `RecordFailurePredicate`). Register before loading the file; a name
    /// registered twice keeps the later predicate.
    ///
    /// ```
    /// # #[cfg(feature = "yaml")] {
    /// use resil_registry::{FileConfig, Registry};
    ///
    /// #[derive(Debug)]
    /// enum ApiError { Business, Down }
    ///
    /// let registry = Registry::new();
    /// registry.register_predicate("RecordFailurePredicate", |e: &ApiError| {
    ///     !matches!(e, ApiError::Business)
    /// });
    /// registry.reload(FileConfig::from_yaml_str("
    /// resilience4j.circuitbreaker.instances.backendB:
    ///   recordFailurePredicate: io.github.robwin.exception.RecordFailurePredicate
    /// ").unwrap()).unwrap();
    /// let breaker = registry.circuit_breaker("backendB");
    /// let _ = breaker.call(|| Err::<(), _>(ApiError::Business));
    /// let _ = breaker.call(|| Err::<(), _>(ApiError::Down));
    /// assert_eq!(breaker.metrics().failed_calls(), 1);
    /// # }
    /// ```
    pub fn register_predicate<T: 'static>(
        &self,
        name: &str,
        predicate: impl Fn(&T) -> bool + Send + Sync + 'static,
    ) {
        self.inner.classes.register_predicate(name, predicate);
    }

    /// Every name error lists may use: the registered error classes' names and
    /// the kinds of `resil::Error` (`timeout`, `call_not_permitted`, …), sorted.
    pub fn error_class_names(&self) -> Vec<String> {
        self.inner.classes.names()
    }

    /// Adds the predicates an error-name list stands for to a breaker builder
    /// (`record-errors` or `ignore-errors`): one typed predicate per registered
    /// error class whose names the list uses. An unknown name is an error
    /// listing every registered name; `used_in` names the list in that error.
    pub fn breaker_error_names(
        &self,
        builder: CircuitBreakerConfigBuilder,
        list: ErrorList,
        names: &[String],
        used_in: &str,
    ) -> Result<CircuitBreakerConfigBuilder, RegistryError> {
        self.check_error_names(names, used_in)?;
        Ok(self.inner.classes.apply_breaker(builder, list, names))
    }

    /// As [`breaker_error_names`](Self::breaker_error_names), for a retry's
    /// `retry-errors` or `ignore-errors`; `resil::Error` kind names in
    /// `retry-errors` (`timeout`, …) choose which refusals are retried.
    pub fn retry_error_names(
        &self,
        builder: RetryConfigBuilder,
        list: ErrorList,
        names: &[String],
        used_in: &str,
    ) -> Result<RetryConfigBuilder, RegistryError> {
        self.check_error_names(names, used_in)?;
        Ok(self.inner.classes.apply_retry(builder, list, names))
    }

    fn check_error_names(&self, names: &[String], used_in: &str) -> Result<(), RegistryError> {
        match self.inner.classes.unknown(names) {
            Some(unknown) => Err(RegistryError::UnknownErrorClass {
                name: unknown.to_owned(),
                used_in: used_in.to_owned(),
                known: self.inner.classes.names(),
            }),
            None => Ok(()),
        }
    }

    /// Subscribes to the registry's events (instances added, removed,
    /// replaced), delivered in order.
    pub fn subscribe(&self) -> EventStream<RegistryEvent> {
        self.inner.events.subscribe()
    }

    /// How many instances of `kind` the registry holds.
    pub fn len(&self, kind: Kind) -> usize {
        match kind {
            Kind::CircuitBreaker => self.inner.breakers.entries.len(),
            Kind::Retry => self.inner.retries.entries.len(),
            Kind::Bulkhead => self.inner.bulkheads.entries.len(),
            Kind::ThreadPoolBulkhead => self.inner.pools.entries.len(),
            Kind::RateLimiter => self.inner.rate_limiters.entries.len(),
            Kind::TimeLimiter => self.inner.time_limiters.entries.len(),
        }
    }

    /// Whether the registry holds no instance at all.
    pub fn is_empty(&self) -> bool {
        Kind::ALL.iter().all(|k| self.len(*k) == 0)
    }

    /// How many new names of `kind` the cardinality guard has refused.
    pub fn refused_by_cap(&self, kind: Kind) -> u64 {
        let count = |r: &AtomicU64| r.load(Ordering::Relaxed);
        match kind {
            Kind::CircuitBreaker => count(&self.inner.breakers.refused),
            Kind::Retry => count(&self.inner.retries.refused),
            Kind::Bulkhead => count(&self.inner.bulkheads.refused),
            Kind::ThreadPoolBulkhead => count(&self.inner.pools.refused),
            Kind::RateLimiter => count(&self.inner.rate_limiters.refused),
            Kind::TimeLimiter => count(&self.inner.time_limiters.refused),
        }
    }

    /// The names of every instance of kind `P`, sorted.
    pub fn names<P: Primitive>(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .store::<P>()
            .entries
            .iter()
            .map(|e| e.key().to_string())
            .collect();
        names.sort();
        names
    }

    pub(crate) fn publish(
        &self,
        kind: Kind,
        name: Arc<str>,
        what: RegistryEventKind,
        ring: Option<&Ring>,
    ) {
        let seq = self.inner.seq.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(kind = %kind, name = &*name, event = ?what, "registry");
        if let Some(ring) = ring {
            ring.push(RecordedEvent {
                at: std::time::Duration::from_nanos(self.inner.ttl_clock.now_nanos()),
                source: "registry",
                description: describe_event(&what),
            });
        }
        self.inner.events.publish_with(|| RegistryEvent {
            seq,
            kind,
            name,
            what,
        });
    }
}

/// The configs an instance inherits from, root first: `default`, then each
/// base down to `start`. A config without a base inherits from `default`.
pub(crate) fn config_chain<B>(
    kind: Kind,
    code: &CodeSettings<B>,
    start: Option<&str>,
    in_file: &dyn Fn(&str) -> bool,
) -> Result<Vec<String>, RegistryError> {
    let mut chain: Vec<String> = Vec::new();
    let mut next = start.map(str::to_owned);
    while let Some(name) = next {
        if chain.contains(&name) {
            chain.push(name);
            return Err(RegistryError::CyclicConfig { kind, chain });
        }
        let config = code.configs.get(&name);
        if config.is_none() && name != DEFAULT_CONFIG && !in_file(&name) {
            let mut known: Vec<String> = code.configs.keys().cloned().collect();
            known.sort();
            chain.push(name.clone());
            return Err(RegistryError::UnknownConfig {
                kind,
                name,
                chain,
                known,
            });
        }
        next = match config.and_then(|c| c.base.clone()) {
            Some(base) => Some(base),
            None if name != DEFAULT_CONFIG => Some(DEFAULT_CONFIG.to_owned()),
            None => None,
        };
        chain.push(name);
    }
    if chain.is_empty() {
        chain.push(DEFAULT_CONFIG.to_owned());
    }
    chain.reverse();
    Ok(chain)
}

/// The line an event leaves in an instance's ring.
fn describe_event(what: &RegistryEventKind) -> String {
    match what {
        RegistryEventKind::Added => "added".to_owned(),
        RegistryEventKind::Removed => "removed".to_owned(),
        RegistryEventKind::Replaced {
            cause,
            state_carried_over,
        } => format!(
            "replaced by {cause} ({})",
            if *state_carried_over {
                "state carried over"
            } else {
                "fresh state"
            }
        ),
        RegistryEventKind::Reconfigured { cause } => format!("reconfigured in place by {cause}"),
        RegistryEventKind::ManualTransition { to, reason, ttl } => format!(
            "manual transition to {to}{}{}",
            reason
                .as_deref()
                .map(|r| format!(", reason: {r}"))
                .unwrap_or_default(),
            ttl.map(|t| format!(", ttl: {t:?}")).unwrap_or_default()
        ),
        RegistryEventKind::OverrideExpired { to, reason } => {
            format!("manual override ({reason}) expired: back to {to}")
        }
        RegistryEventKind::AttributeConflict {
            first,
            second,
            keys,
        } => format!(
            "the attribute at {second} gives other settings ({}) than the one at {first}: not applied",
            keys.join(", ")
        ),
    }
}

/// Whether an instance event is worth a log line (transitions, rejections).
fn is_notable(description: &str) -> bool {
    [
        "StateTransition",
        "NotPermitted",
        "Rejected",
        "Timeout",
        "Full",
    ]
    .iter()
    .any(|w| description.contains(w))
}

/// Where an instance's configuration comes from.
pub(crate) struct Plan<'a, P: Primitive> {
    /// The config file's entry it starts from.
    pub(crate) entry: &'a Resolved<P::Config>,
    /// The configs whose code settings apply, root first.
    pub(crate) chain: Vec<String>,
    /// Its own code settings.
    pub(crate) settings: Option<&'a CodeFn<P::Builder>>,
}

/// The plan for instance `name`. Its own settings (in the file or in code)
/// first; for a `circuit_breaker_for(id, group)` id without any, the group's.
pub(crate) fn plan<'a, P: Primitive>(
    file: &'a FileConfig,
    code: &'a CodeSettings<P::Builder>,
    name: &str,
) -> Result<Plan<'a, P>, RegistryError> {
    let section = P::section(file);
    let mut instance = code.instances.get(name);
    let mut lookup = name;
    if let Some(group) = instance
        .filter(|i| !i.has_settings())
        .and_then(|i| i.group.as_deref())
    {
        if section.instance(name).is_none() {
            lookup = group;
            instance = code.instances.get(group);
        }
    }
    let in_file = |n: &str| section.config(n).is_some();
    let (entry, chain) = match instance.and_then(|i| i.config.as_deref()) {
        Some(config) => (
            section.config(config).unwrap_or(section.default_config()),
            config_chain(P::KIND, code, Some(config), &in_file)?,
        ),
        // No config registered in code: no code settings to apply, no chain.
        None if code.configs.is_empty() => (section.for_name(lookup), Vec::new()),
        None => {
            let entry = section.for_name(lookup);
            let mut chain: Vec<String> = vec![DEFAULT_CONFIG.to_owned()];
            chain.extend(entry.chain().iter().cloned());
            if !entry.is_instance() {
                chain.push(entry.name().to_owned());
            }
            if section.instance(lookup).is_none() && section.config(lookup).is_none() {
                // A config registered in code under the instance's (or the
                // group's) own name, as the file's same-name rule.
                if code.configs.contains_key(lookup) {
                    chain = config_chain(P::KIND, code, Some(lookup), &in_file)?;
                }
            }
            let mut unique: Vec<String> = Vec::with_capacity(chain.len());
            for c in chain {
                if !unique.contains(&c) {
                    unique.push(c);
                }
            }
            (entry, unique)
        }
    };
    Ok(Plan {
        entry,
        chain,
        settings: instance.and_then(|i| i.settings.as_ref()),
    })
}
