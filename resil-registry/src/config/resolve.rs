//! Inheritance: resil-core defaults → `base-config` chain → the entry's own
//! settings (the environment already wrote into the document), then
//! validation through resil-core's builders.
//!
//! The chain of an entry: its `base-config` if it has one; else, for an
//! instance, the named config of the same name if there is one (Resilience4j's
//! rule); else `default` when the file has it. Named configs follow the same
//! rule, so `default` is the root of every chain (Resilience4j's retry,
//! bulkhead and rate limiter do this; its circuit breaker starts a named config
//! without `base-config` from the built-in defaults instead). A chain that
//! comes back to `default` implicitly simply ends there; an explicit
//! `base-config` that comes back is a cycle. The walk itself is the one the
//! configs registered in code take too (`crate::chain`).

use std::collections::BTreeMap;

use resil_core::ConfigError;

use crate::chain::{walk, ChainProblem, DEFAULT};

use super::apply::{Apply, Values};
use super::error::{closest, quoted_list, Problem, ProblemKind};
use super::load::{Document, Entry, KindDoc};
use super::resolved::{Resolved, Section};
use super::schema::Kind;
use super::setting::{Setting, Source};

/// Where a chain starts.
#[derive(Clone, Copy)]
enum Start<'a> {
    Config(&'a str),
    Instance(&'a str),
}

impl Start<'_> {
    fn label(self) -> String {
        match self {
            Start::Config(name) => format!("config `{name}`"),
            Start::Instance(name) => format!("instance `{name}`"),
        }
    }
}

/// Chain problems by the path of the `base-config` key to blame, keeping the
/// message with the longest chain (the one starting farthest out).
type ChainProblems = BTreeMap<String, Problem>;

/// Resolves and validates one kind's section.
pub(crate) fn section<C: Apply>(doc: &Document, problems: &mut Vec<Problem>) -> Section<C> {
    let kind = C::KIND;
    let doc = doc.kind(kind);
    let path = doc.path_or_default(kind);
    let mut chain_problems = ChainProblems::new();
    let mut configs = BTreeMap::new();
    for (name, entry) in &doc.configs {
        let start = Start::Config(name);
        if let Some(r) = resolve::<C>(doc, start, entry, &mut chain_problems, problems) {
            configs.insert(name.clone(), r);
        }
    }
    let mut instances = BTreeMap::new();
    for (name, entry) in &doc.instances {
        let start = Start::Instance(name);
        if let Some(r) = resolve::<C>(doc, start, entry, &mut chain_problems, problems) {
            instances.insert(name.clone(), r);
        }
    }
    problems.extend(chain_problems.into_values());
    let default = configs.get(DEFAULT).cloned().unwrap_or_else(|| {
        let tags = doc.tags.clone();
        Resolved::new(
            kind,
            DEFAULT.to_owned(),
            format!("{path}.configs.{DEFAULT}"),
            false,
            Vec::new(),
            Values::new(),
            tags,
            C::default(),
        )
    });
    Section::new(kind, path, default, configs, instances)
}

fn resolve<C: Apply>(
    doc: &KindDoc,
    start: Start<'_>,
    entry: &Entry,
    chain_problems: &mut ChainProblems,
    problems: &mut Vec<Problem>,
) -> Option<Resolved<C>> {
    let chain = chain(doc, start, entry, chain_problems)?;
    let mut values = Values::new();
    let mut tags = doc.tags.clone();
    let mut overrides = BTreeMap::new();
    for name in &chain {
        let base = &doc.configs[name.as_str()];
        values.extend(base.values.iter().map(|(k, v)| (*k, v.clone())));
        tags.extend(base.tags.iter().map(|(k, v)| (k.clone(), v.clone())));
        overrides.extend(base.overrides.clone());
    }
    values.extend(entry.values.iter().map(|(k, v)| (*k, v.clone())));
    tags.extend(entry.tags.iter().map(|(k, v)| (k.clone(), v.clone())));
    overrides.extend(entry.overrides.clone());
    let config = validate::<C>(&entry.path, &values, problems)?;
    let (name, instance) = match start {
        Start::Config(name) => (name, false),
        Start::Instance(name) => (name, true),
    };
    Some(
        Resolved::new(
            C::KIND,
            name.to_owned(),
            entry.path.clone(),
            instance,
            chain,
            values,
            tags,
            config,
        )
        .with_overrides(overrides),
    )
}

/// The named configs `entry` inherits, root first; `None` after recording a
/// problem (unknown base, cycle).
fn chain(
    doc: &KindDoc,
    start: Start<'_>,
    entry: &Entry,
    problems: &mut ChainProblems,
) -> Option<Vec<String>> {
    let first = match start {
        Start::Config(name) => (name, true),
        Start::Instance(name) => match &entry.base {
            Some(base) => (base.val.as_str(), true),
            // Resilience4j's rule: an instance without `base-config` takes
            // the named config of its own name, else `default`.
            None if doc.configs.contains_key(name) => (name, false),
            None if doc.configs.contains_key(DEFAULT) => (DEFAULT, false),
            None => return Some(Vec::new()),
        },
    };
    let base = |name: &str| {
        doc.configs
            .get(name)
            .and_then(|e| e.base.as_ref())
            .map(|b| b.val.as_str())
    };
    let exists = |name: &str| doc.configs.contains_key(name);
    match walk(first.0, first.1, base, exists) {
        Ok(mut chain) => {
            if let Start::Config(_) = start {
                chain.pop(); // the config itself
            }
            Some(chain.into_iter().map(str::to_owned).collect())
        }
        Err(ChainProblem::Cycle { walked, at }) => {
            record_cycle(doc, &walked[at..], problems);
            None
        }
        Err(ChainProblem::UnknownBase { walked, .. }) => {
            // The entry whose `base-config` names the missing config: the
            // last config walked, or the instance itself.
            let named_by = walked.last().map_or(entry, |n| &doc.configs[*n]);
            let Some(base) = &named_by.base else {
                unreachable!("implicit bases are only taken when they exist")
            };
            record_unknown_base(doc, start, &walked, base, problems);
            None
        }
    }
}

