//! Value tree → the raw document: every key checked against the schema, every
//! value read into its type, every problem recorded with its key path. No
//! inheritance yet (`resolve.rs`), no environment (`env.rs`).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use resil_core::retry::{IntervalFunction, RetryBudgetConfig};
use resil_core::ConfigError;

use super::aspect_order;
use super::duration::{parse_duration, EXPECTED_DURATION};
use super::error::{closest, Problem, ProblemKind};
use super::schema::{
    normalize, KeyRules, Kind, OptionSpec, Target, Ty, Val, EVENT_CONSUMER_BUFFER_SIZE,
};
use super::setting::{Setting, Source};
use super::value::{Lines, Value};

/// The root key.
pub(crate) const ROOT: &str = "resilience4j";

/// A config's or an instance's own settings, before inheritance.
#[derive(Debug, Clone, Default)]
pub(crate) struct Entry {
    pub path: String,
    pub base: Option<Setting<String>>,
    pub values: BTreeMap<&'static str, Setting>,
    pub tags: BTreeMap<String, Setting<String>>,
    /// `keyed.overrides`: settings per key or key pattern.
    pub overrides: BTreeMap<String, KeyOverride>,
}

/// One entry of `keyed.overrides`: the settings a key (or `*` pattern) gets.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct KeyOverride {
    pub path: String,
    pub values: BTreeMap<&'static str, Setting>,
}

/// The options a key override may set, per kind: what each key of a keyed
/// family holds for itself (`None`: every option of the kind).
fn override_keys(kind: Kind) -> Option<&'static [&'static str]> {
    match kind {
        Kind::RateLimiter => Some(&["limit-for-period"]),
        Kind::Bulkhead => Some(&["max-concurrent-calls"]),
        Kind::CircuitBreaker => Some(&[
            "failure-rate-threshold",
            "slow-call-rate-threshold",
            "slow-call-duration-threshold",
            "minimum-number-of-calls",
            "sliding-window-size",
            "wait-duration-in-open-state",
            "permitted-number-of-calls-in-half-open-state",
        ]),
        // A retry's keyed family is a retry budget per key.
        Kind::Retry => Some(&[
            "budget-retry-ratio",
            "budget-min-retries-per-second",
            "budget-window",
        ]),
        _ => None,
    }
}

/// Whether instances of `kind` have a `keyed` map.
fn has_keyed(kind: Kind) -> bool {
    matches!(
        kind,
        Kind::RateLimiter | Kind::Bulkhead | Kind::CircuitBreaker | Kind::Retry
    )
}

/// One kind's section.
#[derive(Debug, Clone, Default)]
pub(crate) struct KindDoc {
    /// `resilience4j.<key as written>`, when the file has the section.
    pub path: Option<String>,
    pub tags: BTreeMap<String, Setting<String>>,
    pub configs: BTreeMap<String, Entry>,
    pub instances: BTreeMap<String, Entry>,
    /// Spring's `<kind>-aspect-order`, when the section writes it.
    pub aspect_order: Option<aspect_order::Written>,
}

impl KindDoc {
    pub(crate) fn path_or_default(&self, kind: Kind) -> String {
        self.path
            .clone()
            .unwrap_or_else(|| format!("{ROOT}.{}", kind.config_key()))
    }
}

/// The whole file, per kind (indexed by `Kind::index`).
#[derive(Debug, Clone, Default)]
pub(crate) struct Document {
    pub kinds: [KindDoc; Kind::ALL.len()],
}

impl Document {
    /// What the file says of `kind` (nothing for a kind with no section,
    /// the unit tests' own).
    pub(crate) fn kind(&self, kind: Kind) -> &KindDoc {
        static NONE: std::sync::LazyLock<KindDoc> = std::sync::LazyLock::new(KindDoc::default);
        self.kinds.get(kind.index()).unwrap_or(&NONE)
    }

    pub(crate) fn kind_mut(&mut self, kind: Kind) -> &mut KindDoc {
        &mut self.kinds[kind.index()]
    }

