//! The process-wide registry.

use std::sync::OnceLock;

use crate::error::InitError;
use crate::registry::Registry;

static GLOBAL: OnceLock<Registry> = OnceLock::new();

/// The process-wide registry, created empty on first use unless [`init`]
/// installed one before.
///
/// Macro call sites look their instances up here (once per call site). Tests
/// should build isolated registries with [`Registry::new`] instead.
pub fn registry() -> &'static Registry {
    GLOBAL.get_or_init(Registry::new)
}

/// Installs `registry` as the process-wide registry.
///
/// Call it once, at start-up, before anything uses [`registry()`]: a second
/// `init`, or an `init` after the registry was used, is an error (never a
/// silent no-op that would leave the program running on another configuration
/// than the one it built).
pub fn init(registry: Registry) -> Result<(), InitError> {
    GLOBAL.set(registry).map_err(|_| InitError(()))
}
