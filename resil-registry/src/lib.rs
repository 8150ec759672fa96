//! Named resil instances, their configuration and the process-wide registry.
//!
//! Resilience4j users name an instance (`inventory`), configure it once and get
//! the same shared instance everywhere. [`Registry`] does that for the six
//! resil-core primitives: look-ups by name are get-or-create, and return a
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
//! Where a configuration comes from, lowest precedence first: Resilience4j's
//! defaults, the `default` config, each `base-config` down the chain, the named
//! config, the instance's own settings, and last the code settings given to
//! `configure_*`.
//!
//! [`config`] loads Resilience4j-style config files (TOML and YAML, behind the
//! `toml` and `yaml` features) and `RESIL_…` environment overrides into a
//! validated [`FileConfig`].
#![warn(missing_docs, rust_2018_idioms, unreachable_pub)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod config;

mod classes;
mod error;
mod event;
mod global;
mod handle;
mod kind;
mod manage;
mod registry;
mod telemetry;

pub use crate::classes::{ErrorClass, ErrorList, ERROR_KIND_NAMES};
pub use crate::config::{ConfigFileError, FileConfig};
pub use crate::error::{InitError, RegistryError};
pub use crate::event::{RegistryEvent, RegistryEventKind};
pub use crate::global::{init, registry};
pub use crate::handle::Handle;
pub use crate::kind::{Kind, Primitive};
pub use crate::manage::{ManualOverride, Transition};
pub use crate::registry::{
    Registry, RegistryBuilder, DEFAULT_CONFIG, DEFAULT_EVENT_BUFFER_SIZE,
    DEFAULT_MAX_INSTANCES_PER_KIND,
};
pub use crate::telemetry::health::{ComponentHealth, Health, Status};
pub use crate::telemetry::ring::RecordedEvent;
pub use crate::telemetry::snapshot::{
    ConfigValue, InstanceSnapshot, MetricSnapshot, OverrideSnapshot, Snapshot,
};
