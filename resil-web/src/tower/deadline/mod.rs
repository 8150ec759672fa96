//! Deadlines over the wire, the server's half: an inbound request's
//! `grpc-timeout` (or timeout header) becomes the [`resil_core::deadline`]
//! its handler runs in.
//!
//! [`DeadlineLayer`] reads the budget a caller sent:
//!
//! - `grpc-timeout` (gRPC's own header, `250m`, `1S`, …), and
//! - an HTTP header in whole milliseconds, by default Envoy's
//!   `x-envoy-expected-rq-timeout-ms` ([`DEFAULT_TIMEOUT_HEADER`]; Envoy
//!   sets it on every request it routes), another with
//!   [`DeadlineLayer::header`];
//!
//! the shorter wins, and a value that does not parse is ignored (the
//! request runs without a deadline, as if it had sent none). The handler
//! then runs inside [`resil_core::deadline::within`]: every resil primitive
//! in it respects the budget (a retry starts no attempt that cannot finish,
//! a time limiter waits at most what is left), a client layer
//! ([`ClientLayer`](crate::tower::client::ClientLayer)) sends the rest of it
//! downstream, and when it is spent the handler is dropped where it stands
//! (its outbound calls with it) and the caller gets a `504 Gateway Timeout`
//! — for a gRPC request, `grpc-status: 4` (`DEADLINE_EXCEEDED`). A request
//! that arrives with a budget of zero is answered so at once, unhandled.
//!
//! A request without either header costs one header look-up each and no
//! allocation; one with a budget boxes its handler's future once (the
//! deadline's scope).
//!
//! ```
//! use resil_web::tower::deadline::DeadlineLayer;
//!
//! let app: axum::Router = axum::Router::new()
//!     .route("/price", axum::routing::get(|| async {
//!         // resil::deadline::remaining() is the caller's budget here.
//!         "42"
//!     }))
//!     .layer(DeadlineLayer::new());
//! # let _ = app;
//! ```

mod future;
mod layer;
mod service;
mod wire;

pub use self::future::DeadlineFuture;
pub use self::layer::DeadlineLayer;
pub use self::service::Deadline;
pub use self::wire::{
    budget_of, grpc_timeout_value, is_grpc, millis_value, parse_grpc_timeout, parse_millis,
    DEFAULT_TIMEOUT_HEADER, GRPC_TIMEOUT,
};
