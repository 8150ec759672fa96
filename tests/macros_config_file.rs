//! An annotated fn configured by a config file: the file's retry and breaker
//! settings, and its error lists naming the classes `#[derive(ErrorClass)]`
//! gives the fn's error type, apply to the fn with no setting in the attribute.
#![cfg(feature = "toml")]

use std::sync::atomic::{AtomicU32, Ordering};

use resil::config::FileConfig;
use resil::{registry, Registry, Rejection};

#[derive(Debug, Clone, PartialEq, resil::ErrorClass)]
enum StoreError {
    Transient,
    NotFound,
    #[error_class(name = "rejected")]
    Rejected,
}

impl From<Rejection> for StoreError {
    fn from(_: Rejection) -> Self {
        StoreError::Rejected
    }
}

const CONFIG: &str = r#"
[resilience4j.retry.instances.macros-file]
max-attempts = 4
wait-duration = "0ms"
retry-exceptions = ["transient"]

[resilience4j.circuitbreaker.instances.macros-file]
sliding-window-size = 10
minimum-number-of-calls = 10
ignore-exceptions = ["not_found"]
"#;

static CALLS: AtomicU32 = AtomicU32::new(0);

#[resil::retry(name = "macros-file")]
#[resil::circuit_breaker(name = "macros-file")]
fn load(fail_with: Option<StoreError>) -> Result<u32, StoreError> {
    CALLS.fetch_add(1, Ordering::SeqCst);
    match fail_with {
        Some(e) => Err(e),
        None => Ok(1),
    }
}

#[test]
fn the_files_settings_and_error_classes_govern_the_annotated_fn() {
    let r = Registry::new();
    r.register_error_class::<StoreError>();
    r.reload(FileConfig::from_toml_str(CONFIG).unwrap())
        .unwrap();
    resil::init(r).unwrap();

    // "transient" is retried: 4 attempts, 4 failed samples.
    assert_eq!(
        load(Some(StoreError::Transient)),
        Err(StoreError::Transient)
    );
    assert_eq!(CALLS.swap(0, Ordering::SeqCst), 4);
    let breaker = registry().circuit_breaker("macros-file");
    assert_eq!(breaker.metrics().failed_calls(), 4);

    // "not_found" is neither retried nor held against the dependency.
    assert_eq!(load(Some(StoreError::NotFound)), Err(StoreError::NotFound));
    assert_eq!(CALLS.swap(0, Ordering::SeqCst), 1);
    assert_eq!(breaker.metrics().failed_calls(), 4);
    assert_eq!(breaker.metrics().ignored_calls(), 1);

    assert_eq!(load(None), Ok(1));
}