    /// Records where each setting is written.
    pub(crate) fn locate(&mut self, lines: &Lines, document: &Option<Arc<str>>) {
        for kind in &mut self.kinds {
            for s in kind.tags.values_mut() {
                s.locate(lines, document);
            }
            for entry in kind.configs.values_mut().chain(kind.instances.values_mut()) {
                if let Some(base) = &mut entry.base {
                    base.locate(lines, document);
                }
                for s in entry.values.values_mut() {
                    s.locate(lines, document);
                }
                for s in entry.tags.values_mut() {
                    s.locate(lines, document);
                }
                for o in entry.overrides.values_mut() {
                    for s in o.values.values_mut() {
                        s.locate(lines, document);
                    }
                }
            }
        }
    }

    /// Lays a later document over this one, key by key: a later value wins,
    /// tags merge by name, configs and instances merge by name.
    pub(crate) fn merge(&mut self, later: Document) {
        for (into, from) in self.kinds.iter_mut().zip(later.kinds) {
            if into.path.is_none() {
                into.path = from.path;
            }
            if from.aspect_order.is_some() {
                into.aspect_order = from.aspect_order;
            }
            into.tags.extend(from.tags);
            for (target, source) in [
                (&mut into.configs, from.configs),
                (&mut into.instances, from.instances),
            ] {
                for (name, entry) in source {
                    match target.get_mut(&name) {
                        Some(existing) => {
                            if entry.base.is_some() {
                                existing.base = entry.base;
                            }
                            existing.values.extend(entry.values);
                            existing.tags.extend(entry.tags);
                            existing.overrides.extend(entry.overrides);
                        }
                        None => {
                            target.insert(name, entry);
                        }
                    }
                }
            }
        }
    }
}

/// Reads the value tree into a document, recording every problem. Only the
/// `resilience4j` subtree is resil's: the other top-level keys (`spring`,
/// `server`, `management`, …) belong to the application, as Spring Boot binds
/// each prefix to its own properties; their names are returned.
pub(crate) fn document(root: Value, problems: &mut Vec<Problem>) -> (Document, Vec<String>) {
    let mut doc = Document::default();
    let mut ignored = Vec::new();
    let Some(top) = map_entries(root, "", "a map with a `resilience4j` key", problems) else {
        return (doc, ignored);
    };
    for (key, value) in top {
        if normalize(&key) == ROOT {
            walk_root(&mut doc, &key, value, problems);
        } else {
            ignored.push(key);
        }
    }
    (doc, ignored)
}

fn walk_root(doc: &mut Document, root: &str, value: Value, problems: &mut Vec<Problem>) {
    let Some(items) = map_entries(
        value,
        root,
        "a map of kinds (`circuitbreaker`, `retry`, …)",
        problems,
    ) else {
        return;
    };
    for (key, value) in items {
        let path = format!("{root}.{key}");
        let Some(kind) = Kind::from_key(&key) else {
            // Every kind's key (the one list), so a new kind gets its typos
            // answered too; `-` and `_` are ignored when comparing.
            let kinds = Kind::ALL.map(Kind::config_key);
            problems.push(Problem::unknown_key(path, closest(&key, kinds), None));
            continue;
        };
        let section = doc.kind_mut(kind);
        if let Some(first) = &section.path {
            problems.push(duplicate(&path, first, &key));
            continue;
        }
        section.path = Some(path.clone());
        walk_kind(kind, section, &path, value, problems);
    }
}

