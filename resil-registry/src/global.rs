//! The process-wide registry.

use std::sync::OnceLock;

use std::fmt;

use crate::config::{ConfigFileError, FileConfig};
use crate::error::InitError;
use crate::registry::Registry;
use crate::reload::ReloadError;

static GLOBAL: OnceLock<Registry> = OnceLock::new();

/// Whether `registry` is the process-wide registry.
pub(crate) fn is_global(registry: &Registry) -> bool {
    GLOBAL
        .get()
        .is_some_and(|global| std::sync::Arc::ptr_eq(&global.inner, &registry.inner))
}

/// The environment variable naming the config file the process-wide registry
/// loads on first use.
pub const RESIL_CONFIG: &str = "RESIL_CONFIG";

/// The process-wide registry, created on first use unless [`init`] installed
/// one before: configured from the file `RESIL_CONFIG` names (when set) and the
/// `RESIL_…` environment overrides.
///
/// It never panics: if that configuration is invalid, the error is logged
/// (`tracing` error and standard error) and the registry runs on
/// Resilience4j's defaults. Call [`try_registry`] at start-up to fail fast on
/// a bad configuration instead. Macro call sites look their instances up
/// here (once per call site); tests should build isolated registries with
/// [`Registry::new`].
pub fn registry() -> &'static Registry {
    GLOBAL.get_or_init(|| match from_environment() {
        Ok(registry) => registry,
        Err(e) => {
            tracing::error!(error = %e, "invalid resil configuration; running on the defaults");
            eprintln!("resil: invalid configuration, running on the defaults: {e}");
            Registry::new()
        }
    })
}

/// The process-wide registry, or why the configuration `RESIL_CONFIG` and the
/// `RESIL_…` variables describe is invalid (in which case nothing is
/// installed, and a later call may try again).
pub fn try_registry() -> Result<&'static Registry, ConfigFileError> {
    if let Some(registry) = GLOBAL.get() {
        return Ok(registry);
    }
    let registry = from_environment()?;
    Ok(GLOBAL.get_or_init(|| registry))
}

/// Installs `registry` as the process-wide registry.
///
/// Call it once, at start-up, before anything uses [`registry()`]: a second
/// `init`, or an `init` after the registry was used, is an error (never a
/// silent no-op that would leave the program running on another configuration
/// than the one it built). Programs whose config files name their own error
/// classes build the registry, register the classes, load the file
/// ([`Registry::reload`]) and then `init` it.
pub fn init(registry: Registry) -> Result<(), InitError> {
    GLOBAL.set(registry).map_err(|_| InitError(()))
}

/// Installs the process-wide registry the environment describes (the file
/// `RESIL_CONFIG` names, then the `RESIL_…` overrides), after `setup` has run
/// on it: the one place to register the program's error classes (so the file's
/// `record-errors`/`retry-errors` lists may name them) and code-only settings
/// before the file is applied.
///
/// ```
/// use resil_registry::ErrorClass; // `#[derive(resil::ErrorClass)]` writes this impl
///
/// enum InventoryError { Connection, Business }
///
/// impl ErrorClass for InventoryError {
///     fn error_class(&self) -> &'static str {
///         match self {
///             InventoryError::Connection => "inventory_connection",
///             InventoryError::Business => "inventory_business",
///         }
///     }
///     fn error_classes() -> &'static [&'static str] {
///         &["inventory_connection", "inventory_business"]
///     }
/// }
///
/// let registry = resil_registry::init_from_env(|r| r.register_error_class::<InventoryError>())
///     .expect("a valid RESIL_CONFIG");
/// assert!(registry.error_class_names().contains(&"inventory_connection".to_owned()));
/// // Once only:
/// assert!(resil_registry::init_from_env(|_| {}).is_err());
/// ```
///
/// An error if the registry was already initialised or used (nothing is
/// installed then), or if the configuration is invalid (every problem, with
/// its key path; nothing is installed, and a later call may try again).
pub fn init_from_env(setup: impl FnOnce(&Registry)) -> Result<&'static Registry, InitFromEnvError> {
    if GLOBAL.get().is_some() {
        return Err(InitFromEnvError::Init(InitError(())));
    }
    let vars: Vec<(String, String)> = std::env::vars().collect();
    let registry = set_up_from_vars(&vars, setup)?;
    GLOBAL
        .set(registry)
        .map_err(|_| InitFromEnvError::Init(InitError(())))?;
    Ok(GLOBAL.get().expect("just installed"))
}

/// Why [`init_from_env`] installed nothing.
#[derive(Debug, Clone)]
pub enum InitFromEnvError {
    /// The process-wide registry was already initialised or used.
    Init(InitError),
    /// The configuration is invalid, or names error classes `setup` did not
    /// register.
    Config(ReloadError),
}

