//! What a family is keyed by: any `Hash + Eq + Clone + Send + Sync + 'static`
//! value, or a `str`.

use std::any::{Any, TypeId};
use std::fmt;
use std::hash::{BuildHasher, Hash, Hasher};

/// A value a keyed family can be keyed by: any `Hash + Eq + Clone + Send +
/// Sync + 'static` value (a tenant id, an `IpAddr`, a `(String, u16)`), and
/// `str`.
///
/// `str` and `String` are the same key: `family.get("tenant-1")` and
/// `family.get(&"tenant-1".to_string())` reach one instance, and a `str`
/// look-up of an existing key allocates nothing. Two values of different
/// types are different keys even when they print alike (`1u32` and `1u64`).
pub trait Key: Hash + Send + Sync {
    /// Whether `stored` holds this key.
    #[doc(hidden)]
    fn matches(&self, stored: &StoredKey) -> bool;

    /// The key's hash by `hasher` (a string's bytes in one write, so that
    /// `str` and `String` hash alike).
    #[doc(hidden)]
    fn hash_by<B: BuildHasher>(&self, hasher: &B) -> u64;

    /// The key as the family keeps it (one allocation, on creation only).
    #[doc(hidden)]
    fn store(&self) -> StoredKey;
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> Key for T {
    #[inline]
    fn matches(&self, stored: &StoredKey) -> bool {
        // Decided at compile time for each `T`.
        if let Some(s) = (self as &dyn Any).downcast_ref::<String>() {
            return Key::matches(s.as_str(), stored);
        }
        stored.downcast_ref::<T>() == Some(self)
    }

    #[inline]
    fn hash_by<B: BuildHasher>(&self, hasher: &B) -> u64 {
        match (self as &dyn Any).downcast_ref::<String>() {
            Some(s) => Key::hash_by(s.as_str(), hasher),
            None => hasher.hash_one(self),
        }
    }

    fn store(&self) -> StoredKey {
        StoredKey::new(self.clone())
    }
}

impl Key for str {
    #[inline]
    fn matches(&self, stored: &StoredKey) -> bool {
        stored
            .downcast_ref::<String>()
            .is_some_and(|s| same_bytes(s.as_bytes(), self.as_bytes()))
    }

    #[inline]
    fn hash_by<B: BuildHasher>(&self, hasher: &B) -> u64 {
        let mut state = hasher.build_hasher();
        state.write(self.as_bytes());
        state.finish()
    }

    fn store(&self) -> StoredKey {
        StoredKey::new(self.to_owned())
    }
}

/// `a == b`, inline for keys of 8 to 16 bytes (a tenant id, a host): two
/// overlapping 8-byte compares where a slice compare calls `memcmp`.
#[inline]
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    match (a.first_chunk::<8>(), b.first_chunk::<8>()) {
        (Some(a0), Some(b0)) if a.len() <= 16 => {
            a0 == b0 && a.last_chunk::<8>() == b.last_chunk::<8>()
        }
        _ => a == b,
    }
}

/// A key as a family keeps it, type-erased (its type's id kept beside it,
/// so a look-up compares ids without a virtual call).
pub struct StoredKey {
    ty: TypeId,
    value: Box<dyn Any + Send + Sync>,
}

impl StoredKey {
    fn new<T: Any + Send + Sync>(value: T) -> Self {
        StoredKey {
            ty: TypeId::of::<T>(),
            value: Box::new(value),
        }
    }

    /// The key as text when it is a string (`String`, `&'static str`,
    /// `Box<str>`, `Arc<str>`): what tier patterns (`gold-*`) match against
    /// and what the top-keys report shows. `None` for other key types.
    pub fn as_str(&self) -> Option<&str> {
        if let Some(s) = self.downcast_ref::<String>() {
            return Some(s);
        }
        if let Some(s) = self.downcast_ref::<&'static str>() {
            return Some(s);
        }
        if let Some(s) = self.downcast_ref::<Box<str>>() {
            return Some(s);
        }
        self.downcast_ref::<std::sync::Arc<str>>().map(|s| &**s)
    }

    /// The key as its own type, if it is a `T`.
    #[inline]
    pub fn downcast_ref<T: 'static>(&self) -> Option<&T> {
        if self.ty != TypeId::of::<T>() {
            return None;
        }
        let value: *const (dyn Any + Send + Sync) = &*self.value;
        // SAFETY: `value` was made from a `T` (`ty` is its id, set with it).
        Some(unsafe { &*value.cast::<T>() })
    }
}

impl fmt::Debug for StoredKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.as_str() {
            Some(s) => fmt::Debug::fmt(s, f),
            None => f.write_str("<key>"),
        }
    }
}
