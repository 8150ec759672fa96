//! Wait intervals: Resilience4j's `IntervalFunction`, shared by the retry's
//! backoff and the circuit breaker's successive OPEN waits.
//!
//! It lives beside [`clock`](crate::clock) and [`deadline`](crate::deadline)
//! so that no primitive depends on another; [`retry::IntervalFunction`](crate::retry::IntervalFunction)
//! and the crate root re-export it.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::error::ConfigError;

/// Resilience4j's default exponential multiplier.
pub const DEFAULT_MULTIPLIER: f64 = 1.5;
/// Resilience4j's default randomization factor.
pub const DEFAULT_RANDOMIZATION_FACTOR: f64 = 0.5;

/// The smallest base interval and cap [`IntervalFunction::validate`] accepts.
const MIN_INTERVAL: Duration = Duration::from_millis(1);

/// How long to wait before the next attempt, as a function of how many attempts
/// have failed so far (1 after the first call failed).
///
/// The same type drives a retry's backoff and a circuit breaker's
/// `wait_interval_function_in_open_state` (successive OPEN periods).
///
/// | constructor | interval after failed attempt `n` |
/// |---|---|
/// | [`fixed(d)`](Self::fixed) | `d` |
/// | [`exponential(i, m)`](Self::exponential) | `i · m^(n-1)` |
/// | [`randomized(d, f)`](Self::randomized) | uniform in `[d·(1-f), d·(1+f)]` |
/// | [`exponential_random(i, m, f)`](Self::exponential_random) | `i · m^(n-1)`, randomized by `f` |
/// | [`.with_max(cap)`](Self::with_max) | the above, never above `cap` |
///
/// ```
/// use std::time::Duration;
/// use resil_core::interval::IntervalFunction;
///
/// let f = IntervalFunction::exponential(Duration::from_millis(100), 2.0)
///     .with_max(Duration::from_millis(500));
/// let waits: Vec<_> = (1..=5).map(|n| f.interval(n).as_millis()).collect();
/// assert_eq!(waits, [100, 200, 400, 500, 500]);
/// ```
#[derive(Clone)]
pub struct IntervalFunction {
    kind: Kind,
    max: Option<Duration>,
}

#[derive(Clone)]
enum Kind {
    Fixed(Duration),
    Exponential {
        initial: Duration,
        multiplier: f64,
    },
    Randomized {
        interval: Duration,
        factor: f64,
    },
    ExponentialRandom {
        initial: Duration,
        multiplier: f64,
        factor: f64,
    },
    Custom(Arc<dyn Fn(u32) -> Duration + Send + Sync>),
}

impl IntervalFunction {
    /// The same wait every time.
    pub const fn fixed(interval: Duration) -> Self {
        IntervalFunction {
            kind: Kind::Fixed(interval),
            max: None,
        }
    }

    /// `initial · multiplier^(n-1)`. `multiplier` must be ≥ 1 (checked by the
    /// config that uses it).
    pub const fn exponential(initial: Duration, multiplier: f64) -> Self {
        IntervalFunction {
            kind: Kind::Exponential {
                initial,
                multiplier,
            },
            max: None,
        }
    }

    /// A uniformly random wait in `[interval·(1-factor), interval·(1+factor)]`.
    /// `factor` must be in `[0, 1]`.
    pub const fn randomized(interval: Duration, factor: f64) -> Self {
        IntervalFunction {
            kind: Kind::Randomized { interval, factor },
            max: None,
        }
    }

    /// Exponential backoff, each wait then randomized by `factor`.
    pub const fn exponential_random(initial: Duration, multiplier: f64, factor: f64) -> Self {
        IntervalFunction {
            kind: Kind::ExponentialRandom {
                initial,
                multiplier,
                factor,
            },
            max: None,
        }
    }

