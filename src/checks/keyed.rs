//! `key = <expr>` and `permits = <expr>`: what a keyed attribute's
//! expressions must be.

use std::hash::Hash;

/// A value that can key a family: `Hash + Eq + Clone + Send + Sync + 'static`
/// (a `&str` is taken by another route, see [`KeyProbe`]).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a key of a resil family",
    label = "this key's value",
    note = "a key is a `&str` or an owned value that is `Hash + Eq + Clone + Send + Sync + 'static` (`String`, `u64`, `IpAddr`, …): borrow a `&str` or clone the value"
)]
pub trait KeyValue: Hash + Eq + Clone + Send + Sync + 'static {}

impl<T: Hash + Eq + Clone + Send + Sync + 'static> KeyValue for T {}

/// The key expression's value, probed by method resolution on
/// `(&KeyProbe(&value))`: a `&str` is looked up as `str` ([`StrKey`], whose
/// receiver matches without an autoref, so it is tried first), any other
/// value as itself ([`AnyKey`], which requires [`KeyValue`]).
pub struct KeyProbe<'a, T>(pub &'a T);

/// A `&str` key.
pub trait StrKey {
    /// The key to look up.
    fn __resil_key(&self) -> &str;
}

impl StrKey for KeyProbe<'_, &str> {
    #[inline(always)]
    fn __resil_key(&self) -> &str {
        self.0
    }
}

/// Any other key.
pub trait AnyKey<T> {
    /// The key to look up.
    fn __resil_key(&self) -> &T;
}

impl<T: KeyValue> AnyKey<T> for &KeyProbe<'_, T> {
    #[inline(always)]
    fn __resil_key(&self) -> &T {
        self.0
    }
}

/// A weight in permits (`permits = req.items.len()`): an unsigned integer,
/// saturated to `u32` (a weight that large is refused by any limit).
#[diagnostic::on_unimplemented(
    message = "`permits` takes an unsigned integer, not `{Self}`",
    label = "the number of permits this call takes",
    note = "write a `u32`, `usize`, `u64`, `u16` or `u8` expression, e.g. `permits = req.items.len()`"
)]
pub trait Permits {
    /// The weight as `u32`. The expansion calls it at the user's expression
    /// (`Permits::permits(expr)`), so rustc names no item of resil's source.
    fn permits(self) -> u32;
}

macro_rules! permits {
    ($($t:ty),*) => {$(
        // Not listed by rustc under "the following types implement": the
        // note names them without paths into resil's source.
        #[diagnostic::do_not_recommend]
        impl Permits for $t {
            #[inline(always)]
            fn permits(self) -> u32 {
                u32::try_from(self).unwrap_or(u32::MAX)
            }
        }
    )*};
}
permits!(u8, u16, u32, u64, u128, usize);
