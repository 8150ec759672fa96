//! The kinds of primitive a registry holds: resil-options' [`Section`],
//! named `Kind` here. One enum below every module that names a kind (the
//! config file's sections, errors, events, the stores); what the registry
//! does with each kind is its module in `kinds/`.
//!
//! [`Section`]: resil_options::Section

pub use resil_options::Section as Kind;
