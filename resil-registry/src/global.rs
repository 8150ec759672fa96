//! The process-wide registry.

use std::sync::OnceLock;

use crate::config::{ConfigFileError, FileConfig};
use crate::error::InitError;
use crate::registry::Registry;

static GLOBAL: OnceLock<Registry> = OnceLock::new();

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

/// The registry the environment describes: `RESIL_CONFIG`'s file (if set)
/// with the `RESIL_…` overrides.
pub(crate) fn from_environment() -> Result<Registry, ConfigFileError> {
    from_vars(std::env::vars())
}

pub(crate) fn from_vars(
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<Registry, ConfigFileError> {
    let vars: Vec<(String, String)> = vars.into_iter().collect();
    let file = match vars.iter().find(|(k, _)| k == RESIL_CONFIG) {
        Some((_, path)) => FileConfig::from_file_with_env(path, vars.iter().cloned())?,
        None => FileConfig::from_env(vars.iter().cloned())?,
    };
    Registry::from_file_config(file)
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
}
