//! Shadows: a second instance of a primitive, with other settings, that sees
//! a live one's calls and never decides one.
//!
//! A shadow trial answers "what would these settings have done on this
//! traffic?" before they act (seed 000 §八: METRICS_ONLY to trial new
//! thresholds on real traffic). Every kind that has shadows keeps one
//! [`ShadowSlot`] and implements [`Shadowed`]; what a shadow observes is the
//! kind's own business:
//!
//! - a [circuit breaker](crate::circuit_breaker::shadow) runs its whole state
//!   machine on the live breaker's outcomes and records the transitions and
//!   refusals it would have made;
//! - a [rate limiter](crate::rate_limiter::Limiter) takes the same permits on
//!   the same clock from its own state and counts the acquisitions it would
//!   have refused, made wait, or admitted where the live one refused; it
//!   never sleeps;
//! - a [bulkhead](crate::bulkhead::Bulkhead) counts the calls in flight
//!   against its own limit, released with the live call's permit on every
//!   exit path, and the calls it would have refused;
//! - a [retry](crate::retry::Retry) judges each attempt's outcome with its
//!   own predicates, attempts and waits, and counts what it would have done.
//!
//! # Cost
//!
//! Without a shadow, a call pays one relaxed load of the slot's flag (on the
//! instance, already in cache) and a branch; no allocation either way. The
//! shadow's side of a call runs out of line.

use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::OnceLock;

use parking_lot::RwLock;

/// A live instance's side: the shadow attached to it, if any. `T` is the
/// kind's handle (a cheap clone).
pub struct ShadowSlot<T> {
    /// Whether a shadow is attached: the one load a call pays without one.
    set: AtomicBool,
    shadow: RwLock<Option<T>>,
}

impl<T> Default for ShadowSlot<T> {
    fn default() -> Self {
        ShadowSlot {
            set: AtomicBool::new(false),
            shadow: RwLock::new(None),
        }
    }
}

impl<T: Clone> ShadowSlot<T> {
    /// Whether a shadow is attached (relaxed: a call racing an attachment
    /// may or may not be seen by the new shadow).
    #[inline(always)]
    pub fn is_set(&self) -> bool {
        self.set.load(Ordering::Relaxed)
    }

    /// Attaches `shadow` (or detaches with `None`); the previous one.
    pub fn replace(&self, shadow: Option<T>) -> Option<T> {
        let mut slot = self.shadow.write();
        self.set.store(shadow.is_some(), Ordering::Relaxed);
        std::mem::replace(&mut *slot, shadow)
    }

    /// The attached shadow (a clone of its handle).
    pub fn get(&self) -> Option<T> {
        self.shadow.read().clone()
    }

    /// Runs `f` on the attached shadow under the slot's read lock, without
    /// cloning its handle; `None` without a shadow.
    #[inline]
    pub fn with<R>(&self, f: impl FnOnce(&T) -> R) -> Option<R> {
        self.shadow.read().as_ref().map(f)
    }
}

/// A kind whose instances can run a shadow: the staged settings beside the
/// live ones, on the same calls, deciding none (see the [module](self)).
///
/// The provided methods are the whole API; a kind supplies its slot and how
/// a shadow of it is built.
pub trait Shadowed: Clone + Sized {
    /// The settings a shadow runs.
    type Config;

    /// This instance's slot.
    #[doc(hidden)]
    fn shadow_slot(&self) -> &ShadowSlot<Self>;

    /// A shadow of this instance running `config`: the same name and clock,
    /// marked as a shadow, attached to nothing yet.
    #[doc(hidden)]
    fn shadowed_by(&self, config: Self::Config) -> Self;

    /// Whether this instance is itself a shadow.
    fn is_shadow(&self) -> bool;

    /// A shadow's first-divergence news, for kinds that tell it (a
    /// breaker's news is its transitions: `None`).
    #[doc(hidden)]
    fn shadow_news(&self) -> Option<&ShadowNews> {
        None
    }

