//! A throwaway Prometheus server for tests: its own free port on 127.0.0.1,
//! its own data directory, the config the test writes, killed (and its data
//! directory removed) when dropped. Queries go through Prometheus's HTTP API
//! (`/api/v1/query`), as Grafana's do.
//!
//! Starting fails loudly (a panic naming what is missing), never by skipping:
//! `scripts/test` installs Debian's `prometheus` (which brings `promtool`)
//! when it is not on `PATH`.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// A running `prometheus` child process.
pub struct PrometheusServer {
    child: Child,
    dir: PathBuf,
    url: String,
    http: reqwest::Client,
}

/// One sample of an instant query's answer: the series' labels and its value
/// at the evaluation time.
#[derive(Debug, Clone)]
pub struct Sample {
    /// The series' labels (with `__name__` when the query keeps it).
    pub labels: serde_json::Map<String, Value>,
    /// The value (`NaN` and `±Inf` as Prometheus writes them).
    pub value: f64,
}

impl Sample {
    /// The value of label `name`, or `""` when the series has none.
    pub fn label(&self, name: &str) -> &str {
        self.labels.get(name).and_then(Value::as_str).unwrap_or("")
    }
}

impl PrometheusServer {
    /// Starts Prometheus on a free port with the config file `config` (YAML,
    /// written into the server's own data directory; rule files it names are
    /// read from where it says) and waits until `/-/ready` answers 200.
    pub async fn start(config: &str) -> PrometheusServer {
        let port = free_port();
        let dir =
            std::env::temp_dir().join(format!("resil-prometheus-{}-{port}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("data")).expect("create the Prometheus data directory");
        let config_file = dir.join("prometheus.yml");
        std::fs::write(&config_file, config).expect("write prometheus.yml");
        let log = std::fs::File::create(dir.join("prometheus.log")).expect("create prometheus.log");
        let child = Command::new(binary())
            .arg(format!("--config.file={}", config_file.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start `{}` ({e}); this test needs a real Prometheus: install it \
                     (Debian: `apt-get install -y prometheus`, which scripts/test does when it \
                     is missing) and make sure it is on PATH",
                    binary()
                )
            });
        let mut server = PrometheusServer {
            child,
            dir,
            url: format!("http://127.0.0.1:{port}"),
            http: reqwest::Client::new(),
        };
        server.wait_until_ready().await;
        server
    }

    async fn wait_until_ready(&mut self) {
        let give_up = Instant::now() + Duration::from_secs(30);
        loop {
            let ready = self.http.get(format!("{}/-/ready", self.url)).send().await;
            if matches!(ready, Ok(ref r) if r.status().is_success()) {
                return;
            }
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!(
                    "prometheus exited at start ({status}); its log:\n{}",
                    self.log()
                );
            }
            assert!(
                Instant::now() < give_up,
                "prometheus on {} was not ready within 30 s; its log:\n{}",
                self.url,
                self.log()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// `http://127.0.0.1:{port}`.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// What the server wrote to stderr so far (for a failure's message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("prometheus.log")).unwrap_or_default()
    }

    /// `GET /api/v1/<path>?<params>`: the `data` of a `success` answer; a
    /// failed one panics with Prometheus's error.
    pub async fn api(&self, path: &str, params: &[(&str, String)]) -> Value {
        let answer: Value = self
            .http
            .get(format!("{}/api/v1/{path}", self.url))
            .query(params)
            .send()
            .await
            .unwrap_or_else(|e| panic!("prometheus did not answer /api/v1/{path}: {e}"))
            .json()
            .await
            .unwrap_or_else(|e| panic!("prometheus answered /api/v1/{path} with no JSON: {e}"));
        assert_eq!(
            answer["status"], "success",
            "/api/v1/{path} {params:?} failed: {answer}"
        );
        answer["data"].clone()
    }

    /// Evaluates `promql` at `time` (Unix seconds; now when `None`) and
    /// returns its instant vector (a scalar answer is one sample with no
    /// labels). A range vector or a string is a mistake in the test: panics.
    pub async fn query(&self, promql: &str, time: Option<f64>) -> Vec<Sample> {
        let mut params = vec![("query", promql.to_owned())];
        if let Some(t) = time {
            params.push(("time", format!("{t:.3}")));
        }
        let data = self.api("query", &params).await;
        match data["resultType"].as_str() {
            Some("vector") => data["result"]
                .as_array()
                .expect("a vector's result is an array")
                .iter()
                .map(|s| Sample {
                    labels: s["metric"].as_object().cloned().unwrap_or_default(),
                    value: number(&s["value"][1]),
                })
                .collect(),
            Some("scalar") => vec![Sample {
                labels: serde_json::Map::new(),
                value: number(&data["result"][1]),
            }],
            other => panic!("`{promql}` answered a {other:?}, not an instant vector: {data}"),
        }
    }

    /// The samples of `selector` over the last `range` (a range-vector
    /// selector such as `x{kind="failed"}` and `10m`): per series, its labels
    /// and every `(timestamp, value)` stored, oldest first.
    pub async fn samples(
        &self,
        selector: &str,
        range: &str,
    ) -> Vec<(serde_json::Map<String, Value>, Vec<(f64, f64)>)> {
        let data = self
            .api("query", &[("query", format!("{selector}[{range}]"))])
            .await;
        assert_eq!(data["resultType"], "matrix", "{selector}[{range}]: {data}");
        data["result"]
            .as_array()
            .expect("a matrix's result is an array")
            .iter()
            .map(|s| {
                let points = s["values"]
                    .as_array()
                    .expect("a series' values are an array")
                    .iter()
                    .map(|p| (p[0].as_f64().expect("a timestamp"), number(&p[1])))
                    .collect();
                (s["metric"].as_object().cloned().unwrap_or_default(), points)
            })
            .collect()
    }

    /// Polls `promql` (evaluated now) until `wanted` accepts its answer, at
    /// most `within`; returns that answer, or panics with the last one. For
    /// waiting on scrapes, never for asserting timing.
    pub async fn until(
        &self,
        promql: &str,
        within: Duration,
        wanted: impl Fn(&[Sample]) -> bool,
    ) -> Vec<Sample> {
        let give_up = Instant::now() + within;
        loop {
            let answer = self.query(promql, None).await;
            if wanted(&answer) {
                return answer;
            }
            assert!(
                Instant::now() < give_up,
                "`{promql}` still answers {answer:?} after {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for PrometheusServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// `$PROMETHEUS`, else `prometheus` on `PATH`.
fn binary() -> String {
    std::env::var("PROMETHEUS").unwrap_or_else(|_| "prometheus".into())
}

/// `$PROMTOOL`, else `promtool` on `PATH`.
pub fn promtool() -> String {
    std::env::var("PROMTOOL").unwrap_or_else(|_| "promtool".into())
}

/// Runs `promtool <args>` (with `stdin` on its standard input when given)
/// and returns whether it succeeded and what it printed (stdout, then
/// stderr).
pub fn run_promtool(args: &[&str], stdin: Option<&str>, cwd: &Path) -> (bool, String) {
    use std::io::Write;
    let mut child = Command::new(promtool())
        .args(args)
        .current_dir(cwd)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot start `{}` ({e}): install Debian's prometheus, which brings promtool \
                 (scripts/test does when it is missing)",
                promtool()
            )
        });
    if let Some(text) = stdin {
        let mut pipe = child.stdin.take().expect("promtool's stdin");
        pipe.write_all(text.as_bytes())
            .expect("write to promtool's stdin");
    }
    let out = child.wait_with_output().expect("wait for promtool");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), printed)
}

/// A Prometheus JSON sample value: a number written as a string (`"12"`,
/// `"NaN"`, `"+Inf"`).
fn number(v: &Value) -> f64 {
    let text = v
        .as_str()
        .unwrap_or_else(|| panic!("not a sample value: {v}"));
    match text {
        "+Inf" => f64::INFINITY,
        "-Inf" => f64::NEG_INFINITY,
        _ => text
            .parse()
            .unwrap_or_else(|_| panic!("not a sample value: {text}")),
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}
