//! A run of Resilience4j's default circuit-breaker configuration
//! (COUNT_BASED window of 100, minimum 100 calls, 50 % failures, slow at 60 s
//! and 100 %, 60 s open, 10 half-open probes, no half-open time limit): why
//! a breaker on defaults stayed CLOSED through a one-minute outage.
//!
//! Every call is a real HTTP request to the lab's downstream; the 60 s waits
//! and the 30 s calls pass on the lab's clock, so the mode takes no real time.

use std::net::SocketAddr;
use std::time::Duration;

use resil::circuit_breaker::Metrics;
use resil::ErrorKind;
use tokio::sync::mpsc;

use crate::downstream::Downstream;
use crate::lab::Lab;
use crate::price::{self, PriceError};

/// A price query on Resilience4j's defaults (`defaults`: no entry in lab.yaml).
#[resil::circuit_breaker(name = "defaults")]
async fn call(downstream: SocketAddr, behaviour: &'static str) -> Result<u32, PriceError> {
    price::fetch(downstream, behaviour).await
}

/// The defaults with `ignore-exceptions: [business_rejected]`.
#[resil::circuit_breaker(name = "defaults-ignore-business")]
async fn ignoring_business(downstream: SocketAddr, behaviour: &str) -> Result<u32, PriceError> {
    price::fetch(downstream, behaviour).await
}

/// The defaults with `record-exceptions: [dependency_failure]`.
#[resil::circuit_breaker(name = "defaults-record-dependency")]
async fn recording_dependency(downstream: SocketAddr, behaviour: &str) -> Result<u32, PriceError> {
    price::fetch(downstream, behaviour).await
}

/// The defaults with a 2 s slow threshold at 50 %.
#[resil::circuit_breaker(name = "defaults-slow")]
async fn slow_at_2s(downstream: SocketAddr, behaviour: &str) -> Result<u32, PriceError> {
    price::fetch(downstream, behaviour).await
}

/// The export endpoint, behind the service's one breaker (`defaults-service`).
#[resil::circuit_breaker(name = "defaults-service")]
async fn export_shared(downstream: SocketAddr) -> Result<u32, PriceError> {
    price::fetch(downstream, "503").await
}

/// The query endpoint, behind the same breaker.
#[resil::circuit_breaker(name = "defaults-service")]
async fn query_shared(downstream: SocketAddr) -> Result<u32, PriceError> {
    price::fetch(downstream, "ok").await
}

/// The export endpoint with its own breaker.
#[resil::circuit_breaker(name = "defaults-export")]
async fn export_own(downstream: SocketAddr) -> Result<u32, PriceError> {
    price::fetch(downstream, "503").await
}

/// The query endpoint with its own breaker.
#[resil::circuit_breaker(name = "defaults-query")]
async fn query_own(downstream: SocketAddr) -> Result<u32, PriceError> {
    price::fetch(downstream, "ok").await
}

/// One breaker for a service of ten load-balanced instances.
#[resil::circuit_breaker(name = "defaults-instances")]
async fn any_instance(instance: SocketAddr) -> Result<u32, PriceError> {
    price::fetch(instance, "ok").await
}

/// `state=… buffered=… failed=… slow=… failureRate=…`: the window as
/// Resilience4j's metrics report it (`-1.0`: no rate yet, below the minimum number of calls).
fn window(m: &Metrics) -> String {
    format!(
        "state={} buffered={} failed={} slow={} failureRate={:.1}",
        m.state(),
        m.buffered_calls(),
        m.failed_calls(),
        m.slow_calls(),
        m.failure_rate().unwrap_or(-1.0)
    )
}

