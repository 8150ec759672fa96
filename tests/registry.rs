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
