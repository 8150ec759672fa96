//! Spring Boot's file model, applied to the value tree before the schema sees
//! it: dotted keys are nesting, only the `resilience4j` subtree is resil's,
//! `${NAME:default}` placeholders resolve from the environment, and profile
//! documents (`---` with `spring.config.activate.on-profile`) are kept or
//! dropped by the active profiles.
//!
//! Spring binds `a.b: 1` exactly as `a:` then `b: 1`, so both forms may be
//! mixed freely; one key given twice through both forms is an error naming
//! both lines (the line table records every occurrence of a path).

use super::error::{Problem, ProblemKind};
use super::value::{segments, Value};

/// The key under which Spring's own settings live (profile activation).
const SPRING: &str = "spring";

/// The environment variable naming the active profiles (comma-separated), as
/// Spring's `spring.profiles.active`.
pub const PROFILES_VAR: &str = "RESIL_PROFILES";

/// One path segment of a key: a map key, or a list index (`errors[0]`, as
/// `.properties` files write list items).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Seg {
    Key(String),
    Index(usize),
}

/// `record-exceptions[0]` → `record-exceptions`, `0`; `a[x]` stays a key.
pub(crate) fn split_index(segment: &str) -> Vec<Seg> {
    let mut out = Vec::new();
    let mut rest = segment;
    let mut indices = Vec::new();
    while let Some(stripped) = rest.strip_suffix(']') {
        let Some(open) = stripped.rfind('[') else {
            break;
        };
        let Ok(i) = stripped[open + 1..].parse::<usize>() else {
            break;
        };
        indices.push(i);
        rest = &stripped[..open];
    }
    if rest.is_empty() && !indices.is_empty() {
        // `[0]` alone is a key, not an index of nothing.
        return vec![Seg::Key(segment.to_owned())];
    }
    out.push(Seg::Key(rest.to_owned()));
    out.extend(indices.into_iter().rev().map(Seg::Index));
    out
}

/// The segments of a key as written: dotted parts, each with its indices.
pub(crate) fn key_segments(key: &str) -> Vec<Seg> {
    segments(key).iter().flat_map(|s| split_index(s)).collect()
}

/// The key path of a list of segments: `a.b[0].c`.
pub(crate) fn render_path(base: &str, segs: &[Seg]) -> String {
    let mut out = base.to_owned();
    for seg in segs {
        match seg {
            Seg::Key(k) => {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(k);
            }
            Seg::Index(i) => out.push_str(&format!("[{i}]")),
        }
    }
    out
}

/// Expands every dotted key of the tree into nesting, merging maps that the
/// two forms both write. A path given twice is recorded as a duplicate (the
/// first value is kept).
pub(crate) fn expand(value: Value, path: &str, problems: &mut Vec<Problem>) -> Value {
    match value {
        Value::Map(entries) => {
            let mut out = Value::Map(Vec::new());
            for (key, value) in entries {
                let segs = key_segments(&key);
                let child_path = render_path(path, &segs);
                let value = expand(value, &child_path, problems);
                insert(&mut out, path, &segs, value, problems);
            }
            out
        }
        Value::List(items) => Value::List(
            items
                .into_iter()
                .enumerate()
                .map(|(i, v)| expand(v, &format!("{path}[{i}]"), problems))
                .collect(),
        ),
        other => other,
    }
}

