//! The registry: nine maps of named instances, get-or-create, code settings and
//! the events that announce changes.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use dashmap::mapref::entry::Entry as MapEntry;
use parking_lot::{Mutex, RwLock};
use resil_core::circuit_breaker::{CircuitBreaker, CircuitBreakerConfigBuilder};
use resil_core::clock::SharedClock;
use resil_core::event::EventStream;
use resil_core::retry::RetryConfigBuilder;

use crate::classes::{ErrorClass, ErrorClasses, ErrorList};
use crate::config::FileConfig;
use crate::error::RegistryError;
use crate::event::{Publisher, RegistryEvent, RegistryEventKind};
use crate::handle::{Handle, Slot};
use crate::kind::Kind;
use crate::kinds::chaos;
use crate::overrides::Overrides;
use crate::primitive::{Primitive, Twins};
use crate::store::{
    CodeConfig, CodeFn, CodeSettings, DefaultsFn, Entry, InstanceCode, Store, Stores,
};
pub(crate) use plan::{config_chain, plan};

mod builder;
mod health;
pub(crate) mod plan;
pub(crate) mod resolve;
mod site;

pub use builder::RegistryBuilder;
pub use health::{DEFAULT_ALLOW_HEALTH_INDICATOR_TO_FAIL, DEFAULT_REGISTER_HEALTH_INDICATOR};
pub use site::AttributeSite;

/// The name of the config every instance and config without a `base-config`
/// inherits from.
pub const DEFAULT_CONFIG: &str = crate::chain::DEFAULT;

/// Default cap on instances per kind (see
/// [`RegistryBuilder::max_instances_per_kind`]).
pub const DEFAULT_MAX_INSTANCES_PER_KIND: usize = 10_000;

pub(crate) struct Inner {
    pub(crate) stores: Stores,
    pub(crate) clock: Option<SharedClock>,
    /// The registry's clock for its own timers (override TTLs): `clock`, or
    /// the system clock.
    pub(crate) ttl_clock: SharedClock,
    pub(crate) overrides: Overrides,
    pub(crate) max_per_kind: usize,
    pub(crate) event_buffer_size: usize,
    pub(crate) record_instance_events: bool,
    /// The builder's histogram switch (see
    /// [`RegistryBuilder::percentiles_histogram`]).
    pub(crate) percentiles_histogram: bool,
    /// The tower layers' request counts, by name.
    pub(crate) layers: crate::telemetry::layer::Layers,
    pub(crate) classes: ErrorClasses,
    /// The registry's events.
    pub(crate) events: Publisher,
    /// The loaded config file (an empty one before any load). Read while an
    /// instance is resolved, under its kind's settings lock; replaced by a
    /// reload while every kind's settings lock is held for writing.
    pub(crate) file: RwLock<Arc<FileConfig>>,
    /// One load or reload at a time.
    pub(crate) reload_lock: Mutex<()>,
    /// Whether a load installed a file yet: a refused first load "cannot
    /// load", a refused later one is a reload refused.
    pub(crate) loaded: std::sync::atomic::AtomicBool,
    /// Values built from the loaded file ([`Registry::follow_file`]),
    /// rebuilt by each reload; a follower whose handles are all gone says so
    /// and is dropped.
    pub(crate) followers: Mutex<Vec<crate::reload::Follower>>,
    /// The first attribute call site that set literals for each instance.
    pub(crate) sites: Mutex<HashMap<(Kind, String), &'static AttributeSite>>,
    /// Management requests by outcome.
    pub(crate) audit: crate::audit::Audit,
    pub(crate) keyed: crate::keyed::Families,
    /// The server-wide inbound guard, once asked for.
    pub(crate) inbound: crate::inbound::InboundSlot,
    /// The config versions applied and refused, and the reload counts.
    pub(crate) versions: crate::versions::History,
    /// The config file watcher's settings and, once started, the watcher.
    pub(crate) watch: crate::watch::WatchState,
    /// The shadow trial running, if any.
    pub(crate) shadow: Mutex<Option<crate::shadow::Trial>>,
}

/// Named, shared instances of the nine primitives and their configuration.
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

