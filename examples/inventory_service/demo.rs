//! `--demo`: a scripted scenario against the running service, each request
//! and its answer printed.

use std::io;
use std::net::SocketAddr;

use crate::http::{self, Answer};
use crate::routes::Running;

/// One line per request: what was asked, the status, the body (breaker
/// snapshots shortened to state, override and counts).
async fn step(addr: SocketAddr, method: &str, path: &str) -> io::Result<Answer> {
    let answer = match method {
        "POST" => http::post(addr, path).await?,
        _ => http::get(addr, path).await?,
    };
    let shown = if path.starts_with("/actuator/circuitbreakers") && answer.status.is_success() {
        summarize_breakers(&answer.json())
    } else {
        answer.body.clone()
    };
    println!(
        "  {method:4} {path}\n       -> {} {shown}",
        answer.status.as_u16()
    );
    Ok(answer)
}

/// `inventory-query: OPEN, failed 5 of 10 buffered, …` for each breaker.
fn summarize_breakers(snapshot: &serde_json::Value) -> String {
    let empty = Vec::new();
    let instances = snapshot["instances"].as_array().unwrap_or(&empty);
    let metric = |i: &serde_json::Value, name: &str, kind: Option<&str>| {
        i["metrics"]
            .as_array()
            .and_then(|ms| {
                ms.iter()
                    .find(|m| m["name"] == name && m["kind"].as_str() == kind)
            })
            .and_then(|m| m["value"].as_f64())
            .unwrap_or(f64::NAN)
    };
    instances
        .iter()
        .map(|i| {
            let mut line = format!(
                "{}: {}, buffered {}, failed {}, ignored {}, not permitted {}",
                i["name"].as_str().unwrap_or("?"),
                i["state"].as_str().unwrap_or("?"),
                metric(i, "circuitbreaker_buffered_calls", Some("successful"))
                    + metric(i, "circuitbreaker_buffered_calls", Some("failed")),
                metric(i, "circuitbreaker_calls", Some("failed")),
                metric(i, "circuitbreaker_calls", Some("ignored")),
                metric(i, "circuitbreaker_calls", Some("not_permitted")),
            );
            if let Some(o) = i["manual_override"].as_object() {
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
pub async fn run(running: &Running) -> io::Result<()> {
    let service = running.service.addr();
    let downstream = running.downstream_server.addr();
    println!("inventory service on http://{service}, downstream on http://{downstream}\n");

    println!("1. A healthy downstream: the real stock level.");
    step(service, "GET", "/inventory/SKU-1").await?;
    step(service, "GET", "/actuator/health").await?;

    println!("\n2. Out of stock is a business answer: 12 of them, and the breaker stays CLOSED.");
    step(downstream, "POST", "/control/out-of-stock").await?;
    for _ in 0..11 {
        http::get(service, "/inventory/SKU-2").await?;
    }
    step(service, "GET", "/inventory/SKU-2").await?;
    step(service, "GET", "/actuator/circuitbreakers").await?;

    println!("\n3. The downstream fails: each request is tried twice (retry outside the breaker),");
    println!("   so a few requests fill the window of 10 attempts and the breaker opens (the 5th");
    println!("   request's second attempt is refused). Then it answers UNKNOWN without calling");
    println!("   the downstream at all.");
    step(downstream, "POST", "/control/fail").await?;
    let before = running.downstream.stock_requests();
    for _ in 0..6 {
        step(service, "GET", "/inventory/SKU-3").await?;
    }
    println!(
        "       (the downstream saw {} stock requests for those 6)",
        running.downstream.stock_requests() - before
    );
    step(service, "GET", "/actuator/circuitbreakers").await?;
    step(service, "GET", "/actuator/health").await?;

    println!("\n4. An operator resets the breaker; the downstream is slow (1.5 s) and the time");
    println!("   limiter gives up after 800 ms (twice: a timed-out read is retried).");
    step(
        service,
        "POST",
        "/actuator/circuitbreakers/inventory-query/reset",
    )
    .await?;
    step(downstream, "POST", "/control/slow?ms=1500").await?;
    step(service, "GET", "/inventory/SKU-4").await?;

    println!("\n5. A 429 with `Retry-After: 30` opens the breaker for exactly 30 s.");
    step(downstream, "POST", "/control/throttle?retry_after=30").await?;
    step(service, "GET", "/inventory/SKU-5").await?;
    step(service, "GET", "/inventory/SKU-5").await?;
    step(service, "GET", "/actuator/circuitbreakers/inventory-query").await?;

    println!("\n6. Healthy again; an operator forces the breaker open for a drill, with a TTL and");
    println!("   a reason, and closes it by hand before the TTL ends.");
    step(
        service,
        "POST",
        "/actuator/circuitbreakers/inventory-query/reset",
    )
    .await?;
    step(downstream, "POST", "/control/healthy").await?;
    step(service, "GET", "/inventory/SKU-6").await?;
    let drill = format!(
        "/actuator/circuitbreakers/inventory-query/forced-open?ttl=5m&reason={}",
        http::encode("failover drill")
    );
    step(service, "POST", &drill).await?;
    step(service, "GET", "/inventory/SKU-6").await?;
    step(service, "GET", "/actuator/health").await?;
    step(
        service,
        "POST",
        "/actuator/circuitbreakers/inventory-query/closed",
    )
    .await?;
    step(service, "GET", "/inventory/SKU-6").await?;

    println!("\nDone. `cargo run --example inventory_service` serves until Ctrl-C.");
    Ok(())
}
