//! The registry's errors: what a look-up, a setting or `init` can refuse.

use std::fmt;

use resil_core::ConfigError;

use crate::kind::Kind;

/// Why the registry refused an operation.
///
/// `Display` is lowercase, names the instance (or config) and says what to do.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum RegistryError {
    /// Two resil attributes give one instance different literal settings:
    /// the second site's are not applied (neither site changes the other's
    /// instance). Give both the same values, or name the instances apart.
    AttributeConflict {
        /// The kind of the instance.
        kind: Kind,
        /// The instance both sites name.
        name: String,
        /// The site whose settings are in force (`src/a.rs:12`).
        first: &'static str,
        /// The site whose settings were refused.
        second: &'static str,
        /// The keys the two sites disagree on (`max_attempts`).
        keys: Vec<String>,
    },
    /// Creating one more instance of `kind` would pass the cap on instances
    /// per kind (see [`RegistryBuilder::max_instances_per_kind`](crate::RegistryBuilder::max_instances_per_kind)).
    CardinalityExceeded {
        /// The kind that is full.
        kind: Kind,
        /// The name that was refused.
        name: String,
        /// The cap.
        limit: usize,
    },
    /// The settings for an instance produce an invalid configuration.
    InvalidConfig {
        /// The kind of the instance.
        kind: Kind,
        /// The instance (or named config) whose settings are invalid.
        name: String,
        /// The first invalid field.
        source: ConfigError,
    },
    /// A code setting (a closure given to `configure_*`) panicked.
    SettingsPanicked {
        /// The kind of the instance.
        kind: Kind,
        /// The instance or config the closure was attached to.
        name: String,
    },
    /// A config names a base config that does not exist.
    UnknownConfig {
        /// The kind of the config.
        kind: Kind,
        /// The missing config.
        name: String,
        /// The chain that led to it, starting with the instance or config that was resolved.
        chain: Vec<String>,
        /// Every config of this kind that exists.
        known: Vec<String>,
    },
    /// Base configs form a cycle.
    CyclicConfig {
        /// The kind of the configs.
        kind: Kind,
        /// The whole chain, ending with the config that repeats.
        chain: Vec<String>,
    },
    /// No instance of `kind` is called `name`.
    NotFound {
        /// The kind looked up.
        kind: Kind,
        /// The name looked up.
        name: String,
    },
    /// An error-class name nobody registered.
    UnknownErrorClass {
        /// The unknown name.
        name: String,
        /// Where it was used (`circuit_breaker.inventory.record-errors`, …).
        used_in: String,
        /// Every registered name (error classes plus `resil::Error` kinds).
        known: Vec<String>,
    },
    /// A management operation the instance's current state does not allow.
    IllegalOperation {
        /// The kind of the instance.
        kind: Kind,
        /// The instance.
        name: String,
        /// What was refused and why.
        reason: String,
    },
}

fn list(items: &[String]) -> String {
    items
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

impl fmt::Display for RegistryError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RegistryError::AttributeConflict {
                kind,
                name,
                first,
                second,
                keys,
            } => write!(
                f,
                "the resil attribute at {second} gives {kind} `{name}` other settings than the one at \
                 {first} ({}): its settings are not applied; write the same values at both sites, \
                 or give each site its own instance name",
                keys.iter().map(|k| format!("`{k}`")).collect::<Vec<_>>().join(", ")
            ),
            RegistryError::CardinalityExceeded { kind, name, limit } => write!(
                f,
                "cannot create {kind} `{name}`: the registry already holds {limit} instances of this kind \
                 (the cap; raise it with `max_instances_per_kind` if the names are not business ids)"
            ),
            RegistryError::InvalidConfig { kind, name, source } => {
                write!(f, "invalid settings for {kind} `{name}`: {source}")
            }
            RegistryError::SettingsPanicked { kind, name } => {
                write!(f, "the code settings for {kind} `{name}` panicked")
            }
            RegistryError::UnknownConfig {
                kind,
                name,
                chain,
                known,
            } => write!(
                f,
                "unknown {kind} config `{name}` (base-config chain: {}); known configs: {}",
                chain.join(" -> "),
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    list(known)
                }
            ),
            RegistryError::CyclicConfig { kind, chain } => write!(
                f,
                "{kind} base-config chain is a cycle: {}",
                chain.join(" -> ")
            ),
            RegistryError::NotFound { kind, name } => {
                write!(f, "no {kind} called `{name}` in the registry")
            }
            RegistryError::UnknownErrorClass {
                name,
                used_in,
                known,
            } => write!(
                f,
                "unknown error class `{name}` in `{used_in}`; registered names: {}",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    list(known)
                }
            ),
            RegistryError::IllegalOperation { kind, name, reason } => {
                write!(f, "{kind} `{name}`: {reason}")
            }
        }
    }
}

impl std::error::Error for RegistryError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            RegistryError::InvalidConfig { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// [`init`](crate::init) was called after the process-wide registry had
/// already been initialised or used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitError(pub(crate) ());

impl fmt::Display for InitError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            "the process-wide registry is already initialised (by an earlier `init` or by a first \
             call to `registry()`); call `init` once, before anything uses the registry",
        )
    }
}

impl std::error::Error for InitError {}
