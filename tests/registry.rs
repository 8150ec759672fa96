//! The registry through the facade: the names the macros and users rely on.

use resil::circuit_breaker::State;
use resil::{ErrorClass, Handle, Registry};

#[derive(Debug)]
struct Unavailable;

impl ErrorClass for Unavailable {
    fn error_class(&self) -> &'static str {
        "unavailable"
    }
    fn error_classes() -> &'static [&'static str] {
        &["unavailable"]
    }
}

#[test]
fn a_registry_handle_protects_calls_and_follows_a_reconfiguration() {
    let registry = Registry::new();
    registry.register_error_class::<Unavailable>();
    let breaker: Handle<resil::circuit_breaker::CircuitBreaker> =
        registry.circuit_breaker("inventory");
    registry
        .configure_circuit_breaker("inventory", |b| {
            b.sliding_window_size(2).minimum_number_of_calls(2)
        })
        .unwrap();
    for _ in 0..2 {
        let _ = breaker.call(|| Err::<(), _>(Unavailable));
    }
    assert_eq!(breaker.state(), State::Open);
    assert!(registry
        .error_class_names()
        .contains(&"unavailable".to_owned()));
    let _: fn() -> &'static Registry = resil::registry;
    let _: fn(Registry) -> Result<(), resil::registry_crate::InitError> = resil::init;
}

/// A base on `default` in code works as it does in a file
/// (`configs.default.base-config`): the base's settings come first, then
/// `default`'s, for every name nothing else configures; the base does not
/// inherit `default` back (no cycle).
#[test]
fn a_default_config_registered_in_code_may_have_a_base() {
    use resil::retry::Retry;
    let registry = Registry::new();
    registry
        .add_config::<Retry>("shared", None, |b| b.max_attempts(7))
        .unwrap();
    registry
        .add_config::<Retry>("default", Some("shared"), |b| {
            b.wait_duration(std::time::Duration::from_millis(20))
        })
        .unwrap();
    let retry = registry.retry("anything");
    assert_eq!(retry.config().max_attempts(), 7, "the base's setting");
    assert_eq!(
        retry.config().wait_duration(),
        std::time::Duration::from_millis(20),
        "default's own setting"
    );
    // `shared` alone: its own settings, not `default`'s.
    registry.use_config::<Retry>("direct", "shared").unwrap();
    assert_eq!(registry.retry("direct").config().max_attempts(), 7);
    assert_eq!(
        registry.retry("direct").config().wait_duration(),
        std::time::Duration::from_millis(500)
    );
}