/// Generates, from the list of kinds (`kinds!`), each kind's accessors:
/// `circuit_breaker(name)`, `try_circuit_breaker(name)`,
/// `configure_circuit_breaker(name, f)`, and so on.
macro_rules! accessors {
    ($(
        $(#[doc = $doc:expr])*
        $([cfg($cfg:meta)])?
        $get:ident, $try_get:ident, $configure:ident: $ty:path, $config:path, $builder:path;
    )*) => {
        impl Registry {$(
            $(#[doc = $doc])*
            $(#[cfg($cfg)])?
            pub fn $get(&self, name: &str) -> Handle<$ty> {
                self.get::<$ty>(name)
            }

            #[doc = concat!("As [`", stringify!($get), "`](Self::", stringify!($get), "), but a refusal by the cardinality guard is an error.")]
            $(#[cfg($cfg)])?
            pub fn $try_get(&self, name: &str) -> Result<Handle<$ty>, RegistryError> {
                self.try_get::<$ty>(name)
            }

            #[doc = concat!("Code-only settings for the `", stringify!($get), "` called `name`, applied last (after the file's and the configs' settings). If the instance exists it is rebuilt and replaced, as a reload would; if the result is invalid nothing changes and the error says why. See [`configure`](Self::configure).")]
            $(#[cfg($cfg)])?
            pub fn $configure(
                &self,
                name: &str,
                f: impl Fn($builder) -> $builder + Send + Sync + 'static,
            ) -> Result<(), RegistryError> {
                self.configure::<$ty>(name, f)
            }
        )*}
    };
}
crate::kinds::kinds!(accessors);

impl Registry {
    /// An empty registry: no configs but the built-in defaults, no instances.
    pub fn new() -> Registry {
        RegistryBuilder::default().build()
    }

    /// A builder (clock, cardinality cap).
    pub fn builder() -> RegistryBuilder {
        RegistryBuilder::default()
    }

    /// The loaded config file.
    pub(crate) fn file(&self) -> Arc<FileConfig> {
        Arc::clone(&self.inner.file.read())
    }

    /// The configuration in force: the file the last successful load or
    /// reload installed (an empty [`FileConfig`] before any), so the
    /// application reads its own keys, and resil's `resil.http` sets, from
    /// the same file the registry uses instead of reading it again
    /// ([`FileConfig::property`], [`FileConfig::http`], its
    /// [`origin`](FileConfig::origin)).
    ///
    /// ```
    /// # #[cfg(feature = "yaml")] {
    /// let registry = resil_registry::Registry::from_yaml_str(
    ///     "app.cache.ttl: 350ms\nresilience4j.retry.instances.a.max-attempts: 2\n",
    /// ).unwrap();
    /// assert_eq!(registry.loaded_file().property("app.cache.ttl"), Some("350ms"));
    /// # }
    /// ```
    pub fn loaded_file(&self) -> Arc<FileConfig> {
        self.file()
    }

    /// Whether the breakers' call timers keep a histogram under `file`.
    fn histograms(&self, file: &FileConfig) -> bool {
        crate::telemetry::histogram::wanted(
            file,
            self.inner.percentiles_histogram,
            crate::telemetry::histogram::BREAKER_CALLS,
        )
    }

    /// Resolves the configuration of instance `name` of kind `P` from
    /// `file` and the kind's code settings `code` (see
    /// [`resolve_layers`](resolve::resolve_layers)).
    pub(crate) fn resolve<P: Primitive>(
        &self,
        file: &FileConfig,
        code: &CodeSettings<P::Builder>,
        name: &str,
    ) -> Result<P::Config, RegistryError> {
        resolve::resolve_layers::<P>(&self.inner.classes, file, code, name, &mut ())
            .map(|(config, _)| config)
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

    /// Subscribes to the registry's events (instances added, removed,
    /// replaced), delivered in order.
    pub fn subscribe(&self) -> EventStream<RegistryEvent> {
        self.inner.events.subscribe()
    }

    pub(crate) fn store<P: Primitive>(&self) -> &Store<P> {
        P::store(&self.inner.stores)
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
                Handle::from_slot(Slot::shared(name, instance, 1))
            }
        }
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
        let classes = &self.inner.classes;
        let (config, ring_capacity) =
            match resolve::cached_default(classes, store, &file, &code, name) {
                Some(found) => found,
                None => resolve::resolve_layers::<P>(classes, &file, &code, name, &mut ())?,
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
                instance.instrument(self.histograms(&file));
                let capture = self
                    .inner
                    .record_instance_events
                    .then(|| Box::new(Mutex::new(instance.subscribe_events())));
                let slot = Slot::shared(Arc::clone(&name), instance, ring_capacity);
                self.tap(&slot, slot.load());
                v.insert(Entry {
                    slot: Arc::clone(&slot),
                    capture,
                });
                // Published while the shard is still locked: nobody can remove
                // or replace this name before `Added` is out. Not kept in the
                // instance's ring (its existence says as much), which saves
                // the ring's buffer for the many instances nothing happens to.
                self.inner.events.publish_added(P::KIND, &name);
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
        let f: CodeFn<P::Builder> = Arc::new(f);
        self.set_code::<P, _>(name, |i| &mut i.settings, f)
    }

    /// Code defaults for the instance of kind `P` called `name`, beneath
    /// the config file: `f` receives the builder resolved from resil's
    /// defaults and the file, and what the file gives the instance
    /// ([`FileGives`](crate::config::FileGives)), and sets a value only
    /// where the file gives none. They apply before the code configs and
    /// [`configure`](Self::configure) (which win over the file), and a reload
    /// that changes the file re-applies them. Replaces any earlier defaults
    /// for that name. A preset (resil-web's standard client pipeline) is
    /// written this way, so that every value it sets stays overridable from
    /// the file.
    ///
    /// `f` is called now (to validate), whenever the instance is (re)built,
    /// and must not call back into this registry.
    ///
    /// ```
    /// # #[cfg(feature = "yaml")] {
    /// use resil_core::retry::Retry;
    /// use resil_registry::Registry;
    ///
    /// let registry = Registry::from_yaml_str(
    ///     "resilience4j.retry.instances.prices.max-attempts: 2",
    /// ).unwrap();
    /// for name in ["prices", "quotes"] {
    ///     registry
    ///         .configure_defaults::<Retry>(name, |b, file| {
    ///             if file.key("max-attempts") { b } else { b.max_attempts(4) }
    ///         })
    ///         .unwrap();
    /// }
    /// assert_eq!(registry.retry("prices").config().max_attempts(), 2); // the file's
    /// assert_eq!(registry.retry("quotes").config().max_attempts(), 4); // the default
    /// # }
    /// ```
    pub fn configure_defaults<P: Primitive>(
        &self,
        name: &str,
        f: impl Fn(P::Builder, &crate::config::FileGives<'_>) -> P::Builder + Send + Sync + 'static,
    ) -> Result<(), RegistryError> {
        let f: DefaultsFn<P::Builder> = Arc::new(f);
        self.set_code::<P, _>(name, |i| &mut i.defaults, f)
    }

    /// Puts `value` in the code slot `slot` of instance `name` and rebuilds
    /// the instance; a value that leaves it invalid is refused and the
    /// previous one kept.
    fn set_code<P: Primitive, T>(
        &self,
        name: &str,
        slot: impl Fn(&mut InstanceCode<P::Builder>) -> &mut Option<T>,
        value: T,
    ) -> Result<(), RegistryError> {
        let store = self.store::<P>();
        let mut code = store.code.write();
        let previous = slot(code.instances.entry(name.to_owned()).or_default()).replace(value);
        let file = self.file();
        let built = self.resolve::<P>(&file, &code, name).and_then(|config| {
            let twins = store
                .twins
                .reconfigured(&self.inner.classes, &file, &code, name)?;
            Ok((config, twins))
        });
        match built {
            Ok((config, twins)) => {
                let _ = self.replace_with::<P>(name, config, "configure");
                store.twins.install(twins, &self.inner.events, "configure");
                Ok(())
            }
            Err(e) => {
                *slot(code.instances.entry(name.to_owned()).or_default()) = previous;
                Err(e)
            }
        }
    }

    /// Registers (or replaces) a named config of kind `P` in code: instances
    /// and configs naming it inherit from it. `base` is the config it inherits
    /// from (`None`: [`DEFAULT_CONFIG`]); `f` holds its code settings.
    /// `default` itself may have a base, as a file's
    /// `configs.default.base-config` may: the configs it names come first
    /// and do not inherit `default` in turn. Every
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
            let current = entry.slot.load();
            let clock = self.inner.clock.as_ref();
            let (instance, kept) = current
                .rebuilt(Arc::clone(&name), &config, clock)
                .unwrap_or_else(|| (P::create(Arc::clone(&name), config, clock), false));
            carried = kept;
            instance.instrument(self.histograms(&self.file()));
            self.tap(&entry.slot, &instance);
            P::before_install(&self.inner.overrides, &name, current, &instance, carried);
            instance.reassert(&self.inner.overrides, &name);
            entry.drain(self.inner.events.wall());
            if let Some(capture) = &entry.capture {
                *capture.lock() = instance.subscribe_events();
            }
            entry.slot.replace(instance);
            self.inner.events.publish(
                P::KIND,
                name,
                RegistryEventKind::Replaced {
                    cause: cause.into(),
                    state_carried_over: carried,
                },
                Some(&entry.slot.history),
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
        entry.drain(self.inner.events.wall());
        if let Some(capture) = &entry.capture {
            *capture.lock() = instance.subscribe_events();
        }
        self.tap(&entry.slot, &instance);
        entry.slot.replace(instance);
        self.inner.events.publish(
            P::KIND,
            Arc::clone(entry.key()),
            RegistryEventKind::Replaced {
                cause: "replace".into(),
                state_carried_over: false,
            },
            Some(&entry.slot.history),
        );
        Ok(())
    }

    /// Hands the notable events of `instance` (the slot's, or about to be)
    /// to the slot's history and the registry's subscribers as they happen
    /// (see [`Describe::tap_notable`](crate::telemetry::describe::Describe::tap_notable)).
    /// Holds neither the slot nor the registry: a tap outliving either does
    /// nothing.
    fn tap<P: Primitive>(&self, slot: &Arc<Slot<P>>, instance: &P) {
        if !P::TAPS_NOTABLE {
            return;
        }
        let slot = Arc::downgrade(slot);
        let inner = Arc::downgrade(&self.inner);
        instance.tap_notable(Box::new(move |event| {
            let (Some(slot), Some(inner)) = (slot.upgrade(), inner.upgrade()) else {
                return;
            };
            inner
                .events
                .instance_event(P::KIND, slot.name(), event, &slot.history);
        }));
    }

    /// Removes the instance of kind `P` called `name`. Handles still holding
    /// it keep working with it; the next look-up by name creates a new one.
    pub fn remove<P: Primitive>(&self, name: &str) -> Result<(), RegistryError> {
        let store = self.store::<P>();
        // Remove and publish under the shard lock, so a concurrent re-creation
        // of the name announces `Added` after this `Removed`.
        let removed = store.entries.remove_if(name, |key, _| {
            self.inner
                .events
                .publish(P::KIND, Arc::clone(key), RegistryEventKind::Removed, None);
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

    /// How many instances of `kind` the registry holds.
    pub fn len(&self, kind: Kind) -> usize {
        self.inner.stores.counts(kind).0
    }

    /// Whether the registry holds no instance at all.
    pub fn is_empty(&self) -> bool {
        Kind::ALL.iter().all(|k| self.len(*k) == 0)
    }

    /// How many new names of `kind` the cardinality guard has refused.
    pub fn refused_by_cap(&self, kind: Kind) -> u64 {
        self.inner.stores.counts(kind).1
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

    // Error classes, predicates and chaos injections: the names config
    // files use for what code defines.

    /// Registers an error type whose class names config lists may use; its
    /// class names are also the `error.type` of its values in resil's spans
    /// (process-wide, see `resil_core::trace::register_error_type`).
    pub fn register_error_class<E: ErrorClass>(&self) {
        self.inner.classes.register::<E>();
        // Its class is also the `error.type` of its values in resil's spans.
        resil_core::trace::register_error_type::<E>(|e, label| label(e.error_class()));
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

    /// Registers an error a chaos instance may inject, under `name`, for
    /// config files to list in `resilience4j.chaos.instances.<x>.errors`
    /// (a file cannot build a Rust value). While the instance is enabled,
    /// a call whose error type is `E` fails with `make()` at the entry's
    /// `error-rate`, without reaching the downstream. One injection per
    /// error type takes part in an instance: list one name per type.
    /// Register before loading the file; a name registered twice keeps the
    /// later factory.
    ///
    /// ```
    /// # #[cfg(feature = "yaml")] {
    /// use resil_registry::{FileConfig, Registry};
    ///
    /// #[derive(Debug, PartialEq)]
    /// enum InventoryError { Unavailable }
    ///
    /// let registry = Registry::new();
    /// registry.register_chaos_error("unavailable", || InventoryError::Unavailable);
    /// registry.reload(FileConfig::from_yaml_str("
    /// resilience4j.chaos.instances.inventory-query:
    ///   enabled: true
    ///   error-rate: 1.0
    ///   errors: [unavailable]
    /// ").unwrap()).unwrap();
    /// let chaos = registry.chaos("inventory-query");
    /// let out = chaos.call(|| Ok::<u32, InventoryError>(7));
    /// assert_eq!(out.unwrap_err().into_call(), Some(InventoryError::Unavailable));
    /// # }
    /// ```
    pub fn register_chaos_error<E: 'static>(
        &self,
        name: &str,
        make: impl Fn() -> E + Send + Sync + 'static,
    ) {
        chaos::register_error(&self.inner.classes.injections, name, make);
    }

    /// Registers a result a chaos instance may return instead of calling the
    /// downstream, under `name`, for `resilience4j.chaos.instances.<x>.results`
    /// (at the entry's `result-rate`); as
    /// [`register_chaos_error`](Self::register_chaos_error), for successful
    /// values of type `T`.
    pub fn register_chaos_result<T: 'static>(
        &self,
        name: &str,
        make: impl Fn() -> T + Send + Sync + 'static,
    ) {
        chaos::register_result(&self.inner.classes.injections, name, make);
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
        self.inner.classes.check(names, used_in)?;
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
        self.inner.classes.check(names, used_in)?;
        Ok(self.inner.classes.apply_retry(builder, list, names))
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
                    self.inner.events.publish(
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
}