/// Inserts `value` at `segs` below `node` (whose path is `path`).
pub(crate) fn insert(
    node: &mut Value,
    path: &str,
    segs: &[Seg],
    value: Value,
    problems: &mut Vec<Problem>,
) {
    let Some((first, rest)) = segs.split_first() else {
        merge(node, value, path, problems);
        return;
    };
    let here = render_path(path, std::slice::from_ref(first));
    match first {
        Seg::Key(key) => {
            if matches!(node, Value::Null) {
                *node = Value::Map(Vec::new());
            }
            let Value::Map(entries) = node else {
                problems.push(twice(path));
                return;
            };
            let at = match entries.iter().position(|(k, _)| k == key) {
                Some(at) => at,
                None if rest.is_empty() => {
                    // A fresh slot: the value goes in as it is (a `null`
                    // written in the file stays `null`).
                    entries.push((key.clone(), value));
                    return;
                }
                None => {
                    // Filled below: `null` becomes the map or list `rest` needs.
                    entries.push((key.clone(), Value::Null));
                    entries.len() - 1
                }
            };
            insert(&mut entries[at].1, &here, rest, value, problems);
        }
        Seg::Index(i) => {
            if matches!(node, Value::Null) {
                *node = Value::List(Vec::new());
            }
            let Value::List(items) = node else {
                problems.push(twice(path));
                return;
            };
            if *i > items.len() {
                problems.push(Problem::new(
                    ProblemKind::InvalidValue,
                    Some(here),
                    format!(
                        "`{path}` has item [{i}] but not item [{}]: list indices start at 0 and have no gaps",
                        items.len()
                    ),
                ));
                return;
            }
            if *i == items.len() {
                items.push(if rest.is_empty() {
                    value
                } else {
                    let mut fresh = Value::Null;
                    insert(&mut fresh, &here, rest, value, problems);
                    fresh
                });
                return;
            }
            insert(&mut items[*i], &here, rest, value, problems);
        }
    }
}

/// Merges `value` into the slot `node` already holds.
fn merge(node: &mut Value, value: Value, path: &str, problems: &mut Vec<Problem>) {
    match (node, value) {
        (node @ Value::Null, value) => *node = value,
        (Value::Map(into), Value::Map(entries)) => {
            for (key, value) in entries {
                let child = render_path(path, &[Seg::Key(key.clone())]);
                match into.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, slot)) => merge(slot, value, &child, problems),
                    None => into.push((key, value)),
                }
            }
        }
        (_, Value::Null) => {}
        _ => problems.push(twice(path)),
    }
}

fn twice(path: &str) -> Problem {
    Problem::new(
        ProblemKind::Duplicate,
        Some(path.to_owned()),
        format!("`{path}` is given twice (Spring reads `a.b:` as `a:` then `b:`)"),
    )
}

/// Which profiles a document is for (`spring.config.activate.on-profile`, or
/// Spring Boot 2.3's `spring.profiles`), as written: `None` for a document
/// every profile reads.
pub(crate) fn document_profiles(doc: &Value) -> Option<String> {
    let spring = get(doc, SPRING)?;
    let text = get(get(get(spring, "config")?, "activate")?, "on-profile")
        .or_else(|| get(spring, "profiles").filter(|v| !matches!(v, Value::Map(_))))?;
    Some(scalar_list(text).join(","))
}

/// `spring.profiles.active` written in a document, if any.
pub(crate) fn active_in_file(doc: &Value) -> Option<Vec<String>> {
    let active = get(get(get(doc, SPRING)?, "profiles")?, "active")?;
    Some(scalar_list(active))
}

/// Whether a document written for `expression` is read with `active`
/// profiles: a comma list of terms, any of which may match; a term is a
/// profile name, `!name` (not active), or `a & b` (all active).
pub(crate) fn profile_matches(expression: &str, active: &[String]) -> bool {
    let is_active = |name: &str| active.iter().any(|a| a == name.trim());
    expression.split([',', '|']).any(|term| {
        term.split('&').all(|factor| {
            let factor = factor.trim().trim_matches(['(', ')']);
            match factor.strip_prefix('!') {
                Some(name) => !is_active(name),
                None => is_active(factor),
            }
        })
    })
}

/// A list written as a list, a comma-separated string or one scalar.
pub(crate) fn scalar_list(value: &Value) -> Vec<String> {
    match value {
        Value::List(items) => items.iter().flat_map(scalar_list).collect(),
        Value::Str(s) => s
            .split(',')
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
        Value::Int(i) => vec![i.to_string()],
        Value::Bool(b) => vec![b.to_string()],
        Value::Float(f) => vec![f.to_string()],
        _ => Vec::new(),
    }
}

fn get<'a>(map: &'a Value, key: &str) -> Option<&'a Value> {
    let Value::Map(entries) = map else {
        return None;
    };
    entries
        .iter()
        .find(|(k, _)| super::schema::normalize(k) == super::schema::normalize(key))
        .map(|(_, v)| v)
}

