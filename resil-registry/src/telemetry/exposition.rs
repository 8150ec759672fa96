//! Every instance's metrics as labelled samples, and their Prometheus text
//! exposition as Micrometer's Prometheus registry writes it for the Spring
//! Boot starter.
//!
//! What happened is cumulative: a counter (`resilience4j_retry_calls_total`)
//! or a timer (`resilience4j_circuitbreaker_calls_seconds_count`, `_sum`,
//! a `_max` gauge, and `_bucket{le}` when the histogram is on). What a window
//! or a pool holds now is a gauge. Labels are `name`, the instance's tags and
//! the metric's own label (`kind`, or `state` for the breaker's state),
//! sorted by key as Micrometer sorts them.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use super::describe::{Family, Metric, MetricKind, Telemetry};
use crate::kind::Kind;
use crate::primitive::{Primitive, Twins};
use crate::registry::Registry;
use crate::store::{for_each_kind, KindVisitor};

/// One metric with its labels.
#[derive(Debug, Clone)]
pub struct Sample {
    /// `(key, value)`, `name` first.
    pub(crate) labels: Vec<(&'static str, String)>,
    pub(crate) metric: Metric,
}

const FALLBACK_CALLS: Family = Family::new(
    "resil_fallback_calls",
    "Results of a protected fn's fallbacks: degraded answers by the cause they handled, and fallbacks that failed (kind)",
);

const MANAGEMENT_REQUESTS: Family = Family::new(
    "resil_management_requests",
    "Attempts to change an instance through a management endpoint, by how they were answered (outcome): granted, or refused with 401 or 403",
);

const CONFIG_RELOADS: Family = Family::new(
    "resil_config_reloads",
    "Config reloads attempted (a file, its watcher, a push source, a rollback), by result: applied, or refused with nothing changed",
);

const REFUSED_INSTANCES: Family = Family::new(
    "resil_registry_refused_instances",
    "Instances the registry refused to create because their kind reached max-instances-per-kind",
);

/// Every metric of every instance (and the fallbacks' and the registry's
/// own), after running due override expiries and collecting events.
pub(crate) fn samples(registry: &Registry) -> Vec<Sample> {
    registry.run_due_overrides();
    registry.collect_instance_events();
    struct Collect<'a> {
        registry: &'a Registry,
        out: Vec<Sample>,
    }
    impl KindVisitor for Collect<'_> {
        fn visit<P: Primitive>(&mut self) {
            kind_samples::<P>(self.registry, &mut self.out);
        }
    }
    let mut collect = Collect {
        registry,
        out: Vec::new(),
    };
    for_each_kind(&mut collect);
    let mut out = collect.out;
    for (name, m) in crate::fallback::all() {
        for (cause, n) in m.by_cause() {
            out.push(Sample {
                labels: vec![
                    ("name", name.to_owned()),
                    ("kind", "degraded".to_owned()),
                    ("cause", cause.as_str().to_owned()),
                ],
                metric: Metric::counter(FALLBACK_CALLS, None, n),
            });
        }
        out.push(Sample {
            labels: vec![("name", name.to_owned()), ("kind", "failed".to_owned())],
            metric: Metric::counter(FALLBACK_CALLS, None, m.failed()),
        });
    }
    registry.inner.layers.samples(&mut out);
    registry.inner.keyed.samples(&mut out);
    super::inbound::samples(registry, &mut out);
    let management = registry.management_requests();
    for outcome in crate::audit::ManagementOutcome::ALL {
        out.push(Sample {
            labels: vec![("outcome", outcome.as_str().to_owned())],
            metric: Metric::counter(MANAGEMENT_REQUESTS, None, management.count(outcome)),
        });
    }
    let reloads = registry.config_reloads();
    for (result, n) in [("applied", reloads.applied), ("refused", reloads.refused)] {
        out.push(Sample {
            labels: vec![("result", result.to_owned())],
            metric: Metric::counter(CONFIG_RELOADS, None, n),
        });
    }
    registry.shadow_samples(&mut out);
    for kind in Kind::ALL {
        out.push(Sample {
            labels: vec![("kind", kind.as_str().to_owned())],
            metric: Metric::counter(REFUSED_INSTANCES, None, registry.refused_by_cap(kind)),
        });
    }
    out
}

fn kind_samples<P: Primitive>(registry: &Registry, out: &mut Vec<Sample>) {
    for name in registry.names::<P>() {
        if let Some(handle) = registry.find::<P>(&name) {
            instance_samples::<P>(registry, &name, &*handle, &[], out);
        }
    }
    let twins = &registry.store::<P>().twins;
    let extra = twins.labels();
    for name in twins.names() {
        twins.with(&name, &mut |instance| {
            instance_samples::<P>(registry, &name, instance, extra, out);
        });
    }
}

