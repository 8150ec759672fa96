//! The inheritance walk: from a config (or an instance's first base) up its
//! `base-config` links to the root, the one walk both the config file's
//! chains (`config/resolve.rs`) and the configs registered in code
//! (`registry/plan.rs`) take. Each caller says how a name's base is looked up
//! and whether a name exists, and turns a [`ChainProblem`] into its own error
//! (a file error with the key path and line, or a `RegistryError`).
//!
//! The rule, Resilience4j's: a config names its base explicitly; a config
//! without one inherits [`DEFAULT`] (when it exists), except `default` itself
//! and the configs `default` inherits from through explicit bases (they would
//! otherwise inherit themselves). A chain that comes back to a config
//! implicitly ends there; an explicit base that comes back is a cycle.

/// The config every chain ends in, unless a config names another base.
pub(crate) const DEFAULT: &str = "default";

/// Why a chain could not be walked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ChainProblem<'a> {
    /// `name` is named as a base but no config has that name. `walked` holds
    /// the configs walked before it, in walk order (first the first link):
    /// the last one's base is `name` (none walked: the first link is `name`).
    UnknownBase {
        /// The configs walked, in walk order.
        walked: Vec<&'a str>,
        /// The missing base.
        name: &'a str,
    },
    /// The configs `walked[at..]` name each other as bases in a cycle:
    /// `walked` is in walk order and the last one's explicit base is
    /// `walked[at]`.
    Cycle {
        /// The configs walked, in walk order.
        walked: Vec<&'a str>,
        /// Where the cycle starts in `walked`.
        at: usize,
    },
}

/// Walks from `first` (reached through an explicit base when `explicit`, as
/// opposed to the implicit `default` or same-name rule) up to the root and
/// returns the chain root first, `first` last. `base` looks up the base a
/// config names explicitly; `exists` says whether a config exists.
pub(crate) fn walk<'a>(
    first: &'a str,
    explicit: bool,
    base: impl Fn(&str) -> Option<&'a str>,
    exists: impl Fn(&str) -> bool,
) -> Result<Vec<&'a str>, ChainProblem<'a>> {
    let default_bases = explicit_bases(DEFAULT, &base);
    let mut walked: Vec<&'a str> = Vec::new();
    let (mut next, mut explicit) = (first, explicit);
    loop {
        if let Some(at) = walked.iter().position(|w| *w == next) {
            if !explicit {
                break; // back at a config implicitly: the chain ends there
            }
            return Err(ChainProblem::Cycle { walked, at });
        }
        if !exists(next) {
            return Err(ChainProblem::UnknownBase { walked, name: next });
        }
        walked.push(next);
        match base(next) {
            Some(b) => (next, explicit) = (b, true),
            // `default` is the root; a config `default` inherits from does
            // not inherit `default`.
            None if next == DEFAULT || default_bases.contains(&next) => break,
            None if exists(DEFAULT) => (next, explicit) = (DEFAULT, false),
            None => break,
        }
    }
    walked.reverse();
    Ok(walked)
}

/// The configs `name` names through explicit bases, nearest first (stopping
/// at a missing config or a cycle, which the walk itself reports).
fn explicit_bases<'a>(name: &str, base: &impl Fn(&str) -> Option<&'a str>) -> Vec<&'a str> {
    let mut out: Vec<&'a str> = Vec::new();
    let mut current = base(name);
    while let Some(next) = current {
        if out.contains(&next) || next == name {
            break;
        }
        out.push(next);
        current = base(next);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Configs as `(name, base)` pairs.
    fn run<'a>(
        configs: &'a [(&'a str, Option<&'a str>)],
        first: &'a str,
        explicit: bool,
    ) -> Result<Vec<&'a str>, ChainProblem<'a>> {
        walk(
            first,
            explicit,
            |n| configs.iter().find(|c| c.0 == n).and_then(|c| c.1),
            |n| configs.iter().any(|c| c.0 == n),
        )
    }

    #[test]
    fn a_config_without_a_base_inherits_default_and_default_is_the_root() {
        let configs = [("default", None), ("a", Some("b")), ("b", None)];
        assert_eq!(run(&configs, "a", true), Ok(vec!["default", "b", "a"]));
        assert_eq!(run(&configs, "default", true), Ok(vec!["default"]));
    }

    #[test]
    fn without_a_default_config_the_chain_ends_at_the_config_without_a_base() {
        let configs = [("a", Some("b")), ("b", None)];
        assert_eq!(run(&configs, "a", true), Ok(vec!["b", "a"]));
    }

    #[test]
    fn a_config_default_inherits_from_does_not_inherit_default() {
        // `default` → `shared`: `shared` has no base, yet does not inherit
        // `default` (which would be a cycle nobody wrote).
        let configs = [("default", Some("shared")), ("shared", None), ("a", None)];
        assert_eq!(run(&configs, "shared", true), Ok(vec!["shared"]));
        assert_eq!(run(&configs, "a", true), Ok(vec!["shared", "default", "a"]));
        assert_eq!(
            run(&configs, "default", false),
            Ok(vec!["shared", "default"])
        );
    }

    #[test]
    fn an_unknown_base_reports_the_configs_walked_before_it() {
        let configs = [("default", None), ("a", Some("b")), ("b", Some("nope"))];
        assert_eq!(
            run(&configs, "a", true),
            Err(ChainProblem::UnknownBase {
                walked: vec!["a", "b"],
                name: "nope"
            })
        );
        assert_eq!(
            run(&configs, "nope", true),
            Err(ChainProblem::UnknownBase {
                walked: vec![],
                name: "nope"
            })
        );
    }

    #[test]
    fn an_explicit_cycle_reports_the_configs_walked_and_where_the_cycle_starts() {
        let configs = [("x", Some("a")), ("a", Some("b")), ("b", Some("a"))];
        assert_eq!(
            run(&configs, "x", true),
            Err(ChainProblem::Cycle {
                walked: vec!["x", "a", "b"],
                at: 1
            })
        );
        let own = [("a", Some("a"))];
        assert_eq!(
            run(&own, "a", true),
            Err(ChainProblem::Cycle {
                walked: vec!["a"],
                at: 0
            })
        );
        // `default` → `a` → `default` through explicit bases is a cycle too.
        let through_default = [("default", Some("a")), ("a", Some("default"))];
        assert_eq!(
            run(&through_default, "a", true),
            Err(ChainProblem::Cycle {
                walked: vec!["a", "default"],
                at: 0
            })
        );
    }
}