fn walk_kind(
    kind: Kind,
    section: &mut KindDoc,
    path: &str,
    value: Value,
    problems: &mut Vec<Problem>,
) {
    let Some(items) = map_entries(
        value,
        path,
        "a map with `configs`, `instances` or `tags`",
        problems,
    ) else {
        return;
    };
    let mut seen = HashMap::new();
    for (key, value) in items {
        let key_path = format!("{path}.{key}");
        let n = normalize(&key);
        if let Some(first) = seen.insert(n.clone(), key.clone()) {
            problems.push(duplicate(&key_path, &first, &key));
            continue;
        }
        match n.as_str() {
            "configs" | "instances" => {
                walk_named(kind, section, n == "configs", &key_path, value, problems)
            }
            "tags" => section.tags = walk_tags(&key_path, value, &Source::Shared, problems),
            "backends" | "limiters" => {
                // Resilience4j 1.x's name for `instances`, which 2.x keeps as
                // a getter returning the `instances` map itself: Spring binds
                // both keys into one map, so they merge here too.
                problems.push(Problem::new(
                    ProblemKind::Renamed,
                    Some(key_path.clone()),
                    format!(
                        "`{key_path}` is Resilience4j 1.x's name for `instances`: read as \
                         (and merged with) `{path}.instances`; write that"
                    ),
                ));
                walk_named(kind, section, false, &key_path, value, problems);
            }
            "metrics" => problems.push(Problem::new(
                ProblemKind::Ignored,
                Some(key_path.clone()),
                format!(
                    "`{key_path}` switches the Java starter's Micrometer binder; ignored: \
                     resil publishes metrics when the program calls `Registry::publish_metrics`"
                ),
            )),
            _ if n.ends_with("aspectorder") => {
                if let Some(order) = aspect_order::read(kind, &key, &key_path, &value, problems) {
                    section.aspect_order = Some(order);
                }
            }
            _ if kind.option(&key).is_some() => problems.push(Problem::unknown_key(
                key_path,
                None,
                Some(&format!(
                    "options go in a config or an instance, e.g. `{path}.configs.default.{key}`"
                )),
            )),
            _ => problems.push(Problem::unknown_key(
                key_path,
                closest(&key, ["configs", "instances", "tags"]),
                None,
            )),
        }
    }
}

/// Reads `configs` or `instances`: a map of names to settings.
fn walk_named(
    kind: Kind,
    section: &mut KindDoc,
    is_config: bool,
    key_path: &str,
    value: Value,
    problems: &mut Vec<Problem>,
) {
    let expected = "a map of names to settings";
    let Some(named) = map_entries(value, key_path, expected, problems) else {
        return;
    };
    for (name, value) in named {
        let Some(entry_path) = named_path(key_path, &name, "the config or instance", problems)
        else {
            continue;
        };
        let source = if is_config {
            Source::Config(name.clone())
        } else {
            Source::Instance
        };
        let entry = walk_entry(kind, entry_path, value, &source, problems);
        let target = if is_config {
            &mut section.configs
        } else {
            &mut section.instances
        };
        match target.get_mut(&name) {
            // The same instance under `instances` and `limiters`: one map.
            Some(existing) => merge_entry(existing, entry, problems),
            None => {
                target.insert(name, entry);
            }
        }
    }
}

/// Lays `more` (the same instance under a second key, `limiters` beside
/// `instances`) into `into`: a setting both give must have one value; two
/// values are a problem naming both key paths (and, once located, lines).
fn merge_entry(into: &mut Entry, more: Entry, problems: &mut Vec<Problem>) {
    fn clash(
        first: &str,
        second: &str,
        a: &dyn std::fmt::Display,
        b: &dyn std::fmt::Display,
    ) -> Problem {
        Problem::new(
            ProblemKind::Duplicate,
            Some(second.to_owned()),
            format!(
                "`{second}` is {b}, but `{first}` sets the same setting to {a} \
                 (Spring binds both keys into one map); keep one of them"
            ),
        )
        .also_at(first)
    }
    match (&into.base, more.base) {
        (Some(a), Some(b)) if a.val != b.val => {
            problems.push(clash(&a.path, &b.path, &a.val, &b.val));
        }
        (None, Some(b)) => into.base = Some(b),
        _ => {}
    }
    for (key, setting) in more.values {
        match into.values.get(key) {
            Some(a) if a.val != setting.val => {
                problems.push(clash(&a.path, &setting.path, &a.val, &setting.val));
            }
            Some(_) => {}
            None => {
                into.values.insert(key, setting);
            }
        }
    }
    for (tag, setting) in more.tags {
        match into.tags.get(&tag) {
            Some(a) if a.val != setting.val => {
                problems.push(clash(&a.path, &setting.path, &a.val, &setting.val));
            }
            Some(_) => {}
            None => {
                into.tags.insert(tag, setting);
            }
        }
    }
}

