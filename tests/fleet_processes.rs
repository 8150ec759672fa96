//! The fleet across real processes (issue 32, "Done when", line 6): three
//! processes share a real Redis, a force-open with a TTL reaches all three
//! and expires on each, a fourth process started while a switch is in force
//! applies it at start, and with Redis killed each process's local
//! management still works and reports the gap.
//!
//! Each replica is this test binary run again with `RESIL_FLEET_TEST_REPLICA`
//! set: it runs only `replica_process`, which joins the fleet and answers
//! one-line commands on stdin (`state`, `switch …`, …) with one `@@ …` line
//! on stdout. Waits poll a replica's answer with a generous bound; nothing
//! asserts how fast a change travels.

#[path = "support/redis_server.rs"]
mod redis_server;

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use redis_server::RedisServer;
use resil::config::FileConfig;
use resil::registry_crate::fleet::FleetOptions;
use resil::registry_crate::{Kind, Switch, SwitchAction};
use resil::Registry;

/// Set in a replica's environment: its name.
const ROLE: &str = "RESIL_FLEET_TEST_REPLICA";
const URL: &str = "RESIL_FLEET_TEST_URL";
const NAMESPACE: &str = "RESIL_FLEET_TEST_NAMESPACE";
const PATIENCE: Duration = Duration::from_secs(60);

/// A replica's side: joins the fleet and answers commands until stdin ends.
/// A no-op in an ordinary test run.
#[test]
fn replica_process() {
    let Ok(name) = std::env::var(ROLE) else {
        return;
    };
    let url = std::env::var(URL).unwrap();
    let namespace = std::env::var(NAMESPACE).unwrap();
    let registry = Registry::new();
    registry.circuit_breaker("inventory");
    let fleet = registry
        .join_fleet(FleetOptions::new(&url, &namespace).replica(&name))
        .unwrap();
    let mut out = std::io::stdout();
    for line in std::io::stdin().lock().lines() {
        let line = line.unwrap();
        let words: Vec<&str> = line.splitn(3, ' ').collect();
        let reply = match words.as_slice() {
            ["state"] => {
                // Runs due TTL expiries, then reads the breaker.
                let in_force = registry.switches().len();
                let state = registry.circuit_breaker("inventory").state();
                format!("{state} {in_force}")
            }
            ["connected"] => fleet.wait_for(|s| s.connected, PATIENCE).to_string(),
            ["disconnected"] => fleet.wait_for(|s| !s.connected, PATIENCE).to_string(),
            ["unsent"] => fleet.status().unsent.to_string(),
            ["reload", threshold] => {
                let file = FileConfig::from_yaml_str(&format!(
                    "resilience4j.circuitbreaker.instances.inventory.failure-rate-threshold: {threshold}\n"
                ))
                .unwrap();
                match registry.reload(file) {
                    Ok(_) => format!("ok {}", registry.active_config_version().unwrap()),
                    Err(e) => format!("error {e}"),
                }
            }
            ["publish", id] => match fleet.publish_version(id.parse().unwrap(), &name) {
                Ok(()) => "ok".into(),
                Err(e) => format!("error {e}"),
            },
            ["threshold"] => registry
                .circuit_breaker("inventory")
                .config()
                .failure_rate_threshold()
                .to_string(),
            ["switch", ttl_ms, reason] => {
                let ttl = match ttl_ms.parse::<u64>().unwrap() {
                    0 => None,
                    ms => Some(Duration::from_millis(ms)),
                };
                let switch = Switch {
                    name: "inventory".into(),
                    action: SwitchAction::ForceOpen,
                    reason: (*reason).into(),
                    ttl,
                };
                match fleet.switch(&switch, &name) {
                    Ok(()) => "ok".into(),
                    Err(e) => format!("error {e}"),
                }
            }
            ["release"] => match fleet.release(Kind::CircuitBreaker, "inventory", &name) {
                Ok(_) => "ok".into(),
                Err(e) => format!("error {e}"),
            },
            ["local-force-open", reason @ ..] => {
                match registry.force_open("inventory", None, &reason.join(" ")) {
                    Ok(()) => "ok".into(),
                    Err(e) => format!("error {e}"),
                }
            }
            ["local-close"] => match registry.release(Kind::CircuitBreaker, "inventory") {
                Ok(_) => "ok".into(),
                Err(e) => format!("error {e}"),
            },
            _ => format!("error unknown command `{line}`"),
        };
        writeln!(out, "@@ {reply}").unwrap();
        out.flush().unwrap();
    }
}

