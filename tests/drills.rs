//! `cargo run --example drills`: the ten fault drills against the inventory
//! service's instances (`examples/inventory_service.toml`), every drill
//! passing with the evidence it claims, line by line; and the same drills
//! against a file with three mistakes, each failing the drill it breaks.
//!
//! The drills run as the example runs them (its own modules), on tokio's
//! paused clock: the open waits, injected latencies and timeouts are virtual
//! time, so the lines are the same on a busy machine.

#[allow(dead_code)]
#[path = "../examples/drills/drills.rs"]
mod drills;
#[allow(dead_code)]
#[path = "../examples/drills/service.rs"]
mod service;

const CONFIG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/examples/inventory_service.toml"
);
const MISCONFIGURED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/data/drills/misconfigured.toml"
);

fn lines(drills: &[drills::Drill]) -> Vec<String> {
    let mut out: Vec<String> = drills.iter().flat_map(drills::Drill::lines).collect();
    let passed = drills.iter().filter(|d| d.passed()).count();
    out.push(format!("{passed} of {} drills passed", drills.len()));
    out
}

#[tokio::test(start_paused = true)]
async fn every_drill_passes_on_the_inventory_service_s_instances_with_its_evidence() {
    let drills = drills::run_all(CONFIG).await.unwrap();
    assert_eq!(drills.len(), 10);
    for d in &drills {
        assert!(d.passed(), "drill {} failed: {:?}", d.number, d.failures);
    }
    let expected = [
        "== drill 1: a downstream failing with 500s opens the breaker once minimum-number-of-calls is reached .. PASS",
        "   after 4 queries: reached=8 state=CLOSED buffered=8 failed=8 slow=0 failureRate=-1.0 slowRate=-1.0 notPermitted=0",
        "   after 5 queries: reached=10 state=OPEN buffered=10 failed=10 slow=0 failureRate=100.0 slowRate=0.0 notPermitted=0",
        "   totals reached=10 served=0 fallbacks=5 permits=20/20",
        "== drill 2: a downstream that answers, slowly, opens the breaker on its slow-call rate .. PASS",
        "   injected latency=650ms slowThreshold=500ms timeout=800ms",
        "   after 10 queries: answered=10 state=OPEN buffered=10 failed=0 slow=10 failureRate=0.0 slowRate=100.0 notPermitted=0",
        "   totals reached=10 served=10 fallbacks=0 permits=20/20",
        "== drill 3: while OPEN, no call reaches the downstream .. PASS",
        "   20 queries over 8000ms of the 10000ms open wait: reached=10 (was 10) refused=20 fallbacks=20 state=OPEN buffered=10 failed=10 slow=0 failureRate=100.0 slowRate=0.0 notPermitted=20",
        "   totals reached=10 served=0 fallbacks=25 permits=20/20",
        "== drill 4: HALF_OPEN lets exactly the configured number of probes through .. PASS",
        "   5 concurrent queries after the open wait: through=3 refused=2 inFlight=3 state=HALF_OPEN buffered=0 failed=0 slow=0 failureRate=-1.0 slowRate=-1.0 notPermitted=2",
        "   totals reached=13 served=3 fallbacks=7 permits=20/20",
        "== drill 5: a recovered downstream closes the breaker without a flood of calls .. PASS",
        "   probes answered=3 served=3 peakInFlight=3 state=CLOSED",
        "   10 queries after closing: answered=10 reached=10",
        "   totals reached=23 served=13 fallbacks=7 permits=20/20",
        "== drill 6: a full bulkhead refuses at once, and the core dependency still answers .. PASS",
        "   21 concurrent queries: inFlight=20 refused=1 (bulkhead_full=1) refusedAfter=0ms permitsFree=0/20",
        "   core dependency pricing: Ok(42)",
        "   totals reached=20 served=20 fallbacks=1 permits=20/20",
        "== drill 7: after a timeout the downstream may still do the work; an idempotent query converges .. PASS",
        "   reserve order-17: timeout after 800ms; server: reservation=Some(false) commits=0",
        "   2000ms later: server commits=1 (the timeout was not a failure of the work)",
        "   status order-17: COMMITTED; resubmitted with the same key: ok; commits=1",
        "   totals reached=0 served=0 fallbacks=0 permits=20/20",
        "== drill 8: only the listed errors are retried, within max-attempts .. PASS",
        "   3 queries failing with inventory_connection: attempts at the downstream=6 (max-attempts=2)",
        "   3 queries failing with inventory_business: attempts at the downstream=3 (max-attempts=2)",
        "   3 queries failing with inventory_throttled: attempts at the downstream=3 (max-attempts=2)",
        "== drill 9: the fallback says UNKNOWN and degraded, and writes no business fact .. PASS",
        "   healthy: AVAILABLE(7); failing: UNKNOWN(reason=inventory_connection, degraded=true); open: UNKNOWN(reason=call_not_permitted, degraded=true)",
        "   stockWrites=1 (1 from the healthy answer; fallbacks write none)",
        "   totals reached=10 served=1 fallbacks=6 permits=20/20",
        "== drill 10: events, metrics and health explain every state change .. PASS",
        "   states seen: CLOSED -> OPEN -> HALF_OPEN -> CLOSED",
        "   transition events: CLOSED->OPEN, OPEN->HALF_OPEN, HALF_OPEN->CLOSED",
        "   FAILURE_RATE_EXCEEDED events=1 NOT_PERMITTED events=3 (metrics: 1 while OPEN, then 2 refused probes)",
        "   health: before=UP open=DEGRADED (circuit_breaker `inventory-query`: OPEN: failure rate 100% (threshold 50%), slow-call rate 0% (threshold 60%)) after=UP",
        "   totals reached=13 served=3 fallbacks=8 permits=20/20",
        "10 of 10 drills passed",
    ];
    assert_eq!(lines(&drills), expected);
}

#[tokio::test(start_paused = true)]
async fn a_misconfigured_file_fails_the_drills_its_mistakes_break() {
    let drills = drills::run_all(MISCONFIGURED).await.unwrap();
    let failed: Vec<usize> = drills
        .iter()
        .filter(|d| !d.passed())
        .map(|d| d.number)
        .collect();
    assert_eq!(failed, [2, 6, 8], "{:#?}", drills);
    let failures = |n: usize| drills[n - 1].failures.clone();
    // A slow-call threshold above the timeout: slow calls time out and count
    // as failures; none is ever "slow".
    assert_eq!(
        failures(2),
        [
            "every call answered, none failed (answered=0 of 5, failed=10)",
            "every call slow",
        ]
    );
    // A bulkhead that queues: the 21st call waits instead of being refused.
    assert_eq!(
        failures(6),
        ["the extra call refused at once (bulkhead_full, no time passed)"]
    );
    assert!(drills[5].evidence[0].contains("refused=0 (bulkhead_full=0)"));
    // A retry of every error: a 429 is retried.
    assert_eq!(
        failures(8),
        ["inventory_throttled is not retried: expected 3 attempts, saw 6"]
    );
}

#[tokio::test(start_paused = true)]
async fn a_file_that_cannot_be_loaded_is_an_error_naming_it() {
    let err = drills::run_all("no-such-file.toml").await.unwrap_err();
    assert!(err.starts_with("no-such-file.toml: "), "{err}");
}
