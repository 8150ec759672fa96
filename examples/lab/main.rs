//! The protection lab: Resilience4j's fault-tolerance experiments on resil's
//! attributes, over real HTTP.
//!
//! ```text
//! cargo run --example lab                  # every mode
//! cargo run --example lab -- circuit       # one of: circuit slow classification bulkhead
//!                                          #   async rate order fallback shared
//!                                          #   shared-breaker amplification timeout defaults
//!                                          #   overload tenants
//! ```
//!
//! Every protected call is an annotated fn (`#[resil::circuit_breaker]`,
//! `#[resil::retry]`, …) whose settings come from `lab.yaml` beside this
//! file, loaded into the process-wide registry. The downstream is a real HTTP
//! server on 127.0.0.1 whose handler counts requests and can hold them; the
//! client is hyper's. Time is the lab's own clock (see `lab.rs`), so the
//! output is the same on any machine.

mod defaults;
mod downstream;
mod governance;
mod http;
mod lab;
mod mechanisms;
mod overload;
mod price;
mod tenants;

use std::process::ExitCode;

#[tokio::main]
async fn main() -> ExitCode {
    let selected: Vec<&str> = match std::env::args().nth(1) {
        None => lab::MODES.to_vec(),
        Some(name) => match lab::MODES.iter().find(|m| **m == name) {
            Some(mode) => vec![*mode],
            None => {
                eprintln!(
                    "unknown mode `{name}`; expected one of: {}",
                    lab::MODES.join(", ")
                );
                return ExitCode::from(2);
            }
        },
    };
    let lab = match lab::init() {
        Ok(lab) => lab,
        Err(e) => {
            eprintln!("cannot load {}: {e}", lab::CONFIG);
            return ExitCode::FAILURE;
        }
    };
    for mode in selected {
        println!("== {mode}");
        for line in lab::run(&lab, mode).await {
            println!("{line}");
        }
    }
    ExitCode::SUCCESS
}
