//! Environment overrides: `RESIL_<KIND>_<INSTANCES|CONFIGS>_<NAME>_<KEY>=value`
//! sets one key of one instance or named config, after the file.
//!
//! - `<KIND>`: `CIRCUITBREAKER` (or `CIRCUIT_BREAKER`), `RETRY`, `BULKHEAD`,
//!   `THREAD_POOL_BULKHEAD`, `RATELIMITER` (or `RATE_LIMITER`), `TIMELIMITER`
//!   (or `TIME_LIMITER`), `HEDGING`, `ADAPTIVE_BULKHEAD`, `CHAOS`.
//! - `<KEY>`: the key in upper snake case (`FAILURE_RATE_THRESHOLD`,
//!   `BASE_CONFIG`, `RECORD_ERRORS`); lists are comma-separated.
//! - `<NAME>`: the name in upper case with every character other than a letter
//!   or a digit written `_`. It matches the instance (or config) of the file
//!   whose name reads the same that way (`inventory-query`, `inventory_query`
//!   and `Inventory.Query` all read `INVENTORY_QUERY`; two such names in one
//!   file make the variable ambiguous: an error). A name the file does not have
//!   creates the entry, named in lower case with `_` written `-`
//!   (`INVENTORY_QUERY` → `inventory-query`).
//!
//! Variables not starting with `RESIL_<KIND>_` are not overrides and are left
//! alone (`RESIL_CONFIG` names the file); one that does but names no key is an
//! error naming the variable. `RESIL_HTTP_INSTANCES_<NAME>_<KEY>` sets a key
//! of resil's own `resil.http` (see `http.rs`).

use super::error::{closest, quoted_list, Problem, ProblemKind};
use super::load::{read_option, Document, Entry};
use super::schema::{normalize, Kind, Ty};
use super::setting::{Setting, Source};
use super::value::Value;

/// The prefix of every override.
pub(crate) const PREFIX: &str = "RESIL_";

/// Applies every override in `vars` (in name order, so the result does not
/// depend on the environment's order) to the document.
pub(crate) fn apply<I, K, V>(doc: &mut Document, vars: I, problems: &mut Vec<Problem>)
where
    I: IntoIterator<Item = (K, V)>,
    K: AsRef<str>,
    V: AsRef<str>,
{
    let mut vars: Vec<(String, String)> = vars
        .into_iter()
        .filter(|(k, _)| k.as_ref().starts_with(PREFIX))
        .map(|(k, v)| (k.as_ref().to_owned(), v.as_ref().to_owned()))
        .collect();
    vars.sort();
    for (var, value) in vars {
        if let Err(problem) = apply_one(doc, &var, &value, problems) {
            problems.push(problem.with_env_var(&var));
        }
    }
}

