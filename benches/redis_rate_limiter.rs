//! Distributed rate limiter: resil's two scripts vs a Redisson-style
//! sorted-set script, side by side on the same redis-server, in one run.
//!
//! What is measured:
//! * criterion: the time per granted acquire (one `EVALSHA` round trip) with
//!   one client, and with four clients (four connections, each issuing
//!   acquires back to back; the figure is total time / total acquires, so its
//!   inverse is the server's aggregate acquire rate). The quota (10⁶ per
//!   second) is never exhausted, so every acquire is a grant and the
//!   Redisson-style script keeps about one second of grants in its sorted set,
//!   as it does in production at that rate.
//! * criterion, `redis_rate_limiter/acquire/64 callers, one process`: 64
//!   tasks of one process sharing one limiter (so one multiplexed
//!   connection), each acquiring back to back: the traffic of a busy service
//!   instance whose requests all pass one shared quota. Its inverse is the
//!   acquires per second one process gets. Beside it, the same 64 callers
//!   forced to take turns on the connection (a mutex around the acquire: one
//!   round trip in flight at a time, the shape of a connection that is not
//!   pipelined), so the ratio shows what pipelining buys.
//! * printed after criterion's output: Redis CPU per acquire (`INFO cpu`
//!   user + sys deltas over a fixed run, which includes the server's network
//!   work, and `INFO commandstats` µs per `EVALSHA`, the script alone) and
//!   memory per limiter (`MEMORY USAGE` of its keys) after the run.
//!
//! What distorts it: the server runs on the same 2-core machine as the
//! clients, so round trips are loopback and client and server compete for
//! the cores (absolute acquires/s are far below a real deployment's; the
//! ratios between scripts are what to read). The Redisson-style script is
//! written from the published description of Redisson's algorithm (one member
//! per grant, client time, expired members summed back), not Redisson's code;
//! its rate settings are passed as arguments instead of read from a hash, which
//! saves it an `HGET` per call.

#[path = "../tests/support/redis_server.rs"]
mod redis_server;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use criterion::Criterion;
use redis::aio::MultiplexedConnection;
use redis::Script;
use redis_server::{command_calls, info_field, RedisServer};
use resil::distributed_rate_limiter::{
    Algorithm, DistributedRateLimiter, DistributedRateLimiterConfig,
};
use tokio::runtime::Runtime;

const RATE: u32 = 1_000_000;
const INTERVAL: Duration = Duration::from_secs(1);
/// Unique member suffixes (Redisson uses random bytes; a counter cannot collide).
static MEMBER: AtomicU64 = AtomicU64::new(0);

/// One way to take a permit.
#[derive(Clone)]
enum Contender {
    Resil(DistributedRateLimiter),
    Redisson {
        conn: MultiplexedConnection,
        script: Script,
        key: String,
    },
}

impl Contender {
    async fn acquire(&mut self) {
        match self {
            Contender::Resil(limiter) => {
                let grant = limiter
                    .acquire_async()
                    .await
                    .expect("the bench quota is never exhausted");
                std::hint::black_box(grant);
            }
            Contender::Redisson { conn, script, key } => {
                let now = SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .unwrap()
                    .as_millis() as u64;
                let (granted, _): (i64, i64) = script
                    .key(format!("{key}:value"))
                    .key(format!("{key}:permits"))
                    .arg(RATE)
                    .arg(INTERVAL.as_millis() as u64)
                    .arg(now)
                    .arg(1)
                    .arg(MEMBER.fetch_add(1, Ordering::Relaxed))
                    .invoke_async(conn)
                    .await
                    .expect("the redisson-style script runs");
                assert_eq!(granted, 1, "the bench quota is never exhausted");
            }
        }
    }

    /// The keys holding this contender's state.
    fn keys(&self) -> Vec<String> {
        match self {
            Contender::Resil(limiter) => vec![limiter.key().to_owned()],
            Contender::Redisson { key, .. } => {
                vec![format!("{key}:value"), format!("{key}:permits")]
            }
        }
    }
}

const NAMES: [&str; 3] = ["resil sliding_window", "resil gcra", "redisson-style zset"];

/// A fresh contender of kind `which` on its own key and connection.
async fn contender(server: &RedisServer, which: usize, key: &str) -> Contender {
    let config = |algorithm| {
        DistributedRateLimiterConfig::builder()
            .redis_url(server.url())
            .key_prefix("bench:")
            .algorithm(algorithm)
            .limit_for_period(RATE)
            .limit_refresh_period(INTERVAL)
            .redis_timeout(Duration::from_secs(1))
            .build()
            .unwrap()
    };
    match which {
        0 => Contender::Resil(
            DistributedRateLimiter::new(key, config(Algorithm::SlidingWindow)).unwrap(),
        ),
        1 => Contender::Resil(DistributedRateLimiter::new(key, config(Algorithm::Gcra)).unwrap()),
        _ => Contender::Redisson {
            conn: redis::Client::open(server.url())
                .unwrap()
                .get_multiplexed_async_connection()
                .await
                .unwrap(),
            script: Script::new(include_str!("redisson_like.lua")),
            key: format!("bench:{key}:redisson"),
        },
    }
}

