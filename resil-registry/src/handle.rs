//! What callers and macro call sites hold: a handle that follows replacements.
//!
//! A [`Handle`] points at a *slot*, not at an instance. The slot holds the
//! current instance behind one atomic pointer; a reload or a `replace_*` swaps
//! that pointer, so every handle already handed out — including the one a
//! macro call site cached in a `static` — sees the new instance on its next
//! dereference, without a map look-up.
//!
//! Reclamation is deliberately simple: a replaced instance is *retired* into
//! the slot, never freed while the slot lives. A dereference may still be
//! reading the old instance when the swap happens, and with nothing tracking
//! readers the only safe moment to free it is when no reader can exist any
//! more, i.e. when the slot itself is dropped: once the registry *and* every
//! handle for that name are gone. Each replacement therefore keeps one retired
//! instance (a few hundred bytes for a breaker) until then; replacements happen
//! on reloads and management operations, not on calls, so this is bounded by
//! how often the configuration changes.

use std::fmt;
use std::ops::Deref;
use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use crate::telemetry::ring::Ring;

/// The shared cell behind every handle of one named instance.
pub(crate) struct Slot<T> {
    /// Never null: `&first` (until a replacement) or a pointer obtained from
    /// `Box::into_raw`.
    current: AtomicPtr<T>,
    /// The instance the slot was created with, stored inline: creating an
    /// instance costs no allocation of its own beyond the slot's. It lives
    /// (unmoved, inside the `Arc`) as long as the slot, replaced or not.
    first: T,
    /// Instances a replacement swapped out (other than `first`); freed with
    /// the slot.
    retired: Mutex<Vec<Box<T>>>,
    name: Arc<str>,
    /// The instance's recent per-call events, when the registry records
    /// them (empty and unallocated otherwise).
    pub(crate) ring: Ring,
    /// The instance's notable events (transitions, resets, manual
    /// overrides, reloads, chaos switches), kept apart so per-call events
    /// never evict them (unallocated until the first).
    pub(crate) history: Ring,
}

impl<T> Slot<T> {
    /// A slot holding `value`, whose ring and history each keep up to
    /// `ring_capacity` events.
    pub(crate) fn shared(name: Arc<str>, value: T, ring_capacity: usize) -> Arc<Self> {
        let slot = Arc::new(Slot {
            current: AtomicPtr::new(ptr::null_mut()),
            first: value,
            retired: Mutex::new(Vec::new()),
            name,
            ring: Ring::new(ring_capacity),
            history: Ring::new(ring_capacity),
        });
        // Before the `Arc` is shared: no reader can see the null.
        slot.current
            .store(ptr::from_ref(&slot.first).cast_mut(), Ordering::Release);
        slot
    }

    fn is_first(&self, p: *mut T) -> bool {
        ptr::eq(p, &self.first)
    }

    /// The current instance.
    #[inline]
    pub(crate) fn load(&self) -> &T {
        // SAFETY: `current` is `&self.first` (which lives as long as `self`
        // and is never written through) or a pointer from `Box::into_raw`
        // that is only freed by `Drop for Slot` (a swapped-out one goes to
        // `retired`), so it lives at least as long as `&self`.
        unsafe { &*self.current.load(Ordering::Acquire) }
    }

    /// Installs `value` as the current instance and retires the previous one.
    pub(crate) fn replace(&self, value: T) {
        let new = Box::into_raw(Box::new(value));
        let old = self.current.swap(new, Ordering::AcqRel);
        if self.is_first(old) {
            return; // `first` stays where it is until the slot drops
        }
        // SAFETY: `old` is not `first`, so it came from `Box::into_raw`, and
        // it was just unlinked; readers that loaded it may still use it, so it
        // is kept, not dropped.
        let old = unsafe { Box::from_raw(old) };
        self.retired.lock().push(old);
    }

    /// The registry name.
    pub(crate) fn load_name(&self) -> &str {
        &self.name
    }

    /// The registry name, shared.
    pub(crate) fn name(&self) -> &Arc<str> {
        &self.name
    }

    /// How many replaced instances this slot keeps alive.
    pub(crate) fn retired_count(&self) -> usize {
        let first_retired = !self.is_first(self.current.load(Ordering::Acquire));
        self.retired.lock().len() + usize::from(first_retired)
    }
}

impl<T> Drop for Slot<T> {
    fn drop(&mut self) {
        let current = std::mem::replace(self.current.get_mut(), ptr::null_mut());
        if !self.is_first(current) {
            // SAFETY: `&mut self`: no reader is left; a pointer other than
            // `first` came from `Box::into_raw` and is freed exactly once, here.
            drop(unsafe { Box::from_raw(current) });
        }
        // `first` and `retired` drop with the fields.
    }
}

/// A shared handle to a named instance in a [`Registry`](crate::Registry).
///
/// `Clone + Send + Sync + 'static` (for the primitives, which are all
/// `Send + Sync`), cheap to clone (one reference count), and
/// [`Deref`]`<Target = T>`: each dereference is one `Acquire` atomic load and
/// sees the instance most recently installed under this name (by a reload, a
/// `configure_*` call or a replacement), so a handle cached by a macro call
/// site never goes stale.
///
/// ```
/// use resil_registry::Registry;
///
/// let registry = Registry::new();
/// let inventory = registry.circuit_breaker("inventory");
/// let answer = inventory.call(|| Ok::<_, std::io::Error>(42));
/// assert_eq!(answer.unwrap(), 42);
/// assert_eq!(inventory.name(), "inventory");
/// ```
///
/// # Lifetime of replaced instances
///
/// A reference obtained by dereferencing stays valid even if the instance is
/// replaced meanwhile: replaced instances are retired, not freed, until the
/// registry and every handle of that name have been dropped. An instance
/// *removed* from the registry keeps working for the handles that still point
/// at it, but is no longer reachable by name.
pub struct Handle<T> {
    slot: Arc<Slot<T>>,
}