    /// Any function of the number of failed attempts so far (1-based).
    pub fn custom(f: impl Fn(u32) -> Duration + Send + Sync + 'static) -> Self {
        IntervalFunction {
            kind: Kind::Custom(Arc::new(f)),
            max: None,
        }
    }

    /// Caps every wait at `max` (applied after randomization).
    pub const fn with_max(mut self, max: Duration) -> Self {
        self.max = Some(max);
        self
    }

    /// The wait after `attempt` failed attempts (1 = after the first call).
    /// `attempt` 0 is treated as 1.
    pub fn interval(&self, attempt: u32) -> Duration {
        let n = attempt.max(1);
        let raw = match &self.kind {
            Kind::Fixed(d) => *d,
            Kind::Exponential {
                initial,
                multiplier,
            } => exponential(*initial, *multiplier, n),
            Kind::Randomized { interval, factor } => randomize(*interval, *factor),
            Kind::ExponentialRandom {
                initial,
                multiplier,
                factor,
            } => randomize(exponential(*initial, *multiplier, n), *factor),
            Kind::Custom(f) => f(n),
        };
        match self.max {
            Some(max) => raw.min(max),
            None => raw,
        }
    }

    /// The first interval (the fixed one, or where exponential growth
    /// starts); `None` for a custom function.
    pub fn initial(&self) -> Option<Duration> {
        match &self.kind {
            Kind::Fixed(d) => Some(*d),
            Kind::Exponential { initial, .. } | Kind::ExponentialRandom { initial, .. } => {
                Some(*initial)
            }
            Kind::Randomized { interval, .. } => Some(*interval),
            Kind::Custom(_) => None,
        }
    }

    /// The exponential multiplier, if the intervals grow.
    pub fn multiplier(&self) -> Option<f64> {
        match &self.kind {
            Kind::Exponential { multiplier, .. } | Kind::ExponentialRandom { multiplier, .. } => {
                Some(*multiplier)
            }
            _ => None,
        }
    }

    /// The randomization factor, if the intervals are randomized.
    pub fn randomization_factor(&self) -> Option<f64> {
        match &self.kind {
            Kind::Randomized { factor, .. } | Kind::ExponentialRandom { factor, .. } => {
                Some(*factor)
            }
            _ => None,
        }
    }

    /// The cap on every interval, if one was set ([`with_max`](Self::with_max)).
    pub fn max(&self) -> Option<Duration> {
        self.max
    }

    /// Checks the parameters, naming `field` (e.g. `interval_function`) in the error.
    ///
    /// Rejected: a multiplier below 1 or not finite, a randomization factor
    /// outside `[0, 1]`, and, as Resilience4j's `checkInterval` does, a base
    /// interval of an exponential or randomized function or a cap
    /// ([`with_max`](Self::with_max)) below 1 ms. A [`fixed`](Self::fixed) zero
    /// stays valid here (a retry may retry at once, as Resilience4j's
    /// `waitDuration(0)` does); the circuit breaker checks its OPEN waits itself.
    ///
    /// ```
    /// use std::time::Duration;
    /// use resil_core::interval::IntervalFunction;
    ///
    /// let capped = IntervalFunction::exponential(Duration::from_millis(100), 2.0)
    ///     .with_max(Duration::ZERO);
    /// let err = capped.validate("interval_function").unwrap_err();
    /// assert_eq!(err.to_string(), "invalid `interval_function`: got max 0ns, expected max >= 1ms");
    /// ```
    pub fn validate(&self, field: &'static str) -> Result<(), ConfigError> {
        let multiplier = |m: f64| {
            if m.is_finite() && m >= 1.0 {
                Ok(())
            } else {
                Err(ConfigError::new(
                    field,
                    format!("multiplier {m}"),
                    "a multiplier >= 1.0",
                ))
            }
        };
        let factor = |f: f64| {
            if (0.0..=1.0).contains(&f) {
                Ok(())
            } else {
                Err(ConfigError::new(
                    field,
                    format!("randomization factor {f}"),
                    "a randomization factor in [0.0, 1.0]",
                ))
            }
        };
        // Resilience4j's `checkInterval`: a computed interval's base and its cap
        // are at least 1 ms (a zero base would make every wait zero, a zero cap
        // would silently turn the backoff off).
        let at_least_1ms = |what: &str, d: Duration| {
            if d >= MIN_INTERVAL {
                Ok(())
            } else {
                Err(ConfigError::new(
                    field,
                    format!("{what} {d:?}"),
                    format!("{what} >= 1ms"),
                ))
            }
        };
        if let Some(max) = self.max {
            at_least_1ms("max", max)?;
        }
        match &self.kind {
            Kind::Fixed(_) | Kind::Custom(_) => Ok(()),
            Kind::Exponential {
                initial,
                multiplier: m,
            } => {
                at_least_1ms("initial interval", *initial)?;
                multiplier(*m)
            }
            Kind::Randomized {
                interval,
                factor: f,
            } => {
                at_least_1ms("interval", *interval)?;
                factor(*f)
            }
            Kind::ExponentialRandom {
                initial,
                multiplier: m,
                factor: f,
            } => {
                at_least_1ms("initial interval", *initial)?;
                multiplier(*m)?;
                factor(*f)
            }
        }
    }
}

