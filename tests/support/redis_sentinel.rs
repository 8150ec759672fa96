//! A throwaway Sentinel set-up for tests: a primary, one replica and one
//! sentinel (quorum 1, so it alone may fail over), on free 127.0.0.1 ports,
//! every process killed when dropped. Needs `support/redis_server.rs` as the
//! test's `redis_server` module.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::redis_server::RedisServer;

/// The name the sentinel monitors the primary by.
pub const MASTER_NAME: &str = "resil-primary";

pub struct RedisSentinel {
    pub primary: RedisServer,
    pub replica: RedisServer,
    sentinel: Option<Child>,
    pub sentinel_port: u16,
    dir: PathBuf,
}

impl RedisSentinel {
    pub fn start() -> Self {
        let primary = RedisServer::start();
        let replica =
            RedisServer::start_with(&["--replicaof", "127.0.0.1", &primary.port().to_string()]);
        let sentinel_port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let dir = std::env::temp_dir().join(format!("resil-sentinel-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temp dir for the sentinel's config");
        let conf = dir.join("sentinel.conf");
        std::fs::write(
            &conf,
            format!(
                "port {sentinel_port}\nbind 127.0.0.1\ndir {}\n\
                 sentinel monitor {MASTER_NAME} 127.0.0.1 {} 1\n\
                 sentinel down-after-milliseconds {MASTER_NAME} 1000\n\
                 sentinel failover-timeout {MASTER_NAME} 5000\n",
                dir.display(),
                primary.port()
            ),
        )
        .expect("write sentinel.conf");
        let sentinel = Command::new("redis-server")
            .arg(&conf)
            .arg("--sentinel")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot start `redis-server --sentinel` ({e}); install Debian's \
                     redis-server (scripts/test does when it is missing)"
                )
            });
        let setup = RedisSentinel {
            primary,
            replica,
            sentinel: Some(sentinel),
            sentinel_port,
            dir,
        };
        let replica_port = setup.replica.port();
        wait_until(
            Duration::from_secs(20),
            "the sentinel sees the replica in sync",
            || {
                let synced = info(replica_port, "replication")
                    .is_some_and(|i| i.contains("master_link_status:up"));
                let known: Option<Vec<redis::Value>> = setup.sentinel_conn().and_then(|mut c| {
                    redis::cmd("SENTINEL")
                        .arg("REPLICAS")
                        .arg(MASTER_NAME)
                        .query(&mut c)
                        .ok()
                });
                synced && known.is_some_and(|r| !r.is_empty())
            },
        );
        setup
    }

    /// `redis://127.0.0.1:{sentinel}/`.
    pub fn sentinel_url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.sentinel_port)
    }

    fn sentinel_conn(&self) -> Option<redis::Connection> {
        redis::Client::open(self.sentinel_url())
            .and_then(|c| c.get_connection())
            .ok()
    }

    /// The primary's port as the sentinel reports it.
    pub fn master_port(&self) -> Option<u16> {
        let (_, port): (String, String) = redis::cmd("SENTINEL")
            .arg("GET-MASTER-ADDR-BY-NAME")
            .arg(MASTER_NAME)
            .query(&mut self.sentinel_conn()?)
            .ok()?;
        port.parse().ok()
    }
}

fn info(port: u16, section: &str) -> Option<String> {
    let mut conn = redis::Client::open(format!("redis://127.0.0.1:{port}/"))
        .and_then(|c| c.get_connection())
        .ok()?;
    redis::cmd("INFO").arg(section).query(&mut conn).ok()
}

impl Drop for RedisSentinel {
    fn drop(&mut self) {
        if let Some(mut child) = self.sentinel.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn wait_until(limit: Duration, what: &str, mut ok: impl FnMut() -> bool) {
    let give_up = Instant::now() + limit;
    while !ok() {
        assert!(Instant::now() < give_up, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(50));
    }
}
