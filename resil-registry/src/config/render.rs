//! The one renderer: a resil-core config's effective value of every option a
//! file can set, as the typed value the loader reads ([`Val`]), so that the
//! snapshot, the provenance's defaults and the docs write each value the way
//! the loader parses it back (`1500ms`, never `1.5s`).

use resil_core::retry::{IntervalFunction, DEFAULT_MULTIPLIER, DEFAULT_RANDOMIZATION_FACTOR};

use super::bind::Bind;
use super::schema::{Kind, Target, Val};

/// A resil-core config the renderer writes: its kind and every file-settable
/// option it can tell, one impl per config in its kind's module (the simple
/// options from their bindings, `bind.rs`; the others by hand).
pub trait Render: Bind + Default {
    /// The kind whose rows of the option table it renders.
    const KIND: Kind;
    /// `(file key, value)` for the options the config can tell (`None`: an
    /// unset cap).
    fn found(&self) -> Vec<(&'static str, Option<Val>)>;
}

/// Every file-settable option of `config`'s kind with its effective value,
/// in the kind's table order; options a config cannot tell (error lists,
/// registry settings, an unset cap) are left out.
pub(crate) fn values<C: Render>(config: &C) -> Vec<(&'static str, Val)> {
    let found = config.found();
    // The table's order, and only its core options: a key rendered here that
    // the table lacks would be a value the loader refuses.
    C::KIND
        .options()
        .iter()
        .filter(|o| o.target == Target::Core)
        .filter_map(|o| {
            let (_, v) = found.iter().find(|(k, _)| *k == o.key)?;
            Some((o.key, v.clone()?))
        })
        .collect()
}

/// `values`, each as a config file writes it.
pub(crate) fn rendered<C: Render>(config: &C) -> Vec<(&'static str, String)> {
    values(config)
        .into_iter()
        .map(|(k, v)| (k, v.to_string()))
        .collect()
}

/// `w` as one of the `words` a choice option accepts (the first when none).
pub(crate) fn word(words: &'static [&'static str], w: &str) -> Val {
    Val::Choice(words.iter().find(|x| **x == w).copied().unwrap_or(words[0]))
}

/// The backoff keys an interval function stands for (Resilience4j's
/// `enable-exponential-backoff`, `exponential-backoff-multiplier`, its cap,
/// `enable-randomized-wait`, `randomized-wait-factor`).
pub(crate) fn backoff_values(
    f: Option<&IntervalFunction>,
    max_key: &'static str,
) -> Vec<(&'static str, Option<Val>)> {
    let multiplier = f.and_then(IntervalFunction::multiplier);
    let factor = f.and_then(IntervalFunction::randomization_factor);
    vec![
        (
            "enable-exponential-backoff",
            Some(Val::Bool(multiplier.is_some())),
        ),
        (
            "exponential-backoff-multiplier",
            Some(Val::F64(multiplier.unwrap_or(DEFAULT_MULTIPLIER))),
        ),
        (
            max_key,
            f.and_then(IntervalFunction::max).map(Val::Duration),
        ),
        ("enable-randomized-wait", Some(Val::Bool(factor.is_some()))),
        (
            "randomized-wait-factor",
            Some(Val::F64(factor.unwrap_or(DEFAULT_RANDOMIZATION_FACTOR))),
        ),
    ]
}
