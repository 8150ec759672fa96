//! Annotated fns take their instances from the process-wide registry: its
//! configuration applies, and a call site's cached handle follows an instance
//! the registry replaces (as a reload does) without looking the name up again.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Once;

use resil::{registry, Registry, Rejection};

#[derive(Debug, PartialEq)]
struct Down;

impl From<Rejection> for Down {
    fn from(_: Rejection) -> Self {
        Down
    }
}

static INIT: Once = Once::new();

/// The registry this test binary runs with: configured in code before any
/// annotated fn runs.
fn configured_registry() {
    INIT.call_once(|| {
        let r = Registry::new();
        r.configure_retry("macros-registry", |b| {
            b.max_attempts(2).wait_duration(std::time::Duration::ZERO)
        })
        .unwrap();
        resil::init(r).unwrap();
    });
}

static CALLS: AtomicU32 = AtomicU32::new(0);

#[resil::retry(name = "macros-registry")]
fn always_down() -> Result<(), Down> {
    CALLS.fetch_add(1, Ordering::SeqCst);
    Err(Down)
}

#[test]
fn the_registry_configures_the_instance_and_a_replacement_reaches_the_cached_handle() {
    configured_registry();
    assert_eq!(always_down(), Err(Down));
    assert_eq!(
        CALLS.load(Ordering::SeqCst),
        2,
        "max_attempts from the registry"
    );

    // Replace the instance (what a reload does); the call site's static
    // handle sees the new one on the next call.
    registry()
        .configure_retry("macros-registry", |b| {
            b.max_attempts(4).wait_duration(std::time::Duration::ZERO)
        })
        .unwrap();
    assert_eq!(always_down(), Err(Down));
    assert_eq!(CALLS.load(Ordering::SeqCst), 2 + 4);
    assert!(registry().retry("macros-registry").retired_instances() >= 1);
}
