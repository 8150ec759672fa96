//! One [`InboundGuard`](resil_core::inbound::InboundGuard) in front of every
//! route: [`InboundGuardLayer`] refuses a request the guard refuses with
//! `503 Service Unavailable` and `Retry-After`, before the inner service
//! sees it; the [`Admitted`] extractor does the same for one axum handler.
//!
//! ```
//! use resil_core::inbound::{InboundGuard, InboundGuardConfig};
//! use resil_web::tower::InboundGuardLayer;
//! use tower::{Service, ServiceExt};
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! let guard = InboundGuard::new(InboundGuardConfig::builder().max_in_flight(1).build().unwrap());
//! let mut svc = tower_layer::Layer::layer(
//!     &InboundGuardLayer::new(guard.clone()),
//!     tower::service_fn(|_: http::Request<()>| async {
//!         Ok::<_, std::convert::Infallible>(http::Response::new(String::from("ok")))
//!     }),
//! );
//! let held = guard.try_enter().unwrap(); // one request in flight already
//! let refused = svc.ready().await.unwrap().call(http::Request::new(())).await.unwrap();
//! assert_eq!(refused.status(), 503);
//! assert_eq!(refused.headers()["retry-after"], "1");
//! drop(held);
//! let ok = svc.ready().await.unwrap().call(http::Request::new(())).await.unwrap();
//! assert_eq!(ok.status(), 200);
//! # }
//! ```
//!
//! Put the layer outermost (`Router::layer` after every other layer), so a
//! refused request costs nothing else. The guard's refusals are counted per
//! reason ([`InboundGuardMetrics`](resil_core::inbound::InboundGuardMetrics)).

mod future;
mod layer;
mod service;

pub use self::future::InboundFuture;
pub use self::layer::InboundGuardLayer;
pub use self::service::{overloaded_response, Admitted, InboundGuardService};
