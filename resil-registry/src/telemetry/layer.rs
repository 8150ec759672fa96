//! What a tower layer (resil-web's `ResilienceLayer`) did with the requests
//! it finished: the service it protects answered them (whatever it
//! answered), or the layer answered them itself with a refusal or a
//! timeout, by the refusal's kind. A request whose future is dropped before
//! it finishes is not counted. Published as
//! `resil_layer_requests_total{name, kind=passed|call_not_permitted|…}`.
//!
//! Each refusal is also counted by the instance that refused (the
//! breaker's not-permitted counter, the bulkhead's rejected calls, …); this
//! counter says which requests of one layer ended how, so that they add up
//! to the requests the layer finished.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use resil_core::{Counter, ErrorKind, Rejection};

use super::describe::{Family, Metric};
use super::exposition::Sample;
use crate::registry::Registry;

/// The refusal kinds a layer counts, in the order of [`Rejection`]'s variants.
const REFUSALS: [ErrorKind; 8] = ErrorKind::REJECTIONS;

const REQUESTS: Family = Family::new(
    "resil_layer_requests",
    "Requests a tower layer finished: answered by the service it protects (passed), or refused or timed out, by the refusal's kind",
);

/// The counts of the layers called by one name (see the module docs).
#[derive(Debug, Default)]
pub struct LayerCounts {
    passed: Counter,
    refused: [AtomicU64; REFUSALS.len()],
}

impl LayerCounts {
    /// The protected service answered a request (whatever it answered).
    #[inline]
    pub fn passed(&self) {
        self.passed.increment();
    }

    /// A request was answered with `rejection` instead.
    #[cold]
    pub fn refused(&self, rejection: &Rejection) {
        // A refusal kind added to resil-core later than this list counts
        // with the last kind (the deadline) rather than being lost.
        let kind = rejection.kind();
        let i = REFUSALS
            .iter()
            .position(|&k| k == kind)
            .unwrap_or(REFUSALS.len() - 1);
        self.refused[i].fetch_add(1, Ordering::Relaxed);
    }

    /// Requests the protected service answered.
    pub fn passed_requests(&self) -> u64 {
        self.passed.get()
    }

    /// Requests answered with a refusal of `kind`.
    pub fn refused_requests(&self, kind: ErrorKind) -> u64 {
        REFUSALS
            .iter()
            .position(|&k| k == kind)
            .map_or(0, |i| self.refused[i].load(Ordering::Relaxed))
    }
}

/// The layers' counts, by name.
#[derive(Debug, Default)]
pub(crate) struct Layers(parking_lot::Mutex<BTreeMap<String, Arc<LayerCounts>>>);

impl Layers {
    pub(crate) fn samples(&self, out: &mut Vec<Sample>) {
        for (name, counts) in self.0.lock().iter() {
            let kinds = std::iter::once(("passed", counts.passed_requests())).chain(
                REFUSALS
                    .iter()
                    .map(|&k| (k.as_str(), counts.refused_requests(k))),
            );
            for (kind, n) in kinds {
                out.push(Sample {
                    labels: vec![("name", name.clone()), ("kind", kind.to_owned())],
                    metric: Metric::counter(REQUESTS, None, n),
                });
            }
        }
    }
}

impl Registry {
    /// The counts of the tower layers called `name` (created on first use;
    /// every layer of that name shares them). resil-web's layer counts every
    /// request it finishes here; the registry publishes them with the
    /// instances' metrics.
    pub fn layer_counts(&self, name: &str) -> Arc<LayerCounts> {
        Arc::clone(
            self.inner
                .layers
                .0
                .lock()
                .entry(name.to_owned())
                .or_default(),
        )
    }
}
