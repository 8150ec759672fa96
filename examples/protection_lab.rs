//! The protection lab: seed 003's experiments, run against resil's primitives
//! and a simulated downstream, printing the same lines the Java lab prints.
//!
//! ```text
//! cargo run --example protection_lab            # every experiment
//! cargo run --example protection_lab -- circuit # one of: circuit slow classification
//!                                               #         bulkhead async rate order timeout
//! ```
//!
//! Time is real but short (a few hundred milliseconds per experiment), so you
//! can watch a breaker wait out its OPEN state.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use resil::bulkhead::{Bulkhead, BulkheadConfig};
use resil::circuit_breaker::{CircuitBreaker, CircuitBreakerConfig};
use resil::rate_limiter::{RateLimiter, RateLimiterConfig};
use resil::retry::{Retry, RetryConfig};
use resil::time_limiter::{TimeLimiter, TimeLimiterConfig};
use resil::Error;

/// What the simulated price service answers.
#[derive(Debug, Clone, PartialEq)]
enum Failure {
    /// HTTP 5xx or a broken connection: the dependency is unwell.
    Dependency(&'static str),
    /// HTTP 403: the caller may not see this price. Not the dependency's fault.
    BusinessRejected,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Dependency(why) => write!(f, "dependency failure: {why}"),
            Failure::BusinessRejected => f.write_str("business rejected"),
        }
    }
}

/// A downstream HTTP service, counted like the lab's handler counts requests.
#[derive(Default)]
struct Downstream {
    calls: AtomicU32,
    active: AtomicU32,
}

impl Downstream {
    fn calls(&self) -> u32 {
        self.calls.load(Ordering::SeqCst)
    }

    fn get(&self, mode: &str) -> Result<u32, Failure> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        match mode {
            "ok" => Ok(42),
            "503" => Err(Failure::Dependency("HTTP_503")),
            "403" => Err(Failure::BusinessRejected),
            "slow" => {
                std::thread::sleep(Duration::from_millis(250));
                Ok(42)
            }
            other => Err(Failure::Dependency(if other.is_empty() {
                "empty"
            } else {
                "unknown mode"
            })),
        }
    }

    /// An async request that holds the "server" until `release` is notified.
    async fn get_held(&self, release: &tokio::sync::Notify) -> Result<u32, Failure> {
        self.calls.fetch_add(1, Ordering::SeqCst);
        self.active.fetch_add(1, Ordering::SeqCst);
        release.notified().await;
        self.active.fetch_sub(1, Ordering::SeqCst);
        Ok(42)
    }
}

fn price_breaker() -> CircuitBreaker {
    let config = CircuitBreakerConfig::builder()
        .sliding_window_size(4)
        .minimum_number_of_calls(4)
        .failure_rate_threshold(50.0)
        .slow_call_duration_threshold(Duration::from_millis(150))
        .slow_call_rate_threshold(100.0)
        .wait_duration_in_open_state(Duration::from_millis(400))
        .permitted_number_of_calls_in_half_open_state(2)
        .max_wait_duration_in_half_open_state(Duration::from_secs(3))
        .record_error(|e: &Failure| matches!(e, Failure::Dependency(_)))
        .ignore_error(|e: &Failure| *e == Failure::BusinessRejected)
        .build()
        .expect("valid breaker config");
    CircuitBreaker::new("price", config)
}

fn circuit() {
    let downstream = Downstream::default();
    let cb = price_breaker();
    for _ in 0..3 {
        let _ = cb.call(|| downstream.get("503"));
    }
    let m = cb.metrics();
    println!(
        "after3 state={} buffered={} failed={}",
        m.state(),
        m.buffered_calls(),
        m.failed_calls()
    );
    let _ = cb.call(|| downstream.get("503"));
    let refused = cb.call(|| downstream.get("ok"));
    assert!(matches!(refused, Err(Error::CallNotPermitted(_))));
    println!(
        "open state={} httpCalls={} rejected={}",
        cb.state(),
        downstream.calls(),
        cb.metrics().not_permitted_calls()
    );
    std::thread::sleep(Duration::from_millis(400));
    cb.call(|| downstream.get("ok")).expect("first probe");
    println!("probe1 state={}", cb.state());
    cb.call(|| downstream.get("ok")).expect("second probe");
    cb.call(|| downstream.get("ok")).expect("ordinary query");
    println!(
        "recovered state={} httpCalls={}",
        cb.state(),
        downstream.calls()
    );
}

