//! Ten fault drills against the inventory service's configured instances,
//! with chaos injection causing each fault.
//!
//! ```text
//! cargo run --example drills                       # examples/inventory_service.toml
//! cargo run --example drills -- path/to/resil.toml # another file's `inventory-query`
//! ```
//!
//! Each drill prints PASS or FAIL, then its evidence: the breaker's state and
//! counts, the calls that reached the downstream, the fallbacks, and the
//! bulkhead's permits back at the end. Time is tokio's paused clock, so the
//! output is the same on every machine. Exit status 1 when a drill fails.

mod drills;
mod service;

use std::process::ExitCode;

/// The inventory service's config file.
pub const CONFIG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/examples/inventory_service.toml"
);

fn main() -> ExitCode {
    let file = std::env::args().nth(1).unwrap_or_else(|| CONFIG.to_owned());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .start_paused(true)
        .build()
        .expect("a current-thread runtime");
    let drills = match runtime.block_on(drills::run_all(&file)) {
        Ok(drills) => drills,
        Err(e) => {
            eprintln!("drills: cannot load {e}");
            return ExitCode::FAILURE;
        }
    };
    for drill in &drills {
        for line in drill.lines() {
            println!("{line}");
        }
    }
    let passed = drills.iter().filter(|d| d.passed()).count();
    println!("{passed} of {} drills passed", drills.len());
    if passed == drills.len() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
