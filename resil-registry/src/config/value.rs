//! The plain value tree every file format is loaded into, and the two loaders.
//!
//! The schema walks this tree rather than deserializing into structs, so that
//! one pass can report every problem in a file, each with its key path and a
//! suggestion, instead of stopping at the first one. A second, span-keeping
//! parse gives the line of every key path ([`Lines`]) for the error report.

use std::collections::HashMap;

/// The 1-based lines where each key path (`resilience4j.retry.instances.a`,
/// `…retry-exceptions[0]`) is written, in file order: a path written twice
/// (once as `a.b:` and once nested) has two.
#[derive(Debug, Clone, Default)]
pub(crate) struct Lines(HashMap<String, Vec<usize>>);

impl Lines {
    pub(crate) fn new() -> Lines {
        Lines::default()
    }

    /// The first line of `path`.
    pub(crate) fn get(&self, path: &str) -> Option<usize> {
        self.0.get(path).and_then(|l| l.first().copied())
    }

    /// Every line of `path`, in file order.
    pub(crate) fn all(&self, path: &str) -> &[usize] {
        self.0.get(path).map_or(&[], Vec::as_slice)
    }

    /// Adds every line of `other` after this one's.
    pub(crate) fn extend(&mut self, other: &Lines) {
        for (path, lines) in &other.0 {
            self.0.entry(path.clone()).or_default().extend(lines);
        }
    }

    #[cfg_attr(not(feature = "properties"), allow(dead_code))]
    pub(crate) fn add(&mut self, path: String, line: usize) {
        self.0.entry(path).or_default().push(line);
    }
}

/// A key's path segments as Spring binds them: `a.b` is `a` then `b`, and a
/// segment in brackets (`[inventory.v2]`) is taken whole, dots included.
pub(crate) fn segments(key: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut current = String::new();
    let mut depth = 0usize;
    for c in key.chars() {
        match c {
            '[' if current.is_empty() && depth == 0 => depth = 1,
            ']' if depth == 1 => depth = 2,
            '.' if depth != 1 => {
                out.push(std::mem::take(&mut current));
                depth = 0;
            }
            c => {
                if depth == 2 {
                    // `[a]b`: not a bracketed segment after all.
                    current.insert(0, '[');
                    current.push(']');
                    depth = 0;
                }
                current.push(c);
            }
        }
    }
    if depth == 1 {
        current.insert(0, '[');
    }
    out.push(current);
    out
}

/// `path` joined with a key as written (its dotted segments expanded).
#[cfg_attr(not(any(feature = "toml", feature = "yaml")), allow(dead_code))]
pub(crate) fn join(path: &str, key: &str) -> String {
    let mut out = path.to_owned();
    for segment in segments(key) {
        if !out.is_empty() {
            out.push('.');
        }
        out.push_str(&segment);
    }
    out
}

/// One node of a loaded config file.
#[derive(Debug, Clone, PartialEq)]
// Without YAML nothing makes a `Null`; without either format, nothing at all.
#[cfg_attr(not(feature = "yaml"), allow(dead_code))]
pub(crate) enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Float(f64),
    Str(String),
    List(Vec<Value>),
    /// Keys in file order (TOML: sorted), duplicates already rejected by the parser.
    Map(Vec<(String, Value)>),
    /// A value the format has but resil has no use for, described for the error
    /// (a TOML date-time, a YAML alias).
    Other(&'static str),
}

impl Value {
    /// How the value reads in an error: `a list`, `"fast"`, `12`, `true`.
    pub(crate) fn describe(&self) -> String {
        match self {
            Value::Null => "nothing (null)".into(),
            Value::Bool(b) => b.to_string(),
            Value::Int(i) => i.to_string(),
            Value::Float(f) => f.to_string(),
            Value::Str(s) => format!("\"{s}\""),
            Value::List(_) => "a list".into(),
            Value::Map(_) => "a map".into(),
            Value::Other(what) => (*what).into(),
        }
    }
}