/// Reads one config's or instance's map.
pub(crate) fn walk_entry(
    kind: Kind,
    path: String,
    value: Value,
    source: &Source,
    problems: &mut Vec<Problem>,
) -> Entry {
    let mut entry = Entry {
        path: path.clone(),
        ..Entry::default()
    };
    let Some(items) = map_entries(value, &path, "a map of settings", problems) else {
        return entry;
    };
    let mut seen: HashMap<&'static str, String> = HashMap::new();
    for (key, value) in items {
        let key_path = format!("{path}.{key}");
        let n = normalize(&key);
        if n == "keyed" && has_keyed(kind) {
            if seen.insert("keyed", key.clone()).is_some() {
                problems.push(duplicate(&key_path, "keyed", &key));
            } else {
                walk_keyed(kind, &key_path, value, source, &mut entry, problems);
            }
            continue;
        }
        if let Some(why) = kind.ignored(&key) {
            problems.push(Problem::new(
                ProblemKind::Ignored,
                Some(key_path.clone()),
                format!("`{key_path}` is ignored: {why}"),
            ));
            continue;
        }
        let renamed = kind.renamed(&key);
        let spec = kind
            .option(&key)
            .or(renamed.and_then(|r| kind.option(r.to)));
        if let Some(r) = renamed {
            problems.push(Problem::new(
                ProblemKind::Renamed,
                Some(key_path.clone()),
                format!(
                    "`{key_path}` is Resilience4j 1.x's `{}`: read as `{path}.{}`{}; write that",
                    r.from, r.to, r.note
                ),
            ));
        }
        let canonical: &'static str = match (n.as_str(), spec) {
            ("baseconfig", _) => "base-config",
            ("tags", _) => "tags",
            (_, Some(spec)) => spec.key,
            (_, None) => {
                problems.push(unknown_entry_key(kind, key_path, &key));
                continue;
            }
        };
        if let Some(first) = seen.insert(canonical, key.clone()) {
            problems.push(duplicate(&key_path, &first, &key));
            continue;
        }
        match (canonical, spec) {
            ("base-config", _) => match value {
                Value::Str(name) if !name.trim().is_empty() => {
                    entry.base = Some(Setting {
                        val: name,
                        source: source.clone(),
                        path: key_path,
                        line: None,
                        document: None,
                    })
                }
                other => problems.push(Problem::value(
                    ProblemKind::WrongType,
                    ConfigError::new(
                        key_path,
                        other.describe(),
                        "the name of a config under `configs`",
                    ),
                    None,
                )),
            },
            ("tags", _) => entry.tags = walk_tags(&key_path, value, source, problems),
            // A list key with nothing under it (every item commented out) is
            // `null`: Spring leaves the property unset, so the inherited
            // value, or Resilience4j's default, stays.
            (_, Some(spec)) if matches!(value, Value::Null) && spec.ty == Ty::Names => {}
            (_, Some(spec)) => match read_option(spec, &value, &key_path) {
                Ok(val) => {
                    entry.values.insert(
                        spec.key,
                        Setting {
                            val,
                            source: source.clone(),
                            path: key_path,
                            line: None,
                            document: None,
                        },
                    );
                }
                Err(mut found) => problems.append(&mut found),
            },
            (_, None) => unreachable!("keys without a spec were skipped above"),
        }
    }
    entry
}