/// The test's side of one replica process.
struct Replica {
    name: String,
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Replica {
    fn spawn(server: &RedisServer, namespace: &str, name: &str) -> Replica {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "replica_process",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(ROLE, name)
            .env(URL, server.url())
            .env(NAMESPACE, namespace)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut replica = Replica {
            name: name.to_owned(),
            child,
            stdin,
            stdout,
        };
        assert_eq!(replica.ask("connected"), "true", "{name} joined the fleet");
        replica
    }

    /// Sends one command and returns its answer.
    fn ask(&mut self, command: &str) -> String {
        writeln!(self.stdin, "{command}").unwrap();
        self.stdin.flush().unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(
                n > 0,
                "replica {} exited while asked `{command}`",
                self.name
            );
            // libtest's `test replica_process ... ` may begin the line.
            if let Some(at) = line.find("@@ ") {
                return line[at + 3..].trim_end().to_owned();
            }
        }
    }

    /// Polls `state` until the breaker is in `state`, at most [`PATIENCE`].
    fn wait_state(&mut self, state: &str) {
        self.wait_for("state", |a| a.split(' ').next() == Some(state));
    }

    /// Polls `command` until its answer satisfies `done`, at most [`PATIENCE`].
    fn wait_for(&mut self, command: &str, done: impl Fn(&str) -> bool) {
        let give_up = Instant::now() + PATIENCE;
        loop {
            let answer = self.ask(command);
            if done(&answer) {
                return;
            }
            assert!(
                Instant::now() < give_up,
                "replica {} still answers `{answer}` to `{command}`",
                self.name
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Replica {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn three_processes_share_switches_and_their_ttls_a_late_fourth_applies_them_and_local_management_outlives_redis(
) {
    if std::env::var(ROLE).is_ok() {
        return;
    }
    let mut server = RedisServer::start();
    let ns = format!("fleet-processes-{}", std::process::id());
    let mut replicas: Vec<Replica> = (1..=3)
        .map(|i| Replica::spawn(&server, &ns, &format!("p{i}")))
        .collect();
    for r in &mut replicas {
        assert_eq!(r.ask("state"), "CLOSED 0");
    }

    // A force-open with a short TTL, made on p1, reaches all three and ends
    // on each by itself.
    assert_eq!(
        replicas[0].ask("switch 2000 INC-9 inventory db failover"),
        "ok"
    );
    for r in &mut replicas {
        r.wait_state("FORCED_OPEN");
    }
    for r in &mut replicas {
        r.wait_state("CLOSED");
        assert_eq!(
            r.ask("state"),
            "CLOSED 0",
            "nothing left in force on {}",
            r.name
        );
    }

    // A config version made on p1 (a rollback, a promoted trial) reaches the
    // others only when published.
    assert_eq!(replicas[0].ask("reload 30"), "ok 1");
    assert_eq!(replicas[1].ask("threshold"), "50", "not published yet");
    assert_eq!(replicas[0].ask("publish 1"), "ok");
    for r in &mut replicas[1..] {
        r.wait_for("threshold", |t| t == "30");
    }

    // A switch in force for a minute, made on p2; a fourth process started
    // meanwhile applies it and the published config at start, then a
    // release from p3 ends the switch on all.
    assert_eq!(replicas[1].ask("switch 60000 INC-10 drill"), "ok");
    for r in &mut replicas {
        r.wait_state("FORCED_OPEN");
    }
    let late = Replica::spawn(&server, &ns, "p4");
    replicas.push(late);
    replicas[3].wait_state("FORCED_OPEN");
    replicas[3].wait_for("threshold", |t| t == "30");
    assert_eq!(replicas[2].ask("release"), "ok");
    for r in &mut replicas {
        r.wait_state("CLOSED");
    }

    // Redis killed: every process still manages itself, and says what it
    // could not share.
    server.kill();
    for r in &mut replicas {
        assert_eq!(r.ask("disconnected"), "true", "{} sees the outage", r.name);
        assert_eq!(r.ask("local-force-open INC-11 local"), "ok");
        assert_eq!(r.ask("state"), "FORCED_OPEN 1");
        assert_eq!(r.ask("local-close"), "ok");
        assert_eq!(r.ask("state"), "CLOSED 0");
    }
    assert_eq!(replicas[0].ask("switch 0 INC-12 shared later"), "ok");
    assert_eq!(
        replicas[0].ask("state"),
        "FORCED_OPEN 1",
        "applied here at once"
    );
    assert_eq!(replicas[0].ask("unsent"), "1", "and waiting to be shared");
}
