//! Which timers keep a percentile histogram: Spring's
//! `management.metrics.distribution.percentiles-histogram.<meter prefix>`
//! keys in the config file, else the registry builder's setting.
//!
//! ```yaml
//! management:
//!   metrics:
//!     distribution:
//!       percentiles-histogram:
//!         resilience4j.circuitbreaker.calls: true
//! ```
//!
//! As in Spring, a key names a meter or a prefix of its dotted name
//! (`resilience4j.circuitbreaker`, `resilience4j`), `all` names every
//! meter, and the most specific key decides.

use crate::config::FileConfig;

/// Where Spring keeps the histogram switches.
pub(crate) const HISTOGRAM_PREFIX: &str = "management.metrics.distribution.percentiles-histogram";

/// The one timer resil keeps: the breaker's calls.
pub(crate) const BREAKER_CALLS: &str = "resilience4j.circuitbreaker.calls";

/// Whether meter `meter` (dotted, `resilience4j.circuitbreaker.calls`) keeps
/// a histogram: the file's most specific key, else `code`.
pub(crate) fn wanted(file: &FileConfig, code: bool, meter: &str) -> bool {
    let mut prefixes: Vec<&str> = meter
        .char_indices()
        .filter(|&(_, c)| c == '.')
        .map(|(i, _)| &meter[..i])
        .collect();
    prefixes.push(meter);
    prefixes.reverse();
    prefixes.push("all");
    for prefix in prefixes {
        let key = format!("{HISTOGRAM_PREFIX}.{prefix}");
        if let Some(value) = file.property(&key) {
            match value.trim().to_ascii_lowercase().as_str() {
                "true" => return true,
                "false" => return false,
                _ => tracing::warn!(
                    key = %key,
                    value,
                    "`{key}` is `{value}`: expected `true` or `false`; ignored"
                ),
            }
        }
    }
    code
}
