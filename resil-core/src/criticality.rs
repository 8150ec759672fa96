//! How much a request matters when there is not room for all of them
//! (Google's criticality, from *Site Reliability Engineering*, "Handling
//! Overload").
//!
//! A request carries one of four classes. Under load the primitives that
//! admit by class — the [adaptive bulkhead](crate::bulkhead::AdaptiveBulkhead)
//! and the [rate limiter](crate::rate_limiter::RateLimiter) — refuse
//! [`Sheddable`](Criticality::Sheddable) work first and
//! [`CriticalPlus`](Criticality::CriticalPlus) work last, so a checkout keeps
//! its share while a prefetch is turned away.
//!
//! # Where the class comes from
//!
//! The class is part of the *task's context*, like a
//! [`deadline`](crate::deadline): [`Criticality::scope`] runs a future (and
//! [`Criticality::sync_scope`] a closure) with a class, and every primitive
//! inside reads it with [`Criticality::current`]. So a downstream call made
//! while serving an inbound request inherits that request's class without
//! being told. Outside any scope the class is [`Critical`](Criticality::Critical),
//! the default.
//!
//! The class is set by whoever knows it: a tower layer from a header or a
//! route (`resil::tower::CriticalityLayer`), an attribute argument
//! (`#[resil::bulkhead(name = "…", criticality = <expr>)]`) or code.
//!
//! # Across `spawn`
//!
//! The class lives in a tokio task-local: a future handed to
//! `tokio::spawn` runs in a new task and starts *without* it (it would read
//! `Critical`). Carry it over explicitly with [`Criticality::inherit`],
//! which captures the current class and scopes the future to it:
//!
//! ```
//! use resil_core::criticality::Criticality;
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! Criticality::Sheddable
//!     .scope(async {
//!         let child = tokio::spawn(Criticality::inherit(async { Criticality::current() }));
//!         let bare = tokio::spawn(async { Criticality::current() });
//!         assert_eq!(child.await.unwrap(), Criticality::Sheddable);
//!         assert_eq!(bare.await.unwrap(), Criticality::Critical);
//!     })
//!     .await;
//! # }
//! ```
//!
//! The same holds for `spawn_blocking` and other threads: capture
//! `Criticality::current()` before, and run the closure in
//! [`sync_scope`](Criticality::sync_scope).

use std::fmt;
use std::future::Future;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::ConfigError;

tokio::task_local! {
    static CLASS: Criticality;
}

/// Whether any scope was ever made in this process: until one is, every
/// [`Criticality::current`] is one load of this flag (written once, so it
/// stays cached on every core) — the same device as the deadline's.
static USED: AtomicBool = AtomicBool::new(false);

/// A future running in a [`Criticality::scope`].
pub type Scoped<F> = tokio::task::futures::TaskLocalFuture<Criticality, F>;

/// How much a request matters, from most to least: Google's four classes.
///
/// Ordered: `Sheddable < SheddablePlus < Critical < CriticalPlus`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
#[repr(u8)]
pub enum Criticality {
    /// Work nobody waits for (prefetch, batch, speculative refresh): refused
    /// first, and it is expected to be.
    Sheddable = 0,
    /// Work a retry later can repair (a background sync a user may notice):
    /// refused after `Sheddable`.
    SheddablePlus = 1,
    /// The default: work a user waits for.
    #[default]
    Critical = 2,
    /// The work that must get through (checkout, the load balancer's health
    /// probe): refused last.
    CriticalPlus = 3,
}

impl Criticality {
    /// Every class, from least to most critical (the order of
    /// [`index`](Self::index)).
    pub const ALL: [Criticality; 4] = [
        Criticality::Sheddable,
        Criticality::SheddablePlus,
        Criticality::Critical,
        Criticality::CriticalPlus,
    ];

