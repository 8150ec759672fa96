//! `--demo`: a scripted scenario against the running service, each request
//! and its answer printed.

use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};

use serde_json::Value;

use crate::service::Running;

/// A management token for this run alone (never printed).
pub fn token() -> String {
    let mut h = RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    format!("demo-{:016x}", h.finish())
}

struct Demo {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Demo {
    /// One request, printed with its status and body (breakers shortened).
    async fn step(&self, method: &str, path: &str, body: Option<Value>) -> reqwest::Result<Value> {
        let url = format!("{}{path}", self.base);
        let request = match method {
            "POST" => self
                .http
                .post(url)
                .bearer_auth(&self.token)
                .json(&body.unwrap_or_default()),
            _ => self.http.get(url),
        };
        let response = request.send().await?;
        let status = response.status().as_u16();
        let json: Value = response.json().await.unwrap_or(Value::Null);
        let shown = match path {
            "/actuator/circuitbreakers" => summarize(&json),
            _ => json.to_string(),
        };
        println!("  {method:4} {path}\n       -> {status} {shown}");
        Ok(json)
    }

    async fn quiet(&self, path: &str) -> reqwest::Result<()> {
        self.http.get(format!("{}{path}", self.base)).send().await?;
        Ok(())
    }
}

/// `inventory-query: OPEN (failure rate 100 %, buffered 10, not permitted 2)`.
fn summarize(all: &Value) -> String {
    let Some(breakers) = all["circuitBreakers"].as_object() else {
        return all.to_string();
    };
    breakers
        .iter()
        .map(|(name, b)| {
            let mut line = format!(
                "{name}: {} (failure rate {} %, buffered {}, failed {}, not permitted {})",
                b["state"].as_str().unwrap_or("?"),
                b["failureRate"],
                b["bufferedCalls"],
                b["failedCalls"],
                b["notPermittedCalls"],
            );
            if let Some(o) = b["manualOverride"].as_object() {
                line.push_str(&format!(
                    "; override {} (reason: {}, back to {})",
                    o["mode"].as_str().unwrap_or("?"),
                    o["reason"].as_str().unwrap_or(""),
                    o["previous"].as_str().unwrap_or("?"),
                ));
            }
            line
        })
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Runs the scenario.
pub async fn run(running: &Running, token: &str) -> reqwest::Result<()> {
    let service = running.service.addr();
    let d = Demo {
        http: reqwest::Client::new(),
        base: format!("http://{service}"),
        token: token.to_owned(),
    };
    println!(
        "inventory service on http://{service}, downstream on http://{}\n",
        running.downstream_server.addr()
    );

    println!("1. A healthy downstream: the real answer, confirmed.");
    d.step("GET", "/inventory/SKU-1001?mode=success", None)
        .await?;
    d.step("GET", "/inventory/attempts", None).await?;

    println!("\n2. A refused connection is retried once (max-attempts 2): two attempts.");
    d.step("GET", "/inventory/SKU-1001?mode=connect", None)
        .await?;
    d.step("GET", "/inventory/attempts", None).await?;
    println!(
        "       (the downstream itself saw {} stock request: connecting failed twice)",
        running.downstream.stock_requests()
    );

    println!("\n3. A 503 is a failure for the breaker but is not retried: one attempt.");
    d.step("GET", "/inventory/SKU-1001?mode=fail", None).await?;
    d.step("GET", "/inventory/attempts", None).await?;

    println!("\n4. Slow (1.2 s): the time limiter gives up at 800 ms.");
    d.step("GET", "/inventory/SKU-1001?mode=slow", None).await?;

    println!("\n5. Out of stock is a business answer: never retried, never counted.");
    d.step("GET", "/inventory/SKU-2?mode=out-of-stock", None)
        .await?;

    println!("\n6. More failures: the window of 10 attempts fills, the breaker opens, and");
    println!("   the service answers UNKNOWN without calling the downstream at all.");
    for _ in 0..6 {
        d.quiet("/inventory/SKU-1001?mode=fail").await?;
    }
    let before = running.client.attempts();
    d.step("GET", "/inventory/SKU-1001?mode=success", None)
        .await?;
    println!(
        "       (attempts made for that request: {})",
        running.client.attempts() - before
    );
    d.step("GET", "/actuator/circuitbreakers", None).await?;
    d.step(
        "GET",
        "/actuator/metrics/resilience4j.circuitbreaker.calls?tag=name:inventory-query",
        None,
    )
    .await?;
    println!("   The dependency's outage is not this service's: liveness and readiness stay UP.");
    d.step("GET", "/actuator/health/liveness", None).await?;
    d.step("GET", "/actuator/health/readiness", None).await?;

    println!("\n7. An operator resets the breaker, then forces it open for a drill with a TTL");
    println!("   and a reason (management, with the bearer token), then closes it by hand.");
    d.step(
        "POST",
        "/actuator/circuitbreakers/inventory-query",
        Some(serde_json::json!({ "updateState": "RESET" })),
    )
    .await?;
    d.step(
        "POST",
        "/actuator/circuitbreakers/inventory-query",
        Some(serde_json::json!({
            "updateState": "FORCE_OPEN", "ttl": "5m", "reason": "failover drill"
        })),
    )
    .await?;
    d.step("GET", "/inventory/SKU-6", None).await?;
    d.step(
        "POST",
        "/actuator/circuitbreakers/inventory-query",
        Some(serde_json::json!({ "updateState": "CLOSE" })),
    )
    .await?;
    d.step("GET", "/inventory/SKU-6", None).await?;

    println!("\nDone. `cargo run --example inventory_service` serves until Ctrl-C.");
    Ok(())
}
