//! A real Prometheus scrapes resil's actuator, and the operator's questions
//! are asked in PromQL through its HTTP API, as Grafana asks them.
//!
//! One Prometheus server per test binary (tests/support/prometheus_server.rs:
//! a free 127.0.0.1 port, a temporary data directory, scrape and rule
//! evaluation every second, killed when dropped), started by the one test
//! that needs it. It scrapes `/actuator/prometheus` of an axum service whose
//! `GET /price` calls a fake downstream through a retry, a circuit breaker
//! and a bulkhead (Resilience4j's order), with timer histograms enabled from
//! the file as Spring writes it. Client tasks load the service through three
//! phases — downstream healthy, failing with 503, healthy again — and then
//! Prometheus must say what the downstream and the clients counted
//! themselves: `increase(…calls_seconds_count{kind="successful"}[…])` equals
//! the successful requests the downstream served, the not-permitted increase
//! equals the refusals the clients saw, `histogram_quantile` answers, and
//! every query of Resilience4j's Grafana dashboard (`grafana_dashboard.json`
//! in its repository, listed below) returns the series the load implies.
//! The exposition passes `promtool check metrics`.
//!
//! The other tests run `promtool` on the alert rules the inventory service
//! example ships (`examples/inventory_service/prometheus/`): `check rules`,
//! `test rules` on recorded series (every alert fires when it should and not
//! otherwise), and `check config` on its scrape config.
//!
//! This is the one place besides the Redis and browser tests where real time
//! passes: Prometheus scrapes on its own clock, so the test polls its API
//! until a bounded deadline; it never sleeps to assert timing. Prometheus and
//! promtool are Debian's `prometheus` package, which `scripts/test` installs;
//! a missing server fails these tests, it never passes them silently.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode;
use axum::routing::get;
use axum::Router;
use resil::bulkhead::Bulkhead;
use resil::circuit_breaker::{CircuitBreaker, State as BreakerState};
use resil::retry::Retry;
use resil::{Error, Handle, Registry};
use resil_web::actuator::Actuator;

#[path = "support/prometheus_server.rs"]
mod prometheus_server;

use prometheus_server::{run_promtool, PrometheusServer, Sample};

/// The example's Prometheus files: scrape config, alert rules, their tests.
fn example_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/inventory_service/prometheus")
}

/// The service's instances, as an operator writes them (Spring's
/// `application.yml` keys), with the breaker's call timer published as a
/// histogram (Micrometer's `percentiles-histogram`, off by default).
const CONFIG: &str = r#"
resilience4j:
  circuitbreaker:
    instances:
      price:
        sliding-window-type: COUNT_BASED
        sliding-window-size: 20
        minimum-number-of-calls: 10
        failure-rate-threshold: 50
        wait-duration-in-open-state: 500ms
        permitted-number-of-calls-in-half-open-state: 3
  retry:
    instances:
      price:
        max-attempts: 2
        wait-duration: 0ms
  bulkhead:
    instances:
      price:
        max-concurrent-calls: 32
        max-wait-duration: 0ms
management:
  metrics:
    distribution:
      percentiles-histogram:
        resilience4j.circuitbreaker.calls: true
"#;

/// The breaker's window (`sliding-window-size`) and the bulkhead's size, as
/// the gauges must show them.
const WINDOW: f64 = 20.0;
const BULKHEAD: f64 = 32.0;

/// Client tasks generating the load.
const CLIENTS: usize = 8;

/// The fake downstream: answers after about a millisecond, a price or (while
/// failing) a 503, and counts what it served.
#[derive(Default)]
struct Downstream {
    failing: AtomicBool,
    served_ok: AtomicU64,
    served_failed: AtomicU64,
}

/// The downstream's 503.
#[derive(Debug)]
struct Unavailable;

