//! A server-wide inbound guard (Sentinel's system rules, with its BBR
//! check): one [`InboundGuard`] in front of every route refuses inbound work
//! while the service as a whole is overloaded.
//!
//! ```
//! use resil_core::clock::ManualClock;
//! use resil_core::inbound::{InboundGuard, InboundGuardConfig, Overload};
//! use std::time::Duration;
//!
//! let clock = ManualClock::new();
//! let guard = InboundGuard::with_clock(InboundGuardConfig::default(), clock.clone());
//! // The service completes 10 requests per 100 ms bucket, each in 100 ms:
//! // BBR's estimate is 100 RPS × 0.1 s = 10 requests in flight.
//! for _ in 0..10 {
//!     let permits: Vec<_> = (0..10).map(|_| guard.try_enter().unwrap()).collect();
//!     clock.advance(Duration::from_millis(100));
//!     drop(permits);
//! }
//! guard.record_system(Some(95.0), None); // CPU over 80 %
//! // Refused once more than 10 are in flight: the 11th gets in, the 12th not.
//! let held: Vec<_> = (0..11).map(|_| guard.try_enter().unwrap()).collect();
//! assert_eq!(guard.try_enter().unwrap_err().reason, Overload::Cpu);
//! # drop(held);
//! ```

mod config;
mod guard;
mod system;
mod window;

pub use self::config::{InboundGuardConfig, InboundGuardConfigBuilder};
pub use self::guard::{InboundGuard, InboundGuardMetrics, InboundPermit, Overload, Overloaded};
pub use self::system::{SystemReading, SystemSampler};
