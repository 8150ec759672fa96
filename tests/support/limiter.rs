//! What the distributed rate limiter's tests share: building a limiter from
//! a builder, and a multi-thread runtime whose guard turns a hang into a
//! failure.

use std::time::Duration;

use resil::distributed_rate_limiter::{
    DistributedRateLimiter, DistributedRateLimiterConfigBuilder,
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
