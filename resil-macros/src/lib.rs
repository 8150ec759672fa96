//! resil's attribute macros. They have not landed yet: this crate exports
//! nothing, so no attribute can silently do nothing.
#![warn(missing_docs)]