    /// `0..4`, from `Sheddable` to `CriticalPlus`: an index into per-class tables.
    #[inline]
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The class's spelling in headers, files and metric labels
    /// (`CRITICAL_PLUS`, `CRITICAL`, `SHEDDABLE_PLUS`, `SHEDDABLE`, as
    /// Google writes them).
    pub const fn as_str(self) -> &'static str {
        match self {
            Criticality::Sheddable => "SHEDDABLE",
            Criticality::SheddablePlus => "SHEDDABLE_PLUS",
            Criticality::Critical => "CRITICAL",
            Criticality::CriticalPlus => "CRITICAL_PLUS",
        }
    }

    /// The class of the running task: the innermost [`scope`](Self::scope) or
    /// [`sync_scope`](Self::sync_scope), else `Critical`.
    #[inline]
    pub fn current() -> Criticality {
        if !USED.load(Ordering::Relaxed) {
            return Criticality::Critical;
        }
        Self::scoped()
    }

    #[cold]
    fn scoped() -> Criticality {
        CLASS.try_with(|c| *c).unwrap_or_default()
    }

    fn mark_used() {
        if !USED.load(Ordering::Relaxed) {
            USED.store(true, Ordering::Relaxed);
        }
    }

    /// Runs `fut` with this class as the task's criticality (an inner scope
    /// overrides an outer one while it runs). The returned future is a
    /// named type ([`Scoped`]), so a tower service can return it.
    pub fn scope<F: Future>(self, fut: F) -> Scoped<F> {
        Self::mark_used();
        CLASS.scope(self, fut)
    }

    /// Runs `f` with this class as the current criticality (for sync code and
    /// threads other than the runtime's).
    pub fn sync_scope<R>(self, f: impl FnOnce() -> R) -> R {
        Self::mark_used();
        CLASS.sync_scope(self, f)
    }

    /// Scopes `fut` to the class of the task that calls `inherit` (capture
    /// before `tokio::spawn`, which would otherwise start at `Critical`).
    pub fn inherit<F: Future>(fut: F) -> Scoped<F> {
        Self::current().scope(fut)
    }
}

impl fmt::Display for Criticality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A word that names no class.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownCriticality {
    got: String,
}

impl fmt::Display for UnknownCriticality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown criticality `{}`; expected one of CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS, SHEDDABLE",
            self.got
        )
    }
}

impl std::error::Error for UnknownCriticality {}

impl FromStr for Criticality {
    type Err = UnknownCriticality;

    /// Parses a class in any case, with `_`, `-` or nothing between the words
    /// (`CRITICAL_PLUS`, `critical-plus`, `CriticalPlus`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let mut buf = [0u8; 16];
        let mut n = 0;
        for b in s.trim().bytes().filter(|b| *b != b'_' && *b != b'-') {
            if n == buf.len() {
                n = 0;
                break;
            }
            buf[n] = b.to_ascii_lowercase();
            n += 1;
        }
        match &buf[..n] {
            b"sheddable" => Ok(Criticality::Sheddable),
            b"sheddableplus" => Ok(Criticality::SheddablePlus),
            b"critical" => Ok(Criticality::Critical),
            b"criticalplus" => Ok(Criticality::CriticalPlus),
            _ => Err(UnknownCriticality { got: s.to_owned() }),
        }
    }
}

/// A share of a limit, in 1/2^32ths (a 32-bit fraction: a limit's 31 bits
/// times a share fit a `u64`, and a percentage's rounding error stays below
/// one slot for any limit under 400 000).
pub(crate) type Share = u64;

/// The whole limit.
pub(crate) const FULL_SHARE: Share = 1 << 32;

/// `ceil(max × share / 2^32)`: the slots a share of a limit amounts to.
#[inline]
pub(crate) fn share_of(max: u32, share: Share) -> u32 {
    ((u64::from(max) * share + (FULL_SHARE - 1)) >> 32) as u32
}

/// A percentage as a [`Share`], rounded down (so a share of an exact
/// percentage never rounds up to one slot more).
pub(crate) fn share_from_percent(percent: f32) -> Share {
    (f64::from(percent.clamp(0.0, 100.0)) / 100.0 * FULL_SHARE as f64).floor() as Share
}

/// The default per-class thresholds (percent of the limit), from
/// `SHEDDABLE` to `CRITICAL_PLUS`.
pub(crate) const DEFAULT_THRESHOLDS: [f32; 4] = [50.0, 75.0, 100.0, 100.0];

/// The field names of the per-class settings, indexed by class.
/// Per-class thresholds (a rate limiter's, a bulkhead's) in hundredths of a percent (`10000` is 100 %): the
/// configs stay `Eq + Hash` and a limiter within its kilobyte; `Debug` shows
/// the percentages. A value outside `0..=100` is kept as a marker that
/// `build` refuses.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct Thresholds(pub(crate) [u16; 4]);

/// Out of range: `build` refuses it, naming the value given.
pub(crate) const INVALID: u16 = u16::MAX;

impl Thresholds {
    /// The defaults: 50, 75, 100, 100 from `SHEDDABLE` to `CRITICAL_PLUS`.
    pub(crate) fn defaults() -> Self {
        Thresholds(DEFAULT_THRESHOLDS.map(Thresholds::encode))
    }

    pub(crate) fn get(&self, i: usize) -> f32 {
        f32::from(self.0[i]) / 100.0
    }

    pub(crate) fn encode(percent: f32) -> u16 {
        if (0.0..=100.0).contains(&percent) {
            (percent * 100.0).round() as u16
        } else {
            INVALID
        }
    }
}

