//! Named resil instances, their configuration and the process-wide registry.
//!
//! Resilience4j users name an instance (`inventory`), configure it once and get
//! the same shared instance everywhere. [`Registry`] does that for every
//! resil-core primitive: look-ups by name are get-or-create, and return a
//! [`Handle`] that follows the instance through reloads and replacements at
//! the cost of one atomic load per use.
//!
//! ```
//! use resil_registry::Registry;
//!
//! let registry = Registry::new();
//! registry.configure_retry("inventory", |b| b.max_attempts(2)).unwrap();
//! let retry = registry.retry("inventory");
//! let mut attempts = 0;
//! let out = retry.call(|| { attempts += 1; Err::<(), _>("HTTP 503") });
//! assert!(out.is_err());
//! assert_eq!(attempts, 2);
//! ```
//!
//! # Where a configuration comes from
//!
//! Lowest precedence first: Resilience4j's defaults; the config file's
//! `default` config, each `base-config` down the chain, the named config, the
//! instance's own settings and the `RESIL_…` environment overrides (all
//! resolved by [`config`]); then the code settings of every config in the
//! chain (registered with [`Registry::add_config`]) and last the instance's
//! own code settings (`configure_*`). Code settings are for what a file cannot
//! say (predicates, interval functions); when they set the same value as the
//! file, code wins. A config without `base-config` inherits from `default`.
//! [`Registry::circuit_breaker_for`]`(id, group)` takes `id`'s settings, else
//! `group`'s, else the default (Spring Cloud's factory).
//!
//! # Files, reloads and the process-wide registry
//!
//! [`Registry::from_file`] (and `from_toml_str` / `from_yaml_str`) builds a
//! registry from a file; [`Registry::reload`] swaps in a new one, validating
//! everything first and applying nothing on any error. Error lists
//! (`record-errors`, `ignore-errors`, `retry-errors`) name error classes
//! ([`ErrorClass`]) the program registers before loading, or `resil::Error`
//! kinds (`timeout`, …). [`registry()`] is the process-wide registry, loaded
//! from the file [`RESIL_CONFIG`] names; [`init`] installs one built in code.
//!
//! # Operating and observing
//!
//! By name: breaker transitions, forced-open and disabled with a TTL and a
//! reason ([`Registry::force_open`]), a rate limiter's limit, a bulkhead's
//! size. [`Registry::snapshot`] (serializable with the `serde` feature) shows
//! every instance's state, metrics, effective configuration with the source
//! of each value, and its recent events; [`Registry::health`] summarises them
//! as UP / DEGRADED / DOWN; `publish_metrics` (feature `metrics`) exports
//! Resilience4j's metric names. A cap on instances per kind (10 000 by
//! default) turns names built from business ids into an error instead of a
//! leak.
//!
//! # Costs
//!
//! A look-up by name hashes the name and takes one shard read lock of a
//! concurrent map; macro call sites do it once per call site. A call through
//! a held [`Handle`] costs one `Acquire` load more than a call on the
//! primitive itself. Replaced instances are retired, not freed, until the
//! registry and its handles are gone (see [`Handle`]).
#![warn(missing_docs, rust_2018_idioms, unreachable_pub)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod config;
pub mod fallback;

mod audit;
mod chain;
mod classes;
mod error;
mod event;
#[cfg(feature = "redis")]
pub mod fleet;
mod global;
mod handle;
mod http_status;
mod inbound;
mod keyed;
mod kind;
mod kinds;
mod manage;
mod overrides;
mod primitive;
mod registry;
mod reload;
mod shadow;
pub mod source;
mod store;
mod switches;
mod telemetry;
mod versions;
mod watch;

pub use crate::audit::{ManagementOutcome, ManagementRequests};
pub use crate::classes::{
    java_simple_names, ErrorClass, ErrorList, ERROR_KIND_NAMES, WELL_KNOWN_JAVA_NAMES,
};
pub use crate::config::{ConfigFileError, FileConfig};
pub use crate::error::{InitError, RegistryError};
pub use crate::event::{RegistryEvent, RegistryEventKind};
pub use crate::global::{
    init, init_from_env, registry, try_registry, InitFromEnvError, RESIL_CONFIG,
};
pub use crate::handle::Handle;
pub use crate::http_status::HttpStatus;
pub use crate::keyed::KeyedFamilySnapshot;
pub use crate::kind::Kind;
pub use crate::overrides::{ChaosSwitch, ManualOverride, Transition, Tuning};
pub use crate::primitive::Primitive;
pub use crate::registry::{
    AttributeSite, Registry, RegistryBuilder, DEFAULT_ALLOW_HEALTH_INDICATOR_TO_FAIL,
    DEFAULT_CONFIG, DEFAULT_MAX_INSTANCES_PER_KIND, DEFAULT_REGISTER_HEALTH_INDICATOR,
};
pub use crate::reload::{ReloadError, ReloadReport};
pub use crate::shadow::{ShadowError, ShadowInstance, ShadowTransition, ShadowTrial};
pub use crate::store::DEFAULT_EVENT_BUFFER_SIZE;
pub use crate::switches::{Switch, SwitchAction};
pub use crate::telemetry::describe::MetricKind;
pub use crate::telemetry::health::{ComponentHealth, Health, Status};
pub use crate::telemetry::in_force::{ConfigSnapshot, SourceSnapshot, SwitchSnapshot};
pub use crate::telemetry::layer::LayerCounts;
pub use crate::telemetry::ring::{FieldValue, RecordedEvent};
pub use crate::telemetry::snapshot::{
    ConfigValue, FallbackSnapshot, InstanceSnapshot, MetricSnapshot, OverrideSnapshot, Snapshot,
};
pub use crate::versions::{
    ConfigReloads, ConfigVersion, KeyChange, VersionError, VersionSource, VersionStatus,
    DEFAULT_CONFIG_HISTORY,
};
pub use crate::watch::DEFAULT_WATCH_DEBOUNCE;