impl<T> Handle<T> {
    pub(crate) fn from_slot(slot: Arc<Slot<T>>) -> Self {
        Handle { slot }
    }

    /// A handle to `value` alone, outside any registry, which nothing
    /// replaces: for a value built in code where others follow a file
    /// ([`Registry::follow_file`](crate::Registry::follow_file)) behind the
    /// same type. Its [`registry_name`](Self::registry_name) is `name`.
    pub fn detached(name: &str, value: T) -> Self {
        Handle::from_slot(Slot::shared(name.into(), value, 0))
    }

    /// The current instance (the same as dereferencing).
    #[inline]
    pub fn get(&self) -> &T {
        self.slot.load()
    }

    /// The slot this handle follows.
    pub(crate) fn slot(&self) -> &Arc<Slot<T>> {
        &self.slot
    }

    /// The registry name this handle was looked up by.
    pub fn registry_name(&self) -> &str {
        &self.slot.name
    }

    /// Whether both handles follow the same slot (the same registry entry).
    pub fn same_entry(a: &Self, b: &Self) -> bool {
        Arc::ptr_eq(&a.slot, &b.slot)
    }

    /// How many replaced instances are kept alive for this entry (see the
    /// type's docs).
    pub fn retired_instances(&self) -> usize {
        self.slot.retired_count()
    }
}

impl<T: Clone> Handle<T> {
    /// A clone of the current instance, detached from later replacements.
    pub fn current(&self) -> T {
        self.get().clone()
    }
}

impl<T> Deref for Handle<T> {
    type Target = T;

    #[inline]
    fn deref(&self) -> &T {
        self.slot.load()
    }
}

impl<T> Clone for Handle<T> {
    fn clone(&self) -> Self {
        Handle {
            slot: Arc::clone(&self.slot),
        }
    }
}

impl<T: fmt::Debug> fmt::Debug for Handle<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Handle").field(self.get()).finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;

    struct Counted(u32, Arc<AtomicUsize>);

    impl Drop for Counted {
        fn drop(&mut self) {
            self.1.fetch_add(1, Ordering::SeqCst);
        }
    }

    #[test]
    fn a_handle_sees_a_replacement_and_old_references_stay_valid_until_the_slot_drops() {
        let drops = Arc::new(AtomicUsize::new(0));
        let slot = Slot::shared("a".into(), Counted(1, drops.clone()), 1);
        let handle = Handle::from_slot(slot.clone());
        let old: &Counted = &handle;
        slot.replace(Counted(2, drops.clone()));
        assert_eq!(handle.0, 2);
        assert_eq!(old.0, 1, "the retired instance is still readable");
        assert_eq!(drops.load(Ordering::SeqCst), 0);
        assert_eq!(handle.retired_instances(), 1);
        drop(slot);
        assert_eq!(drops.load(Ordering::SeqCst), 0, "a handle keeps the slot");
        drop(handle);
        assert_eq!(
            drops.load(Ordering::SeqCst),
            2,
            "current and retired freed once"
        );
    }

    #[test]
    fn the_inline_first_instance_is_dropped_once_whether_replaced_or_not() {
        let drops = Arc::new(AtomicUsize::new(0));
        drop(Slot::shared("a".into(), Counted(1, drops.clone()), 1));
        assert_eq!(drops.load(Ordering::SeqCst), 1, "never replaced");

        let drops = Arc::new(AtomicUsize::new(0));
        let slot = Slot::shared("b".into(), Counted(1, drops.clone()), 1);
        let handle = Handle::from_slot(slot.clone());
        assert_eq!(handle.retired_instances(), 0);
        slot.replace(Counted(2, drops.clone()));
        slot.replace(Counted(3, drops.clone()));
        assert_eq!(handle.0, 3);
        assert_eq!(handle.retired_instances(), 2, "the first and the second");
        drop((slot, handle));
        assert_eq!(drops.load(Ordering::SeqCst), 3, "each instance once");
    }

    #[test]
    fn concurrent_readers_always_see_a_whole_instance() {
        let drops = Arc::new(AtomicUsize::new(0));
        let slot = Slot::shared("a".into(), Counted(0, drops.clone()), 1);
        std::thread::scope(|s| {
            for _ in 0..3 {
                let h = Handle::from_slot(slot.clone());
                s.spawn(move || {
                    let mut last = 0;
                    for _ in 0..20_000 {
                        let v = h.0;
                        assert!(v >= last, "replacements are seen in order");
                        last = v;
                    }
                });
            }
            for i in 1..=200 {
                slot.replace(Counted(i, drops.clone()));
            }
        });
        assert_eq!(Handle::from_slot(slot.clone()).0, 200);
        assert_eq!(slot.retired_count(), 200);
        drop(slot);
        assert_eq!(drops.load(Ordering::SeqCst), 201);
    }
}