    /// For a shadow: calls `tap` the first time it would have done each
    /// [`Divergence`] (refused a call, waited, retried, …), on the thread of
    /// the call that made it (keep it short); later ones are only counted.
    /// One tap per shadow: `false` if it had one already, or if the kind
    /// tells no such news (a breaker: tap its transitions instead).
    fn on_first_divergence(&self, tap: impl Fn(Divergence) + Send + Sync + 'static) -> bool {
        self.shadow_news()
            .is_some_and(|news| news.tap.set(Box::new(tap)).is_ok())
    }

    /// Attaches a shadow running `config` beside this instance (replacing
    /// any shadow it had) and returns it.
    fn start_shadow(&self, config: Self::Config) -> Self {
        let shadow = self.shadowed_by(config);
        self.shadow_slot().replace(Some(shadow.clone()));
        shadow
    }

    /// Detaches this instance's shadow, which is returned (and sees no more
    /// calls).
    fn stop_shadow(&self) -> Option<Self> {
        self.shadow_slot().replace(None)
    }

    /// The shadow attached to this instance.
    fn shadow(&self) -> Option<Self> {
        self.shadow_slot().get()
    }

    /// Moves this instance's shadow to `next`, the instance that replaces it
    /// (a registry rebuilding an instance keeps a running trial this way).
    fn move_shadow_to(&self, next: &Self) {
        if let Some(shadow) = self.stop_shadow() {
            next.shadow_slot().replace(Some(shadow));
        }
    }
}

/// Something a shadow would have done that its live instance did not, as
/// [`Shadowed::on_first_divergence`] tells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Divergence {
    /// It would have refused a call (a rate limiter's acquisition, a
    /// bulkhead's slot).
    Refused = 0,
    /// It would have made a call wait (a later period's permits, a full
    /// bulkhead with a wait).
    Waited = 1,
    /// It would have retried an attempt.
    Retried = 2,
    /// It would have run out of attempts.
    GaveUp = 3,
    /// A call's outcome under it is unknown (the live instance refused it,
    /// or ended it where it would have gone on).
    Unobserved = 4,
}

impl Divergence {
    /// A stable label: `would_refuse`, `would_wait`, `would_retry`,
    /// `would_give_up`, `unobserved`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Divergence::Refused => "would_refuse",
            Divergence::Waited => "would_wait",
            Divergence::Retried => "would_retry",
            Divergence::GaveUp => "would_give_up",
            Divergence::Unobserved => "unobserved",
        }
    }
}

impl fmt::Display for Divergence {
    /// `would have refused a call for the first time`, …
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Divergence::Refused => "would have refused a call for the first time",
            Divergence::Waited => "would have made a call wait for the first time",
            Divergence::Retried => "would have retried for the first time",
            Divergence::GaveUp => "would have given up on a call for the first time",
            Divergence::Unobserved => "saw the first call whose outcome it cannot know",
        })
    }
}

/// A shadow's side of [`Shadowed::on_first_divergence`]: which divergences
/// it told already, and to whom.
#[derive(Default)]
pub struct ShadowNews {
    told: AtomicU8,
    tap: OnceLock<Box<dyn Fn(Divergence) + Send + Sync>>,
}

impl ShadowNews {
    /// Notes that the shadow would have done `what`: told the first time.
    #[inline]
    pub(crate) fn note(&self, what: Divergence) {
        let bit = 1 << what as u8;
        if self.told.load(Ordering::Relaxed) & bit == 0 {
            self.first(what, bit);
        }
    }

    #[cold]
    #[inline(never)]
    fn first(&self, what: Divergence, bit: u8) {
        if self.told.fetch_or(bit, Ordering::Relaxed) & bit == 0 {
            if let Some(tap) = self.tap.get() {
                // A tap's panic must not reach the live call it runs on.
                let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| tap(what)));
            }
        }
    }
}
