//! A throwaway `etcd` for tests: its own free ports on 127.0.0.1, its data
//! in a temporary directory, killed when dropped; and the test's own puts
//! and deletes through etcd's JSON gateway (`/v3/kv/…`), so the tests need
//! no etcd client of their own.
//!
//! Starting fails loudly (a panic naming what is missing), never by skipping:
//! `scripts/test` installs Debian's `etcd-server` when it is not on `PATH`.

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `etcd` child process.
pub struct EtcdServer {
    child: Option<Child>,
    port: u16,
    peer_port: u16,
    dir: PathBuf,
}

impl EtcdServer {
    /// Starts a single-member cluster on free ports and waits until it is
    /// healthy.
    pub fn start() -> Self {
        let dir =
            std::env::temp_dir().join(format!("resil-etcd-{}-{}", std::process::id(), free_port()));
        let _ = std::fs::remove_dir_all(&dir);
        Self::spawn(free_port(), free_port(), dir)
    }

    fn spawn(port: u16, peer_port: u16, dir: PathBuf) -> Self {
        let client = format!("http://127.0.0.1:{port}");
        let peer = format!("http://127.0.0.1:{peer_port}");
        let child = Command::new("etcd")
            .args(["--name", "resil-test"])
            .arg("--data-dir")
            .arg(&dir)
            .args(["--listen-client-urls", &client])
            .args(["--advertise-client-urls", &client])
            .args(["--listen-peer-urls", &peer])
            .args(["--initial-advertise-peer-urls", &peer])
            .args(["--initial-cluster", &format!("resil-test={peer}")])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start `etcd` ({e}); these tests need a real etcd: install it \
                     (Debian: `apt-get install -y etcd-server`, which scripts/test does when \
                     it is missing) and make sure it is on PATH"
                )
            });
        let mut server = EtcdServer {
            child: Some(child),
            port,
            peer_port,
            dir,
        };
        server.wait_healthy();
        server
    }

    fn wait_healthy(&mut self) {
        let give_up = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(body) = http(self.port, "GET", "/health", "") {
                if body.contains("\"health\":\"true\"") {
                    return;
                }
            }
            if let Some(status) = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten())
            {
                panic!("etcd on port {} exited at start ({status})", self.port);
            }
            assert!(
                Instant::now() < give_up,
                "etcd on port {} was not healthy within 30 s",
                self.port
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// `http://127.0.0.1:{port}`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Puts `key` = `value`.
    pub fn put(&self, key: &str, value: &str) {
        let body = format!(
            "{{\"key\":\"{}\",\"value\":\"{}\"}}",
            base64(key.as_bytes()),
            base64(value.as_bytes())
        );
        let reply = http(self.port, "POST", "/v3/kv/put", &body).expect("etcd answers a put");
        assert!(reply.contains("\"header\""), "put {key}: {reply}");
    }

    /// Deletes `key`.
    pub fn delete(&self, key: &str) {
        let body = format!("{{\"key\":\"{}\"}}", base64(key.as_bytes()));
        let reply =
            http(self.port, "POST", "/v3/kv/deleterange", &body).expect("etcd answers a delete");
        assert!(reply.contains("\"header\""), "delete {key}: {reply}");
    }

    /// Kills the server at once (SIGKILL).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// Starts the killed server again: same ports, same data.
    pub fn restart(&mut self) {
        self.kill();
        let dir = self.dir.clone();
        let (port, peer_port) = (self.port, self.peer_port);
        // The old value must not remove the data directory when replaced.
        self.dir = PathBuf::new();
        *self = Self::spawn(port, peer_port, dir);
    }
}

impl Drop for EtcdServer {
    fn drop(&mut self) {
        self.kill();
        if !self.dir.as_os_str().is_empty() {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

/// One HTTP/1.0 request to 127.0.0.1:`port`; the response body.
fn http(port: u16, method: &str, path: &str, body: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .ok()?;
    let request = format!(
        "{method} {path} HTTP/1.0\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes()).ok()?;
    let mut reply = String::new();
    stream.read_to_string(&mut reply).ok()?;
    reply.split_once("\r\n\r\n").map(|(_, b)| b.to_owned())
}

fn base64(bytes: &[u8]) -> String {
    const ALPHABET: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ALPHABET[(n >> (18 - 6 * i)) as usize & 63] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}
