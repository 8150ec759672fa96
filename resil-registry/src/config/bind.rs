//! The simple options' bindings: an option whose typed value goes straight
//! to one resil-core builder setter, and comes back from the config getter of
//! the same name (resil-core names both alike), is one line here. From that
//! line [`Bind`] applies the file's value (`apply.rs`) and renders the
//! effective value (`render.rs`), so the two sides cannot disagree.
//!
//! Adding a simple option: its row in resil-options' table, its builder
//! method and getter in resil-core, and one line in its module (`kinds/`). Options that are not
//! a value passed to one setter (the backoff keys' interval functions, the
//! window type, the states, chaos's latency pair, retry's first wait) are
//! written by hand in the kind's module.

use super::schema::Val;
use super::setting::Values;

/// A config's simple options, both ways.
pub trait Bind {
    /// resil-core's builder of the config.
    type Builder;
    /// `b` with every simple option `values` holds set.
    fn apply_bound(b: Self::Builder, values: &Values) -> Self::Builder;
    /// `(file key, effective value)` of every simple option, in binding order.
    fn render_bound(&self) -> Vec<(&'static str, Option<Val>)>;
}