/// One instance's metrics, labelled with its name, the tags of instance
/// `name` of kind `P`, and `extra` (a Redis-backed limiter's
/// `backend="redis"`, apart from a local limiter of the same name).
fn instance_samples<P: Primitive>(
    registry: &Registry,
    name: &str,
    instance: &(impl Telemetry + ?Sized),
    extra: &[(&'static str, &'static str)],
    out: &mut Vec<Sample>,
) {
    let tags = registry.tags::<P>(name);
    for metric in instance.metric_values() {
        let mut labels = vec![("name", name.to_owned())];
        // A tag cannot shadow a label the metric itself carries.
        for (k, v) in &tags {
            if k != "name" && k != metric.tag_key {
                labels.push((leak_label(k), v.clone()));
            }
        }
        labels.extend(extra.iter().map(|&(k, v)| (k, v.to_owned())));
        if let Some(tag) = metric.tag {
            labels.push((metric.tag_key, tag.to_owned()));
        }
        out.push(Sample { labels, metric });
    }
}

/// A tag key as a `'static` label key: tag keys come from the config and
/// are few, so each distinct key is interned once for the process.
fn leak_label(key: &str) -> &'static str {
    use parking_lot::Mutex;
    use std::collections::BTreeSet;
    static KEYS: Mutex<BTreeSet<&'static str>> = Mutex::new(BTreeSet::new());
    let mut keys = KEYS.lock();
    if let Some(k) = keys.get(key) {
        return k;
    }
    let k: &'static str = Box::leak(key.to_owned().into_boxed_str());
    keys.insert(k);
    k
}

/// The Prometheus text format (version 0.0.4) of `samples`, one family per
/// name with its `# HELP` and `# TYPE`, families sorted by name.
pub(crate) fn render(samples: &[Sample]) -> String {
    let mut families: BTreeMap<String, Vec<&Sample>> = BTreeMap::new();
    for s in samples {
        families.entry(s.metric.base_name()).or_default().push(s);
    }
    let mut out = String::new();
    for (base, samples) in &families {
        let first = &samples[0].metric;
        match first.kind {
            MetricKind::Counter => {
                let name = format!("{base}_total");
                header(&mut out, &name, first.help, "counter");
                for s in samples {
                    line(&mut out, &name, &s.labels, None, s.metric.value);
                }
            }
            MetricKind::Gauge => {
                header(&mut out, base, first.help, "gauge");
                for s in samples {
                    line(&mut out, base, &s.labels, None, s.metric.value);
                }
            }
            MetricKind::Timer => timer(&mut out, base, samples),
        }
    }
    out
}

/// A timer family: a histogram when any of its series keeps buckets, a
/// summary (count and sum) otherwise, and its `_max` gauge.
fn timer(out: &mut String, base: &str, samples: &[&Sample]) {
    let help = samples[0].metric.help;
    let histogram = samples
        .iter()
        .any(|s| s.metric.timer.as_ref().is_some_and(|t| t.buckets.is_some()));
    header(
        out,
        base,
        help,
        if histogram { "histogram" } else { "summary" },
    );
    for s in samples {
        let Some(t) = &s.metric.timer else { continue };
        if histogram {
            let bucket = format!("{base}_bucket");
            for &(le, n) in t.buckets.iter().flatten() {
                let le = format_value(le);
                line(out, &bucket, &s.labels, Some(&le), n as f64);
            }
            line(out, &bucket, &s.labels, Some("+Inf"), s.metric.value);
        }
        line(
            out,
            &format!("{base}_count"),
            &s.labels,
            None,
            s.metric.value,
        );
        line(out, &format!("{base}_sum"), &s.labels, None, t.sum);
    }
    let max = format!("{base}_max");
    header(out, &max, help, "gauge");
    for s in samples {
        if let Some(t) = &s.metric.timer {
            line(out, &max, &s.labels, None, t.max);
        }
    }
}

