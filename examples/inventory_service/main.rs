//! The inventory service: a real HTTP service whose stock query calls a
//! downstream inventory API over HTTP, protected by resil's registry
//! instances (circuit breaker, retry, time limiter, bulkhead, rate limiter in
//! Resilience4j's order), with Actuator-style health and management
//! endpoints.
//!
//! ```text
//! cargo run --example inventory_service               # serve on 127.0.0.1:8080 until Ctrl-C (or SIGTERM)
//! cargo run --example inventory_service -- --demo     # a scripted scenario, printed, then exit
//! cargo run --example inventory_service -- --port 0   # any free port
//! cargo run --example inventory_service -- --config my.toml
//! ```
//!
//! The downstream runs in the same program on its own port; switch its
//! behaviour (fail, slow, 429, out of stock) through its control endpoint.

mod demo;
mod downstream;
mod http;
mod inventory;
mod routes;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use routes::Running;

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
        config: PathBuf::from(routes::CONFIG),
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
    match routes::load_registry(&args.config) {
        Ok(registry) => {
            if resil::init(registry).is_err() {
                eprintln!("the process-wide registry was used before it was configured");
                return ExitCode::FAILURE;
            }
        }
        Err(e) => {
            eprintln!("cannot load {}: {e}", args.config.display());
            return ExitCode::FAILURE;
        }
    }
    // The demo talks to itself: any free port will do.
    let port = if args.demo { 0 } else { args.port };
    let running = match Running::start(SocketAddr::from(([127, 0, 0, 1], port))).await {
        Ok(running) => running,
        Err(e) => {
            eprintln!("cannot listen on 127.0.0.1:{port}: {e} (try `--port 0`)");
            return ExitCode::FAILURE;
        }
    };
    if args.demo {
        let outcome = demo::run(&running).await;
        running.stop().await;
        return match outcome {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("demo failed: {e}");
                ExitCode::FAILURE
            }
        };
    }
    print_banner(&running, &args.config);
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

fn print_banner(running: &Running, config: &std::path::Path) {
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
    println!("  curl http://{service}/inventory/SKU-1");
    println!("  curl http://{service}/actuator/health");
    println!("  curl http://{service}/actuator/circuitbreakers");
    println!("  curl -X POST 'http://{service}/actuator/circuitbreakers/inventory-query/forced-open?ttl=30s&reason=drill'");
    println!("  curl -X POST http://{service}/actuator/circuitbreakers/inventory-query/reset");
    println!();
    println!(
        "  curl -X POST http://{downstream}/control/fail          # also: healthy, out-of-stock,"
    );
    println!(
        "  curl -X POST 'http://{downstream}/control/slow?ms=1500' #   throttle?retry_after=30"
    );
    println!();
    println!("Ctrl-C to stop.");
}
