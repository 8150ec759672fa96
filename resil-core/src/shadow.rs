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

use std::sync::atomic::{AtomicBool, Ordering};

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
