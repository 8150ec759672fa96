//! resil's spans in OpenTelemetry (feature `otel`).
//!
//! resil traces through [`tracing`]: every protected call is a `resil.call`
//! span, each attempt of a retry or a hedge a `resil.attempt` span inside
//! it, and each refusal a span event (see [`crate::trace`] and the README's
//! *Traces*). This module adds no span of its own: it re-exports
//! [`tracing_opentelemetry`], the ecosystem's bridge that turns `tracing`
//! spans into OpenTelemetry spans, and the [`opentelemetry`] API version
//! that bridge is built on, so a program picks the matching SDK and
//! exporter (`opentelemetry_sdk` 0.33, `opentelemetry-otlp` 0.33) once.
//!
//! Installing the bridge is one layer on a `tracing-subscriber` registry;
//! the fields become the span's attributes (`retry.attempt`,
//! `circuitbreaker.state`, `error.type`, …):
//!
//! ```ignore
//! use opentelemetry::trace::TracerProvider as _;
//! use opentelemetry_sdk::trace::SdkTracerProvider;
//! use resil::otel::tracing_opentelemetry;
//! use tracing_subscriber::layer::SubscriberExt;
//! use tracing_subscriber::util::SubscriberInitExt;
//!
//! let provider = SdkTracerProvider::builder()
//!     .with_batch_exporter(opentelemetry_otlp::SpanExporter::builder().with_tonic().build()?)
//!     .build();
//! tracing_subscriber::registry()
//!     // INFO: the spans; `resil=debug` adds the refusal events.
//!     .with(tracing_subscriber::EnvFilter::new("info,resil=debug"))
//!     .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("inventory")))
//!     .init();
//! ```
//!
//! `tests/traces.rs` installs the same layer over the SDK's in-memory
//! exporter and checks the span tree of a retried call.

pub use opentelemetry;
pub use tracing_opentelemetry;
