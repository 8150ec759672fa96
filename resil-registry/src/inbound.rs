//! The registry's inbound guard: one
//! [`InboundGuard`](resil_core::inbound::InboundGuard) per registry, built
//! from the config file's `resil.inbound-guard` section on first use,
//! re-tuned in place by every reload, and published with the instances'
//! metrics (`telemetry/inbound.rs`).

use std::sync::OnceLock;

use resil_core::clock::SharedClock;
use resil_core::inbound::{InboundGuard, InboundGuardConfig};

use crate::config::FileConfig;
use crate::registry::Registry;

/// The registry's guard, once something asked for it.
#[derive(Debug, Default)]
pub(crate) struct InboundSlot(OnceLock<InboundGuard>);

impl InboundSlot {
    /// The guard, if one was made.
    pub(crate) fn get(&self) -> Option<&InboundGuard> {
        self.0.get()
    }
}

/// The section's thresholds, or resil-core's defaults without one.
fn config_of(file: &FileConfig) -> InboundGuardConfig {
    file.inbound_guard().copied().unwrap_or_default()
}

impl Registry {
    /// The registry's server-wide inbound guard (Sentinel's system rules;
    /// see [`resil_core::inbound`]): made on the first call from the loaded
    /// file's `resil.inbound-guard` section (the defaults without one) on
    /// the registry's clock, then the same guard on every call. Put it in
    /// front of every route (resil-web's `InboundGuardLayer`) and start its
    /// CPU sampler ([`InboundGuard::spawn_system_sampler`]).
    ///
    /// A reload puts the section's new thresholds in force in place (the
    /// counts and the window stay); a new `window` or `window-buckets` takes
    /// a restart and is logged. The guard's counts and readings are in the
    /// registry's Prometheus exposition (`resil_inbound_guard_…`).
    ///
    /// The process-wide registry's guard is
    /// [`process_wide`](InboundGuard::process_wide): its permits carry no
    /// reference count.
    ///
    /// ```
    /// # #[cfg(feature = "yaml")] {
    /// let registry = resil_registry::Registry::from_yaml_str(
    ///     "resil.inbound-guard.max-in-flight: 1\n",
    /// )
    /// .unwrap();
    /// let guard = registry.inbound_guard();
    /// let held = guard.try_enter().unwrap();
    /// assert!(guard.try_enter().is_err()); // one in flight already
    /// drop(held);
    /// assert!(registry.prometheus_text().contains(
    ///     "resil_inbound_guard_requests_total{kind=\"in_flight\"} 1"
    /// ));
    /// # }
    /// ```
    pub fn inbound_guard(&self) -> InboundGuard {
        self.inner
            .inbound
            .0
            .get_or_init(|| {
                let config = config_of(&self.file());
                // Sentinel's 1 ms timing, one relaxed load per reading
                // (see `InboundGuard::new`), unless the registry has a clock.
                let clock = self.inner.clock.clone().unwrap_or_else(SharedClock::coarse);
                if crate::global::is_global(self) {
                    InboundGuard::process_wide(config, clock)
                } else {
                    InboundGuard::with_clock(config, clock)
                }
            })
            .clone()
    }

    /// After a reload installed `file`: the guard, if made, takes the
    /// section's thresholds.
    pub(crate) fn retune_inbound_guard(&self, file: &FileConfig) {
        let Some(guard) = self.inner.inbound.get() else {
            return;
        };
        let config = config_of(file);
        if guard.config() != config && !guard.reconfigure(config) {
            let running = guard.config();
            tracing::warn!(
                window = ?running.window(),
                window_buckets = running.window_buckets(),
                "resil.inbound-guard: the window's shape (window, window-buckets) cannot change while the guard runs; it applies at the next start, and the reload's other thresholds wait with it"
            );
        }
    }
}
