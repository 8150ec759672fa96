//! The guide's metrics table (`docs/operating.md`) is the exposition: every metric family
//! `Registry::prometheus_text` writes (for one instance of every kind, a
//! fallback site and a tower layer), with its type, labels and `# HELP`
//! text, is a row of the table between `<!-- metrics-table:start -->` and
//! `<!-- metrics-table:end -->`, and every row is a family. On a mismatch
//! the test prints the table the exposition implies.

use std::collections::{BTreeMap, BTreeSet};

use resil::checks::FallbackSite;
use resil::config::{FileConfig, Format};
use resil::Registry;

/// A registry holding one instance of every kind (with histograms on), a
/// fallback site that degraded and failed once, a tower layer's counts and
/// the inbound guard.
fn exposition() -> String {
    static SITE: FallbackSite = FallbackSite::new("metrics_table::price");
    let registry = Registry::builder().percentiles_histogram(true).build();
    let breaker = registry.circuit_breaker("inventory");
    let _ = breaker.call(|| Ok::<_, &str>(()));
    let _ = registry.retry("inventory");
    let _ = registry.bulkhead("inventory");
    let pool = registry.thread_pool_bulkhead("inventory");
    let _ = registry.rate_limiter("inventory");
    let _ = registry.time_limiter("inventory");
    let _ = registry.hedging("inventory");
    let _ = registry.adaptive_bulkhead("inventory");
    let _ = registry.chaos("inventory");
    let _ = registry.throttler("inventory");
    let _ = registry.layer_counts("inventory-api");
    let _ = registry.keyed_rate_limiter("inventory").get("tenant-1");
    // A shadow trial of every kind that has shadows (their `resil_shadow_*`
    // families).
    registry
        .stage_shadow(
            FileConfig::from_yaml_str(
                "resilience4j.circuitbreaker.instances.inventory.failure-rate-threshold: 40\n\
                 resilience4j.retry.instances.inventory.max-attempts: 2\n\
                 resilience4j.bulkhead.instances.inventory.max-concurrent-calls: 2\n\
                 resilience4j.ratelimiter.instances.inventory.limit-for-period: 2\n",
            )
            .unwrap(),
            "metrics-table",
        )
        .unwrap();
    // The inbound guard, with readings and a completion (every gauge shown).
    let guard = registry.inbound_guard();
    guard.record_system(Some(50.0), Some(1.0));
    drop(guard.try_enter());
    SITE.degraded(&resil::Error::Call("down"));
    let _ = SITE.finished(Err::<(), _>("fallback failed too"));
    let text = registry.prometheus_text();
    pool.shutdown();
    text
}

/// `(type, label description, help)` by family, as the table writes them.
fn families(text: &str) -> BTreeMap<String, (String, String, String)> {
    let mut help = BTreeMap::new();
    let mut kind = BTreeMap::new();
    // family → label key → values (only `kind`, `state`, `outcome` and
    // `criticality` and `result` values are listed).
    let mut labels: BTreeMap<String, BTreeMap<String, BTreeSet<String>>> = BTreeMap::new();
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, h) = rest.split_once(' ').unwrap();
            help.insert(name.to_owned(), h.to_owned());
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, t) = rest.split_once(' ').unwrap();
            kind.insert(name.to_owned(), t.to_owned());
        } else {
            let (series, _) = line.rsplit_once(' ').unwrap();
            let (name, body) = series.split_once('{').unwrap_or((series, "}"));
            let family = kind
                .keys()
                .filter(|f| name.starts_with(f.as_str()))
                .max_by_key(|f| f.len())
                .unwrap_or_else(|| panic!("no # TYPE for {name}"))
                .clone();
            let entry = labels.entry(family).or_default();
            for pair in body
                .trim_end_matches('}')
                .split(',')
                .filter(|p| !p.is_empty())
            {
                let (k, v) = pair.split_once('=').unwrap();
                if k == "name" || k == "le" {
                    continue;
                }
                let values = entry.entry(k.to_owned()).or_default();
                if k == "kind"
                    || k == "state"
                    || k == "outcome"
                    || k == "criticality"
                    || k == "result"
                {
                    values.insert(v.trim_matches('"').to_owned());
                }
            }
        }
    }
    kind.into_iter()
        .map(|(family, t)| {
            let t = match t.as_str() {
                "summary" | "histogram" => "timer".to_owned(),
                other => other.to_owned(),
            };
            let described: Vec<String> = labels
                .get(&family)
                .into_iter()
                .flatten()
                .map(|(k, values)| {
                    if values.is_empty() {
                        format!("`{k}`")
                    } else {
                        let v: Vec<&str> = values.iter().map(String::as_str).collect();
                        format!("`{k}`: {}", v.join(", "))
                    }
                })
                .collect();
            let described = if described.is_empty() {
                "—".to_owned()
            } else {
                described.join("; ")
            };
            let h = help[&family].clone();
            (family, (t, described, h))
        })
        .collect()
}

