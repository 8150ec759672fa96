//! `#[resil::bulkhead(name = "…", kind = "adaptive")]` protects the fn with
//! the registry's adaptive bulkhead of that name (configured by the file's
//! `resilience4j.adaptive-bulkhead.instances.<name>`): its limit refuses the
//! calls above it, alone and under a retry, and every permit comes back.
#![cfg(feature = "yaml")]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Once;

use resil::{registry, Registry, Rejection};

#[derive(Debug, PartialEq)]
enum AppError {
    Full,
    Down,
}

impl From<Rejection> for AppError {
    fn from(r: Rejection) -> Self {
        match r {
            Rejection::BulkheadFull(_) => AppError::Full,
            _ => AppError::Down,
        }
    }
}

/// Each test uses its own instances of the process-wide registry.
static INIT: Once = Once::new();

fn configured_registry() {
    INIT.call_once(|| {
        let r = Registry::from_yaml_str(
            "
resilience4j.adaptive-bulkhead.instances:
  macros-adaptive:
    initial-limit: 1
    min-limit: 1
    max-limit: 4
  macros-adaptive-retried:
    initial-limit: 2
    max-limit: 2
resilience4j.retry.instances.macros-adaptive-retried:
  max-attempts: 3
  wait-duration: 0ms
",
        )
        .unwrap();
        resil::init(r).unwrap();
    });
}

static CALLS: AtomicU32 = AtomicU32::new(0);

#[resil::bulkhead(name = "macros-adaptive", kind = "adaptive")]
async fn query(reentrant: bool) -> Result<u32, AppError> {
    CALLS.fetch_add(1, Ordering::SeqCst);
    if reentrant {
        // A second call while this one holds the only permit (limit 1).
        return Box::pin(query(false)).await;
    }
    Ok(7)
}

#[resil::bulkhead(name = "macros-adaptive", kind = "adaptive")]
fn query_sync() -> Result<u32, AppError> {
    let limit = registry().adaptive_bulkhead("macros-adaptive").limit();
    let free = registry()
        .adaptive_bulkhead("macros-adaptive")
        .available_concurrent_calls();
    Ok(limit * 10 + free)
}

#[tokio::test]
async fn the_attribute_uses_the_registry_s_adaptive_bulkhead() {
    configured_registry();
    let bulkhead = registry().adaptive_bulkhead("macros-adaptive");
    assert_eq!(bulkhead.config().max_limit(), 4, "the file's instance");

    assert_eq!(query(false).await, Ok(7));
    // Inside, the only permit is taken: the nested call is refused.
    assert_eq!(query(true).await, Err(AppError::Full));
    assert_eq!(
        CALLS.load(Ordering::SeqCst),
        2,
        "the refused call never ran"
    );
    assert_eq!(bulkhead.metrics().rejected_calls(), 1);
    assert_eq!(bulkhead.available_concurrent_calls(), 1, "permits back");

    // The sync form: inside, limit 1 with its one permit taken.
    assert_eq!(query_sync(), Ok(10));
    assert_eq!(bulkhead.available_concurrent_calls(), 1);
}

static RETRIED: AtomicU32 = AtomicU32::new(0);

#[resil::retry(name = "macros-adaptive-retried")]
#[resil::bulkhead(name = "macros-adaptive-retried", kind = "adaptive")]
async fn flaky() -> Result<u32, AppError> {
    if RETRIED.fetch_add(1, Ordering::SeqCst) < 2 {
        Err(AppError::Down)
    } else {
        Ok(1)
    }
}

#[tokio::test]
async fn under_a_retry_each_attempt_takes_and_returns_a_permit() {
    configured_registry();
    assert_eq!(flaky().await, Ok(1));
    assert_eq!(RETRIED.load(Ordering::SeqCst), 3);
    let bulkhead = registry().adaptive_bulkhead("macros-adaptive-retried");
    assert_eq!(bulkhead.available_concurrent_calls(), bulkhead.limit());
    assert_eq!(bulkhead.metrics().rejected_calls(), 0);
}
