//! Named resil instances and their configuration.
//!
//! [`config`] loads Resilience4j-style config files (TOML and YAML, behind the
//! `toml` and `yaml` features) and `RESIL_…` environment overrides into a
//! validated [`FileConfig`].
#![warn(missing_docs)]
#![cfg_attr(docsrs, feature(doc_cfg))]

pub mod config;

pub use config::{ConfigFileError, FileConfig};
