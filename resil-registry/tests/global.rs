//! The process-wide registry (its own test binary: one process, one registry).

use resil_registry::{init, registry, Registry};

#[test]
fn init_before_use_installs_the_registry_and_init_after_use_is_an_error() {
    let mine = Registry::new();
    mine.configure_retry("inventory", |b| b.max_attempts(9))
        .unwrap();
    init(mine).unwrap();
    assert_eq!(registry().retry("inventory").config().max_attempts(), 9);
    assert!(std::ptr::eq(registry(), registry()));
    let err = init(Registry::new()).unwrap_err();
    assert!(err.to_string().contains("already initialised"), "{err}");
    assert_eq!(
        registry().retry("inventory").config().max_attempts(),
        9,
        "unchanged"
    );
}