fn header(out: &mut String, name: &str, help: &str, kind: &str) {
    let _ = writeln!(
        out,
        "# HELP {name} {}",
        help.replace('\\', "\\\\").replace('\n', "\\n")
    );
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

fn line(out: &mut String, name: &str, labels: &[(&str, String)], le: Option<&str>, value: f64) {
    let mut sorted: Vec<(&str, &str)> = labels.iter().map(|(k, v)| (*k, v.as_str())).collect();
    sorted.sort_by_key(|&(k, _)| k);
    out.push_str(name);
    if !sorted.is_empty() || le.is_some() {
        out.push('{');
        let mut first = true;
        for (k, v) in sorted.into_iter().chain(le.map(|le| ("le", le))) {
            if !first {
                out.push(',');
            }
            first = false;
            let _ = write!(out, "{k}=\"{}\"", escape(v));
        }
        out.push('}');
    }
    let _ = writeln!(out, " {}", format_value(value));
}

/// A label value with `\`, `"` and newlines escaped.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

/// A sample value: integers without a fraction, `NaN`, `+Inf`, `-Inf`.
fn format_value(v: f64) -> String {
    if v.is_nan() {
        "NaN".to_owned()
    } else if v.is_infinite() {
        if v > 0.0 { "+Inf" } else { "-Inf" }.to_owned()
    } else {
        format!("{v}")
    }
}

impl Registry {
    /// Every instance's metrics in the Prometheus text format, under the
    /// names the Spring Boot 3 starter publishes through Micrometer:
    /// counters end in `_total`, the breaker's call timers are
    /// `resilience4j_circuitbreaker_calls_seconds_count`, `_sum`, `_max` (and
    /// `_bucket` with [`percentiles_histogram`](crate::RegistryBuilder::percentiles_histogram)),
    /// gauges keep their names. Serve it at `/actuator/prometheus` (resil-web's
    /// actuator does). The metrics table in `docs/operating.md` lists every name.
    ///
    /// ```
    /// let registry = resil_registry::Registry::new();
    /// let breaker = registry.circuit_breaker("inventory");
    /// let _ = breaker.call(|| Ok::<_, &str>(()));
    /// let text = registry.prometheus_text();
    /// assert!(text.contains(
    ///     "resilience4j_circuitbreaker_calls_seconds_count{kind=\"successful\",name=\"inventory\"} 1\n"
    /// ));
    /// assert!(text.contains("# TYPE resilience4j_circuitbreaker_not_permitted_calls_total counter\n"));
    /// ```
    pub fn prometheus_text(&self) -> String {
        render(&samples(self))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::describe::TimerValue;

    fn sample(metric: Metric, labels: &[(&'static str, &str)]) -> Sample {
        Sample {
            labels: labels.iter().map(|&(k, v)| (k, v.to_owned())).collect(),
            metric,
        }
    }

    const C: Family = Family::new("retry_calls", "calls");
    const G: Family = Family::new("bulkhead_available_concurrent_calls", "free \"slots\"");
    const T: Family = Family::new("circuitbreaker_calls", "timed");

    #[test]
    fn counters_get_total_gauges_keep_their_name_and_labels_are_sorted_and_escaped() {
        let text = render(&[
            sample(
                Metric::counter(C, Some("failed_with_retry"), 3),
                &[("name", "a\"b"), ("kind", "failed_with_retry")],
            ),
            sample(Metric::gauge(G, None, 2.5), &[("name", "x")]),
        ]);
        assert_eq!(
            text,
            "# HELP resilience4j_bulkhead_available_concurrent_calls free \"slots\"\n\
             # TYPE resilience4j_bulkhead_available_concurrent_calls gauge\n\
             resilience4j_bulkhead_available_concurrent_calls{name=\"x\"} 2.5\n\
             # HELP resilience4j_retry_calls_total calls\n\
             # TYPE resilience4j_retry_calls_total counter\n\
             resilience4j_retry_calls_total{kind=\"failed_with_retry\",name=\"a\\\"b\"} 3\n"
        );
    }

    #[test]
    fn a_timer_is_a_summary_without_buckets_and_a_histogram_with_them() {
        let mut m = Metric::counter(T, Some("successful"), 0);
        m.kind = MetricKind::Timer;
        m.value = 4.0;
        m.timer = Some(TimerValue {
            sum: 0.5,
            max: 0.25,
            buckets: None,
        });
        let labels = [("name", "x"), ("kind", "successful")];
        let text = render(&[sample(m.clone(), &labels)]);
        assert!(text.contains("# TYPE resilience4j_circuitbreaker_calls_seconds summary\n"));
        assert!(text.contains(
            "resilience4j_circuitbreaker_calls_seconds_count{kind=\"successful\",name=\"x\"} 4\n"
        ));
        assert!(text.contains(
            "resilience4j_circuitbreaker_calls_seconds_sum{kind=\"successful\",name=\"x\"} 0.5\n"
        ));
        assert!(text.contains("# TYPE resilience4j_circuitbreaker_calls_seconds_max gauge\n"));
        assert!(text.contains(
            "resilience4j_circuitbreaker_calls_seconds_max{kind=\"successful\",name=\"x\"} 0.25\n"
        ));

        m.timer.as_mut().unwrap().buckets = Some(vec![(0.001, 1), (0.002, 3)]);
        let text = render(&[sample(m, &labels)]);
        assert!(text.contains("# TYPE resilience4j_circuitbreaker_calls_seconds histogram\n"));
        assert!(text.contains(
            "resilience4j_circuitbreaker_calls_seconds_bucket{kind=\"successful\",name=\"x\",le=\"0.001\"} 1\n"
        ));
        assert!(text.contains(
            "resilience4j_circuitbreaker_calls_seconds_bucket{kind=\"successful\",name=\"x\",le=\"+Inf\"} 4\n"
        ));
    }
}