/// Loads TOML text; the error is the parser's own message (with line and column).
#[cfg(feature = "toml")]
pub(crate) fn from_toml(text: &str) -> Result<Value, String> {
    fn convert(value: toml::Value) -> Value {
        match value {
            toml::Value::String(s) => Value::Str(s),
            toml::Value::Integer(i) => Value::Int(i),
            toml::Value::Float(f) => Value::Float(f),
            toml::Value::Boolean(b) => Value::Bool(b),
            toml::Value::Datetime(_) => Value::Other("a date-time"),
            toml::Value::Array(items) => Value::List(items.into_iter().map(convert).collect()),
            toml::Value::Table(table) => table_to_map(table),
        }
    }
    fn table_to_map(table: toml::Table) -> Value {
        Value::Map(table.into_iter().map(|(k, v)| (k, convert(v))).collect())
    }
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| e.to_string().trim_end().replace('\n', "\n    "))?;
    Ok(table_to_map(table))
}

/// Loads YAML text: one value per document (`---` separates them); an empty
/// text is one empty map.
#[cfg(feature = "yaml")]
pub(crate) fn from_yaml(text: &str) -> Result<Vec<Value>, String> {
    use saphyr::{LoadableYamlNode, Scalar, Yaml};

    fn scalar(s: &Scalar<'_>) -> Value {
        match s {
            Scalar::Null => Value::Null,
            Scalar::Boolean(b) => Value::Bool(*b),
            Scalar::Integer(i) => Value::Int(*i),
            Scalar::FloatingPoint(f) => Value::Float(f.into_inner()),
            Scalar::String(s) => Value::Str(s.to_string()),
        }
    }
    fn convert(node: &Yaml<'_>) -> Result<Value, String> {
        Ok(match node {
            Yaml::Value(s) => scalar(s),
            Yaml::Representation(text, style, tag) => {
                match Yaml::value_from_cow_and_metadata(text.clone(), *style, tag.as_ref()) {
                    Yaml::Value(s) => scalar(&s),
                    _ => Value::Str(text.to_string()),
                }
            }
            Yaml::Sequence(items) => {
                Value::List(items.iter().map(convert).collect::<Result<_, _>>()?)
            }
            Yaml::Mapping(map) => {
                let mut entries: Vec<(String, Value)> = Vec::with_capacity(map.len());
                let mut merged: Vec<(String, Value)> = Vec::new();
                for (k, v) in map {
                    // YAML's merge key (`<<: *base`): the anchored map's
                    // entries, under the ones written here.
                    if matches!(convert(k)?, Value::Str(ref s) if s == "<<") {
                        match convert(v)? {
                            Value::Map(items) => merged.extend(items),
                            Value::List(maps) => {
                                for m in maps {
                                    let Value::Map(items) = m else {
                                        return Err("`<<` merges maps only".into());
                                    };
                                    merged.extend(items);
                                }
                            }
                            other => {
                                return Err(format!(
                                    "`<<` merges maps only, got {}",
                                    other.describe()
                                ))
                            }
                        }
                        continue;
                    }
                    let key = match convert(k)? {
                        Value::Str(s) => s,
                        Value::Int(i) => i.to_string(),
                        Value::Bool(b) => b.to_string(),
                        Value::Float(f) => f.to_string(),
                        other => {
                            return Err(format!(
                                "a mapping key must be a plain word, got {}",
                                other.describe()
                            ))
                        }
                    };
                    entries.push((key, convert(v)?));
                }
                for (key, value) in merged {
                    if !entries.iter().any(|(k, _)| *k == key) {
                        entries.push((key, value));
                    }
                }
                Value::Map(entries)
            }
            Yaml::Tagged(_, inner) => convert(inner)?,
            Yaml::Alias(_) => Value::Other("an unresolved YAML alias"),
            Yaml::BadValue => Value::Other("an unreadable YAML value"),
        })
    }
    let docs = Yaml::load_from_str(text).map_err(|e| e.to_string())?;
    if docs.is_empty() {
        return Ok(vec![Value::Map(Vec::new())]);
    }
    docs.iter().map(convert).collect()
}

