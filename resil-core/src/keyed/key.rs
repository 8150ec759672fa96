//! What a family is keyed by: any `Hash + Eq + Clone + Send + Sync + 'static`
//! value, or a `str`.

use std::any::Any;
use std::fmt;
use std::hash::Hash;

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

    /// The key as the family keeps it (one allocation, on creation only).
    #[doc(hidden)]
    fn store(&self) -> StoredKey;
}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> Key for T {
    #[inline]
    fn matches(&self, stored: &StoredKey) -> bool {
        stored.0.downcast_ref::<T>() == Some(self)
    }

    fn store(&self) -> StoredKey {
        StoredKey(Box::new(self.clone()))
    }
}

impl Key for str {
    #[inline]
    fn matches(&self, stored: &StoredKey) -> bool {
        stored.0.downcast_ref::<String>().map(String::as_str) == Some(self)
    }

    fn store(&self) -> StoredKey {
        StoredKey(Box::new(self.to_owned()))
    }
}

/// A key as a family keeps it, type-erased.
pub struct StoredKey(Box<dyn Any + Send + Sync>);

impl StoredKey {
    /// The key as text when it is a string (`String`, `&'static str`,
    /// `Box<str>`, `Arc<str>`): what tier patterns (`gold-*`) match against
    /// and what the top-keys report shows. `None` for other key types.
    pub fn as_str(&self) -> Option<&str> {
        let any = &*self.0;
        if let Some(s) = any.downcast_ref::<String>() {
            return Some(s);
        }
        if let Some(s) = any.downcast_ref::<&'static str>() {
            return Some(s);
        }
        if let Some(s) = any.downcast_ref::<Box<str>>() {
            return Some(s);
        }
        any.downcast_ref::<std::sync::Arc<str>>().map(|s| &**s)
    }

    /// The key as its own type, if it is a `T`.
    pub fn downcast_ref<T: 'static>(&self) -> Option<&T> {
        self.0.downcast_ref()
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
