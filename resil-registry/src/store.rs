//! What the registry keeps per kind: the instances, the settings made in
//! code, and the walk over every kind in the registry's fixed order.
//!
//! Below the registry in the module order: `registry`, `reload`, `manage`
//! and `telemetry` import from here, never the other way round.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use dashmap::DashMap;
use parking_lot::{Mutex, RwLock};
use resil_core::event::EventStream;

use crate::config::FileConfig;
use crate::handle::Slot;
use crate::kind::Kind;
use crate::primitive::{Located, Primitive};
use crate::telemetry::describe::{Describe, Notable};
use crate::telemetry::ring::WallClock;

/// A code setting: a builder transformation attached to a config or instance.
pub(crate) type CodeFn<B> = Arc<dyn Fn(B) -> B + Send + Sync>;

/// Code defaults beneath the file: a builder transformation that is told
/// which keys the file gives the instance (see
/// [`Registry::configure_defaults`](crate::Registry::configure_defaults)).
pub(crate) type DefaultsFn<B> = Arc<dyn Fn(B, &crate::config::FileGives<'_>) -> B + Send + Sync>;

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
    /// The `configure_defaults` closure, applied just after the file.
    pub(crate) defaults: Option<DefaultsFn<B>>,
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
            defaults: None,
            group: None,
            tags: BTreeMap::new(),
            health_indicator: None,
            allow_health_indicator_to_fail: None,
        }
    }
}

impl<B> InstanceCode<B> {
    /// Whether code chose a config, settings or defaults for this name.
    pub(crate) fn has_settings(&self) -> bool {
        self.config.is_some() || self.settings.is_some() || self.defaults.is_some()
    }
}

/// Everything set in code for one kind.
// `pub` (in this private module) because the sealed `Twins` hooks take it;
// nothing outside the crate can reach it.
pub struct CodeSettings<B> {
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
    /// A subscription to the instance's own events, when the registry
    /// records them (drained into the slot's rings on each snapshot). Boxed:
    /// it is rarely on, and the map's buckets stay two pointers wide.
    pub(crate) capture: Option<Box<Mutex<EventStream<<P as Describe>::Event>>>>,
}

impl<P: Primitive> Entry<P> {
    /// Moves the events the instance published since the last collection
    /// into its ring of recent events, logged at DEBUG. Notable events of a
    /// kind that taps them are in its history already (recorded when they
    /// happened); a kind that does not tap them has them put in its history
    /// here, timed at collection.
    pub(crate) fn drain(&self, wall: &WallClock) {
        let Some(capture) = &self.capture else {
            return;
        };
        let events = capture.lock().drain();
        for event in events {
            let notable = event.is_notable();
            if notable && P::TAPS_NOTABLE {
                continue;
            }
            let description = event.describe();
            tracing::debug!(
                target: "resil::events",
                kind = %P::KIND,
                name = self.slot.load_name(),
                event_type = event.event_type(),
                "{description}"
            );
            let recorded = wall.record("instance", event.event_type(), description, event.fields());
            if notable {
                self.slot.history.push(recorded);
            } else {
                self.slot.ring.push(recorded);
            }
        }
    }
}

/// Default size of each instance's ring of recent events (Resilience4j's
/// `event-consumer-buffer-size` default is 100).
pub const DEFAULT_EVENT_BUFFER_SIZE: usize = 100;

/// The instances and settings of one kind.
pub struct Store<P: Primitive> {
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
    pub(crate) default_config: Mutex<Option<DefaultConfig<P>>>,
    /// The kind's twins (the rate limiter's Redis-backed ones).
    pub(crate) twins: P::Twins,
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
            twins: Default::default(),
        }
    }
}

impl<P: Primitive> Store<P> {
    /// The cached default configuration, if it was resolved from `file`.
    pub(crate) fn cached_default(
        &self,
        file: &Arc<FileConfig>,
    ) -> Option<(P::Config, Option<usize>)> {
        match &*self.default_config.lock() {
            Some((cached, config, ring)) if Arc::ptr_eq(cached, file) => {
                Some((config.clone(), *ring))
            }
            _ => None,
        }
    }

    /// Caches the default configuration resolved from `file`.
    pub(crate) fn cache_default(
        &self,
        file: &Arc<FileConfig>,
        config: P::Config,
        ring: Option<usize>,
    ) {
        *self.default_config.lock() = Some((Arc::clone(file), config, ring));
    }
}

impl Stores {
    /// Counts of the store of `kind`: `(instances, refusals by the cap)`.
    pub(crate) fn counts(&self, kind: Kind) -> (usize, u64) {
        struct Counts<'a> {
            stores: &'a Stores,
            kind: Kind,
            found: (usize, u64),
        }
        impl KindVisitor for Counts<'_> {
            fn visit<P: Primitive>(&mut self) {
                if P::KIND == self.kind {
                    let store = P::store(self.stores);
                    self.found = (store.entries.len(), store.refused.load(Ordering::Relaxed));
                }
            }
        }
        let mut counts = Counts {
            stores: self,
            kind,
            found: (0, 0),
        };
        for_each_kind(&mut counts);
        counts.found
    }
}

/// Something done once per kind: [`for_each_kind`] calls
/// [`visit`](Self::visit) with each primitive type in the registry's fixed
/// order (the order of [`Kind::ALL`]). The one place that lists the kinds.
pub(crate) trait KindVisitor {
    /// Called once per kind.
    fn visit<P: Primitive>(&mut self);
}

/// Generates, from the list of kinds (`kinds!`): [`Stores`], one store per
/// kind; where each kind finds its store and its file section
/// ([`Located`]); and [`for_each_kind`], the walk over them in the list's
/// order.
macro_rules! stores {
    ($(
        $(#[doc = $doc:expr])*
        $([cfg($cfg:meta)])?
        $field:ident, $try_get:ident, $configure:ident: $ty:path, $config:path, $builder:path;
    )*) => {
        /// One store per kind. Each [`Primitive`] finds its own field
        /// ([`Located::store`]), so a generic method reaches its kind's store
        /// without a type test.
        #[derive(Default)]
        pub struct Stores {
            $($(#[cfg($cfg)])? pub(crate) $field: Store<$ty>,)*
        }

        $(
            $(#[cfg($cfg)])?
            impl Located for $ty {
                type Options = $config;

                fn store(stores: &Stores) -> &Store<Self> {
                    &stores.$field
                }

                fn section(file: &FileConfig) -> &crate::config::Section<$config> {
                    file.$field()
                }
            }
        )*

        /// Calls `visitor` for every kind, in the list's order (the order
        /// of [`Kind::ALL`]).
        pub(crate) fn for_each_kind(visitor: &mut impl KindVisitor) {
            $(
                $(#[cfg($cfg)])?
                visitor.visit::<$ty>();
            )*
        }
    };
}
crate::kinds::kinds!(stores);