/// An instance's `keyed` map: `max-keys` and `idle-ttl` are options
/// (`keyed.max-keys`, …), `overrides` maps keys and `*` patterns to settings.
fn walk_keyed(
    kind: Kind,
    path: &str,
    value: Value,
    source: &Source,
    entry: &mut Entry,
    problems: &mut Vec<Problem>,
) {
    let Some(items) = map_entries(
        value,
        path,
        "a map of `max-keys`, `idle-ttl` and `overrides`",
        problems,
    ) else {
        return;
    };
    for (key, value) in items {
        let key_path = format!("{path}.{key}");
        if normalize(&key) == "overrides" {
            walk_overrides(kind, &key_path, value, source, entry, problems);
            continue;
        }
        let Some(spec) = kind
            .option(&format!("keyed.{key}"))
            .filter(|s| s.key.starts_with("keyed."))
        else {
            let suggestion = closest(&key, ["max-keys", "idle-ttl", "overrides"]);
            problems.push(Problem::unknown_key(key_path, suggestion, None));
            continue;
        };
        if let Some(first) = entry.values.get(spec.key) {
            problems.push(duplicate(&key_path, &first.path, &key));
            continue;
        }
        match read_option(spec, &value, &key_path) {
            Ok(val) => {
                entry.values.insert(
                    spec.key,
                    Setting {
                        val,
                        source: source.clone(),
                        path: key_path,
                        line: None,
                        document: None,
                    },
                );
            }
            Err(mut found) => problems.append(&mut found),
        }
    }
}

