//! A throwaway Redis Cluster for tests: three primaries and three replicas
//! (`redis-server --cluster-enabled yes` on free 127.0.0.1 ports, joined by
//! `redis-cli --cluster create … --cluster-replicas 1`), no persistence,
//! every node killed when dropped. Start it once per test binary: it takes a
//! few seconds.
//!
//! Starting fails loudly, never by skipping: `scripts/test` installs Debian's
//! `redis-server` and `redis-tools` when they are missing.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// One node of the cluster.
pub struct Node {
    pub port: u16,
    child: Option<Child>,
}

impl Node {
    /// A plain blocking connection to this node.
    pub fn control(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .and_then(|c| c.get_connection())
            .expect("connect to a cluster node")
    }

    /// Kills the node at once (SIGKILL).
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    /// This node's cluster id.
    pub fn id(&self) -> String {
        redis::cmd("CLUSTER")
            .arg("MYID")
            .query(&mut self.control())
            .expect("CLUSTER MYID")
    }
}

/// Three primaries, three replicas.
pub struct RedisCluster {
    pub nodes: Vec<Node>,
    dir: PathBuf,
}

/// How long a primary may be unreachable before its replica takes over.
pub const NODE_TIMEOUT: Duration = Duration::from_millis(1000);

impl RedisCluster {
    pub fn start() -> Self {
        let dir = std::env::temp_dir().join(format!("resil-cluster-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temp dir for the cluster's node files");
        let ports: Vec<u16> = {
            // Hold every listener until all ports are chosen, so they differ.
            let listeners: Vec<_> = (0..6)
                .map(|_| TcpListener::bind("127.0.0.1:0").expect("a free port"))
                .collect();
            listeners
                .iter()
                .map(|l| l.local_addr().unwrap().port())
                .collect()
        };
        let nodes = ports
            .iter()
            .map(|&port| {
                let child = Command::new("redis-server")
                    .args(["--port", &port.to_string()])
                    .args(["--bind", "127.0.0.1"])
                    .args(["--cluster-enabled", "yes"])
                    .args(["--cluster-config-file", &format!("nodes-{port}.conf")])
                    .args([
                        "--cluster-node-timeout",
                        &NODE_TIMEOUT.as_millis().to_string(),
                    ])
                    // A replica takes over however long its link was down.
                    .args(["--cluster-replica-validity-factor", "0"])
                    .args(["--save", ""])
                    .args(["--appendonly", "no"])
                    .args(["--dir", &dir.to_string_lossy()])
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap_or_else(|e| {
                        panic!(
                            "cannot start `redis-server` ({e}); the cluster tests need a real \
                             Redis (Debian: `apt-get install -y redis-server redis-tools`, which \
                             scripts/test does when they are missing)"
                        )
                    });
                Node {
                    port,
                    child: Some(child),
                }
            })
            .collect();
        let cluster = RedisCluster { nodes, dir };
        for node in &cluster.nodes {
            wait_until(
                Duration::from_secs(10),
                "a cluster node answers PING",
                || {
                    redis::Client::open(format!("redis://127.0.0.1:{}/", node.port))
                        .and_then(|c| c.get_connection())
                        .and_then(|mut c| redis::cmd("PING").query::<String>(&mut c))
                        .is_ok()
                },
            );
        }
        let addresses: Vec<String> = ports.iter().map(|p| format!("127.0.0.1:{p}")).collect();
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addresses)
            .args(["--cluster-replicas", "1", "--cluster-yes"])
            .stdin(Stdio::null())
            .output()
            .unwrap_or_else(|e| {
                panic!(
                    "cannot run `redis-cli` ({e}); install it (Debian: `apt-get install -y \
                     redis-tools`, which scripts/test does when it is missing)"
                )
            });
        assert!(
            out.status.success(),
            "redis-cli --cluster create failed: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        cluster.wait_until_ok();
        cluster
    }

    /// Waits until every running node says `cluster_state:ok` and every
    /// running replica's link to its primary is up (so a failover has data).
    pub fn wait_until_ok(&self) {
        wait_until(
            Duration::from_secs(30),
            "cluster_state:ok on every node",
            || {
                self.nodes.iter().filter(|n| n.is_running()).all(|n| {
                    let mut conn = n.control();
                    let ok = redis::cmd("CLUSTER")
                        .arg("INFO")
                        .query::<String>(&mut conn)
                        .is_ok_and(|info| info.contains("cluster_state:ok"));
                    let replication: String = redis::cmd("INFO")
                        .arg("replication")
                        .query(&mut conn)
                        .unwrap_or_default();
                    let synced = replication.contains("role:master")
                        || replication.contains("master_link_status:up");
                    ok && synced
                })
            },
        );
    }

    /// `redis://127.0.0.1:p1/,redis://…` for every node.
    pub fn urls(&self) -> String {
        self.nodes
            .iter()
            .map(|n| format!("redis://127.0.0.1:{}/", n.port))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Whether node `i` runs and is a primary.
    pub fn is_primary(&self, i: usize) -> bool {
        let node = &self.nodes[i];
        node.is_running()
            && redis::cmd("ROLE")
                .query::<Vec<redis::Value>>(&mut node.control())
                .is_ok_and(|role| matches!(&role[0], redis::Value::BulkString(r) if r == b"master"))
    }

    /// The slot of `key`.
    pub fn slot(&self, key: &str) -> u16 {
        let node = self.nodes.iter().find(|n| n.is_running()).unwrap();
        redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(key)
            .query(&mut node.control())
            .unwrap()
    }

    /// The index of the running primary that owns `slot`.
    pub fn owner(&self, slot: u16) -> usize {
        let node = self.nodes.iter().find(|n| n.is_running()).unwrap();
        // CLUSTER SLOTS: [[start, end, [ip, port, id], replicas…], …]
        let slots: Vec<redis::Value> = redis::cmd("CLUSTER")
            .arg("SLOTS")
            .query(&mut node.control())
            .unwrap();
        for range in slots {
            let redis::Value::Array(items) = range else {
                continue;
            };
            let int = |v: &redis::Value| match v {
                redis::Value::Int(i) => *i,
                _ => -1,
            };
            let (start, end) = (int(&items[0]), int(&items[1]));
            if (start..=end).contains(&i64::from(slot)) {
                let redis::Value::Array(primary) = &items[2] else {
                    continue;
                };
                let port = int(&primary[1]) as u16;
                return self.nodes.iter().position(|n| n.port == port).unwrap();
            }
        }
        panic!("no owner for slot {slot}");
    }

    /// Moves `slot` (and its keys) from primary `from` to primary `to`, the
    /// way `redis-cli --cluster reshard` does: IMPORTING / MIGRATING, MIGRATE
    /// the keys, then SETSLOT NODE on every primary.
    pub fn move_slot(&self, slot: u16, from: usize, to: usize) {
        let (src, dst) = (&self.nodes[from], &self.nodes[to]);
        let (src_id, dst_id) = (src.id(), dst.id());
        let setslot = |node: &Node, args: &[&str]| {
            let mut cmd = redis::cmd("CLUSTER");
            cmd.arg("SETSLOT").arg(slot);
            for a in args {
                cmd.arg(*a);
            }
            cmd.query::<()>(&mut node.control())
                .expect("CLUSTER SETSLOT");
        };
        setslot(dst, &["IMPORTING", &src_id]);
        setslot(src, &["MIGRATING", &dst_id]);
        loop {
            let keys: Vec<String> = redis::cmd("CLUSTER")
                .arg("GETKEYSINSLOT")
                .arg(slot)
                .arg(100)
                .query(&mut src.control())
                .unwrap();
            if keys.is_empty() {
                break;
            }
            let mut migrate = redis::cmd("MIGRATE");
            migrate
                .arg("127.0.0.1")
                .arg(dst.port)
                .arg("")
                .arg(0)
                .arg(5000)
                .arg("KEYS")
                .arg(&keys);
            migrate.query::<()>(&mut src.control()).expect("MIGRATE");
        }
        for i in 0..self.nodes.len() {
            if self.is_primary(i) {
                setslot(&self.nodes[i], &["NODE", &dst_id]);
            }
        }
    }
}

impl Drop for RedisCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            node.kill();
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