impl Downstream {
    async fn price(&self) -> Result<u32, Unavailable> {
        tokio::time::sleep(Duration::from_millis(1)).await;
        if self.failing.load(Ordering::SeqCst) {
            self.served_failed.fetch_add(1, Ordering::SeqCst);
            Err(Unavailable)
        } else {
            self.served_ok.fetch_add(1, Ordering::SeqCst);
            Ok(42)
        }
    }
}

/// What `GET /price` runs: Retry( CircuitBreaker( Bulkhead( downstream ))).
struct Service {
    retry: Handle<Retry>,
    breaker: Handle<CircuitBreaker>,
    bulkhead: Handle<Bulkhead>,
    downstream: Arc<Downstream>,
}

/// 200 with the price; 502 when the downstream failed (after the retry);
/// 503 when the breaker refused; 500 for anything else (which the test
/// counts and expects none of).
async fn price(State(service): State<Arc<Service>>) -> (StatusCode, &'static str) {
    let s = &*service;
    let out = s
        .retry
        .call_async_nested(|| {
            s.breaker
                .call_async_nested(s.bulkhead.call_async(s.downstream.price()))
        })
        .await;
    match out {
        Ok(_) => (StatusCode::OK, "42"),
        Err(Error::Call(Unavailable)) => (StatusCode::BAD_GATEWAY, "downstream unavailable"),
        Err(Error::CallNotPermitted(_)) => (StatusCode::SERVICE_UNAVAILABLE, "call not permitted"),
        Err(_) => (StatusCode::INTERNAL_SERVER_ERROR, "unexpected refusal"),
    }
}

/// What the clients saw, by status.
#[derive(Default)]
struct Seen {
    ok: AtomicU64,
    failed: AtomicU64,
    refused: AtomicU64,
    other: AtomicU64,
}

impl Seen {
    fn total(&self) -> u64 {
        self.ok.load(Ordering::SeqCst)
            + self.failed.load(Ordering::SeqCst)
            + self.refused.load(Ordering::SeqCst)
            + self.other.load(Ordering::SeqCst)
    }
}

