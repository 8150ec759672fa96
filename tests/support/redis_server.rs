//! A throwaway `redis-server` for tests and benches: its own free port on
//! 127.0.0.1, no persistence, killed when dropped.
//!
//! Starting fails loudly (a panic naming what is missing), never by skipping:
//! `scripts/test` installs Debian's `redis-server` when it is not on `PATH`.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `redis-server` child process.
pub struct RedisServer {
    child: Option<Child>,
    port: u16,
}

impl RedisServer {
    /// Starts a server on a free port and waits until it answers `PING`.
    pub fn start() -> Self {
        Self::start_on(free_port())
    }

    /// Starts a server on a free port with extra `redis-server` arguments
    /// (`["--requirepass", "x"]`, `["--maxmemory-policy", "volatile-lru"]` …).
    pub fn start_with(extra: &[&str]) -> Self {
        Self::spawn(free_port(), extra)
    }

    /// Starts a server on `port` (a restart after [`kill`](Self::kill)).
    pub fn start_on(port: u16) -> Self {
        Self::spawn(port, &[])
    }

    fn spawn(port: u16, extra: &[&str]) -> Self {
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string()])
            .args(["--bind", "127.0.0.1"])
            .args(["--save", ""])
            .args(["--appendonly", "no"])
            .args(["--dir", &std::env::temp_dir().to_string_lossy()])
            .args(extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start `redis-server` ({e}); these tests need a real Redis: \
                     install it (Debian: `apt-get install -y redis-server`, which scripts/test \
                     does when it is missing) and make sure it is on PATH"
                )
            });
        let mut server = RedisServer {
            child: Some(child),
            port,
        };
        server.wait_for_ping();
        server
    }

    fn wait_for_ping(&mut self) {
        let give_up = Instant::now() + Duration::from_secs(10);
        loop {
            if answers(self.port) {
                return;
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!(
                    "redis-server on port {} exited at start ({status}); is the port taken?",
                    self.port
                );
            }
            assert!(
                Instant::now() < give_up,
                "redis-server on port {} did not answer PING within 10 s",
                self.port
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// `redis://127.0.0.1:{port}/`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// The server's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A plain blocking connection for the test's own commands.
    pub fn control(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .and_then(|c| c.get_connection())
            .expect("connect to the test redis-server")
    }

    /// Kills the server at once (SIGKILL: no shutdown, no goodbye to clients).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Stops the server process (SIGSTOP): connections stay open and
    /// connecting still succeeds (the kernel accepts), but nothing answers
    /// until [`resume`](Self::resume) — a hung server, or a black-holed one.
    pub fn pause(&self) {
        self.signal("-STOP");
    }

    /// Resumes a [`pause`](Self::pause)d server (SIGCONT).
    pub fn resume(&self) {
        self.signal("-CONT");
    }

    fn signal(&self, signal: &str) {
        let pid = self.child.as_ref().expect("a running server").id();
        let ok = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()
            .is_ok_and(|s| s.success());
        assert!(ok, "kill {signal} {pid} failed");
    }

    /// Kills the server and starts a new one on the same port.
    pub fn restart(&mut self) {
        self.kill();
        *self = Self::start_on(self.port);
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

/// Whether a Redis server answers on `port`: `+PONG`, or `-NOAUTH` from one
/// that wants a password.
fn answers(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_millis(500)));
    let mut reply = [0u8; 7];
    stream.write_all(b"*1\r\n$4\r\nPING\r\n").is_ok()
        && stream.read_exact(&mut reply).is_ok()
        && (&reply == b"+PONG\r\n" || reply.starts_with(b"-NOAUTH"))
}

/// A field of `INFO <section>` (e.g. `used_cpu_user`), parsed.
pub fn info_field(conn: &mut redis::Connection, section: &str, field: &str) -> Option<String> {
    let info: String = redis::cmd("INFO").arg(section).query(conn).ok()?;
    info.lines()
        .find_map(|l| l.strip_prefix(field)?.strip_prefix(':'))
        .map(|v| v.trim().to_owned())
}

/// How many times Redis ran `command` (`evalsha`, `script|load` …), from
/// `INFO commandstats`.
pub fn command_calls(conn: &mut redis::Connection, command: &str) -> u64 {
    info_field(conn, "commandstats", &format!("cmdstat_{command}"))
        .and_then(|v| {
            v.split(',')
                .find_map(|kv| kv.strip_prefix("calls="))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}