/// Resolves every `${NAME}` / `${NAME:default}` in the tree's strings:
/// `lookup` answers a name (the environment, then the file's own keys), a
/// default is used when it has none, and a placeholder with neither is a
/// problem at its key.
///
/// Returns whether the value resolved; one that did not is dropped from its
/// map (or list), so its one problem is the only one reported for it.
pub(crate) fn resolve_placeholders(
    value: &mut Value,
    path: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<Problem>,
) -> bool {
    match value {
        Value::Str(text) if text.contains("${") => match substitute(text, lookup, 0) {
            Ok(resolved) => {
                *text = resolved;
                true
            }
            Err(why) => {
                problems.push(Problem::new(
                    ProblemKind::InvalidValue,
                    Some(path.to_owned()),
                    format!("`{path}`: {why}"),
                ));
                false
            }
        },
        Value::Map(entries) => {
            entries.retain_mut(|(key, v)| {
                let child = render_path(path, &[Seg::Key(key.clone())]);
                resolve_placeholders(v, &child, lookup, problems)
            });
            true
        }
        Value::List(items) => {
            let mut i = 0;
            items.retain_mut(|v| {
                i += 1;
                resolve_placeholders(v, &format!("{path}[{}]", i - 1), lookup, problems)
            });
            true
        }
        _ => true,
    }
}

/// `text` with its placeholders resolved, if they all resolve.
pub(crate) fn resolve_text(text: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    substitute(text, lookup, 0).ok()
}

