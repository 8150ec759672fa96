//! Fault-injection configuration: which faults, at which rates (Polly's chaos
//! strategies: latency, fault and outcome).

use std::any::{Any, TypeId};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::error::ConfigError;

/// A value factory written for one type, stored type-erased.
#[derive(Clone)]
pub(crate) struct Factory {
    pub(crate) rate: f64,
    pub(crate) type_id: TypeId,
    pub(crate) type_name: &'static str,
    pub(crate) make: Arc<dyn Fn() -> Box<dyn Any> + Send + Sync>,
}

impl Factory {
    fn new<X: 'static>(rate: f64, make: impl Fn() -> X + Send + Sync + 'static) -> Self {
        Factory {
            rate,
            type_id: TypeId::of::<X>(),
            type_name: std::any::type_name::<X>(),
            make: Arc::new(move || Box::new(make()) as Box<dyn Any>),
        }
    }

    /// A fresh value, if this factory makes values of type `X`.
    pub(crate) fn make<X: 'static>(&self) -> Option<X> {
        if self.type_id != TypeId::of::<X>() {
            return None;
        }
        (self.make)().downcast::<X>().ok().map(|b| *b)
    }
}

/// What a [`Chaos`](super::Chaos) instance injects into the calls it wraps
/// while it is enabled.
///
/// Nothing is injected by default: every rate is 0 and the instance starts
/// disabled (see [`enabled`](ChaosConfigBuilder::enabled) and the instance's
/// [`enable_for`](super::Chaos::enable_for)). Each fault has its own rate, a
/// probability in `[0, 1]` drawn per call:
///
/// * **latency** ([`inject_latency`](ChaosConfigBuilder::inject_latency)):
///   the call waits this long before it runs (or before the injected outcome
///   below is returned);
/// * **error** ([`inject_error`](ChaosConfigBuilder::inject_error)): the call
///   does not run; it fails with a fresh error from the factory, as the
///   downstream would have (`Error::Call(e)`). Factories are per error type:
///   a call whose error type has no factory is never failed;
/// * **result** ([`inject_result`](ChaosConfigBuilder::inject_result)): the
///   call does not run; it returns `Ok` with a value from the factory, per
///   value type likewise. An error drawn wins over a result.
///
/// ```
/// use std::time::Duration;
/// use resil_core::chaos::ChaosConfig;
///
/// let drill = ChaosConfig::builder()
///     .inject_latency(0.5, Duration::from_millis(800))
///     .inject_error(0.1, || std::io::Error::other("injected: connection reset"))
///     .build()
///     .unwrap();
/// assert_eq!(drill.latency_rate(), 0.5);
///
/// let err = ChaosConfig::builder().inject_latency(1.5, Duration::from_secs(1)).build().unwrap_err();
/// assert_eq!(err.to_string(), "invalid `latency_rate`: got 1.5, expected a probability in 0.0..=1.0");
/// ```
#[derive(Clone, Default)]
pub struct ChaosConfig {
    enabled: bool,
    latency_rate: f64,
    latency: Duration,
    errors: Vec<Factory>,
    results: Vec<Factory>,
    seed: Option<u64>,
}

impl ChaosConfig {
    /// A builder starting from the defaults (nothing injected, disabled).
    pub fn builder() -> ChaosConfigBuilder {
        ChaosConfigBuilder {
            config: ChaosConfig::default(),
        }
    }

    /// A builder starting from this configuration.
    pub fn to_builder(&self) -> ChaosConfigBuilder {
        ChaosConfigBuilder {
            config: self.clone(),
        }
    }

    /// Whether the instance starts enabled (default `false`).
    #[inline]
    pub fn enabled(&self) -> bool {
        self.enabled
    }

    /// The probability that a call is delayed (default 0).
    #[inline]
    pub fn latency_rate(&self) -> f64 {
        self.latency_rate
    }

    /// How long a delayed call waits.
    #[inline]
    pub fn latency(&self) -> Duration {
        self.latency
    }

    /// The fixed seed of the draws, if one was set.
    #[inline]
    pub fn seed(&self) -> Option<u64> {
        self.seed
    }

    /// The error factory for calls failing with `E`, with its rate.
    #[inline]
    pub(crate) fn error_for<E: 'static>(&self) -> Option<&Factory> {
        self.errors.iter().find(|f| f.type_id == TypeId::of::<E>())
    }

    /// The result factory for calls returning `T`, with its rate.
    #[inline]
    pub(crate) fn result_for<T: 'static>(&self) -> Option<&Factory> {
        self.results.iter().find(|f| f.type_id == TypeId::of::<T>())
    }
}