fn readme_table() -> BTreeMap<String, (String, String, String)> {
    let readme =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/operating.md")).unwrap();
    let start = readme
        .find("<!-- metrics-table:start -->")
        .expect("docs/operating.md has the metrics table");
    let end = readme.find("<!-- metrics-table:end -->").unwrap();
    readme[start..end]
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| {
            let cells: Vec<&str> = l.trim_matches('|').split(" | ").map(str::trim).collect();
            assert_eq!(cells.len(), 4, "four cells in `{l}`");
            (
                cells[0].trim_matches('`').to_owned(),
                (
                    cells[1].to_owned(),
                    cells[2].to_owned(),
                    cells[3].to_owned(),
                ),
            )
        })
        .collect()
}

#[test]
fn the_readme_metrics_table_equals_the_exposition() {
    let exposed = families(&exposition());
    let table = readme_table();
    if exposed != table {
        let mut wanted = String::from(
            "| metric | type | labels besides `name` and tags | meaning |\n|---|---|---|---|\n",
        );
        for (family, (t, labels, help)) in &exposed {
            wanted.push_str(&format!("| `{family}` | {t} | {labels} | {help} |\n"));
        }
        let missing: Vec<_> = exposed.keys().filter(|k| !table.contains_key(*k)).collect();
        let extra: Vec<_> = table.keys().filter(|k| !exposed.contains_key(*k)).collect();
        panic!(
            "the metrics table in docs/operating.md differs from the exposition \
             (missing rows: {missing:?}, rows of no family: {extra:?}); it should read:\n\n{wanted}"
        );
    }
}

#[test]
fn promtool_finds_nothing_wrong_with_the_exposition_but_resilience4js_own_names() {
    let Ok(mut child) = std::process::Command::new("promtool")
        .args(["check", "metrics"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
    else {
        panic!("promtool not found: scripts/test installs Debian's `prometheus` package");
    };
    use std::io::Write;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(exposition().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Resilience4j names two thread-pool gauges `…_thread_count`, which
    // promtool's naming lint reserves for summaries and histograms; they
    // keep Resilience4j's names (dashboards query them), and nothing else
    // may be reported.
    let kept = [
        "resilience4j_bulkhead_active_thread_count non-histogram and non-summary metrics should not have \"_count\" suffix",
        "resilience4j_bulkhead_available_thread_count non-histogram and non-summary metrics should not have \"_count\" suffix",
    ];
    let findings: Vec<&str> = report
        .lines()
        .filter(|l| !l.trim().is_empty() && !kept.contains(&l.trim()))
        .collect();
    assert!(findings.is_empty(), "promtool check metrics:\n{report}");
}

/// Whether the breaker `name`'s call timer is published with buckets.
fn has_buckets(registry: &Registry, name: &str) -> bool {
    let breaker = registry.circuit_breaker(name);
    let _ = breaker.call(|| Ok::<_, &str>(()));
    registry.prometheus_text().lines().any(|l| {
        l.starts_with("resilience4j_circuitbreaker_calls_seconds_bucket{")
            && l.contains(&format!("name=\"{name}\""))
    })
}

const NO_VARS: [(&str, &str); 0] = [];

#[test]
fn histograms_are_off_by_default_and_on_as_springs_key_or_the_builder_says() {
    assert!(!has_buckets(&Registry::new(), "plain"));
    assert!(has_buckets(
        &Registry::builder().percentiles_histogram(true).build(),
        "coded"
    ));
    let key = "management.metrics.distribution.percentiles-histogram";
    for (file, expected) in [
        (
            format!("{key}.resilience4j.circuitbreaker.calls=true"),
            true,
        ),
        (format!("{key}.resilience4j=true"), true),
        (format!("{key}.all=true"), true),
        // The most specific key decides.
        (
            format!("{key}.all=true\n{key}.resilience4j.circuitbreaker.calls=false"),
            false,
        ),
        (format!("{key}.resilience4j.retry.calls=true"), false),
    ] {
        let registry = Registry::new();
        registry
            .reload(FileConfig::from_str_with_env(&file, Format::Properties, NO_VARS).unwrap())
            .unwrap();
        assert_eq!(has_buckets(&registry, "filed"), expected, "{file}");
    }
    // The yaml Spring writes, with the dotted meter name as one key.
    let yaml = "management:\n  metrics:\n    distribution:\n      percentiles-histogram:\n        resilience4j.circuitbreaker.calls: true\n";
    let registry = Registry::from_yaml_str(yaml).unwrap();
    assert!(has_buckets(&registry, "yaml"));
}