/// `CLIENTS` tasks requesting `GET /price` until stopped (or, with `each`,
/// until each made that many requests).
struct Load {
    stop: Arc<AtomicBool>,
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl Load {
    fn start(url: &str, seen: &Arc<Seen>, each: Option<u64>) -> Load {
        let stop = Arc::new(AtomicBool::new(false));
        let tasks = (0..CLIENTS)
            .map(|_| {
                let (url, seen, stop) = (format!("{url}/price"), seen.clone(), stop.clone());
                tokio::spawn(async move {
                    let http = reqwest::Client::new();
                    let mut made = 0;
                    while !stop.load(Ordering::SeqCst) && each.is_none_or(|n| made < n) {
                        made += 1;
                        let status = http.get(&url).send().await.map(|r| r.status());
                        let counter = match status.map(|s| s.as_u16()) {
                            Ok(200) => &seen.ok,
                            Ok(502) => &seen.failed,
                            Ok(503) => &seen.refused,
                            _ => &seen.other,
                        };
                        counter.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        Load { stop, tasks }
    }

    /// Waits for every client to make its `each` requests.
    async fn run(url: &str, seen: &Arc<Seen>, each: u64) {
        for task in Load::start(url, seen, Some(each)).tasks {
            task.await.expect("a client task panicked");
        }
    }

    /// Stops the clients and waits for their last requests' answers.
    async fn finish(self) {
        self.stop.store(true, Ordering::SeqCst);
        for task in self.tasks {
            task.await.expect("a client task panicked");
        }
    }
}

/// The service on a free port: `/price` and the actuator.
async fn serve(registry: Arc<Registry>, downstream: Arc<Downstream>) -> String {
    let service = Arc::new(Service {
        retry: registry.retry("price"),
        breaker: registry.circuit_breaker("price"),
        bulkhead: registry.bulkhead("price"),
        downstream,
    });
    let app = Router::new()
        .route("/price", get(price))
        .with_state(service)
        .merge(Actuator::builder(registry).router());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    format!("127.0.0.1:{}", addr.port())
}

/// Prometheus's config: the service's actuator every second (with an
/// `application` label, as Spring Boot's `management.metrics.tags` gives
/// one), and the example's alert rules evaluated every second.
fn prometheus_config(target: &str) -> String {
    format!(
        r#"
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
rule_files:
  - {rules}
scrape_configs:
  - job_name: price-service
    metrics_path: /actuator/prometheus
    static_configs:
      - targets: ["{target}"]
        labels:
          application: price-service
"#,
        rules = example_dir().join("alerts.yml").display()
    )
}

/// Resilience4j's Grafana dashboard (`grafana_dashboard.json`), every panel's
/// query with its variables (`$instance`, `$application`,
/// `$circuitbreaker_name`, `$retry_name`, `$bulkhead_name`) set to `.*`, as
/// "All" sets them, and the number of series the load implies (one breaker,
/// one retry, one bulkhead; `kind` and `state` multiply).
///
/// Left out: the call-rate panel's second query,
/// `rate(resilience4j_circuitbreaker_calls_total{…}[1m])`, the name the old
/// `resilience4j-prometheus` collector used; Micrometer's model (which the
/// dashboard's other panels and resil follow) counts refusals in
/// `resilience4j_circuitbreaker_not_permitted_calls_total`.
const DASHBOARD: &[(&str, &str, usize)] = &[
    // Summary row.
    (
        "Number of closed CircuitBreaker",
        r#"sum(resilience4j_circuitbreaker_state{state="closed"})"#,
        1,
    ),
    (
        "Number of open CircuitBreaker",
        r#"sum(resilience4j_circuitbreaker_state{state=~"open|forced_open"})"#,
        1,
    ),
    (
        "CircuitBreaker States",
        r#"resilience4j_circuitbreaker_state{instance=~".*"}"#,
        6,
    ),
    (
        "Number of half_open CircuitBreaker",
        r#"sum(resilience4j_circuitbreaker_state{state="half_open"})"#,
        1,
    ),
    // The CircuitBreaker row.
    (
        "Failure Rate",
        r#"resilience4j_circuitbreaker_failure_rate{instance=~".*",name=~".*"}"#,
        1,
    ),
    (
        "Call rate",
        r#"rate(resilience4j_circuitbreaker_calls_seconds_count{instance=~".*",name=~".*"}[1m])"#,
        3,
    ),
    (
        "Buffered calls",
        r#"resilience4j_circuitbreaker_buffered_calls{instance=~".*",name=~".*"}"#,
        2,
    ),
    (
        "Buffered calls (maximum)",
        r#"resilience4j_circuitbreaker_max_buffered_calls{instance=~".*",name=~".*"}"#,
        1,
    ),
    (
        "Call duration percentiles (90th)",
        r#"histogram_quantile(0.9, sum(rate(resilience4j_circuitbreaker_calls_seconds_bucket{application=~".*", instance=~".*", name=~".*"}[1m])) by (le))"#,
        1,
    ),
    (
        "Call duration percentiles (95th)",
        r#"histogram_quantile(0.95, sum(rate(resilience4j_circuitbreaker_calls_seconds_bucket{application=~".*", instance=~".*", name=~".*"}[1m])) by (le))"#,
        1,
    ),
    (
        "Call duration percentiles (98th)",
        r#"histogram_quantile(0.98, sum(rate(resilience4j_circuitbreaker_calls_seconds_bucket{application=~".*", instance=~".*", name=~".*"}[1m])) by (le))"#,
        1,
    ),
    (
        "Call duration percentiles (median)",
        r#"histogram_quantile(0.50, sum(rate(resilience4j_circuitbreaker_calls_seconds_bucket{application=~".*", instance=~".*", name=~".*"}[1m])) by (le))"#,
        1,
    ),
    (
        "Average call durations",
        r#"increase(resilience4j_circuitbreaker_calls_seconds_sum{instance=~".*",name=~".*"}[1m]) / increase(resilience4j_circuitbreaker_calls_seconds_count{instance=~".*",name=~".*"}[1m])"#,
        3,
    ),
    (
        "Average call durations (total)",
        r#"sum(increase(resilience4j_circuitbreaker_calls_seconds_sum{instance=~".*",name=~".*"}[1m])) / sum(increase(resilience4j_circuitbreaker_calls_seconds_count{instance=~".*",name=~".*"}[1m]))"#,
        1,
    ),
    // The Retry row (the trailing comma is the dashboard's own).
    (
        "Rate retryable calls",
        r#"rate(resilience4j_retry_calls_total{application=~".*",name=~".*",}[1m])"#,
        4,
    ),
    // The Bulkhead row.
    (
        "Bulkhead: Available Calls",
        r#"resilience4j_bulkhead_available_concurrent_calls{application=~".*",name=~".*"}"#,
        1,
    ),
    (
        "Bulkhead: Max allowed Calls",
        r#"resilience4j_bulkhead_max_allowed_concurrent_calls{application=~".*",name=~".*"}"#,
        1,
    ),
    // The template variables' queries (`label_values(metric, label)`).
    (
        "$instance",
        "count by (instance) (resilience4j_circuitbreaker_state)",
        1,
    ),
    (
        "$circuitbreaker_name",
        "count by (name) (resilience4j_circuitbreaker_state)",
        1,
    ),
    (
        "$retry_name",
        "count by (name) (resilience4j_retry_calls_total)",
        1,
    ),
    (
        "$bulkhead_name",
        "count by (name) (resilience4j_bulkhead_available_concurrent_calls)",
        1,
    ),
];

/// The one sample of `answer` whose label `label` is `value`.
fn with_label<'a>(answer: &'a [Sample], label: &str, value: &str) -> &'a Sample {
    answer
        .iter()
        .find(|s| s.label(label) == value)
        .unwrap_or_else(|| panic!("no series with {label}=\"{value}\" in {answer:?}"))
}

/// The single value of a one-series answer.
fn single(promql: &str, answer: &[Sample]) -> f64 {
    assert_eq!(answer.len(), 1, "`{promql}` answered {answer:?}");
    answer[0].value
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scraping_a_service_under_load_sees_what_the_downstream_and_the_clients_counted()
{
    let registry = Arc::new(Registry::from_yaml_str(CONFIG).expect("the test's config loads"));
    let downstream = Arc::new(Downstream::default());
    let target = serve(registry.clone(), downstream.clone()).await;
    let url = format!("http://{target}");
    let prometheus = PrometheusServer::start(&prometheus_config(&target)).await;
    let within = Duration::from_secs(20);

    // Before any call, one scrape with every counter at 0: `increase()`
    // then starts from a known zero instead of extrapolating one.
    let started = [
        r#"resilience4j_circuitbreaker_calls_seconds_count{name="price",kind="successful"} == 0"#,
        r#"resilience4j_circuitbreaker_calls_seconds_count{name="price",kind="failed"} == 0"#,
        r#"resilience4j_circuitbreaker_not_permitted_calls_total{name="price"} == 0"#,
    ];
    for promql in started {
        prometheus.until(promql, within, |a| a.len() == 1).await;
    }

    // Healthy: every call succeeds at the first attempt.
    let seen = Arc::new(Seen::default());
    Load::run(&url, &seen, 150).await;
    assert_eq!(seen.ok.load(Ordering::SeqCst), 150 * CLIENTS as u64);

    // Failing with 503: the breaker opens, and refuses while OPEN; the load
    // goes on until Prometheus has scraped it OPEN and the example's alert
    // rules have seen the outage: the breaker-open and the not-permitted
    // alerts pending (they fire after their `for`, longer than this test).
    downstream.failing.store(true, Ordering::SeqCst);
    let load = Load::start(&url, &seen, None);
    for alert in ["CircuitBreakerOpen", "CircuitBreakerNotPermittedCalls"] {
        prometheus
            .until(
                &format!(r#"ALERTS{{alertname="{alert}",alertstate="pending",name="price"}}"#),
                within,
                |a| a.len() == 1,
            )
            .await;
    }
    load.finish().await;
    assert!(
        seen.refused.load(Ordering::SeqCst) > 0,
        "no call was refused"
    );

    // Recovering: the downstream is healthy again; after its wait the
    // breaker lets probes through and closes; then more healthy load.
    downstream.failing.store(false, Ordering::SeqCst);
    let load = Load::start(&url, &seen, None);
    prometheus
        .until(
            r#"resilience4j_circuitbreaker_state{name="price",state="closed"} == 1"#,
            within,
            |a| a.len() == 1,
        )
        .await;
    load.finish().await;
    assert_eq!(
        registry.circuit_breaker("price").state(),
        BreakerState::Closed
    );
    Load::run(&url, &seen, 100).await;
    // The breaker-open alert cleared with the recovery.
    prometheus
        .until(
            r#"ALERTS{alertname="CircuitBreakerOpen",name="price"}"#,
            within,
            <[Sample]>::is_empty,
        )
        .await;
    assert_eq!(
        registry.circuit_breaker("price").state(),
        BreakerState::Closed
    );

    let served_ok = downstream.served_ok.load(Ordering::SeqCst);
    let served_failed = downstream.served_failed.load(Ordering::SeqCst);
    let refused = seen.refused.load(Ordering::SeqCst);
    let requests = seen.total();
    assert_eq!(seen.other.load(Ordering::SeqCst), 0, "unexpected answers");
    assert_eq!(seen.ok.load(Ordering::SeqCst), served_ok);

    // Wait for a scrape taken after the last call: it holds the final counts.
    let successful =
        r#"resilience4j_circuitbreaker_calls_seconds_count{name="price",kind="successful"}"#;
    let finals = [
        (successful.to_owned(), served_ok),
        (
            r#"resilience4j_circuitbreaker_calls_seconds_count{name="price",kind="failed"}"#
                .to_owned(),
            served_failed,
        ),
        (
            r#"resilience4j_circuitbreaker_not_permitted_calls_total{name="price"}"#.to_owned(),
            refused,
        ),
        (
            r#"sum(resilience4j_retry_calls_total{name="price"})"#.to_owned(),
            requests,
        ),
    ];
    for (promql, wanted) in &finals {
        prometheus
            .until(promql, within, |a| {
                a.len() == 1 && a[0].value == *wanted as f64
            })
            .await;
    }
    // Evaluate everything at that scrape's timestamp: later scrapes change
    // nothing, and `increase()` ends exactly on a sample.
    let at = single(
        "timestamp",
        &prometheus
            .query(&format!("timestamp({successful})"), None)
            .await,
    );
    let query = |promql: String| {
        let prometheus = &prometheus;
        async move { prometheus.query(&promql, Some(at)).await }
    };

    // Counted by the service = counted by the downstream and the clients.
    for (selector, wanted) in [
        (successful, served_ok),
        (
            r#"resilience4j_circuitbreaker_calls_seconds_count{name="price",kind="failed"}"#,
            served_failed,
        ),
        (
            r#"resilience4j_circuitbreaker_calls_seconds_count{name="price",kind="ignored"}"#,
            0,
        ),
        (
            r#"resilience4j_circuitbreaker_not_permitted_calls_total{name="price"}"#,
            refused,
        ),
    ] {
        let promql = format!("increase({selector}[10m])");
        let increase = single(&promql, &query(promql.clone()).await);
        assert_eq!(increase, wanted as f64, "`{promql}`");
        let latest = single(selector, &query(selector.to_owned()).await);
        assert_eq!(latest, wanted as f64, "`{selector}`");
    }
    // The retry counts every logical call once, by outcome.
    let retry = query(r#"resilience4j_retry_calls_total{name="price"}"#.to_owned()).await;
    let retry_kind = |kind: &str| with_label(&retry, "kind", kind).value;
    assert_eq!(
        retry_kind("successful_without_retry") + retry_kind("successful_with_retry"),
        seen.ok.load(Ordering::SeqCst) as f64
    );
    assert_eq!(
        retry_kind("failed_without_retry") + retry_kind("failed_with_retry"),
        (seen.failed.load(Ordering::SeqCst) + refused) as f64
    );
    assert!(
        retry_kind("failed_with_retry") > 0.0,
        "a 503 is retried once: {retry:?}"
    );
    // Prometheus saw the outage: the breaker OPEN at some scrape. The
    // bulkhead (32 slots, 8 clients) never saturated: its alert was never
    // pending.
    let opened =
        r#"max_over_time(resilience4j_circuitbreaker_state{name="price",state="open"}[10m])"#;
    assert_eq!(single(opened, &query(opened.to_owned()).await), 1.0);
    let saturated = r#"count_over_time(ALERTS{alertname="BulkheadSaturated"}[10m])"#;
    assert!(query(saturated.to_owned()).await.is_empty());

    // The percentile the histogram (enabled in the file) gives: a duration.
    let p99 = "histogram_quantile(0.99, sum by (le) (rate(resilience4j_circuitbreaker_calls_seconds_bucket{name=\"price\"}[1m])))";
    let p99_value = single(p99, &query(p99.to_owned()).await);
    assert!(
        p99_value.is_finite() && p99_value > 0.0,
        "`{p99}` answered {p99_value}"
    );

    // Every dashboard query answers, with the series the load implies.
    for (panel, promql, series) in DASHBOARD {
        let answer = query((*promql).to_owned()).await;
        assert_eq!(
            answer.len(),
            *series,
            "the dashboard's `{panel}`: `{promql}` answered {answer:?}"
        );
    }
    let value = |promql: &str| {
        let promql = promql.to_owned();
        let query = &query;
        async move { single(&promql, &query(promql.clone()).await) }
    };
    // The breaker is CLOSED at the end, and its window full of successes.
    assert_eq!(value(DASHBOARD[0].1).await, 1.0);
    assert_eq!(value(DASHBOARD[1].1).await, 0.0);
    assert_eq!(value(DASHBOARD[3].1).await, 0.0);
    let states = query(DASHBOARD[2].1.to_owned()).await;
    assert_eq!(with_label(&states, "state", "closed").value, 1.0);
    assert_eq!(
        states.iter().map(|s| s.value).sum::<f64>(),
        1.0,
        "{states:?}"
    );
    assert_eq!(value(DASHBOARD[4].1).await, 0.0, "failure rate");
    let buffered = query(DASHBOARD[6].1.to_owned()).await;
    assert_eq!(with_label(&buffered, "kind", "successful").value, WINDOW);
    assert_eq!(with_label(&buffered, "kind", "failed").value, 0.0);
    assert_eq!(value(DASHBOARD[7].1).await, WINDOW);
    // Calls went through in the last minute, and took time.
    let rates = query(DASHBOARD[5].1.to_owned()).await;
    assert!(
        with_label(&rates, "kind", "successful").value > 0.0,
        "{rates:?}"
    );
    for (panel, promql, _) in &DASHBOARD[8..=11] {
        let v = value(promql).await;
        assert!(v.is_finite() && v > 0.0, "`{panel}` answered {v}");
    }
    let means = query(DASHBOARD[12].1.to_owned()).await;
    let mean = with_label(&means, "kind", "successful").value;
    assert!(mean.is_finite() && mean > 0.0, "{means:?}");
    let total_mean = value(DASHBOARD[13].1).await;
    assert!(total_mean.is_finite() && total_mean > 0.0);
    let retries = query(DASHBOARD[14].1.to_owned()).await;
    assert!(with_label(&retries, "kind", "successful_without_retry").value > 0.0);
    // No call in flight at the end: every slot free.
    assert_eq!(value(DASHBOARD[15].1).await, BULKHEAD);
    assert_eq!(value(DASHBOARD[16].1).await, BULKHEAD);
    for (panel, promql, _) in &DASHBOARD[17..] {
        let answer = query((*promql).to_owned()).await;
        let label = if panel == &"$instance" {
            "instance"
        } else {
            "name"
        };
        let wanted = if label == "instance" {
            target.as_str()
        } else {
            "price"
        };
        assert_eq!(answer[0].label(label), wanted, "`{promql}`: {answer:?}");
    }

    // The example's alert rules load into the real server and evaluate
    // against the real series without error.
    let groups = prometheus.api("rules", &[]).await;
    let rules: Vec<_> = groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["rules"].as_array().unwrap().clone())
        .collect();
    assert_eq!(rules.len(), alert_names().len(), "{groups}");
    for rule in &rules {
        assert_eq!(rule["health"], "ok", "rule {rule}");
    }

    // And what it scraped passes promtool's lint.
    let exposition = reqwest::get(format!("{url}/actuator/prometheus"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let (clean, printed) = run_promtool(&["check", "metrics"], Some(&exposition), &example_dir());
    assert!(
        clean && printed.trim().is_empty(),
        "promtool check metrics:\n{printed}\non\n{exposition}"
    );
}

/// The alerts `alerts.yml` defines, in order.
fn alert_names() -> Vec<String> {
    let rules = std::fs::read_to_string(example_dir().join("alerts.yml")).unwrap();
    rules
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- alert: "))
        .map(str::to_owned)
        .collect()
}

#[test]
fn the_alert_rules_pass_promtool_check_rules() {
    let (ok, printed) = run_promtool(&["check", "rules", "alerts.yml"], None, &example_dir());
    assert!(ok, "promtool check rules alerts.yml:\n{printed}");
    assert!(
        printed.contains(&format!("SUCCESS: {} rules found", alert_names().len())),
        "{printed}"
    );
}

#[test]
fn every_alert_fires_on_recorded_series_when_it_should_and_only_then() {
    let (ok, printed) = run_promtool(&["test", "rules", "alerts_test.yml"], None, &example_dir());
    assert!(ok, "promtool test rules alerts_test.yml:\n{printed}");
    // Every alert is tested, both firing and not firing.
    let tests = std::fs::read_to_string(example_dir().join("alerts_test.yml")).unwrap();
    let names = alert_names();
    assert_eq!(
        names,
        [
            "CircuitBreakerOpen",
            "CircuitBreakerNotPermittedCalls",
            "RetryStorm",
            "BulkheadSaturated",
            "CircuitBreakerForcedOpenTooLong"
        ]
    );
    for name in &names {
        let cases: Vec<&str> = tests
            .split("- eval_time:")
            .skip(1)
            .filter(|case| case.contains(&format!("alertname: {name}\n")))
            .collect();
        assert!(
            cases.iter().any(|c| c.contains("exp_alerts: []")),
            "no case where `{name}` must not fire"
        );
        assert!(
            cases.iter().any(|c| c.contains("- exp_labels:")),
            "no case where `{name}` must fire"
        );
    }
}

#[test]
fn the_example_scrape_config_passes_promtool_check_config() {
    let (ok, printed) = run_promtool(&["check", "config", "prometheus.yml"], None, &example_dir());
    assert!(ok, "promtool check config prometheus.yml:\n{printed}");
    let config = std::fs::read_to_string(example_dir().join("prometheus.yml")).unwrap();
    assert!(config.contains("metrics_path: /actuator/prometheus"));
    assert!(config.contains("- alerts.yml"));
}