/// `clients` contenders of one kind sharing one quota, each on its own
/// connection, taking `total` permits between them; the time it took.
async fn run(contenders: &[Contender], total: u64) -> Duration {
    let each = total.div_ceil(contenders.len() as u64);
    let start = Instant::now();
    let tasks: Vec<_> = contenders
        .iter()
        .cloned()
        .map(|mut c| {
            tokio::spawn(async move {
                for _ in 0..each {
                    c.acquire().await;
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    start.elapsed()
}

async fn contenders(
    server: &RedisServer,
    which: usize,
    clients: usize,
    key: &str,
) -> Vec<Contender> {
    let mut all = Vec::new();
    for _ in 0..clients {
        all.push(contender(server, which, key).await);
    }
    // Warm up: connect, load the script.
    for c in &mut all {
        c.acquire().await;
    }
    all
}

fn acquire_throughput(c: &mut Criterion, rt: &Runtime, server: &RedisServer) {
    for clients in [1, 4] {
        let mut group =
            c.benchmark_group(format!("redis_rate_limiter/acquire/{clients} client(s)"));
        group
            .sample_size(20)
            .measurement_time(Duration::from_secs(3))
            .warm_up_time(Duration::from_millis(500));
        for (which, name) in NAMES.iter().enumerate() {
            let all = rt.block_on(contenders(server, which, clients, &format!("tp{clients}")));
            group.bench_function(*name, |b| {
                b.iter_custom(|iters| rt.block_on(run(&all, iters)))
            });
        }
        group.finish();
    }
}

/// 64 tasks sharing one limiter, `total` acquires between them; with
/// `one_at_a_time`, they take turns (one round trip in flight).
async fn run_shared(limiter: &DistributedRateLimiter, one_at_a_time: bool, total: u64) -> Duration {
    const CALLERS: u64 = 64;
    let each = total.div_ceil(CALLERS);
    let turn = std::sync::Arc::new(tokio::sync::Mutex::new(()));
    let start = Instant::now();
    let tasks: Vec<_> = (0..CALLERS)
        .map(|_| {
            let limiter = limiter.clone();
            let turn = turn.clone();
            tokio::spawn(async move {
                for _ in 0..each {
                    let _turn = if one_at_a_time {
                        Some(turn.lock().await)
                    } else {
                        None
                    };
                    let grant = limiter
                        .acquire_async()
                        .await
                        .expect("the bench quota is never exhausted");
                    std::hint::black_box(grant);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    start.elapsed()
}

fn pipelined_callers(c: &mut Criterion, rt: &Runtime, server: &RedisServer) {
    let mut group = c.benchmark_group("redis_rate_limiter/acquire/64 callers, one process");
    group
        .sample_size(20)
        .measurement_time(Duration::from_secs(3))
        .warm_up_time(Duration::from_millis(500));
    for (which, name) in [(0, "resil sliding_window"), (1, "resil gcra")] {
        let Contender::Resil(limiter) = rt.block_on(contender(server, which, "callers64")) else {
            unreachable!("0 and 1 are resil's")
        };
        rt.block_on(async { limiter.acquire_async().await.unwrap() });
        group.bench_function(format!("{name}, pipelined"), |b| {
            b.iter_custom(|iters| rt.block_on(run_shared(&limiter, false, iters)))
        });
        group.bench_function(format!("{name}, one round trip at a time"), |b| {
            b.iter_custom(|iters| rt.block_on(run_shared(&limiter, true, iters)))
        });
    }
    group.finish();
}

fn cpu_seconds(conn: &mut redis::Connection) -> f64 {
    ["used_cpu_user", "used_cpu_sys"]
        .iter()
        .map(|f| {
            info_field(conn, "cpu", f)
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(0.0)
        })
        .sum()
}

fn evalsha_usec(conn: &mut redis::Connection) -> f64 {
    info_field(conn, "commandstats", "cmdstat_evalsha")
        .and_then(|v| {
            v.split(',')
                .find_map(|kv| kv.strip_prefix("usec="))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0.0)
}

/// Redis CPU and memory per contender, printed as a table.
fn cpu_and_memory(rt: &Runtime, server: &RedisServer, acquires: u64) {
    let mut control = server.control();
    println!("\nredis_rate_limiter: Redis cost per acquire, {acquires} acquires per row (quota {RATE}/s)");
    println!(
        "{:<22} {:>7} {:>16} {:>16} {:>14} {:>12}",
        "contender", "clients", "server CPU µs/acq", "script µs/acq", "bytes/limiter", "acquires/s"
    );
    for clients in [1usize, 4] {
        for (which, name) in NAMES.iter().enumerate() {
            let all = rt.block_on(contenders(server, which, clients, &format!("cpu{clients}")));
            let (cpu0, usec0, calls0) = (
                cpu_seconds(&mut control),
                evalsha_usec(&mut control),
                command_calls(&mut control, "evalsha"),
            );
            let took = rt.block_on(run(&all, acquires));
            let (cpu1, usec1, calls1) = (
                cpu_seconds(&mut control),
                evalsha_usec(&mut control),
                command_calls(&mut control, "evalsha"),
            );
            let done = (calls1 - calls0).max(1) as f64;
            let bytes: i64 = all[0]
                .keys()
                .iter()
                .map(|k| {
                    redis::cmd("MEMORY")
                        .arg("USAGE")
                        .arg(k)
                        .query::<Option<i64>>(&mut control)
                        .unwrap()
                        .unwrap_or(0)
                })
                .sum();
            println!(
                "{name:<22} {clients:>7} {:>16.1} {:>16.2} {bytes:>14} {:>12.0}",
                (cpu1 - cpu0) * 1e6 / done,
                (usec1 - usec0) / done,
                done / took.as_secs_f64(),
            );
        }
    }
}

fn main() {
    let server = RedisServer::start();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut criterion = Criterion::default().configure_from_args();
    acquire_throughput(&mut criterion, &rt, &server);
    pipelined_callers(&mut criterion, &rt, &server);
    criterion.final_summary();
    // `cargo bench` passes --bench; under `cargo test` run a short smoke pass.
    let benching = std::env::args().any(|a| a == "--bench");
    cpu_and_memory(&rt, &server, if benching { 40_000 } else { 400 });
}