fn record_unknown_base(
    doc: &KindDoc,
    start: Start<'_>,
    visited: &[&str],
    base: &Setting<String>,
    problems: &mut ChainProblems,
) {
    let skip = usize::from(matches!(start, Start::Config(_)));
    let mut steps = vec![start.label()];
    steps.extend(visited[skip..].iter().map(|v| format!("`{v}`")));
    steps.push(format!("`{}`", base.val));
    let names: Vec<&str> = doc.configs.keys().map(String::as_str).collect();
    let suggestion = closest(&base.val, names.iter().copied());
    let mut message = format!(
        "unknown base-config `{}` at `{}` (chain: {})",
        base.val,
        base.path,
        steps.join(" → ")
    );
    if let Some(s) = suggestion {
        message.push_str(&format!("; did you mean `{s}`?"));
    }
    if names.is_empty() {
        message.push_str("; this kind has no `configs`");
    } else {
        message.push_str(&format!("; configs: {}", quoted_list(&names)));
    }
    let problem = Problem::new(ProblemKind::UnknownBase, Some(base.path.clone()), message)
        .with_suggestion(suggestion.map(str::to_owned));
    keep_longest(problems, base.path.clone(), problem);
}

fn record_cycle(doc: &KindDoc, cycle: &[&str], problems: &mut ChainProblems) {
    // Start the cycle at its smallest name so every entry that reaches it
    // reports the same message once.
    let first = (0..cycle.len()).min_by_key(|i| cycle[*i]).unwrap_or(0);
    let mut members: Vec<&str> = cycle[first..]
        .iter()
        .chain(&cycle[..first])
        .copied()
        .collect();
    let last = *members.last().unwrap_or(&cycle[0]);
    members.push(members[0]);
    let path = doc.configs[last]
        .base
        .as_ref()
        .map_or_else(|| doc.configs[last].path.clone(), |b| b.path.clone());
    let chain: Vec<String> = members.iter().map(|m| format!("`{m}`")).collect();
    let message = format!("base-config cycle: {} (at `{path}`)", chain.join(" → "));
    keep_longest(
        problems,
        path.clone(),
        Problem::new(ProblemKind::Cycle, Some(path), message),
    );
}

fn keep_longest(problems: &mut ChainProblems, path: String, problem: Problem) {
    match problems.get(&path) {
        Some(old) if old.to_string().len() >= problem.to_string().len() => {}
        _ => {
            problems.insert(path, problem);
        }
    }
}

/// Builds the config through resil-core, recording every invalid value:
/// after each error the offending value is dropped (back to its default) and
/// the build is retried, so one entry reports all of its bad values.
fn validate<C: Apply>(entry_path: &str, values: &Values, problems: &mut Vec<Problem>) -> Option<C> {
    let kind = C::KIND;
    let mut scratch = values.clone();
    let mut failed = false;
    let mut blamed: Vec<&'static str> = Vec::new();
    loop {
        match C::build(C::builder_with(&scratch)) {
            Ok(config) => return if failed { None } else { Some(config) },
            Err(error) => {
                failed = true;
                let key = key_for_field(kind, error.field(), error.got());
                if blamed.contains(&key) {
                    // The value was dropped and its default conflicts with the
                    // others: a consequence of what was already reported.
                    return None;
                }
                let (path, got) = match values.get(key) {
                    Some(setting) => (setting.path.clone(), error.got().to_owned()),
                    None => (
                        format!("{entry_path}.{key}"),
                        format!("{} (the default)", error.got()),
                    ),
                };
                let env_var = match values.get(key).map(|s| &s.source) {
                    Some(Source::Env(var)) => Some(var.as_str()),
                    _ => None,
                };
                let expected = kebab_fields(kind, error.expected());
                problems.push(Problem::value(
                    ProblemKind::InvalidValue,
                    ConfigError::new(path.clone(), got, expected),
                    env_var,
                ));
                // A default invalid with the other values leaves nothing to drop.
                scratch.remove(key)?;
                blamed.push(key);
            }
        }
    }
}

/// The canonical key of the option resil-core names `field` (for an interval
/// function, the part its message names: `multiplier 0.5`, `max 0ns`, …).
fn key_for_field(kind: Kind, field: &str, got: &str) -> &'static str {
    if let Some(o) = kind.options().iter().find(|o| o.setter == field) {
        return o.key;
    }
    let open = field == "wait_interval_function_in_open_state";
    if open || field == "interval_function" {
        return if got.starts_with("multiplier") {
            "exponential-backoff-multiplier"
        } else if got.starts_with("randomization factor") {
            "randomized-wait-factor"
        } else if got.starts_with("max") && open {
            "exponential-max-wait-duration-in-open-state"
        } else if got.starts_with("max") {
            "exponential-max-wait-duration"
        } else if open {
            "wait-duration-in-open-state"
        } else {
            "wait-duration"
        };
    }
    "(unknown)"
}

/// resil-core's messages name related fields in snake case
/// ("an integer >= core_thread_pool_size (3)"): name them as the file does.
fn kebab_fields(kind: Kind, text: &str) -> String {
    let mut out = text.to_owned();
    for o in kind.options() {
        if !o.setter.is_empty() && out.contains(o.setter) {
            out = out.replace(o.setter, o.key);
        }
    }
    out
}
