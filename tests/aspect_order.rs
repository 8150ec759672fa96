//! One aspect order: the attributes' expansion and the tower layer nest the
//! aspects they share the same way, both read from `resil::options::ORDER`.

use resil::options::{Aspect, ORDER};
use resil::Registry;
use resil_web::tower::ResilienceLayer;

#[test]
fn the_attributes_and_the_layer_nest_their_aspects_in_one_order() {
    // Written innermost first, so only the table can put them in order.
    let expanded: [Aspect; 6] = resil_macros::__expansion_order! {
        #[resil::chaos(name = "order")]
        #[resil::bulkhead(name = "order")]
        #[resil::time_limiter(name = "order")]
        #[resil::rate_limiter(name = "order")]
        #[resil::circuit_breaker(name = "order")]
        #[resil::throttler(name = "order")]
        async fn fetch() -> Result<u32, E> {
            Ok(1)
        }
    };
    assert_eq!(expanded, ResilienceLayer::ORDER);

    let registry = Registry::new();
    let layer = ResilienceLayer::builder(&registry, "order")
        .chaos()
        .bulkhead()
        .time_limiter()
        .rate_limiter()
        .circuit_breaker()
        .throttler()
        .build();
    assert_eq!(layer.aspects().collect::<Vec<_>>(), expanded);

    let some = ResilienceLayer::builder(&registry, "order")
        .bulkhead()
        .circuit_breaker()
        .build();
    assert_eq!(
        some.aspects().collect::<Vec<_>>(),
        [Aspect::CircuitBreaker, Aspect::Bulkhead]
    );
}

#[test]
fn the_attributes_nest_every_aspect_in_the_table_order() {
    let expanded: [Aspect; 8] = resil_macros::__expansion_order! {
        #[resil::chaos(name = "order")]
        #[resil::bulkhead(name = "order")]
        #[resil::time_limiter(name = "order")]
        #[resil::rate_limiter(name = "order")]
        #[resil::circuit_breaker(name = "order")]
        #[resil::throttler(name = "order")]
        #[resil::hedge(name = "order")]
        #[resil::retry(name = "order")]
        async fn fetch() -> Result<u32, E> {
            Ok(1)
        }
    };
    assert_eq!(expanded, ORDER);

    // The client layer: Retry and Hedge outside the same stack, so a client
    // stack nests all eight as the attributes do.
    let registry = Registry::new();
    let client = ResilienceLayer::builder(&registry, "order")
        .chaos()
        .bulkhead()
        .time_limiter()
        .rate_limiter()
        .circuit_breaker()
        .throttler()
        .hedge()
        .retry()
        .build();
    assert_eq!(client.aspects().collect::<Vec<_>>(), ORDER);
}

#[test]
fn a_per_fn_order_overrides_the_table() {
    let expanded: [Aspect; 2] = resil_macros::__expansion_order! {
        #[resil::retry(name = "order")]
        #[resil::circuit_breaker(name = "order", order = [circuit_breaker, retry])]
        fn fetch() -> Result<u32, E> {
            Ok(1)
        }
    };
    assert_eq!(expanded, [Aspect::CircuitBreaker, Aspect::Retry]);
}
