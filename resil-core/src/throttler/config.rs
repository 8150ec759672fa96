//! The throttler's configuration, its builder and what counts as accepted.

use std::any::Any;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::erased::{erase, Erased};
use crate::error::ConfigError;

/// The longest window, in seconds (one hour of one-second buckets).
pub const MAX_WINDOW_SECONDS: u64 = 3_600;

/// Which outcomes the downstream *refused* (the rest it accepted), stored
/// type-erased as the breaker's predicates are: each applies to values of
/// the type its closure was written for.
#[derive(Clone, Default)]
struct Classifier {
    /// Errors of these types (where the predicate holds) were accepted
    /// anyway: the downstream did the work and answered with an error.
    accept_error: Vec<Erased<bool>>,
    /// Values of these types (where the predicate holds) are refusals: an
    /// HTTP 429 or 503 returned as a value.
    refuse_result: Vec<Erased<bool>>,
}

/// A [`Throttler`](super::Throttler)'s configuration. [`Default`] is the
/// Google SRE book's:
///
/// | setting | default |
/// |---|---|
/// | `accepts_multiplier` (K) | 2.0 |
/// | `sliding_window_duration` | 2 min (one-second buckets) |
/// | `max_rejection_probability` | 1.0 (the formula's own bound) |
/// | accepted | every `Ok` value; no error |
///
/// ```
/// use std::time::Duration;
/// use resil_core::throttler::ThrottlerConfig;
///
/// let config = ThrottlerConfig::builder()
///     .accepts_multiplier(1.5)
///     .sliding_window_duration(Duration::from_secs(60))
///     .refuse_result(|status: &u16| matches!(status, 429 | 503))
///     .build()
///     .unwrap();
/// assert_eq!(config.accepts_multiplier(), 1.5);
///
/// let err = ThrottlerConfig::builder().accepts_multiplier(0.5).build().unwrap_err();
/// assert_eq!(err.to_string(), "invalid `accepts_multiplier`: got 0.5, expected a number >= 1");
/// ```
#[derive(Clone)]
pub struct ThrottlerConfig {
    pub(crate) accepts_multiplier: f64,
    pub(crate) sliding_window_duration: Duration,
    pub(crate) max_rejection_probability: f64,
    classifier: Option<Arc<Classifier>>,
}

impl Default for ThrottlerConfig {
    fn default() -> Self {
        ThrottlerConfig {
            accepts_multiplier: 2.0,
            sliding_window_duration: Duration::from_secs(120),
            max_rejection_probability: 1.0,
            classifier: None,
        }
    }
}

impl ThrottlerConfig {
    /// A builder starting from the defaults.
    pub fn builder() -> ThrottlerConfigBuilder {
        ThrottlerConfig::default().to_builder()
    }

    /// A builder starting from this configuration.
    pub fn to_builder(&self) -> ThrottlerConfigBuilder {
        ThrottlerConfigBuilder {
            config: self.clone(),
        }
    }

    /// K: how many requests per accepted one the downstream may see before
    /// the client starts refusing locally.
    pub fn accepts_multiplier(&self) -> f64 {
        self.accepts_multiplier
    }

    /// The sliding window `requests` and `accepts` are counted over.
    pub fn sliding_window_duration(&self) -> Duration {
        self.sliding_window_duration
    }

    /// The highest probability of a local rejection.
    pub fn max_rejection_probability(&self) -> f64 {
        self.max_rejection_probability
    }

    /// The window's length in whole seconds (its number of buckets).
    pub(crate) fn window_seconds(&self) -> u32 {
        self.sliding_window_duration.as_secs() as u32
    }

    /// Whether an error of the protected call was still accepted by the
    /// downstream (an `accept_error` predicate matches).
    pub fn accepts_error(&self, error: &dyn Any) -> bool {
        self.classifier
            .as_ref()
            .is_some_and(|c| c.accept_error.iter().any(|p| p(error) == Some(true)))
    }

    /// Whether a value is a refusal (a `refuse_result` predicate matches).
    pub fn refuses_value(&self, value: &dyn Any) -> bool {
        self.classifier
            .as_ref()
            .is_some_and(|c| c.refuse_result.iter().any(|p| p(value) == Some(true)))
    }

    /// Whether any predicate looks at values (else an `Ok` skips
    /// classification: the hot path).
    #[inline]
    pub(crate) fn inspects_values(&self) -> bool {
        self.classifier
            .as_ref()
            .is_some_and(|c| !c.refuse_result.is_empty())
    }
}

impl fmt::Debug for ThrottlerConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let empty = Classifier::default();
        let c = self.classifier.as_deref().unwrap_or(&empty);
        f.debug_struct("ThrottlerConfig")
            .field("accepts_multiplier", &self.accepts_multiplier)
            .field("sliding_window_duration", &self.sliding_window_duration)
            .field("max_rejection_probability", &self.max_rejection_probability)
            .field("accept_error", &c.accept_error.len())
            .field("refuse_result", &c.refuse_result.len())
            .finish()
    }
}

