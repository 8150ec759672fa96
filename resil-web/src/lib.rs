//! resil inside a web service: tower layers over the registry's named
//! instances, HTTP and gRPC outcome classification, and a mountable axum
//! actuator with liveness, readiness and a Prometheus scrape.
//!
//! Every part is behind its own cargo feature, re-exported by the `resil`
//! facade under the same feature and path (`resil::tower`, `resil::http`,
//! `resil::grpc`, `resil::actuator`).
#![cfg_attr(docsrs, feature(doc_cfg))]
#![warn(missing_docs, rust_2018_idioms, unreachable_pub)]
#![forbid(unsafe_code)]

#[cfg(feature = "tower")]
#[cfg_attr(docsrs, doc(cfg(feature = "tower")))]
pub mod tower;

#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub mod http;

#[cfg(feature = "grpc")]
#[cfg_attr(docsrs, doc(cfg(feature = "grpc")))]
pub mod grpc;

#[cfg(feature = "axum")]
#[cfg_attr(docsrs, doc(cfg(feature = "axum")))]
pub mod actuator;

#[cfg(feature = "reqwest-middleware")]
#[cfg_attr(docsrs, doc(cfg(feature = "reqwest-middleware")))]
pub mod reqwest;