/// `keyed.overrides`: key or `*` pattern → the settings that key gets.
fn walk_overrides(
    kind: Kind,
    path: &str,
    value: Value,
    source: &Source,
    entry: &mut Entry,
    problems: &mut Vec<Problem>,
) {
    let Some(patterns) = map_entries(value, path, "a map of key patterns to settings", problems)
    else {
        return;
    };
    for (pattern, settings) in patterns {
        let pattern_path = format!("{path}.{pattern}");
        if pattern.is_empty() {
            problems.push(Problem::value(
                ProblemKind::InvalidValue,
                ConfigError::new(pattern_path, "an empty key", "a key or a `*` pattern"),
                None,
            ));
            continue;
        }
        let Some(items) = map_entries(settings, &pattern_path, "a map of settings", problems)
        else {
            continue;
        };
        let mut out = KeyOverride {
            path: pattern_path.clone(),
            values: BTreeMap::new(),
        };
        for (key, value) in items {
            let key_path = format!("{pattern_path}.{key}");
            let allowed = override_keys(kind);
            let spec = kind
                .option(&key)
                .filter(|s| allowed.map_or(s.target == Target::Core, |keys| keys.contains(&s.key)));
            let Some(spec) = spec else {
                let candidates: Vec<&'static str> = match allowed {
                    Some(keys) => keys.to_vec(),
                    None => kind
                        .options()
                        .iter()
                        .filter(|o| o.target == Target::Core)
                        .map(|o| o.key)
                        .collect(),
                };
                if kind.option(&key).is_some() {
                    problems.push(Problem::new(
                        ProblemKind::Unsupported,
                        Some(key_path.clone()),
                        format!(
                            "`{key_path}` cannot differ per key; a key override may set {}",
                            candidates
                                .iter()
                                .map(|c| format!("`{c}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    ));
                } else {
                    let suggestion = closest(&key, candidates.iter().copied());
                    problems.push(Problem::unknown_key(key_path, suggestion, None));
                }
                continue;
            };
            match read_option(spec, &value, &key_path) {
                Ok(val) => {
                    out.values.insert(
                        spec.key,
                        Setting {
                            val,
                            source: source.clone(),
                            path: key_path,
                            line: None,
                            document: None,
                        },
                    );
                }
                Err(mut found) => problems.append(&mut found),
            }
        }
        entry.overrides.insert(pattern, out);
    }
}

fn unknown_entry_key(kind: Kind, key_path: String, key: &str) -> Problem {
    if let Some(why) = kind.rejected(key) {
        return Problem::new(
            ProblemKind::Unsupported,
            Some(key_path.clone()),
            format!("`{key_path}` is not supported: {why}"),
        );
    }
    let candidates = kind
        .options()
        .iter()
        .flat_map(|o| std::iter::once(o.key).chain(o.alias))
        .chain(["base-config", "tags"]);
    let suggestion = closest(key, candidates).map(|s| {
        // Suggest the canonical spelling even when the alias was closer.
        kind.option(s).map_or(s, |o| o.key)
    });
    let other_kind = Kind::ALL
        .into_iter()
        .find(|k| *k != kind && k.option(key).is_some())
        .map(|k| {
            format!(
                "`{key}` is a {} option, not a {} one",
                k.label(),
                kind.label()
            )
        });
    Problem::unknown_key(key_path, suggestion, other_kind.as_deref())
}

/// Reads an option's value: type first, then the checks resil-core cannot make
/// on a whole config (values it would not see when the option is unused).
pub(crate) fn read_option(
    spec: &OptionSpec,
    value: &Value,
    path: &str,
) -> Result<Val, Vec<Problem>> {
    let val = read_typed(spec.ty, value, path)?;
    let invalid = |e: ConfigError| {
        vec![Problem::value(
            ProblemKind::InvalidValue,
            ConfigError::new(path.to_owned(), e.got().to_owned(), e.expected().to_owned()),
            None,
        )]
    };
    match (spec.key, &val) {
        ("exponential-backoff-multiplier", Val::F64(m)) => {
            IntervalFunction::exponential(Duration::from_secs(1), *m)
                .validate("multiplier")
                .map_err(invalid)?;
        }
        ("randomized-wait-factor", Val::F64(f)) => {
            IntervalFunction::randomized(Duration::from_secs(1), *f)
                .validate("factor")
                .map_err(invalid)?;
        }
        (
            "exponential-max-wait-duration" | "exponential-max-wait-duration-in-open-state",
            Val::Duration(max),
        ) => {
            IntervalFunction::fixed(Duration::from_secs(1))
                .with_max(*max)
                .validate("max")
                .map_err(invalid)?;
        }
        ("latency-rate" | "error-rate" | "result-rate", Val::F64(rate))
            if !(0.0..=1.0).contains(rate) =>
        {
            return Err(invalid(ConfigError::new(
                path.to_owned(),
                rate,
                "a probability in [0, 1]",
            )));
        }
        // A retry budget's values, checked by its builder.
        ("budget-retry-ratio", Val::F64(r)) => {
            RetryBudgetConfig::builder()
                .retry_ratio(*r as f32)
                .build()
                .map_err(invalid)?;
        }
        ("budget-min-retries-per-second", Val::U32(n)) => {
            RetryBudgetConfig::builder()
                .min_retries_per_second(*n)
                .build()
                .map_err(invalid)?;
        }
        ("budget-window", Val::Duration(d)) => {
            RetryBudgetConfig::builder()
                .window(*d)
                .build()
                .map_err(invalid)?;
        }
        ("keyed.max-keys", Val::Usize(n)) if !(1..=resil_core::keyed::MAX_MAX_KEYS).contains(n) => {
            return Err(invalid(ConfigError::new(
                path.to_owned(),
                n,
                "an integer in 1..=100000000",
            )));
        }
        ("keyed.idle-ttl", Val::Duration(d)) if *d < Duration::from_millis(1) => {
            return Err(invalid(ConfigError::new(
                path.to_owned(),
                format!("{d:?}"),
                "a duration of at least 1ms",
            )));
        }
        (EVENT_CONSUMER_BUFFER_SIZE, Val::Usize(0)) => {
            return Err(invalid(ConfigError::new(
                path.to_owned(),
                0,
                "an integer >= 1",
            )));
        }
        _ => {}
    }
    Ok(val)
}

fn read_typed(ty: Ty, value: &Value, path: &str) -> Result<Val, Vec<Problem>> {
    let problem = |kind, got: String, expected: String| {
        vec![Problem::value(
            kind,
            ConfigError::new(path.to_owned(), got, expected),
            None,
        )]
    };
    let wrong = || {
        problem(
            ProblemKind::WrongType,
            value.describe(),
            super::schema::expected(ty),
        )
    };
    let out_of_range = || {
        problem(
            ProblemKind::InvalidValue,
            value.describe(),
            super::schema::expected(ty),
        )
    };
    // Spring binds text to numbers and booleans (a `.properties` value, a
    // quoted YAML scalar, a `${…}` placeholder are all text).
    let coerced;
    let value = match (ty, value) {
        (
            Ty::Percent | Ty::F64 | Ty::U32 | Ty::Usize | Ty::Duration | Ty::Bool,
            Value::Str(text),
        ) => {
            coerced = coerce(text.trim());
            match (&coerced, ty) {
                (Value::Str(_), _) => value,
                (Value::Bool(_), Ty::Bool) => &coerced,
                (Value::Int(_), Ty::Duration) => &coerced,
                (Value::Int(_) | Value::Float(_), Ty::Percent | Ty::F64 | Ty::U32 | Ty::Usize) => {
                    &coerced
                }
                _ => value,
            }
        }
        _ => value,
    };
    Ok(match (ty, value) {
        (Ty::Percent, Value::Int(i)) => Val::Percent(*i as f32),
        (Ty::Percent, Value::Float(f)) => Val::Percent(*f as f32),
        (Ty::F64, Value::Int(i)) => Val::F64(*i as f64),
        (Ty::F64, Value::Float(f)) => Val::F64(*f),
        (Ty::U32, Value::Int(i)) => Val::U32(u32::try_from(*i).map_err(|_| out_of_range())?),
        (Ty::Usize, Value::Int(i)) => Val::Usize(usize::try_from(*i).map_err(|_| out_of_range())?),
        (Ty::Duration, Value::Int(ms)) => Val::Duration(Duration::from_millis(
            u64::try_from(*ms).map_err(|_| out_of_range())?,
        )),
        (Ty::Duration, Value::Str(text)) => Val::Duration(parse_duration(text).map_err(|e| {
            problem(
                ProblemKind::InvalidValue,
                format!("\"{text}\" ({})", e.reason()),
                EXPECTED_DURATION.into(),
            )
        })?),
        (Ty::Bool, Value::Bool(b)) => Val::Bool(*b),
        (Ty::Choice(words), Value::Str(text)) => Val::Choice(
            words
                .iter()
                .find(|w| normalize(w) == normalize(text))
                .ok_or_else(out_of_range)?,
        ),
        (Ty::Names, Value::Str(text)) => Val::Names(split_names(text)),
        (Ty::Text, Value::Str(text)) if text.trim().is_empty() => return Err(out_of_range()),
        (Ty::Text, Value::Str(text)) => Val::Text(text.trim().to_owned()),
        (Ty::Predicate, Value::Str(text)) if text.trim().is_empty() => return Err(out_of_range()),
        (Ty::Predicate, Value::Str(text)) => Val::Names(split_names(text)),
        // One name written as a scalar (`retry-exceptions: 503`).
        (Ty::Names, Value::Int(_) | Value::Bool(_) | Value::Float(_)) => {
            Val::Names(vec![value.describe()])
        }
        (Ty::Names, Value::List(items)) => {
            let mut names = Vec::with_capacity(items.len());
            let mut bad = Vec::new();
            for (i, item) in items.iter().enumerate() {
                match item {
                    Value::Str(name) if !name.trim().is_empty() => {
                        names.push(name.trim().to_owned())
                    }
                    other => bad.push(Problem::value(
                        ProblemKind::WrongType,
                        ConfigError::new(
                            format!("{path}[{i}]"),
                            other.describe(),
                            "an error-class name",
                        ),
                        None,
                    )),
                }
            }
            if !bad.is_empty() {
                return Err(bad);
            }
            Val::Names(names)
        }
        _ => return Err(wrong()),
    })
}

/// A text scalar read as the number or boolean it spells, else unchanged.
fn coerce(text: &str) -> Value {
    if let Ok(i) = text.parse::<i64>() {
        return Value::Int(i);
    }
    if let Ok(f) = text.parse::<f64>() {
        if f.is_finite() && !text.chars().any(char::is_alphabetic) {
            return Value::Float(f);
        }
    }
    match text.to_ascii_lowercase().as_str() {
        "true" => Value::Bool(true),
        "false" => Value::Bool(false),
        _ => Value::Str(text.to_owned()),
    }
}

/// `a, b,c` → `[a, b, c]` (Spring binds a comma-separated string to a list).
pub(crate) fn split_names(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

fn walk_tags(
    path: &str,
    value: Value,
    source: &Source,
    problems: &mut Vec<Problem>,
) -> BTreeMap<String, Setting<String>> {
    let mut tags = BTreeMap::new();
    let Some(items) = map_entries(value, path, "a map of tag names to values", problems) else {
        return tags;
    };
    for (key, value) in items {
        let key_path = format!("{path}.{key}");
        let text = match value {
            Value::Str(s) => s,
            Value::Int(i) => i.to_string(),
            Value::Float(f) => f.to_string(),
            Value::Bool(b) => b.to_string(),
            other => {
                problems.push(Problem::value(
                    ProblemKind::WrongType,
                    ConfigError::new(key_path, other.describe(), "a tag value (text)"),
                    None,
                ));
                continue;
            }
        };
        tags.insert(
            key,
            Setting {
                val: text,
                source: source.clone(),
                path: key_path,
                line: None,
                document: None,
            },
        );
    }
    tags
}

/// The key path of entry `name` under `key_path`, or `None` (and a problem
/// saying to name `what`) for an empty name.
pub(super) fn named_path(
    key_path: &str,
    name: &str,
    what: &str,
    problems: &mut Vec<Problem>,
) -> Option<String> {
    let entry_path = format!("{key_path}.{name}");
    if name.trim().is_empty() {
        problems.push(Problem::new(
            ProblemKind::InvalidValue,
            Some(entry_path),
            format!("an empty name under `{key_path}`: name {what}"),
        ));
        return None;
    }
    Some(entry_path)
}

/// A map's entries; `null` (a YAML key with nothing under it) is an empty map.
pub(super) fn map_entries(
    value: Value,
    path: &str,
    expected: &str,
    problems: &mut Vec<Problem>,
) -> Option<Vec<(String, Value)>> {
    match value {
        Value::Map(items) => Some(items),
        Value::Null => Some(Vec::new()),
        other => {
            let path = if path.is_empty() {
                "(the whole file)"
            } else {
                path
            };
            problems.push(Problem::value(
                ProblemKind::WrongType,
                ConfigError::new(path.to_owned(), other.describe(), expected.to_owned()),
                None,
            ));
            None
        }
    }
}

/// `key` (at `key_path`) as one of a resil section's `keys`, spelled
/// kebab-case or camelCase: an unknown key is a problem naming the closest
/// one and the whole list (`what`: whose keys they are), a key given twice
/// under two spellings one naming both; either way `None`.
pub(super) fn section_key(
    key: &str,
    key_path: &str,
    keys: &[&'static str],
    what: &str,
    seen: &mut HashMap<&'static str, String>,
    problems: &mut Vec<Problem>,
) -> Option<&'static str> {
    let Some(&known) = keys
        .iter()
        .find(|k| super::schema::normalize(k) == super::schema::normalize(key))
    else {
        let hint = format!("{what}: {}", super::error::quoted_list(keys));
        problems.push(Problem::unknown_key(
            key_path.to_owned(),
            closest(key, keys.iter().copied()),
            Some(&hint),
        ));
        return None;
    };
    if let Some(first) = seen.insert(known, key.to_owned()) {
        problems.push(duplicate(key_path, &first, key));
        return None;
    }
    Some(known)
}

pub(super) fn duplicate(path: &str, first: &str, second: &str) -> Problem {
    Problem::new(
        ProblemKind::Duplicate,
        Some(path.to_owned()),
        format!("`{path}` is given twice (as `{first}` and as `{second}`)"),
    )
}