impl fmt::Display for InitFromEnvError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InitFromEnvError::Init(e) => fmt::Display::fmt(e, f),
            InitFromEnvError::Config(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl std::error::Error for InitFromEnvError {}

impl From<ReloadError> for InitFromEnvError {
    fn from(e: ReloadError) -> Self {
        InitFromEnvError::Config(e)
    }
}

/// The registry the environment describes: `RESIL_CONFIG`'s file (if set)
/// with the `RESIL_…` overrides.
pub(crate) fn from_environment() -> Result<Registry, ConfigFileError> {
    from_vars(std::env::vars())
}

pub(crate) fn from_vars(
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<Registry, ConfigFileError> {
    let vars: Vec<(String, String)> = vars.into_iter().collect();
    Registry::from_file_config(file_from_vars(&vars)?)
}

/// A registry `setup` ran on, then configured from `vars`.
fn set_up_from_vars(
    vars: &[(String, String)],
    setup: impl FnOnce(&Registry),
) -> Result<Registry, ReloadError> {
    let registry = Registry::new();
    setup(&registry);
    match vars.iter().find(|(k, _)| k == RESIL_CONFIG) {
        // One report for the file's problems and its unknown names.
        Some((_, path)) => registry.reload_file_with_env(path, vars.iter().cloned())?,
        None => registry.reload_from(
            FileConfig::from_env(vars.iter().cloned())?,
            crate::versions::VersionSource::Env,
        )?,
    };
    Ok(registry)
}

/// `RESIL_CONFIG`'s file (if set) with the `RESIL_…` overrides.
fn file_from_vars(vars: &[(String, String)]) -> Result<FileConfig, ConfigFileError> {
    match vars.iter().find(|(k, _)| k == RESIL_CONFIG) {
        Some((_, path)) => FileConfig::from_file_with_env(path, vars.iter().cloned()),
        None => FileConfig::from_env(vars.iter().cloned()),
    }
}

#[cfg(all(test, feature = "toml"))]
mod tests {
    use super::*;

    #[test]
    fn resil_config_names_the_file_and_resil_variables_override_it() {
        let dir = std::env::temp_dir().join(format!("resil-global-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("resil.toml");
        std::fs::write(
            &path,
            "[resilience4j.retry.instances.inventory]\nmax-attempts = 4\nwait-duration = \"0s\"\n",
        )
        .unwrap();
        let vars = vec![
            (RESIL_CONFIG.to_owned(), path.display().to_string()),
            (
                "RESIL_RETRY_INSTANCES_PAYMENTS_MAX_ATTEMPTS".to_owned(),
                "6".to_owned(),
            ),
            ("HOME".to_owned(), "/root".to_owned()),
        ];
        let registry = from_vars(vars).unwrap();
        assert_eq!(registry.retry("inventory").config().max_attempts(), 4);
        assert_eq!(registry.retry("payments").config().max_attempts(), 6);

        std::fs::write(
            &path,
            "[resilience4j.retry.instances.inventory]\nmax-attempts = 0\n",
        )
        .unwrap();
        let err = from_vars(vec![(RESIL_CONFIG.to_owned(), path.display().to_string())])
            .err()
            .unwrap();
        assert!(err.to_string().contains("max-attempts"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    enum Inventory {
        Connection,
    }

    impl crate::ErrorClass for Inventory {
        fn error_class(&self) -> &'static str {
            "inventory_connection"
        }
        fn error_classes() -> &'static [&'static str] {
            &["inventory_connection"]
        }
    }

    #[test]
    fn a_file_naming_the_program_s_error_classes_loads_once_setup_registered_them() {
        let dir = std::env::temp_dir().join(format!("resil-setup-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("resil.toml");
        std::fs::write(
            &path,
            "[resilience4j.retry.instances.inventory]\nwait-duration = \"0s\"\n\
             retry-exceptions = [\"inventory_connection\"]\n",
        )
        .unwrap();
        let vars = vec![(RESIL_CONFIG.to_owned(), path.display().to_string())];
        // Without the class registered first, the file cannot be applied ...
        let err = from_vars(vars.clone()).err().unwrap();
        assert!(err.to_string().contains("inventory_connection"), "{err}");
        // ... with it, the list becomes a predicate.
        let registry = set_up_from_vars(&vars, |r| r.register_error_class::<Inventory>()).unwrap();
        let mut calls = 0;
        let _ = registry.retry("inventory").call(|| {
            calls += 1;
            Err::<(), _>(Inventory::Connection)
        });
        assert_eq!(calls, 3, "inventory_connection is retried");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
