//! The configuration advisor over a config file: what its instances will do
//! under the traffic you describe, and the settings that work against each
//! other.
//!
//! ```text
//! cargo run --example advise -- examples/resil.yaml --qps 200 --p50 40ms --p99 120ms --deadline 1s
//! ```
//!
//! `--qps` (calls a second), `--p50` and `--p99` (the downstream's latency)
//! are required; `--deadline` (the caller's end-to-end budget) is optional.
//! Durations are written as in the config file (`40ms`, `1s`, `PT0.5S`). The
//! file is TOML, YAML or `.properties`, by its extension. Each line is one
//! finding: its level, its key path, what it means and where the value in
//! force is written. Exit status 0 with findings, 1 when the file cannot be
//! loaded, 2 for bad arguments.

use std::process::ExitCode;
use std::time::Duration;

use resil::advisor::{Severity, Traffic};
use resil::config::{parse_duration, FileConfig};

/// How to call it, for error messages.
pub const USAGE: &str = "usage: advise <config file> --qps <calls a second> --p50 <duration> \
                         --p99 <duration> [--deadline <duration>]";

/// What went wrong: bad arguments (exit 2) or a file that cannot be loaded (exit 1).
#[derive(Debug, PartialEq, Eq)]
pub enum Failure {
    /// The arguments, with what is wrong.
    Usage(String),
    /// The file, with the loader's error.
    File(String),
}

/// The parsed command line.
#[derive(Debug, PartialEq)]
pub struct Args {
    /// The config file.
    pub file: String,
    /// The traffic to advise for.
    pub traffic: Traffic,
}

fn duration(flag: &str, value: &str) -> Result<Duration, Failure> {
    parse_duration(value).map_err(|e| {
        Failure::Usage(format!(
            "`{flag} {value}`: {}; expected a duration such as 40ms, 1s or PT0.5S",
            e.reason()
        ))
    })
}

/// Reads `advise <file> --qps N --p50 D --p99 D [--deadline D]` (flags in
/// any order, also as `--flag=value`).
pub fn parse(args: &[String]) -> Result<Args, Failure> {
    let (mut file, mut qps, mut p50, mut p99, mut deadline) = (None, None, None, None, None);
    let mut rest = args.iter();
    while let Some(arg) = rest.next() {
        if !arg.starts_with("--") {
            if file.replace(arg.clone()).is_some() {
                return Err(Failure::Usage(format!(
                    "unexpected argument `{arg}`: only one config file; {USAGE}"
                )));
            }
            continue;
        }
        let (flag, inline) = match arg.split_once('=') {
            Some((flag, value)) => (flag, Some(value.to_owned())),
            None => (arg.as_str(), None),
        };
        if !matches!(flag, "--qps" | "--p50" | "--p99" | "--deadline") {
            return Err(Failure::Usage(format!(
                "unknown flag `{flag}`; expected one of `--qps`, `--p50`, `--p99`, `--deadline`"
            )));
        }
        let value = match inline.or_else(|| rest.next().cloned()) {
            Some(v) => v,
            None => return Err(Failure::Usage(format!("`{flag}` needs a value; {USAGE}"))),
        };
        match flag {
            "--qps" => {
                let n: f64 = value.parse().ok().filter(|n: &f64| n.is_finite() && *n > 0.0).ok_or_else(|| {
                    Failure::Usage(format!(
                        "`--qps {value}`: expected a positive number of calls a second, such as 200 or 0.5"
                    ))
                })?;
                qps = Some(n);
            }
            "--p50" => p50 = Some(duration(flag, &value)?),
            "--p99" => p99 = Some(duration(flag, &value)?),
            _ => deadline = Some(duration(flag, &value)?),
        }
    }
    let missing = |what: &str| Failure::Usage(format!("missing {what}; {USAGE}"));
    let file = file.ok_or_else(|| missing("the config file"))?;
    let qps = qps.ok_or_else(|| missing("`--qps`"))?;
    let p50 = p50.ok_or_else(|| missing("`--p50`"))?;
    let p99 = p99.ok_or_else(|| missing("`--p99`"))?;
    if p99 < p50 {
        return Err(Failure::Usage(format!(
            "`--p99 {}` is below `--p50 {}`: a 99th percentile cannot be below the median",
            resil::config::format_duration(p99),
            resil::config::format_duration(p50)
        )));
    }
    let mut traffic = Traffic::new(qps, p50, p99);
    if let Some(d) = deadline {
        traffic = traffic.deadline(d);
    }
    Ok(Args { file, traffic })
}

/// Loads the file and returns the lines the advisor prints.
pub fn run(args: &[String]) -> Result<Vec<String>, Failure> {
    let Args { file, traffic } = parse(args)?;
    let config = FileConfig::from_file(&file).map_err(|e| Failure::File(format!("{file}: {e}")))?;
    let findings = resil::advise(&config, &traffic);
    let fmt = resil::config::format_duration;
    let mut lines = vec![format!(
        "{file} at {} qps, p50 {}, p99 {}{}",
        traffic.qps(),
        fmt(traffic.p50()),
        fmt(traffic.p99()),
        traffic
            .end_to_end_deadline()
            .map_or(String::new(), |d| format!(", deadline {}", fmt(d)))
    )];
    lines.extend(findings.iter().map(ToString::to_string));
    let warnings = findings
        .iter()
        .filter(|f| f.severity() == Severity::Warning)
        .count();
    lines.push(format!(
        "{warnings} warning{}, {} note{}",
        if warnings == 1 { "" } else { "s" },
        findings.len() - warnings,
        if findings.len() - warnings == 1 {
            ""
        } else {
            "s"
        }
    ));
    Ok(lines)
}

#[allow(dead_code)] // the test includes this file as a module and calls `run`
fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match run(&args) {
        Ok(lines) => {
            for line in lines {
                println!("{line}");
            }
            ExitCode::SUCCESS
        }
        Err(Failure::Usage(e)) => {
            eprintln!("advise: {e}");
            ExitCode::from(2)
        }
        Err(Failure::File(e)) => {
            eprintln!("advise: cannot load {e}");
            ExitCode::FAILURE
        }
    }
}