impl std::fmt::Debug for Thresholds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries((0..4).map(|i| self.get(i))).finish()
    }
}

const THRESHOLD_FIELDS: [&str; 4] = [
    "sheddable_threshold",
    "sheddable_plus_threshold",
    "critical_threshold",
    "critical_plus_threshold",
];
const SHARE_FIELDS: [&str; 4] = [
    "sheddable_guaranteed_share",
    "sheddable_plus_guaranteed_share",
    "critical_guaranteed_share",
    "critical_plus_guaranteed_share",
];

/// Thresholds in `(0, 100]`, ordered by class; shares in `[0, 100]`, summing
/// to at most 100.
pub(crate) fn check_classes(thresholds: &[f32; 4], shares: &[f32; 4]) -> Result<(), ConfigError> {
    for (i, &t) in thresholds.iter().enumerate() {
        if !(t > 0.0 && t <= 100.0) {
            return Err(ConfigError::new(
                THRESHOLD_FIELDS[i],
                t,
                "a percentage in (0, 100]",
            ));
        }
        if i > 0 && t < thresholds[i - 1] {
            return Err(ConfigError::new(
                THRESHOLD_FIELDS[i],
                t,
                format!(
                    "a percentage in [{}, 100]: a class is never refused before a less critical one (`{}` is {})",
                    thresholds[i - 1],
                    THRESHOLD_FIELDS[i - 1],
                    thresholds[i - 1]
                ),
            ));
        }
    }
    let mut sum = 0.0;
    for (i, &g) in shares.iter().enumerate() {
        if !(0.0..=100.0).contains(&g) {
            return Err(ConfigError::new(
                SHARE_FIELDS[i],
                g,
                "a percentage in [0, 100]",
            ));
        }
        sum += g;
        if sum > 100.0 {
            return Err(ConfigError::new(
                SHARE_FIELDS[i],
                g,
                format!(
                    "a percentage in [0, {}]: the guaranteed shares of all classes add up to at most 100",
                    100.0 - (sum - g)
                ),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Criticality;

    #[test]
    fn classes_are_ordered_from_sheddable_to_critical_plus() {
        assert!(Criticality::Sheddable < Criticality::SheddablePlus);
        assert!(Criticality::SheddablePlus < Criticality::Critical);
        assert!(Criticality::Critical < Criticality::CriticalPlus);
        for (i, c) in Criticality::ALL.into_iter().enumerate() {
            assert_eq!(c.index(), i);
        }
        assert_eq!(Criticality::default(), Criticality::Critical);
    }

    #[test]
    fn every_spelling_parses_and_display_round_trips() {
        for c in Criticality::ALL {
            assert_eq!(c.as_str().parse::<Criticality>().unwrap(), c);
            assert_eq!(c.to_string().parse::<Criticality>().unwrap(), c);
        }
        assert_eq!(
            "critical-plus".parse::<Criticality>().unwrap(),
            Criticality::CriticalPlus
        );
        assert_eq!(
            "SheddablePlus".parse::<Criticality>().unwrap(),
            Criticality::SheddablePlus
        );
        let err = "urgent".parse::<Criticality>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown criticality `urgent`; expected one of CRITICAL_PLUS, CRITICAL, SHEDDABLE_PLUS, SHEDDABLE"
        );
        assert!("sheddableplusplusplus".parse::<Criticality>().is_err());
    }

    #[test]
    fn sync_scope_sets_the_class_and_restores_it() {
        assert_eq!(Criticality::current(), Criticality::Critical);
        Criticality::Sheddable.sync_scope(|| {
            assert_eq!(Criticality::current(), Criticality::Sheddable);
            Criticality::CriticalPlus.sync_scope(|| {
                assert_eq!(Criticality::current(), Criticality::CriticalPlus);
            });
            assert_eq!(Criticality::current(), Criticality::Sheddable);
        });
        assert_eq!(Criticality::current(), Criticality::Critical);
    }

    #[tokio::test]
    async fn a_scoped_future_sees_its_class_and_a_spawned_one_only_when_inherited() {
        Criticality::SheddablePlus
            .scope(async {
                assert_eq!(Criticality::current(), Criticality::SheddablePlus);
                tokio::task::yield_now().await;
                assert_eq!(Criticality::current(), Criticality::SheddablePlus);
                let inherited =
                    tokio::spawn(Criticality::inherit(async { Criticality::current() }));
                let bare = tokio::spawn(async { Criticality::current() });
                assert_eq!(inherited.await.unwrap(), Criticality::SheddablePlus);
                assert_eq!(bare.await.unwrap(), Criticality::Critical);
            })
            .await;
    }
}