fn slow() {
    let downstream = Downstream::default();
    let cb = price_breaker();
    for _ in 0..4 {
        cb.call(|| downstream.get("slow")).expect("slow but fine");
    }
    let m = cb.metrics();
    println!(
        "state={} failed={} slow={} slowRate={}",
        m.state(),
        m.failed_calls(),
        m.slow_calls(),
        m.slow_call_rate().unwrap_or(-1.0)
    );
}

fn classification() {
    let downstream = Downstream::default();
    let cb = price_breaker();
    let mut rejected = 0;
    for _ in 0..4 {
        if let Err(Error::Call(Failure::BusinessRejected)) = cb.call(|| downstream.get("403")) {
            rejected += 1;
        }
    }
    println!(
        "business403={rejected} buffered={} state={}",
        cb.metrics().buffered_calls(),
        cb.state()
    );
}

async fn bulkhead() {
    let downstream = Arc::new(Downstream::default());
    let release = Arc::new(tokio::sync::Notify::new());
    let config = BulkheadConfig::builder()
        .max_concurrent_calls(2)
        .max_wait_duration(Duration::ZERO)
        .build()
        .expect("valid bulkhead config");
    let reports = Bulkhead::new("reports", config);
    let payment = Bulkhead::new("payment", config);

    let held: Vec<_> = (0..2)
        .map(|_| {
            let (reports, downstream, release) =
                (reports.clone(), downstream.clone(), release.clone());
            tokio::spawn(async move { reports.call_async(downstream.get_held(&release)).await })
        })
        .collect();
    while downstream.active.load(Ordering::SeqCst) < 2 {
        tokio::task::yield_now().await;
    }
    let before = downstream.calls();
    let third = reports.call_async(async { downstream.get("ok") }).await;
    let rejected = u32::from(matches!(third, Err(Error::BulkheadFull(_))));
    assert_eq!(downstream.calls(), before, "a rejected call never runs");
    let paid = payment
        .call_async(async { downstream.get("ok") })
        .await
        .expect("payment has its own bulkhead");
    println!(
        "held=2 reportAvailable={} reportRejected={rejected} payment={paid}",
        reports.available_concurrent_calls()
    );
    release.notify_waiters();
    for h in held {
        h.await.expect("task").expect("held call");
    }
    let next = reports
        .call_async(async { downstream.get("ok") })
        .await
        .expect("a freed slot");
    println!(
        "recovered reportAvailable={} next={next}",
        reports.available_concurrent_calls()
    );
}

async fn async_permits() {
    let downstream = Arc::new(Downstream::default());
    let config = BulkheadConfig::builder()
        .max_concurrent_calls(1)
        .build()
        .expect("valid bulkhead config");
    let reports = Bulkhead::new("reports", config);

    // A sync wrapper around async work protects only the submission.
    let release = Arc::new(tokio::sync::Notify::new());
    let (d, r) = (downstream.clone(), release.clone());
    let submitted = reports
        .call(|| Ok::<_, Failure>(tokio::spawn(async move { d.get_held(&r).await })))
        .expect("submitted");
    while downstream.active.load(Ordering::SeqCst) < 1 {
        tokio::task::yield_now().await;
    }
    println!(
        "syncWrapper serverActive={} available={}",
        downstream.active.load(Ordering::SeqCst),
        reports.available_concurrent_calls()
    );
    release.notify_waiters();
    submitted.await.expect("task").expect("held call");

    // The async wrapper holds the permit until the work itself ends.
    let (d, r, b) = (downstream.clone(), release.clone(), reports.clone());
    let held = tokio::spawn(async move { b.call_async(d.get_held(&r)).await });
    while downstream.active.load(Ordering::SeqCst) < 1 {
        tokio::task::yield_now().await;
    }
    let next = reports.call_async(async { downstream.get("ok") }).await;
    println!(
        "asyncWrapper serverActive={} available={} rejected={}",
        downstream.active.load(Ordering::SeqCst),
        reports.available_concurrent_calls(),
        match next {
            Err(Error::BulkheadFull(_)) => "BulkheadFull",
            _ => "none",
        }
    );
    release.notify_waiters();
    held.await.expect("task").expect("held call");
    println!(
        "asyncCompleted available={}",
        reports.available_concurrent_calls()
    );
}