impl fmt::Debug for ChaosConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let list = |fs: &[Factory]| {
            fs.iter()
                .map(|x| format!("{} at {}", x.type_name, x.rate))
                .collect::<Vec<_>>()
        };
        f.debug_struct("ChaosConfig")
            .field("enabled", &self.enabled)
            .field("latency_rate", &self.latency_rate)
            .field("latency", &self.latency)
            .field("errors", &list(&self.errors))
            .field("results", &list(&self.results))
            .field("seed", &self.seed)
            .finish()
    }
}

/// Builds a [`ChaosConfig`]; [`build`](Self::build) checks every rate.
#[derive(Clone)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct ChaosConfigBuilder {
    config: ChaosConfig,
}

impl fmt::Debug for ChaosConfigBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("ChaosConfigBuilder")
            .field(&self.config)
            .finish()
    }
}

impl ChaosConfigBuilder {
    /// Whether the instance starts enabled, with no expiry (default `false`:
    /// a drill is switched on by management, with a TTL and a reason).
    pub fn enabled(mut self, enabled: bool) -> Self {
        self.config.enabled = enabled;
        self
    }

    /// Delays a call by `latency` with probability `rate` (`0.0..=1.0`).
    pub fn inject_latency(mut self, rate: f64, latency: Duration) -> Self {
        self.config.latency_rate = rate;
        self.config.latency = latency;
        self
    }

    /// Fails a call whose error type is `E`, with probability `rate`
    /// (`0.0..=1.0`), with `make()` instead of running it. One factory per
    /// error type; a later one for the same type replaces it.
    pub fn inject_error<E: 'static>(
        mut self,
        rate: f64,
        make: impl Fn() -> E + Send + Sync + 'static,
    ) -> Self {
        self.config
            .errors
            .retain(|f| f.type_id != TypeId::of::<E>());
        self.config.errors.push(Factory::new(rate, make));
        self
    }

    /// Answers a call whose value type is `T`, with probability `rate`
    /// (`0.0..=1.0`), with `Ok(make())` instead of running it. One factory per
    /// value type; a later one for the same type replaces it.
    pub fn inject_result<T: 'static>(
        mut self,
        rate: f64,
        make: impl Fn() -> T + Send + Sync + 'static,
    ) -> Self {
        self.config
            .results
            .retain(|f| f.type_id != TypeId::of::<T>());
        self.config.results.push(Factory::new(rate, make));
        self
    }

    /// Draws from a fixed seed, so a drill (or a test) injects the same faults
    /// into the same calls every run. Without it, each instance is seeded at
    /// random.
    pub fn seed(mut self, seed: u64) -> Self {
        self.config.seed = Some(seed);
        self
    }

    /// The configuration, or the first invalid rate with its field name.
    pub fn build(self) -> Result<ChaosConfig, ConfigError> {
        let c = self.config;
        check_rate("latency_rate", c.latency_rate)?;
        for f in &c.errors {
            check_rate("error_rate", f.rate)?;
        }
        for f in &c.results {
            check_rate("result_rate", f.rate)?;
        }
        Ok(c)
    }
}

fn check_rate(field: &'static str, rate: f64) -> Result<(), ConfigError> {
    if (0.0..=1.0).contains(&rate) {
        Ok(())
    } else {
        Err(ConfigError::new(field, rate, "a probability in 0.0..=1.0"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_is_injected_by_default() {
        let c = ChaosConfig::default();
        assert!(!c.enabled());
        assert_eq!(c.latency_rate(), 0.0);
        assert!(c.error_for::<std::io::Error>().is_none());
        assert!(c.result_for::<u32>().is_none());
    }

    #[test]
    fn every_rate_is_checked_and_named() {
        let b = ChaosConfig::builder;
        let cases = [
            (
                b().inject_latency(-0.1, Duration::ZERO).build(),
                "latency_rate",
            ),
            (b().inject_error(1.01, || 503u16).build(), "error_rate"),
            (b().inject_result(f64::NAN, || 0u8).build(), "result_rate"),
        ];
        for (result, field) in cases {
            assert_eq!(result.unwrap_err().field(), field);
        }
        assert!(b()
            .inject_error(1.0, || 503u16)
            .inject_result(0.0, || 1u8)
            .build()
            .is_ok());
    }

    #[test]
    fn factories_are_per_type_and_a_later_one_replaces_an_earlier() {
        let c = ChaosConfig::builder()
            .inject_error(0.2, || 500u16)
            .inject_error(0.3, || 503u16)
            .inject_error(0.4, || "text")
            .build()
            .unwrap();
        let f = c.error_for::<u16>().unwrap();
        assert_eq!((f.rate, f.make::<u16>()), (0.3, Some(503)));
        assert_eq!(f.make::<u32>(), None);
        assert_eq!(c.error_for::<&str>().unwrap().make::<&str>(), Some("text"));
        assert_eq!(
            format!("{c:?}"),
            "ChaosConfig { enabled: false, latency_rate: 0.0, latency: 0ns, \
             errors: [\"u16 at 0.3\", \"&str at 0.4\"], results: [], seed: None }"
        );
    }
}