/// Every default, one experiment each: the window's minimum, OPEN, the way
/// back through HALF_OPEN, what counts as a failure, slow calls, and what one
/// breaker covers.
pub async fn run(lab: &Lab) -> Vec<String> {
    let downstream = Downstream::start(&lab.clock).await;
    let at = downstream.addr();
    let registry = resil::registry();
    let breaker = registry.circuit_breaker("defaults");
    // No settings but the defaults: 60 s.
    let wait = breaker.config().wait_duration_in_open_state();
    let mut out = Vec::new();

    // §二 The window is not full: 99 failures in a row open nothing.
    for _ in 0..99 {
        let _ = call(at, "503").await;
    }
    out.push(format!("failures=99 {}", window(&breaker.metrics())));
    let _ = call(at, "503").await;
    out.push(format!("failures=100 {}", window(&breaker.metrics())));

    breaker.reset();
    for _ in 0..100 {
        let _ = call(at, "ok").await;
    }
    for _ in 0..49 {
        let _ = call(at, "503").await;
    }
    out.push(format!(
        "successes=100 failures=49 {}",
        window(&breaker.metrics())
    ));
    let _ = call(at, "503").await;
    out.push(format!(
        "successes=100 failures=50 {}",
        window(&breaker.metrics())
    ));

    // §三 While open, nothing reaches the downstream.
    let before = downstream.requests();
    let mut refused = 0;
    for _ in 0..50 {
        refused += u32::from(
            call(at, "ok")
                .await
                .is_err_and(|e| e.is_refusal(ErrorKind::CallNotPermitted)),
        );
    }
    out.push(format!(
        "whileOpen calls=50 httpCalls={} callNotPermitted={refused}",
        downstream.requests() - before
    ));

    // §四 The wait passing changes nothing until a call comes.
    lab.wait(wait * 2);
    out.push(format!(
        "waited={}s newCalls=0 state={}",
        (wait * 2).as_secs(),
        breaker.state()
    ));

    // 15 concurrent calls, none returned yet: 10 probes, 5 refused. (The
    // wait is long past: the first of them moves the breaker to HALF_OPEN.)
    let (done, mut results) = mpsc::unbounded_channel();
    for _ in 0..15 {
        let done = done.clone();
        tokio::spawn(async move {
            let _ = done.send(call(at, "hold").await);
        });
    }
    let mut rejected = 0;
    for _ in 0..5 {
        let refused = results.recv().await.expect("a refused call");
        rejected += u32::from(refused.is_err_and(|e| e.is_refusal(ErrorKind::CallNotPermitted)));
    }
    downstream.held(10).await;
    out.push(format!(
        "halfOpen concurrent=15 permitted={} rejected={rejected} state={}",
        downstream.active(),
        breaker.state()
    ));

    // The 10 probes answer: 5 failures re-open it.
    downstream.release(5);
    let mut failed = 0;
    for _ in 0..10 {
        failed += u32::from(results.recv().await.expect("a probe").is_err());
    }
    out.push(format!(
        "probes=10 failed={failed} state={}",
        breaker.state()
    ));

    // Half-open again (strictly after the wait, as in Resilience4j): 4
    // failures of 10 close it.
    lab.wait(wait + Duration::from_millis(1));
    let mut failed = 0;
    for i in 0..10 {
        failed += u32::from(call(at, if i < 4 { "503" } else { "ok" }).await.is_err());
    }
    out.push(format!(
        "probes=10 failed={failed} state={}",
        breaker.state()
    ));

    // 10 probes that never return keep it HALF_OPEN, refusing everyone else.
    breaker.reset();
    for _ in 0..100 {
        let _ = call(at, "503").await;
    }
    lab.wait(wait + Duration::from_millis(1));
    for _ in 0..10 {
        let done = done.clone();
        tokio::spawn(async move {
            let _ = done.send(call(at, "hold").await);
        });
    }
    downstream.held(10).await;
    lab.wait(wait * 2);
    let next = call(at, "ok").await;
    out.push(format!(
        "probesHung={} waited={}s state={} newCallPermitted={}",
        downstream.active(),
        (wait * 2).as_secs(),
        breaker.state(),
        next.is_ok()
    ));
    downstream.release(0);
    for _ in 0..10 {
        let _ = results.recv().await;
    }

    // §五 What counts as a failure: 60 business errors in 100 calls.
    breaker.reset();
    for i in 0..100 {
        let _ = call(at, if i % 5 < 3 { "403" } else { "ok" }).await;
    }
    out.push(format!(
        "businessErrors=60 successes=40 {}",
        window(&breaker.metrics())
    ));
    for i in 0..100 {
        let _ = ignoring_business(at, if i % 5 < 3 { "403" } else { "ok" }).await;
    }
    out.push(format!(
        "ignoreExceptions=business_rejected {}",
        window(
            &registry
                .circuit_breaker("defaults-ignore-business")
                .metrics()
        )
    ));
    for i in 0..100 {
        let _ = recording_dependency(at, if i % 5 < 3 { "403" } else { "ok" }).await;
    }
    out.push(format!(
        "recordExceptions=dependency_failure {}",
        window(
            &registry
                .circuit_breaker("defaults-record-dependency")
                .metrics()
        )
    ));

    // §六 Slow but successful: 100 calls of 30 s each.
    breaker.reset();
    for _ in 0..100 {
        let _ = call(at, "slow/30000").await;
    }
    out.push(format!("calls=100 each=30s {}", window(&breaker.metrics())));
    for _ in 0..100 {
        let _ = slow_at_2s(at, "slow/30000").await;
    }
    out.push(format!(
        "slowCallDurationThreshold=2s slowCallRateThreshold=50 {}",
        window(&registry.circuit_breaker("defaults-slow").metrics())
    ));

    // §七 One breaker for two endpoints: the failing export opens it for the
    // healthy query.
    for _ in 0..50 {
        let _ = export_shared(at).await;
        let _ = query_shared(at).await;
    }
    let shared = registry.circuit_breaker("defaults-service");
    let next = query_shared(at).await;
    out.push(format!(
        "sharedBreaker exports=50 queries=50 {} queryPermitted={}",
        window(&shared.metrics()),
        next.is_ok()
    ));
    for _ in 0..100 {
        let _ = export_own(at).await;
        let _ = query_own(at).await;
    }
    out.push(format!(
        "ownBreakers export={} query={}",
        registry.circuit_breaker("defaults-export").state(),
        registry.circuit_breaker("defaults-query").state()
    ));

    // One bad instance of ten: 10 % failures, far from the threshold.
    let mut instances = vec![Downstream::start_broken(&lab.clock).await];
    for _ in 1..10 {
        instances.push(Downstream::start(&lab.clock).await);
    }
    for i in 0..100 {
        let _ = any_instance(instances[i % instances.len()].addr()).await;
    }
    out.push(format!(
        "instances=10 bad=1 {}",
        window(&registry.circuit_breaker("defaults-instances").metrics())
    ));
    out
}
