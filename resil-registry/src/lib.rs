//! Named resil instances and their configuration.
//!
//! This crate will hold the registry (default and named configs, `base-config`
//! inheritance, config files, the process-wide registry). Until that lands it
//! only re-exports nothing and provides nothing: depend on `resil-core` directly.
#![warn(missing_docs)]
