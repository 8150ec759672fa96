//! The request's [`Criticality`](resil_core::Criticality), set at the edge: a
//! header, a route, or both, for every primitive the request's handler calls.
//!
//! [`CriticalityLayer`] reads the class of each request — from a header
//! (Google's services pass it between each other; here `x-criticality` by
//! default, with the words `CRITICAL_PLUS`, `CRITICAL`, `SHEDDABLE_PLUS`,
//! `SHEDDABLE` in any case), else the layer's default, which a route sets —
//! puts it in the request's extensions (for the [`RequestCriticality`]
//! extractor) and runs the inner service's future in
//! [`Criticality::scope`](resil_core::Criticality::scope), so every adaptive
//! bulkhead and rate limiter the handler calls, directly or through an
//! attribute, admits the request by its class.
//!
//! A header from outside the trust boundary can claim anything: cap it with
//! [`CriticalityLayer::at_most`] (a public route's client never gets
//! `CRITICAL_PLUS`).
//!
//! ```
//! use resil_core::Criticality;
//! use resil_web::tower::CriticalityLayer;
//! use tower::{Service, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let layer = CriticalityLayer::from_default_header().at_most(Criticality::Critical);
//! let mut svc = tower_layer::Layer::layer(&layer, tower::service_fn(|_: http::Request<()>| async {
//!     Ok::<_, std::convert::Infallible>(Criticality::current())
//! }));
//! let req = |class: &str| http::Request::builder().header("x-criticality", class).body(()).unwrap();
//! assert_eq!(svc.ready().await.unwrap().call(req("sheddable")).await.unwrap(), Criticality::Sheddable);
//! // Capped: a client cannot claim CRITICAL_PLUS.
//! assert_eq!(svc.ready().await.unwrap().call(req("CRITICAL_PLUS")).await.unwrap(), Criticality::Critical);
//! # }
//! ```

mod layer;
mod service;

pub use self::layer::CriticalityLayer;
pub use self::service::{CriticalityService, RequestCriticality};