fn rate() {
    let downstream = Downstream::default();
    let config = RateLimiterConfig::builder()
        .limit_for_period(2)
        .limit_refresh_period(Duration::from_secs(2))
        .timeout_duration(Duration::ZERO)
        .build()
        .expect("valid rate limiter config");
    let limiter = RateLimiter::new("read", config);
    let outcomes: Vec<_> = (0..3)
        .map(|_| limiter.call(|| downstream.get("ok")))
        .collect();
    let accepted = outcomes.iter().filter(|o| o.is_ok()).count();
    let rejected = outcomes
        .iter()
        .filter(|o| matches!(o, Err(Error::RequestNotPermitted(_))))
        .count();
    println!(
        "periodAccepted={accepted} rejected={rejected} httpCalls={}",
        downstream.calls()
    );
    std::thread::sleep(Duration::from_secs(2));
    let next = limiter.call(|| downstream.get("ok")).expect("next period");
    println!("nextPeriod={next} httpCalls={}", downstream.calls());
}

fn order() {
    let downstream = Downstream::default();
    let retry_config = || {
        RetryConfig::builder()
            .max_attempts(3)
            .wait_duration(Duration::from_millis(10))
            .retry_on_error(|e: &Failure| matches!(e, Failure::Dependency(_)))
            .build()
            .expect("valid retry config")
    };
    let breaker_config = || {
        CircuitBreakerConfig::builder()
            .sliding_window_size(10)
            .minimum_number_of_calls(10)
            .build()
            .expect("valid breaker config")
    };

    // Retry outside the breaker: every attempt is a sample.
    let retry = Retry::new("order", retry_config());
    let cb = CircuitBreaker::new("retry-outside", breaker_config());
    let _ = retry.call_nested(|| cb.call(|| downstream.get("503")));
    let retry_outside = cb.metrics().failed_calls();

    // The breaker outside the retry: one logical call is one sample.
    let retry = Retry::new("order", retry_config());
    let cb = CircuitBreaker::new("circuit-outside", breaker_config());
    let _ = cb.call_nested(|| retry.call(|| downstream.get("503")));
    let circuit_outside = cb.metrics().failed_calls();

    println!(
        "retryOutside failedSamples={retry_outside} circuitOutside failedSamples={circuit_outside} httpCalls={}",
        downstream.calls()
    );
}

async fn timeout() {
    let downstream = Arc::new(Downstream::default());
    let config = TimeLimiterConfig::builder()
        .timeout_duration(Duration::from_millis(100))
        .build()
        .expect("valid time limiter config");
    let limiter = TimeLimiter::new("price", config);
    let release = tokio::sync::Notify::new();
    let out = limiter.call_async(downstream.get_held(&release)).await;
    println!(
        "timeout={} httpCalls={} (the request reached the server: a timeout stops waiting, it does not undo)",
        out.as_ref().err().map(|e| e.kind().as_str()).unwrap_or("none"),
        downstream.calls()
    );
}

const EXPERIMENTS: [&str; 8] = [
    "circuit",
    "slow",
    "classification",
    "bulkhead",
    "async",
    "rate",
    "order",
    "timeout",
];

async fn run(experiment: &str) {
    match experiment {
        "circuit" => circuit(),
        "slow" => slow(),
        "classification" => classification(),
        "bulkhead" => bulkhead().await,
        "async" => async_permits().await,
        "rate" => rate(),
        "order" => order(),
        "timeout" => timeout().await,
        other => unreachable!("{other} is not in EXPERIMENTS"),
    }
}

#[tokio::main]
async fn main() {
    let selected = match std::env::args().nth(1) {
        None => EXPERIMENTS.to_vec(),
        Some(name) => match EXPERIMENTS.iter().find(|e| **e == name) {
            Some(e) => vec![*e],
            None => {
                eprintln!(
                    "unknown experiment `{name}`; expected one of: {}",
                    EXPERIMENTS.join(", ")
                );
                std::process::exit(2);
            }
        },
    };
    for experiment in selected {
        println!("== {experiment}");
        run(experiment).await;
    }
}