// One call per variable, on a cold path: the problem is returned unboxed.
#[allow(clippy::result_large_err)]
fn apply_one(
    doc: &mut Document,
    var: &str,
    value: &str,
    problems: &mut Vec<Problem>,
) -> Result<(), Problem> {
    let tokens: Vec<&str> = var[PREFIX.len()..].split('_').collect();
    if tokens[0] == "HTTP" {
        // `RESIL_HTTP_INSTANCES_…`: resil's own `resil.http` (http.rs).
        return Ok(());
    }
    let Some((kind, used)) = (1..=tokens.len().min(3))
        .find_map(|n| Kind::from_key(&tokens[..n].concat()).map(|k| (k, n)))
    else {
        // Ours only if it looks like an override: other RESIL_ variables
        // (RESIL_CONFIG, …) belong to someone else.
        if let Some(at) = tokens.iter().position(|t| is_section(t)) {
            let written = tokens[..at].join("_");
            let kinds = Kind::ALL.map(|k| k.config_key().replace('-', "_").to_ascii_uppercase());
            let suggestion = closest(&written, kinds.iter().map(String::as_str));
            let mut message = format!("`{var}` names no kind: `{written}`");
            if let Some(s) = suggestion {
                message.push_str(&format!("; did you mean `{s}`?"));
            }
            message.push_str(&format!(" (kinds: {})", quoted_list(&kinds)));
            return Err(Problem::new(ProblemKind::UnknownVariable, None, message)
                .with_suggestion(suggestion.map(str::to_owned)));
        }
        return Ok(());
    };
    let shape = || {
        let kind_env = tokens[..used].join("_");
        Problem::new(
            ProblemKind::UnknownVariable,
            None,
            format!(
                "`{var}` is not an override: write `RESIL_{kind_env}_INSTANCES_<NAME>_<KEY>` or \
                 `RESIL_{kind_env}_CONFIGS_<NAME>_<KEY>`"
            ),
        )
    };
    let Some(section) = tokens.get(used).filter(|t| is_section(t)) else {
        return Err(shape());
    };
    let is_config = section.eq_ignore_ascii_case("CONFIGS");
    let rest = &tokens[used + 1..];
    if rest.len() < 2 || rest.iter().any(|t| t.is_empty()) {
        return Err(shape());
    }

    // Every split of the rest into NAME and KEY where KEY is a key of the kind,
    // longest key first.
    let splits: Vec<(String, &'static str)> = (1..rest.len())
        .filter_map(|at| {
            let key = rest[at..].join("-");
            let canonical = if normalize(&key) == "baseconfig" {
                Some("base-config")
            } else {
                kind.option(&key).map(|o| o.key)
            };
            canonical.map(|c| (rest[..at].join("_").to_ascii_uppercase(), c))
        })
        .collect();
    if splits.is_empty() {
        return Err(unknown_key(var, kind, rest));
    }

    let kind_doc = doc.kind_mut(kind);
    let section_path = format!(
        "{}.{}",
        kind_doc.path_or_default(kind),
        if is_config { "configs" } else { "instances" }
    );
    let entries = if is_config {
        &mut kind_doc.configs
    } else {
        &mut kind_doc.instances
    };
    let mut target = None;
    for (name_env, key) in &splits {
        let matching: Vec<&String> = entries
            .keys()
            .filter(|n| env_form(n) == *name_env)
            .collect();
        match matching.as_slice() {
            [] => continue,
            [one] => {
                target = Some(((*one).clone(), *key));
                break;
            }
            several => {
                return Err(Problem::new(
                    ProblemKind::UnknownVariable,
                    Some(section_path),
                    format!(
                        "`{var}` is ambiguous: {} all read `{name_env}`; rename one of them",
                        quoted_list(several.iter())
                    ),
                ))
            }
        }
    }
    let (name, key) = target.unwrap_or_else(|| {
        let (name_env, key) = &splits[0];
        (name_env.to_ascii_lowercase().replace('_', "-"), *key)
    });
    let entry = entries.entry(name.clone()).or_insert_with(|| Entry {
        path: format!("{section_path}.{name}"),
        ..Entry::default()
    });
    let path = format!("{}.{key}", entry.path);
    let source = Source::Env(var.to_owned());
    if key == "base-config" {
        if value.trim().is_empty() {
            return Err(Problem::new(
                ProblemKind::InvalidValue,
                Some(path.clone()),
                format!("invalid `{var}` (sets `{path}`): got an empty value, expected the name of a config"),
            ));
        }
        entry.base = Some(Setting {
            val: value.trim().to_owned(),
            source,
            path,
            line: None,
            document: None,
        });
        return Ok(());
    }
    let Some(spec) = kind.option(key) else {
        unreachable!("splits only hold keys of the kind")
    };
    match read_option(spec, &typed(spec.ty, value), &path) {
        Ok(val) => {
            entry.values.insert(
                spec.key,
                Setting {
                    val,
                    source,
                    path,
                    line: None,
                    document: None,
                },
            );
        }
        Err(found) => {
            for p in found {
                problems.push(match p.config_error() {
                    Some(e) => Problem::value(p.kind(), e.clone(), Some(var)),
                    None => p.with_env_var(var),
                });
            }
        }
    }
    Ok(())
}

fn is_section(token: &str) -> bool {
    token.eq_ignore_ascii_case("INSTANCES") || token.eq_ignore_ascii_case("CONFIGS")
}

/// A name as it reads in a variable: upper case, non-alphanumerics as `_`.
pub(crate) fn env_form(name: &str) -> String {
    name.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

/// The variable's text as the value a file would hold for that type.
fn typed(ty: Ty, text: &str) -> Value {
    let text = text.trim();
    let string = || Value::Str(text.to_owned());
    match ty {
        Ty::Percent | Ty::F64 => text.parse::<f64>().map_or_else(|_| string(), Value::Float),
        Ty::U32 | Ty::Usize => text.parse::<i64>().map_or_else(|_| string(), Value::Int),
        Ty::Bool => match text.to_ascii_lowercase().as_str() {
            "true" => Value::Bool(true),
            "false" => Value::Bool(false),
            _ => string(),
        },
        Ty::Duration | Ty::Choice(_) | Ty::Names | Ty::Text | Ty::Predicate => string(),
    }
}

fn unknown_key(var: &str, kind: Kind, rest: &[&str]) -> Problem {
    // The closest key over every split, suggested as the whole variable.
    let keys: Vec<String> = kind
        .options()
        .iter()
        .map(|o| o.key.replace('-', "_").to_ascii_uppercase())
        .chain(["BASE_CONFIG".to_owned()])
        .collect();
    let suggestion = (1..rest.len()).find_map(|at| {
        let written = rest[at..].join("_");
        closest(&written, keys.iter().map(String::as_str)).map(|k| {
            let prefix = &var[..var.len() - written.len()];
            format!("{prefix}{k}")
        })
    });
    let mut message = format!("`{var}` does not end with a {} key", kind.label());
    if let Some(s) = &suggestion {
        message.push_str(&format!("; did you mean `{s}`?"));
    }
    Problem::new(ProblemKind::UnknownVariable, None, message).with_suggestion(suggestion)
}
