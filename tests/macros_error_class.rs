//! `#[derive(resil::ErrorClass)]`: one stable name per variant, overridable,
//! known to the registry once registered.

use resil::ErrorClass;

#[derive(Debug, resil::ErrorClass)]
#[allow(dead_code)]
enum InventoryError {
    NotFound,
    Unavailable(u16),
    #[error_class(name = "rate-limited-upstream")]
    Throttled {
        retry_after_ms: u64,
    },
    HTTPTimeout,
}

#[test]
fn each_variant_has_a_stable_snake_case_name_unless_renamed() {
    assert_eq!(InventoryError::NotFound.error_class(), "not_found");
    assert_eq!(
        InventoryError::Unavailable(503).error_class(),
        "unavailable"
    );
    assert_eq!(
        InventoryError::Throttled { retry_after_ms: 5 }.error_class(),
        "rate-limited-upstream"
    );
    assert_eq!(InventoryError::HTTPTimeout.error_class(), "http_timeout");
    assert_eq!(
        InventoryError::error_classes(),
        [
            "not_found",
            "unavailable",
            "rate-limited-upstream",
            "http_timeout"
        ]
    );
}

#[test]
fn a_registry_knows_the_derived_names_once_registered() {
    let registry = resil::Registry::new();
    registry.register_error_class::<InventoryError>();
    let names = registry.error_class_names();
    for name in InventoryError::error_classes() {
        assert!(names.iter().any(|n| n == name), "{name} in {names:?}");
    }
}

#[derive(Debug, resil::ErrorClass)]
#[allow(dead_code)]
enum Generic<T: std::fmt::Debug + 'static> {
    Wrapped(T),
}

#[test]
fn generic_enums_derive_too() {
    assert_eq!(Generic::Wrapped(1u8).error_class(), "wrapped");
}