/// Builds a [`ThrottlerConfig`]; [`build`](Self::build) validates.
#[derive(Clone, Debug)]
#[must_use = "a builder does nothing until `build()` is called"]
pub struct ThrottlerConfigBuilder {
    config: ThrottlerConfig,
}

impl ThrottlerConfigBuilder {
    fn classifier(&mut self) -> &mut Classifier {
        Arc::make_mut(self.config.classifier.get_or_insert_with(Default::default))
    }

    /// K in `max(0, (requests − K·accepts) / (requests + 1))`, at least 1
    /// (default 2): the downstream may see K requests per accepted one
    /// before the client refuses locally. Lower is more aggressive (1.1
    /// sheds almost every request the downstream would refuse), higher
    /// wastes more of the downstream's capacity on refusals.
    pub fn accepts_multiplier(mut self, k: f64) -> Self {
        self.config.accepts_multiplier = k;
        self
    }

    /// The sliding window the counts are kept over: whole seconds, 1 s to
    /// 1 h (default 2 min, the SRE book's).
    pub fn sliding_window_duration(mut self, window: Duration) -> Self {
        self.config.sliding_window_duration = window;
        self
    }

    /// Caps the rejection probability, in `(0, 1]` (default 1: the
    /// formula's own value), so a share of requests always reaches the
    /// downstream and sees it recover (failsafe-go uses 0.9).
    pub fn max_rejection_probability(mut self, p: f64) -> Self {
        self.config.max_rejection_probability = p;
        self
    }

    /// Errors of type `E` for which `predicate` holds were still *accepted*
    /// by the downstream (it did the work: a 404, a validation error).
    /// Without such a predicate every error is a refusal.
    pub fn accept_error<E: 'static>(
        mut self,
        predicate: impl Fn(&E) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.classifier().accept_error.push(erase(predicate));
        self
    }

    /// Values of type `T` for which `predicate` holds are *refusals* (an
    /// HTTP 429 or 503 returned as a value). Without such a predicate every
    /// value is accepted.
    pub fn refuse_result<T: 'static>(
        mut self,
        predicate: impl Fn(&T) -> bool + Send + Sync + 'static,
    ) -> Self {
        self.classifier().refuse_result.push(erase(predicate));
        self
    }

    /// Validates every value and returns the configuration, or the first
    /// invalid field with its allowed range.
    pub fn build(self) -> Result<ThrottlerConfig, ConfigError> {
        let c = &self.config;
        if !(c.accepts_multiplier >= 1.0 && c.accepts_multiplier.is_finite()) {
            return Err(ConfigError::new(
                "accepts_multiplier",
                c.accepts_multiplier,
                "a number >= 1",
            ));
        }
        let w = c.sliding_window_duration;
        if w.subsec_nanos() != 0 || !(1..=MAX_WINDOW_SECONDS).contains(&w.as_secs()) {
            return Err(ConfigError::new(
                "sliding_window_duration",
                format!("{w:?}"),
                "whole seconds in [1s, 1h]",
            ));
        }
        let p = c.max_rejection_probability;
        if !(p > 0.0 && p <= 1.0) {
            return Err(ConfigError::new(
                "max_rejection_probability",
                p,
                "a probability in (0, 1]",
            ));
        }
        Ok(self.config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_the_sre_books_and_bad_values_name_their_field() {
        let c = ThrottlerConfig::default();
        assert_eq!(c.accepts_multiplier(), 2.0);
        assert_eq!(c.sliding_window_duration(), Duration::from_secs(120));
        assert_eq!(c.window_seconds(), 120);
        let err = |b: ThrottlerConfigBuilder| b.build().unwrap_err().to_string();
        assert_eq!(
            err(ThrottlerConfig::builder().sliding_window_duration(Duration::from_millis(1500))),
            "invalid `sliding_window_duration`: got 1.5s, expected whole seconds in [1s, 1h]"
        );
        assert_eq!(
            err(ThrottlerConfig::builder().max_rejection_probability(0.0)),
            "invalid `max_rejection_probability`: got 0, expected a probability in (0, 1]"
        );
        assert_eq!(
            err(ThrottlerConfig::builder().accepts_multiplier(f64::NAN)),
            "invalid `accepts_multiplier`: got NaN, expected a number >= 1"
        );
    }

    #[test]
    fn predicates_answer_only_for_their_own_type() {
        let c = ThrottlerConfig::builder()
            .accept_error(|e: &&str| *e == "not found")
            .refuse_result(|s: &u16| *s == 429)
            .build()
            .unwrap();
        assert!(c.accepts_error(&"not found"));
        assert!(!c.accepts_error(&"unavailable"));
        assert!(c.refuses_value(&429u16));
        assert!(!c.refuses_value(&429u32));
        assert!(c.inspects_values());
    }
}