fn exponential(initial: Duration, multiplier: f64, n: u32) -> Duration {
    let factor = multiplier.powi(i32::try_from(n - 1).unwrap_or(i32::MAX));
    secs_f64(initial.as_secs_f64() * factor)
}

fn randomize(interval: Duration, factor: f64) -> Duration {
    let delta = interval.as_secs_f64() * factor;
    let low = interval.as_secs_f64() - delta;
    secs_f64(low + fastrand::f64() * 2.0 * delta)
}

/// Non-panicking `Duration::from_secs_f64`: negatives and NaN → 0, overflow → MAX.
fn secs_f64(secs: f64) -> Duration {
    Duration::try_from_secs_f64(secs.max(0.0)).unwrap_or(if secs.is_nan() {
        Duration::ZERO
    } else {
        Duration::MAX
    })
}

impl Default for IntervalFunction {
    /// Resilience4j's default: a fixed 500 ms.
    fn default() -> Self {
        IntervalFunction::fixed(Duration::from_millis(500))
    }
}

impl fmt::Debug for IntervalFunction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = match &self.kind {
            Kind::Fixed(i) => {
                let mut d = f.debug_struct("Fixed");
                d.field("interval", i);
                d
            }
            Kind::Exponential {
                initial,
                multiplier,
            } => {
                let mut d = f.debug_struct("Exponential");
                d.field("initial", initial).field("multiplier", multiplier);
                d
            }
            Kind::Randomized { interval, factor } => {
                let mut d = f.debug_struct("Randomized");
                d.field("interval", interval).field("factor", factor);
                d
            }
            Kind::ExponentialRandom {
                initial,
                multiplier,
                factor,
            } => {
                let mut d = f.debug_struct("ExponentialRandom");
                d.field("initial", initial)
                    .field("multiplier", multiplier)
                    .field("factor", factor);
                d
            }
            Kind::Custom(_) => f.debug_struct("Custom"),
        };
        if let Some(max) = &self.max {
            d.field("max", max);
        }
        d.finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: fn(u64) -> Duration = Duration::from_millis;

    #[test]
    fn fixed_is_the_same_every_time() {
        let f = IntervalFunction::fixed(MS(500));
        assert_eq!(
            (1..=4).map(|n| f.interval(n)).collect::<Vec<_>>(),
            [MS(500); 4]
        );
        assert_eq!(IntervalFunction::default().interval(7), MS(500));
    }

    #[test]
    fn exponential_multiplies_from_the_initial_interval() {
        let f = IntervalFunction::exponential(MS(100), DEFAULT_MULTIPLIER);
        assert_eq!(
            (1..=4).map(|n| f.interval(n)).collect::<Vec<_>>(),
            [MS(100), MS(150), MS(225), Duration::from_micros(337_500)]
        );
    }

    #[test]
    fn randomized_stays_within_the_factor_around_the_interval() {
        let f = IntervalFunction::randomized(MS(1000), 0.5);
        for n in 1..1000 {
            let d = f.interval(n);
            assert!(d >= MS(500) && d <= MS(1500), "{d:?}");
        }
    }

    #[test]
    fn exponential_random_randomizes_each_exponential_step_and_respects_the_cap() {
        let f = IntervalFunction::exponential_random(MS(100), 2.0, 0.25).with_max(MS(700));
        for _ in 0..200 {
            let d3 = f.interval(3); // 400 ± 100
            assert!(d3 >= MS(300) && d3 <= MS(500), "{d3:?}");
            assert!(f.interval(10) <= MS(700));
        }
    }

    #[test]
    fn huge_exponents_saturate_instead_of_panicking() {
        let f = IntervalFunction::exponential(Duration::from_secs(1), 10.0);
        assert_eq!(f.interval(u32::MAX), Duration::MAX);
    }

    #[test]
    fn validation_names_the_field_and_the_allowed_range() {
        let err = IntervalFunction::exponential(MS(1), 0.5)
            .validate("interval_function")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid `interval_function`: got multiplier 0.5, expected a multiplier >= 1.0"
        );
        let err = IntervalFunction::randomized(MS(1), 1.5)
            .validate("interval_function")
            .unwrap_err();
        assert_eq!(err.field(), "interval_function");
        assert!(IntervalFunction::exponential_random(MS(1), 1.5, 0.5)
            .validate("x")
            .is_ok());
    }

    #[test]
    fn a_zero_cap_is_rejected_for_every_kind_of_function() {
        for f in [
            IntervalFunction::exponential(MS(100), 2.0),
            IntervalFunction::randomized(MS(100), 0.5),
            IntervalFunction::exponential_random(MS(100), 2.0, 0.5),
            IntervalFunction::fixed(MS(100)),
            IntervalFunction::custom(|n| MS(u64::from(n))),
        ] {
            let err = f
                .clone()
                .with_max(Duration::ZERO)
                .validate("interval_function")
                .unwrap_err();
            assert_eq!(
                err.to_string(),
                "invalid `interval_function`: got max 0ns, expected max >= 1ms",
                "{f:?}"
            );
            assert!(f.clone().with_max(MS(1)).validate("x").is_ok(), "{f:?}");
            let err = f
                .with_max(Duration::from_micros(999))
                .validate("interval_function")
                .unwrap_err();
            assert_eq!(err.got(), "max 999µs");
        }
    }

    #[test]
    fn a_zero_base_interval_is_rejected_but_a_fixed_zero_is_not() {
        let err = IntervalFunction::exponential(Duration::ZERO, 2.0)
            .validate("wait_interval_function_in_open_state")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "invalid `wait_interval_function_in_open_state`: got initial interval 0ns, \
             expected initial interval >= 1ms"
        );
        let err = IntervalFunction::randomized(Duration::ZERO, 0.5)
            .validate("interval_function")
            .unwrap_err();
        assert_eq!(err.got(), "interval 0ns");
        let err = IntervalFunction::exponential_random(Duration::ZERO, 2.0, 0.5)
            .validate("interval_function")
            .unwrap_err();
        assert_eq!(err.got(), "initial interval 0ns");
        assert!(IntervalFunction::fixed(Duration::ZERO)
            .validate("interval_function")
            .is_ok());
    }

    #[test]
    fn the_retry_module_path_still_names_the_same_type() {
        let f: crate::retry::IntervalFunction = IntervalFunction::fixed(MS(5));
        let g: crate::IntervalFunction = f;
        assert_eq!(g.interval(1), MS(5));
    }
}