/// The line of every key path of TOML text (empty when the text does not parse).
#[cfg(feature = "toml")]
pub(crate) fn toml_lines(text: &str) -> Lines {
    use toml::de::{DeTable, DeValue};

    fn line_of(text: &str, offset: usize) -> usize {
        text.as_bytes()[..offset.min(text.len())]
            .iter()
            .filter(|b| **b == b'\n')
            .count()
            + 1
    }
    fn value(text: &str, v: &DeValue<'_>, path: &str, lines: &mut Lines) {
        match v {
            DeValue::Table(t) => table(text, t, path, lines),
            DeValue::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    let p = format!("{path}[{i}]");
                    lines.add(p.clone(), line_of(text, item.span().start));
                    value(text, item.get_ref(), &p, lines);
                }
            }
            _ => {}
        }
    }
    fn table(text: &str, t: &DeTable<'_>, path: &str, lines: &mut Lines) {
        for (k, v) in t.iter() {
            let p = join(path, k.get_ref());
            lines.add(p.clone(), line_of(text, k.span().start));
            value(text, v.get_ref(), &p, lines);
        }
    }
    let mut lines = Lines::new();
    if let Ok(root) = DeTable::parse(text) {
        table(text, root.get_ref(), "", &mut lines);
    }
    lines
}

/// The lines of every key path of each document of YAML text (none when the
/// text does not parse).
#[cfg(feature = "yaml")]
pub(crate) fn yaml_lines(text: &str) -> Vec<Lines> {
    use saphyr::{LoadableYamlNode, MarkedYaml, Scalar, YamlData};

    fn key_text(key: &MarkedYaml<'_>) -> Option<String> {
        match &key.data {
            YamlData::Value(Scalar::String(s)) => Some(s.to_string()),
            YamlData::Value(Scalar::Integer(i)) => Some(i.to_string()),
            YamlData::Value(Scalar::Boolean(b)) => Some(b.to_string()),
            YamlData::Value(Scalar::FloatingPoint(f)) => Some(f.to_string()),
            YamlData::Representation(s, _, _) => Some(s.to_string()),
            _ => None,
        }
    }
    fn walk(node: &MarkedYaml<'_>, path: &str, lines: &mut Lines) {
        match &node.data {
            YamlData::Mapping(map) => {
                for (k, v) in map {
                    if let Some(key) = key_text(k) {
                        let p = join(path, &key);
                        lines.add(p.clone(), k.span.start.line());
                        walk(v, &p, lines);
                    }
                }
            }
            YamlData::Sequence(items) => {
                for (i, item) in items.iter().enumerate() {
                    let p = format!("{path}[{i}]");
                    lines.add(p.clone(), item.span.start.line());
                    walk(item, &p, lines);
                }
            }
            YamlData::Tagged(_, inner) => walk(inner, path, lines),
            _ => {}
        }
    }
    let Ok(docs) = MarkedYaml::load_from_str(text) else {
        return Vec::new();
    };
    docs.iter()
        .map(|doc| {
            let mut lines = Lines::new();
            walk(doc, "", &mut lines);
            lines
        })
        .collect()
}

#[cfg(all(test, any(feature = "toml", feature = "yaml")))]
mod tests {
    use super::*;

    #[cfg(feature = "yaml")]
    #[test]
    fn yaml_scalars_become_typed_values_and_maps_keep_file_order() {
        let v = from_yaml("b: 1\na: 2.5\nc: [x, true, ~]\nd: 500ms\ne: '60'\n")
            .unwrap()
            .remove(0);
        assert_eq!(
            v,
            Value::Map(vec![
                ("b".into(), Value::Int(1)),
                ("a".into(), Value::Float(2.5)),
                (
                    "c".into(),
                    Value::List(vec![Value::Str("x".into()), Value::Bool(true), Value::Null])
                ),
                ("d".into(), Value::Str("500ms".into())),
                ("e".into(), Value::Str("60".into())),
            ])
        );
        assert_eq!(from_yaml("").unwrap(), vec![Value::Map(vec![])]);
        assert_eq!(from_yaml("a: 1\n---\nb: 2\n").unwrap().len(), 2);
        assert!(from_yaml("a: 1\na: 2\n")
            .unwrap_err()
            .contains("duplicated key"));
    }

