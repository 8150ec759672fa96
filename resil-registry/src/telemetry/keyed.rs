//! What the keyed families hold and did, per family — never per key: keys
//! in use, created, evicted (idle or to make room) and refused, labelled
//! with the family's `name` and its `aspect` (`rate_limiter`,
//! `circuit_breaker`, `bulkhead`).

use resil_core::keyed::KeyedCounts;

use super::describe::{Family, Metric};
use super::exposition::Sample;

const KEYS: Family = Family::new(
    "resil_keyed_keys",
    "Keys a keyed family holds now (one instance each), by family (name) and aspect",
);

const CREATED: Family = Family::new(
    "resil_keyed_keys_created",
    "Keys a keyed family created on their first use",
);

const EVICTED: Family = Family::new(
    "resil_keyed_keys_evicted",
    "Keys a keyed family evicted, because they were idle for idle-ttl or to make room for a new key when full (kind)",
);

const REFUSED: Family = Family::new(
    "resil_keyed_keys_refused",
    "New keys a full keyed family refused because no key held could be evicted (permits out, an OPEN breaker, a call in flight)",
);

/// The samples of one family.
pub(crate) fn samples(name: &str, aspect: &'static str, c: KeyedCounts, out: &mut Vec<Sample>) {
    let labels = || vec![("name", name.to_owned()), ("aspect", aspect.to_owned())];
    out.push(Sample {
        labels: labels(),
        metric: Metric::gauge(KEYS, None, c.in_use as f64),
    });
    out.push(Sample {
        labels: labels(),
        metric: Metric::counter(CREATED, None, c.created),
    });
    for (kind, n) in [("idle", c.evicted_idle), ("full", c.evicted_full)] {
        let mut labels = labels();
        labels.push(("kind", kind.to_owned()));
        out.push(Sample {
            labels,
            metric: Metric::counter(EVICTED, None, n),
        });
    }
    out.push(Sample {
        labels: labels(),
        metric: Metric::counter(REFUSED, None, c.refused),
    });
}
