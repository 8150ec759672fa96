//! The lab's modes, its config file, and the clock every experiment runs on.

use std::time::Duration;

use resil::clock::ManualClock;
use resil::config::FileConfig;
use resil::Registry;

use crate::{defaults, governance, mechanisms, overload, price, tenants};

/// The config file beside the lab.
pub const CONFIG: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/lab/lab.yaml");

/// Every mode, in the order `cargo run --example lab` runs them: eight
/// mechanisms as a Java lab on Resilience4j 2.3.0 runs them, three
/// dependency-governance experiments, `timeout`, a run of Resilience4j's
/// default breaker configuration, `overload`, and `tenants`.
pub const MODES: [&str; 15] = [
    "circuit",
    "slow",
    "classification",
    "bulkhead",
    "async",
    "rate",
    "order",
    "fallback",
    "shared",
    "shared-breaker",
    "amplification",
    "timeout",
    "defaults",
    "overload",
    "tenants",
];

/// What every mode gets: the lab's clock.
///
/// The registry's instances read this clock, so the lab's time moves only
/// when the lab says so: [`Lab::wait`] stands for waiting out an open
/// breaker or a rate-limit cycle, a retry's wait between attempts passes on
/// it at once, and the downstream's "slow" answer moves it while the request
/// is being served. The HTTP is real, and concurrency is real (held requests
/// really hold their slots); what a busy machine cannot change is which side
/// of a threshold a call's duration falls on. Only the time limiter waits on
/// tokio's real timer (its `timeout` mode holds the request until after it
/// fires, whatever the machine's speed).
#[derive(Clone, Debug)]
pub struct Lab {
    /// The clock of the registry's instances (and of the fallback cache).
    pub clock: ManualClock,
    /// `lab.price-cache.expires-after` in lab.yaml: the application's own
    /// setting beside resil's, as a Spring file keeps it.
    pub cache_expires_after: Duration,
}

impl Lab {
    /// Lets `duration` of the lab's time pass.
    pub fn wait(&self, duration: Duration) {
        self.clock.advance(duration);
    }
}

/// The registry from `lab.yaml`, on `clock`: first the error classes the
/// file's lists name, then the file.
pub fn registry(clock: &ManualClock) -> Result<Registry, String> {
    let registry = Registry::builder().clock(clock.clone()).build();
    registry.register_error_class::<price::PriceError>();
    let file = FileConfig::from_file(CONFIG).map_err(|e| e.to_string())?;
    registry.reload(file).map_err(|e| e.to_string())?;
    Ok(registry)
}

/// The fallback cache's expiry, read from lab.yaml's own section.
pub fn cache_expires_after() -> Result<Duration, String> {
    const KEY: &str = "lab.price-cache.expires-after";
    let file = FileConfig::from_file(CONFIG).map_err(|e| e.to_string())?;
    let text = file
        .property(KEY)
        .ok_or_else(|| format!("`{KEY}` is missing from {CONFIG}"))?;
    resil::config::parse_duration(text).map_err(|e| format!("`{KEY}`: {}", e.reason()))
}

/// Configures the process-wide registry (which the annotated fns' call sites
/// use) from `lab.yaml`, on a new lab clock.
pub fn init() -> Result<Lab, String> {
    let clock = ManualClock::new();
    let registry = registry(&clock)?;
    resil::init(registry)
        .map_err(|_| "the process-wide registry was used before it was configured".to_owned())?;
    Ok(Lab {
        clock,
        cache_expires_after: cache_expires_after()?,
    })
}

/// Runs one mode and returns the lines it prints.
pub async fn run(lab: &Lab, mode: &str) -> Vec<String> {
    match mode {
        "circuit" => mechanisms::circuit(lab).await,
        "slow" => mechanisms::slow(lab).await,
        "classification" => mechanisms::classification(lab).await,
        "bulkhead" => mechanisms::bulkhead(lab).await,
        "async" => mechanisms::async_permits(lab).await,
        "rate" => mechanisms::rate(lab).await,
        "order" => mechanisms::order(lab).await,
        "fallback" => mechanisms::fallback(lab).await,
        "timeout" => mechanisms::timeout(lab).await,
        "shared" => governance::shared(lab).await,
        "shared-breaker" => governance::shared_breaker(lab).await,
        "amplification" => governance::amplification(lab).await,
        "defaults" => defaults::run(lab).await,
        "overload" => overload::overload(lab).await,
        "tenants" => tenants::tenants(lab).await,
        other => vec![format!(
            "unknown mode `{other}`; expected one of: {}",
            MODES.join(", ")
        )],
    }
}