fn substitute(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
    depth: usize,
) -> Result<String, String> {
    if depth > 8 {
        return Err(format!(
            "placeholders nest too deep in \"{text}\" (a default that refers back to itself?)"
        ));
    }
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let body_start = start + 2;
        // The matching `}`, counting nested `${…}` in a default.
        let mut depth_in = 0usize;
        let mut end = None;
        let bytes = rest.as_bytes();
        let mut i = body_start;
        while i < bytes.len() {
            if bytes[i] == b'$' && bytes.get(i + 1) == Some(&b'{') {
                depth_in += 1;
                i += 2;
                continue;
            }
            if bytes[i] == b'}' {
                if depth_in == 0 {
                    end = Some(i);
                    break;
                }
                depth_in -= 1;
            }
            i += 1;
        }
        let Some(end) = end else {
            return Err(format!(
                "unterminated placeholder in \"{text}\": write `${{NAME}}` or `${{NAME:default}}`"
            ));
        };
        let body = &rest[body_start..end];
        let (name, default) = match body.find(':') {
            Some(at) => (&body[..at], Some(&body[at + 1..])),
            None => (body, None),
        };
        let name = name.trim();
        if name.is_empty() {
            return Err(format!("an empty placeholder `${{{body}}}` in \"{text}\""));
        }
        match (lookup(name), default) {
            (Some(value), _) => out.push_str(&value),
            (None, Some(default)) => out.push_str(&substitute(default, lookup, depth + 1)?),
            (None, None) => {
                return Err(format!(
                    "placeholder `${{{name}}}` is not set (no environment variable `{}` and no such key in the file) and has no default; set it, or write `${{{name}:default}}`",
                    env_name(name)
                ))
            }
        }
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The environment variable Spring's relaxed binding reads for a property
/// name: `inventory.timeout-ms` → `INVENTORY_TIMEOUTMS`'s sibling
/// `INVENTORY_TIMEOUT_MS` (dots and dashes as `_`, upper case).
pub(crate) fn env_name(name: &str) -> String {
    name.chars()
        .map(|c| match c {
            '.' | '-' => '_',
            c => c.to_ascii_uppercase(),
        })
        .collect()
}

/// Every scalar of a tree by its dotted path (for placeholders naming other
/// keys of the file, such as `${spring.application.name}`).
pub(crate) fn flatten(value: &Value, path: &str, out: &mut Vec<(String, String)>) {
    match value {
        Value::Map(entries) => {
            for (key, v) in entries {
                flatten(v, &render_path(path, &[Seg::Key(key.clone())]), out);
            }
        }
        Value::List(items) => {
            for (i, v) in items.iter().enumerate() {
                flatten(v, &format!("{path}[{i}]"), out);
            }
        }
        Value::Str(s) => out.push((path.to_owned(), s.clone())),
        Value::Int(i) => out.push((path.to_owned(), i.to_string())),
        Value::Float(f) => out.push((path.to_owned(), f.to_string())),
        Value::Bool(b) => out.push((path.to_owned(), b.to_string())),
        Value::Null | Value::Other(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::config::value::map;

    #[test]
    fn dotted_keys_nest_and_merge_with_nested_maps() {
        let mut problems = Vec::new();
        let tree = map(vec![
            (
                "resilience4j.retry",
                map(vec![("instances.a.max-attempts", Value::Int(2))]),
            ),
            (
                "resilience4j",
                map(vec![(
                    "retry",
                    map(vec![("instances", map(vec![("b", Value::Null)]))]),
                )]),
            ),
        ]);
        let out = expand(tree, "", &mut problems);
        assert!(problems.is_empty(), "{problems:?}");
        let expected = map(vec![(
            "resilience4j",
            map(vec![(
                "retry",
                map(vec![(
                    "instances",
                    map(vec![
                        ("a", map(vec![("max-attempts", Value::Int(2))])),
                        ("b", Value::Null),
                    ]),
                )]),
            )]),
        )]);
        assert_eq!(out, expected);
    }

    #[test]
    fn one_key_through_both_forms_is_a_duplicate() {
        let mut problems = Vec::new();
        let tree = map(vec![
            ("a.b", Value::Int(1)),
            ("a", map(vec![("b", Value::Int(2))])),
        ]);
        let out = expand(tree, "", &mut problems);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].kind(), ProblemKind::Duplicate);
        assert_eq!(problems[0].path(), Some("a.b"));
        assert_eq!(out, map(vec![("a", map(vec![("b", Value::Int(1))]))]));
    }

    #[test]
    fn indices_build_lists_without_gaps() {
        let mut problems = Vec::new();
        let mut root = Value::Map(Vec::new());
        for (key, v) in [("l[0]", "x"), ("l[1]", "y"), ("m[1]", "z")] {
            insert(
                &mut root,
                "",
                &key_segments(key),
                Value::Str(v.into()),
                &mut problems,
            );
        }
        assert_eq!(
            root,
            map(vec![
                (
                    "l",
                    Value::List(vec![Value::Str("x".into()), Value::Str("y".into())])
                ),
                ("m", Value::List(vec![])),
            ])
        );
        assert_eq!(problems.len(), 1);
        assert!(problems[0].to_string().contains("no gaps"));
    }

    #[test]
    fn placeholders_take_the_environment_then_the_default() {
        let lookup = |name: &str| (name == "HOST").then(|| "redis.local".to_owned());
        let mut v = Value::Str("redis://${HOST}:${PORT:6379}/${DB:${FALLBACK:0}}".into());
        let mut problems = Vec::new();
        resolve_placeholders(&mut v, "k", &lookup, &mut problems);
        assert!(problems.is_empty());
        assert_eq!(v, Value::Str("redis://redis.local:6379/0".into()));
        let mut v = Value::Str("${MISSING}".into());
        resolve_placeholders(&mut v, "a.b", &lookup, &mut problems);
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].path(), Some("a.b"));
        assert!(problems[0].to_string().contains("`${MISSING}` is not set"));
        let mut v = Value::Str("${OPEN".into());
        resolve_placeholders(&mut v, "a.c", &lookup, &mut problems);
        assert!(problems[1].to_string().contains("unterminated"));
    }

    #[test]
    fn profile_expressions() {
        let active = vec!["prod".to_owned(), "eu".to_owned()];
        assert!(profile_matches("prod", &active));
        assert!(profile_matches("dev, prod", &active));
        assert!(profile_matches("prod & eu", &active));
        assert!(!profile_matches("prod & us", &active));
        assert!(profile_matches("!dev", &active));
        assert!(!profile_matches("!prod", &active));
        assert!(!profile_matches("dev", &[]));
    }
}