    #[cfg(feature = "yaml")]
    #[test]
    fn yaml_anchors_aliases_and_merge_keys_are_resolved() {
        let v = from_yaml("base: &b {x: 1, y: 2}\ncopy: *b\nmerged:\n  <<: *b\n  y: 3\n")
            .unwrap()
            .remove(0);
        let base = Value::Map(vec![
            ("x".into(), Value::Int(1)),
            ("y".into(), Value::Int(2)),
        ]);
        assert_eq!(
            v,
            Value::Map(vec![
                ("base".into(), base.clone()),
                ("copy".into(), base),
                (
                    "merged".into(),
                    Value::Map(vec![
                        ("y".into(), Value::Int(3)),
                        ("x".into(), Value::Int(1))
                    ])
                ),
            ])
        );
        assert!(from_yaml("a:\n  <<: 5\n")
            .unwrap_err()
            .contains("merges maps only"));
    }

    #[test]
    fn keys_split_on_dots_except_inside_brackets() {
        assert_eq!(segments("a.b.c"), ["a", "b", "c"]);
        assert_eq!(segments("[inventory.v2].x"), ["inventory.v2", "x"]);
        assert_eq!(segments("plain"), ["plain"]);
        assert_eq!(segments("[open"), ["[open"]);
        assert_eq!(segments("[a]b"), ["[a]b"]);
        assert_eq!(join("r", "[a.b].c"), "r.a.b.c");
    }

    #[cfg(feature = "toml")]
    #[test]
    fn toml_values_become_typed_values() {
        let v =
            from_toml("a = 1\nb = \"10s\"\nc = [1.5]\nd = 1979-05-27\n[t]\nx = false\n").unwrap();
        assert_eq!(
            v,
            Value::Map(vec![
                ("a".into(), Value::Int(1)),
                ("b".into(), Value::Str("10s".into())),
                ("c".into(), Value::List(vec![Value::Float(1.5)])),
                ("d".into(), Value::Other("a date-time")),
                (
                    "t".into(),
                    Value::Map(vec![("x".into(), Value::Bool(false))])
                ),
            ])
        );
        assert!(from_toml("a = \n").is_err());
    }

    #[cfg(feature = "toml")]
    #[test]
    fn toml_lines_follow_headers_dotted_keys_and_arrays() {
        let lines = toml_lines("[r.c.instances.a]\nx = 1\n\n[r.retry]\ny.z = [\"p\",\n  \"q\"]\n");
        assert_eq!(lines.get("r.c.instances.a"), Some(1));
        assert_eq!(lines.get("r.c.instances.a.x"), Some(2));
        assert_eq!(lines.get("r.retry.y.z"), Some(5));
        assert_eq!(lines.get("r.retry.y.z[1]"), Some(6));
    }

    #[cfg(feature = "yaml")]
    #[test]
    fn yaml_lines_follow_nesting_and_sequences() {
        let lines = yaml_lines("r:\n  c:\n    a: 1\n    l:\n      - x\n      - y\n").remove(0);
        assert_eq!(lines.get("r.c"), Some(2));
        assert_eq!(lines.get("r.c.a"), Some(3));
        assert_eq!(lines.get("r.c.l[1]"), Some(6));
        let lines = yaml_lines("r.c:\n  a: 1\nr:\n  c.a: 2\n---\nx: 1\n");
        assert_eq!(lines[0].all("r.c.a"), [2, 4]);
        assert_eq!(lines[1].get("x"), Some(6));
    }
}

/// A map value from `(key, value)` pairs, for the loaders' tests.
#[cfg(test)]
pub(crate) fn map(entries: Vec<(&str, Value)>) -> Value {
    Value::Map(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v))
            .collect(),
    )
}
