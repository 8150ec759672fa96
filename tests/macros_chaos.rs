//! `#[resil::chaos(name = "…")]`: the registry's chaos instance, innermost in
//! the fixed order, off until management switches it on. Every other aspect
//! sees an injected fault as a real one: a retry retries an injected error,
//! a breaker counts it, and the downstream is never reached.
#![cfg(feature = "yaml")]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Once;
use std::time::Duration;

use resil::{registry, Registry, Rejection};

#[derive(Debug, Clone, PartialEq)]
enum AppError {
    Unavailable,
    Refused,
}

impl From<Rejection> for AppError {
    fn from(_: Rejection) -> Self {
        AppError::Refused
    }
}

static INIT: Once = Once::new();

fn configured_registry() {
    INIT.call_once(|| {
        let r = Registry::new();
        r.register_chaos_error("unavailable", || AppError::Unavailable);
        r.reload(
            resil::config::FileConfig::from_yaml_str(
                "
resilience4j:
  chaos.instances.macros-chaos:
    error-rate: 1.0
    errors: [unavailable]
  retry.instances.macros-chaos:
    max-attempts: 3
    wait-duration: 0ms
  circuitbreaker.instances.macros-chaos:
    minimum-number-of-calls: 100
",
            )
            .unwrap(),
        )
        .unwrap();
        resil::init(r).unwrap();
    });
}

static REACHED: AtomicU32 = AtomicU32::new(0);

// Written outermost: the fixed order still puts chaos innermost.
#[resil::chaos(name = "macros-chaos")]
#[resil::retry(name = "macros-chaos")]
#[resil::circuit_breaker(name = "macros-chaos")]
async fn stock(sku: u32) -> Result<u32, AppError> {
    REACHED.fetch_add(1, Ordering::SeqCst);
    Ok(sku)
}

#[tokio::test]
async fn off_it_changes_nothing_and_on_every_aspect_sees_the_injected_error() {
    configured_registry();
    assert_eq!(stock(7).await, Ok(7));
    assert_eq!(REACHED.load(Ordering::SeqCst), 1, "off: the call runs");

    registry()
        .enable_chaos("macros-chaos", Some(Duration::from_secs(3600)), "drill")
        .unwrap();
    assert_eq!(stock(7).await, Err(AppError::Unavailable));
    assert_eq!(REACHED.load(Ordering::SeqCst), 1, "never reached while on");
    let chaos = registry().chaos("macros-chaos");
    assert_eq!(
        chaos.metrics().errors_injected(),
        3,
        "one per retry attempt: chaos is inside the retry"
    );
    let breaker = registry().circuit_breaker("macros-chaos");
    assert_eq!(
        breaker.metrics().failed_calls(),
        3,
        "the breaker, inside the retry, counted each injected error"
    );

    registry()
        .disable_chaos("macros-chaos", "drill over")
        .unwrap();
    assert_eq!(stock(8).await, Ok(8));
    assert_eq!(REACHED.load(Ordering::SeqCst), 2);
}
