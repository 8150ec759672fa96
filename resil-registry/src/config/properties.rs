//! `application.properties`, Spring's other file format: one `key=value` per
//! line, keys dotted (`resilience4j.retry.instances.a.max-attempts=2`), list
//! items as `key[0]=…` or one comma-separated value.
//!
//! The syntax is `java.util.Properties`': `#` and `!` start comments, `=`,
//! `:` or whitespace separate key and value, a trailing `\` continues a
//! line, and `\t`, `\n`, `\uXXXX`, `\=`, `\:` escape. Values are text;
//! numbers and booleans are read as such where an option expects them.

use super::error::{Problem, ProblemKind};
use super::spring::{insert, key_segments, render_path};
use super::value::{Lines, Value};

/// The tree of a `.properties` text, the line of every key path, and the
/// problems of the text itself (a bad escape, a key given twice, a list
/// with gaps).
pub(crate) fn parse(text: &str) -> (Value, Lines, Vec<Problem>) {
    let mut root = Value::Map(Vec::new());
    let mut lines = Lines::new();
    let mut problems = Vec::new();
    let mut logical = String::new();
    let mut start_line = 0;
    for (i, raw) in text.lines().enumerate() {
        let line_no = i + 1;
        let piece = if logical.is_empty() {
            let trimmed = raw.trim_start();
            if trimmed.is_empty() || trimmed.starts_with('#') || trimmed.starts_with('!') {
                continue;
            }
            start_line = line_no;
            trimmed
        } else {
            raw.trim_start()
        };
        if ends_with_continuation(piece) {
            logical.push_str(&piece[..piece.len() - 1]);
            continue;
        }
        logical.push_str(piece);
        let entry = std::mem::take(&mut logical);
        one_line(&entry, start_line, &mut root, &mut lines, &mut problems);
    }
    if !logical.is_empty() {
        one_line(&logical, start_line, &mut root, &mut lines, &mut problems);
    }
    (root, lines, problems)
}

fn one_line(
    entry: &str,
    line: usize,
    root: &mut Value,
    lines: &mut Lines,
    problems: &mut Vec<Problem>,
) {
    let (key, value) = split_entry(entry);
    let key = match unescape(key) {
        Ok(k) => k,
        Err(why) => {
            problems.push(at_line(line, None, why));
            return;
        }
    };
    let value = match unescape(value) {
        Ok(v) => v,
        Err(why) => {
            problems.push(at_line(line, Some(key.clone()), why));
            return;
        }
    };
    let segs = key_segments(&key);
    let path = render_path("", &segs);
    for n in 1..=segs.len() {
        lines.add(render_path("", &segs[..n]), line);
    }
    let before = problems.len();
    insert(root, "", &segs, Value::Str(value), problems);
    for p in &mut problems[before..] {
        if p.path().is_none() {
            *p = at_line(line, Some(path.clone()), p.to_string());
        }
    }
}

fn at_line(line: usize, path: Option<String>, message: String) -> Problem {
    Problem::new(ProblemKind::Syntax, path, format!("line {line}: {message}")).at(line)
}

/// An odd number of trailing backslashes continues the line.
fn ends_with_continuation(s: &str) -> bool {
    s.chars().rev().take_while(|c| *c == '\\').count() % 2 == 1
}

/// The key ends at the first unescaped `=`, `:` or whitespace; the separator
/// and the whitespace around it are not part of either.
fn split_entry(entry: &str) -> (&str, &str) {
    let bytes = entry.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'=' | b':' | b' ' | b'\t' | b'\x0c' => break,
            _ => i += 1,
        }
    }
    let i = i.min(bytes.len());
    let key = &entry[..i];
    let mut rest = entry[i..].trim_start_matches([' ', '\t', '\x0c']);
    if let Some(r) = rest.strip_prefix(['=', ':']) {
        rest = r.trim_start_matches([' ', '\t', '\x0c']);
    }
    (key, rest)
}

fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some('f') => out.push('\x0c'),
            Some('u') => {
                let hex: String = chars.by_ref().take(4).collect();
                let code = u32::from_str_radix(&hex, 16)
                    .ok()
                    .filter(|_| hex.len() == 4)
                    .and_then(char::from_u32)
                    .ok_or_else(|| {
                        format!("`\\u{hex}` is not a valid escape: write `\\u` and four hex digits")
                    })?;
                out.push(code);
            }
            Some(other) => out.push(other),
            None => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_nest_lists_index_and_lines_are_kept() {
        let text = "# comment\n\
                    resilience4j.retry.instances.a.max-attempts=2\n\
                    resilience4j.retry.instances.a.retry-exceptions[0]=x.Y\n\
                    resilience4j.retry.instances.a.retry-exceptions[1] = z\n\
                    ! other comment\n\
                    resilience4j.retry.instances.a.wait-duration : 1\\\n    00ms\n\
                    spring.application.name inventory\n";
        let (tree, lines, problems) = parse(text);
        assert!(problems.is_empty(), "{problems:?}");
        let Value::Map(top) = &tree else { panic!() };
        assert_eq!(top[0].0, "resilience4j");
        assert_eq!(top[1].0, "spring");
        assert_eq!(
            lines.get("resilience4j.retry.instances.a.max-attempts"),
            Some(2)
        );
        assert_eq!(
            lines.get("resilience4j.retry.instances.a.retry-exceptions[1]"),
            Some(4)
        );
        assert_eq!(
            lines.get("resilience4j.retry.instances.a.wait-duration"),
            Some(6)
        );
        let mut flat = Vec::new();
        super::super::spring::flatten(&tree, "", &mut flat);
        assert!(flat.contains(&(
            "resilience4j.retry.instances.a.wait-duration".into(),
            "100ms".into()
        )));
        assert!(flat.contains(&(
            "resilience4j.retry.instances.a.retry-exceptions[0]".into(),
            "x.Y".into()
        )));
        assert!(flat.contains(&("spring.application.name".into(), "inventory".into())));
    }

    #[test]
    fn a_key_twice_and_a_bad_escape_are_problems_with_lines() {
        let (_, lines, problems) = parse("a.b=1\na.b=2\nc=\\u12\n");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert_eq!(problems[0].kind(), ProblemKind::Duplicate);
        assert_eq!(lines.all("a.b"), [1, 2]);
        assert_eq!(problems[1].line(), Some(3));
        assert!(problems[1].to_string().contains("four hex digits"));
    }
}
