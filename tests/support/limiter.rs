//! What the distributed rate limiter's tests share: building a limiter from
//! a builder, a multi-thread runtime whose guard turns a hang into a
//! failure, and the child process's loop of the multi-process tests. Each
//! test binary uses some of them.
#![allow(dead_code)]

use std::time::{Duration, Instant};

use resil::distributed_rate_limiter::{
    DecidedBy, DistributedRateLimiter, DistributedRateLimiterConfigBuilder,
};

pub fn limiter(name: &str, config: DistributedRateLimiterConfigBuilder) -> DistributedRateLimiter {
    DistributedRateLimiter::new(name, config.build().unwrap()).unwrap()
}

/// Runs `f` on a multi-thread runtime; a test that hangs fails after 60 s.
pub fn run<F: std::future::Future<Output = ()>>(f: F) {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            tokio::time::timeout(Duration::from_secs(60), f)
                .await
                .expect("the test hung for 60 s");
        });
}

/// A child process's part of the multi-process tests: three tasks acquire
/// from `limiter` for one second, every grant must come from Redis, and each
/// grant's server time is printed as `GRANT <micros>`, then
/// `FALLBACK <count>`, for the parent to read.
pub fn acquire_for_one_second_and_print(limiter: &DistributedRateLimiter) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let stop = Instant::now() + Duration::from_secs(1);
        let mut tasks = Vec::new();
        for _ in 0..3 {
            let limiter = limiter.clone();
            tasks.push(tokio::spawn(async move {
                let mut grants = Vec::new();
                while Instant::now() < stop {
                    if let Ok(grant) = limiter.acquire_async().await {
                        assert_eq!(grant.decided_by(), DecidedBy::Redis);
                        grants.push(grant.server_time_micros().unwrap());
                    }
                }
                grants
            }));
        }
        for task in tasks {
            for t in task.await.unwrap() {
                println!("GRANT {t}");
            }
        }
    });
    println!("FALLBACK {}", limiter.metrics().fallback_decisions());
}
