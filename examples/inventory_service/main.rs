//! The inventory service: an axum service whose stock query calls a
//! downstream inventory API over HTTP, protected by resil's registry
//! instances (circuit breaker, retry, time limiter, bulkhead, rate limiter in
//! Resilience4j's order), its route behind a resil tower layer, and resil's
//! actuator mounted beside it (health with liveness and readiness, metrics,
//! Prometheus, the live dashboard, management behind a bearer token).
//!
//! ```text
//! cargo run --example inventory_service               # serve on 127.0.0.1:8080 until Ctrl-C (or SIGTERM)
//! cargo run --example inventory_service -- --demo     # a scripted scenario, printed, then exit
//! cargo run --example inventory_service -- --port 0   # any free port
//! cargo run --example inventory_service -- --config my.toml
//! INVENTORY_ADMIN_TOKEN=s3cret cargo run --example inventory_service   # management enabled
//! ```
//!
//! The downstream runs in the same program on its own port; a request's
//! `?mode=` (or the downstream's control endpoint) switches its behaviour.

mod demo;
mod downstream;
mod inventory;
mod serve;
mod service;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use service::Running;

const USAGE: &str = "usage: inventory_service [--demo] [--port N] [--config PATH]";

struct Args {
    demo: bool,
    port: u16,
    config: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut args = Args {
        demo: false,
        port: 8080,
        config: PathBuf::from(service::CONFIG),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--demo" => args.demo = true,
            "--port" => {
                let value = it.next().ok_or("`--port` needs a number")?;
                args.port = value.parse().map_err(|_| {
                    format!("`--port` must be a port number 0..=65535, got `{value}`")
                })?;
            }
            "--config" => args.config = it.next().ok_or("`--config` needs a path")?.into(),
            "-h" | "--help" => return Err(USAGE.to_owned()),
            other => return Err(format!("unknown argument `{other}`\n{USAGE}")),
        }
    }
    Ok(args)
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(args) => args,
        Err(message) => {
            eprintln!("{message}");
            return ExitCode::FAILURE;
        }
    };
    // The process-wide registry, which the service's instances come from.
    let classifier = match service::load_registry(&args.config) {
        Ok((registry, classifier)) => {
            if resil::init(registry).is_err() {
                eprintln!("the process-wide registry was used before it was configured");
                return ExitCode::FAILURE;
            }
            classifier
        }
        Err(e) => {
            eprintln!("cannot load {}: {e}", args.config.display());
            return ExitCode::FAILURE;
        }
    };
    // The demo talks to itself: any free port will do, and it makes its own
    // management token.
    let port = if args.demo { 0 } else { args.port };
    let token = if args.demo {
        Some(demo::token())
    } else {
        std::env::var("INVENTORY_ADMIN_TOKEN")
            .ok()
            .filter(|t| !t.is_empty())
    };
    let addr = SocketAddr::from(([127, 0, 0, 1], port));
    let running = match Running::start(addr, token.as_deref(), classifier).await {
        Ok(running) => running,
        Err(e) => {
            eprintln!("cannot listen on 127.0.0.1:{port}: {e} (try `--port 0`)");
            return ExitCode::FAILURE;
        }
    };
    if args.demo {
        let outcome = demo::run(&running, token.as_deref().unwrap_or_default()).await;
        running.stop().await;
        return match outcome {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("demo failed: {e}");
                ExitCode::FAILURE
            }
        };
    }
    print_banner(&running, &args.config, token.is_some());
    let signal = stop_signal().await;
    println!("\n{signal}: finishing requests in flight, then exiting");
    running.stop().await;
    ExitCode::SUCCESS
}

/// Waits for Ctrl-C (or, on Unix, SIGTERM, as a process manager stops a
/// service) and says which came.
async fn stop_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{signal, SignalKind};
        if let Ok(mut term) = signal(SignalKind::terminate()) {
            return tokio::select! {
                _ = tokio::signal::ctrl_c() => "Ctrl-C",
                _ = term.recv() => "SIGTERM",
            };
        }
    }
    match tokio::signal::ctrl_c().await {
        Ok(()) => "Ctrl-C",
        Err(_) => "no signal handler",
    }
}

fn print_banner(running: &Running, config: &std::path::Path, managed: bool) {
    let service = running.service.addr();
    let downstream = running.downstream_server.addr();
    println!(
        "inventory service on http://{service}  (config: {})",
        config.display()
    );
    println!("downstream inventory API on http://{downstream}");
    let protection: Vec<String> = running
        .registry
        .snapshot()
        .instances
        .iter()
        .map(|i| format!("{} `{}`", i.kind, i.name))
        .collect();
    println!("protected by: {}", protection.join(", "));
    println!();
    for mode in ["success", "fail", "connect", "slow"] {
        println!("  curl 'http://{service}/inventory/SKU-1001?mode={mode}'");
    }
    println!("  curl http://{service}/inventory/attempts");
    println!("  curl http://{service}/actuator/metrics/resilience4j.circuitbreaker.calls");
    println!("  curl http://{service}/actuator/health");
    println!(
        "  curl http://{service}/actuator/prometheus   \
         # scraped by examples/inventory_service/prometheus/prometheus.yml"
    );
    println!("  open http://{service}/actuator/dashboard");
    if managed {
        println!(
            "  curl -X POST -H \"Authorization: Bearer $INVENTORY_ADMIN_TOKEN\" \\\n       \
             -H 'content-type: application/json' -d '{{\"updateState\":\"FORCE_OPEN\",\"ttl\":\"30s\"}}' \\\n       \
             http://{service}/actuator/circuitbreakers/inventory-query"
        );
    } else {
        println!("  (management is off: set INVENTORY_ADMIN_TOKEN to enable it)");
    }
    println!();
    println!("Ctrl-C to stop.");
}
