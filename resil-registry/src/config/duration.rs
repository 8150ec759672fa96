//! Durations in config files: the option table's one parser and formatter
//! (`resil-options`), re-exported where config users look for them.

pub(crate) use resil_options::duration::EXPECTED_DURATION;
pub use resil_options::duration::{format_duration, parse_duration, ParseDurationError};
