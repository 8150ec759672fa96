//! The protection lab (`cargo run --example lab`), every mode, line by line.
//!
//! The expected lines are seed 003's for its eight mechanisms (its Java lab
//! prints exactly these), the lab's own for the three governance experiments
//! and `timeout` (which seed 003 names but does not print), and seed 002's
//! numbers for `defaults`, in the lab's `key=value` form.
//!
//! The modes run as the example runs them: the example's own modules, the
//! process-wide registry loaded from `examples/lab/lab.yaml` on the lab's
//! manual clock, real HTTP on 127.0.0.1. Deterministic: the lab's time moves
//! only when a mode moves it, held requests are waited for by count, and the
//! one real timer (the time limiter's 100 ms) fires while the request it
//! times out is held by the server.

#[allow(dead_code)]
#[path = "../examples/lab/defaults.rs"]
mod defaults;
#[allow(dead_code)]
#[path = "../examples/lab/downstream.rs"]
mod downstream;
#[allow(dead_code)]
#[path = "../examples/lab/governance.rs"]
mod governance;
#[allow(dead_code)]
#[path = "../examples/lab/http.rs"]
mod http;
#[allow(dead_code)]
#[path = "../examples/lab/lab.rs"]
mod lab;
#[allow(dead_code)]
#[path = "../examples/lab/mechanisms.rs"]
mod mechanisms;
#[allow(dead_code)]
#[path = "../examples/lab/overload.rs"]
mod overload;
#[allow(dead_code)]
#[path = "../examples/lab/price.rs"]
mod price;
#[allow(dead_code)]
#[path = "../examples/lab/tenants.rs"]
mod tenants;

use std::sync::OnceLock;

use tokio::sync::{Mutex, MutexGuard};

/// What each mode prints.
const EXPECTED: [(&str, &[&str]); 15] = [
    // seed 003: four failures open it (minimum 4 calls), OPEN refuses without
    // calling, two probes and a query make 7 requests.
    (
        "circuit",
        &[
            "after3 state=CLOSED buffered=3 failed=3",
            "open state=OPEN httpCalls=4 rejected=1",
            "probe1 state=HALF_OPEN",
            "recovered state=CLOSED httpCalls=7",
        ],
    ),
    // seed 003: four 250 ms answers against a 150 ms threshold.
    ("slow", &["state=OPEN failed=0 slow=4 slowRate=100"]),
    // seed 003: four real 403s, no sample.
    ("classification", &["business403=4 buffered=0 state=CLOSED"]),
    // seed 003: two held reports, a third refused locally, payment isolated.
    (
        "bulkhead",
        &[
            "held=2 reportAvailable=0 reportRejected=1 payment=42",
            "recovered reportAvailable=2 next=42",
        ],
    ),
    // seed 003: a sync wrapper frees its slot before the work ends.
    (
        "async",
        &[
            "syncWrapper serverActive=1 available=1",
            "asyncWrapper serverActive=1 available=0 rejected=BulkheadFullException",
            "asyncCompleted available=1",
        ],
    ),
    // seed 003: 2 per 2 s, no waiting.
    (
        "rate",
        &[
            "periodAccepted=2 rejected=1 httpCalls=2",
            "nextPeriod=42 httpCalls=3",
        ],
    ),
    // seed 003: every attempt a sample, or one sample per logical call.
    (
        "order",
        &["retryOutside failedSamples=3 circuitOutside failedSamples=1 httpCalls=6"],
    ),
    // seed 003: a cached price only for a failure, only while fresh.
    (
        "fallback",
        &[
            "first=LIVE failure=CACHE forbidden=BusinessRejected",
            "expired=DependencyFailure",
        ],
    ),
    // Isolation covers only what is split: payment's own bulkhead is free,
    // and it fails on the database pool the reports hold.
    (
        "shared",
        &[
            "held=2 reportAvailable=0 paymentAvailable=2 payment=DependencyFailure sharedPoolFree=0",
            "recovered sharedPoolFree=2 payment=42",
        ],
    ),
    // seed 002 §七 with seed 003's breaker: one breaker for two endpoints
    // opens on the failing one for both; one each opens only the export's.
    (
        "shared-breaker",
        &[
            "oneBreaker exportFailed=2 querySucceeded=2 state=OPEN nextQuery=CallNotPermittedException",
            "ownBreakers export=OPEN query=CLOSED nextQuery=42",
        ],
    ),
    // Three layers of 3 attempts: 27 requests at the bottom per call; with a
    // 20 % budget per layer, 10 calls make 16 (at most 10 × 1.2³ ≈ 17.3).
    (
        "amplification",
        &[
            "layers=3 maxAttempts=3 calls=1 bottomRequests=27",
            "withoutBudget calls=10 bottomRequests=270",
            "withBudget retryRatio=0.2 calls=10 bottomRequests=16 budgetExhausted=10",
        ],
    ),
    // A timeout stops the waiting, not the server's work.
    (
        "timeout",
        &[
            "timeout=TimeoutException httpCalls=1 serverActive=1",
            "afterTimeout serverActive=0 serverCompleted=1",
        ],
    ),
    // seed 002 §二 to §七, Resilience4j's defaults.
    (
        "defaults",
        &[
            // §二 99 failures: no verdict below 100 calls; the 100th opens it.
            "failures=99 state=CLOSED buffered=99 failed=99 slow=0 failureRate=-1.0",
            "failures=100 state=OPEN buffered=100 failed=100 slow=0 failureRate=100.0",
            // 50 failures must push out half the successes.
            "successes=100 failures=49 state=CLOSED buffered=100 failed=49 slow=0 failureRate=49.0",
            "successes=100 failures=50 state=OPEN buffered=100 failed=50 slow=0 failureRate=50.0",
            // §三 OPEN: nothing reaches the downstream.
            "whileOpen calls=50 httpCalls=0 callNotPermitted=50",
            // §四 no automatic transition; 10 probes; 5 failures re-open,
            // 4 close; hung probes keep HALF_OPEN (no time limit by default).
            "waited=120s newCalls=0 state=OPEN",
            "halfOpen concurrent=15 permitted=10 rejected=5 state=HALF_OPEN",
            "probes=10 failed=5 state=OPEN",
            "probes=10 failed=4 state=CLOSED",
            "probesHung=10 waited=120s state=HALF_OPEN newCallPermitted=false",
            // §五 every error is a failure by default; ignored, or not recorded.
            "businessErrors=60 successes=40 state=OPEN buffered=100 failed=60 slow=0 failureRate=60.0",
            "ignoreExceptions=business_rejected state=CLOSED buffered=40 failed=0 slow=0 failureRate=-1.0",
            "recordExceptions=dependency_failure state=CLOSED buffered=100 failed=0 slow=0 failureRate=0.0",
            // §六 30 s is not slow at a 60 s threshold; it is at 2 s.
            "calls=100 each=30s state=CLOSED buffered=100 failed=0 slow=0 failureRate=0.0",
            "slowCallDurationThreshold=2s slowCallRateThreshold=50 state=OPEN buffered=100 failed=0 slow=100 failureRate=0.0",
            // §七 a breaker's scope, and one bad instance of ten.
            "sharedBreaker exports=50 queries=50 state=OPEN buffered=100 failed=50 slow=0 failureRate=50.0 queryPermitted=false",
            "ownBreakers export=OPEN query=CLOSED",
            "instances=10 bad=1 state=CLOSED buffered=100 failed=10 slow=0 failureRate=10.0",
        ],
    ),
    // Issue 30: 2 C offered; with the guard and classes CRITICAL keeps all of
    // its goodput at its unloaded p99 and SHEDDABLE takes the refusals; with
    // the guard alone CRITICAL loses its share; with neither, every answer
    // comes after its client's deadline.
    ("overload", OVERLOAD_LINES),
    // issue 29: a quota per tenant at the edge (the keyed layer by
    // `x-tenant`): the noisy tenant gets its 5 a second and no more, the
    // quiet one and the gold tier everything they send.
    (
        "tenants",
        &[
            "quota=5/1s per tenant, gold-*=20 ticks=3",
            "noisy tenant=acme sent=60 ok=15 refused=45",
            "quiet tenant=globex sent=9 ok=9 refused=0",
            "gold tenant=gold-initech sent=60 ok=60 refused=0",
            "no-header status=400 body=\"no `x-tenant` header\"",
            "family keys=3 topRefused=acme",
        ],
    ),
];

const OVERLOAD_LINES: &[&str] = &[
    "capacity=20/100ms clients critical=12 sheddable=28 deadline=150ms ticks=30",
    "unloaded CRITICAL offered=360 goodput=360 (100.0%) refused=0 late=0 p99=100ms",
    "guarded CRITICAL offered=360 goodput=360 (100.0%) refused=0 late=0 p99=100ms",
    "guarded SHEDDABLE offered=840 goodput=150 (17.9%) refused=690 late=0 p99=100ms",
    "guarded guard refused=0",
    "no-classes CRITICAL offered=360 goodput=300 (83.3%) refused=60 late=0 p99=100ms",
    "no-classes SHEDDABLE offered=840 goodput=300 (35.7%) refused=540 late=0 p99=100ms",
    "no-classes guard refused=0",
    "unguarded CRITICAL offered=190 goodput=10 (5.3%) refused=0 late=170 p99=200ms",
    "unguarded SHEDDABLE offered=430 goodput=10 (2.3%) refused=0 late=410 p99=200ms",
];

/// The lab, configured once per test binary (the process-wide registry can
/// be set once), and a turn: the modes share the lab's clock, so they run one
/// at a time.
async fn turn() -> (&'static lab::Lab, MutexGuard<'static, ()>) {
    static LAB: OnceLock<lab::Lab> = OnceLock::new();
    static TURN: Mutex<()> = Mutex::const_new(());
    let guard = TURN.lock().await;
    let lab = LAB.get_or_init(|| lab::init().expect("lab.yaml loads"));
    (lab, guard)
}

fn expected(mode: &str) -> Vec<String> {
    let (_, lines) = EXPECTED
        .iter()
        .find(|(m, _)| *m == mode)
        .unwrap_or_else(|| panic!("no expected lines for `{mode}`"));
    lines.iter().map(|l| (*l).to_owned()).collect()
}

async fn check(mode: &str) {
    let (lab, _turn) = turn().await;
    assert_eq!(lab::run(lab, mode).await, expected(mode), "mode `{mode}`");
}

#[test]
fn every_mode_has_its_lines_and_runs_in_the_example_order() {
    let listed: Vec<&str> = EXPECTED.iter().map(|(m, _)| *m).collect();
    assert_eq!(listed, lab::MODES);
}

#[test]
fn lab_yaml_loads_with_the_lab_error_classes_and_names_every_instance_used() {
    let registry = lab::registry(&resil::clock::ManualClock::new()).expect("lab.yaml loads");
    // Seed 003's breaker, through `base-config: price`.
    let breaker = registry.circuit_breaker("price-circuit");
    let config = breaker.config();
    assert_eq!(config.sliding_window_size(), 4);
    assert_eq!(config.minimum_number_of_calls(), 4);
    assert_eq!(config.failure_rate_threshold(), 50.0);
    assert_eq!(config.slow_call_rate_threshold(), 100.0);
    assert_eq!(
        config.wait_duration_in_open_state(),
        std::time::Duration::from_millis(400)
    );
    assert_eq!(config.permitted_number_of_calls_in_half_open_state(), 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn circuit() {
    check("circuit").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow() {
    check("slow").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn classification() {
    check("classification").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bulkhead() {
    check("bulkhead").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_permits() {
    check("async").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rate() {
    check("rate").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn order() {
    check("order").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fallback() {
    check("fallback").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared() {
    check("shared").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shared_breaker() {
    check("shared-breaker").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn amplification() {
    check("amplification").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeout() {
    check("timeout").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn defaults() {
    check("defaults").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overload() {
    check("overload").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tenants() {
    check("tenants").await;
}

/// The overload drill's promises, read from the lines: with the guard and
/// classes, CRITICAL's goodput is at least 95 % of what it offers and its
/// p99 at most twice its unloaded p99, SHEDDABLE takes the refusals;
/// without them, CRITICAL's goodput collapses.
#[test]
fn the_overload_lines_keep_the_drill_s_promises() {
    let field = |line: &str, key: &str| -> f64 {
        let v = line
            .split_whitespace()
            .find_map(|w| w.strip_prefix(key))
            .unwrap_or_else(|| panic!("`{key}` in `{line}`"));
        v.trim_end_matches("ms")
            .trim_matches(|c| c == '(' || c == ')' || c == '%')
            .parse()
            .unwrap()
    };
    let line = |prefix: &str| {
        *OVERLOAD_LINES
            .iter()
            .find(|l| l.starts_with(prefix))
            .unwrap_or_else(|| panic!("a line `{prefix}…`"))
    };
    let unloaded = line("unloaded CRITICAL");
    let guarded = line("guarded CRITICAL");
    let shed = line("guarded SHEDDABLE");
    let unguarded = line("unguarded CRITICAL");
    let goodput = |l: &str| field(l, "goodput=") / field(l, "offered=");
    assert!(goodput(guarded) >= 0.95, "{guarded}");
    assert!(
        field(guarded, "p99=") <= 2.0 * field(unloaded, "p99="),
        "{guarded}"
    );
    assert_eq!(field(guarded, "refused="), 0.0, "{guarded}");
    assert!(field(shed, "refused=") > 0.0, "{shed}");
    assert!(goodput(unguarded) < 0.5, "{unguarded}");
    // The offered load is twice the capacity.
    assert_eq!(
        overload::CRITICAL + overload::SHEDDABLE,
        2 * overload::CAPACITY
    );
}

/// The README shows the `circuit` mode: its annotated fn as the lab has it,
/// its `lab.yaml` entry as the file has it, and the lines the mode prints.
#[test]
fn the_readme_shows_the_circuit_mode_as_it_is() {
    let root = env!("CARGO_MANIFEST_DIR");
    let read = |path: &str| {
        std::fs::read_to_string(format!("{root}/{path}")).unwrap_or_else(|e| panic!("{path}: {e}"))
    };
    let readme = read("README.md");
    let code = read("examples/lab/mechanisms.rs");
    let yaml = read("examples/lab/lab.yaml");
    assert!(
        readme.contains("cargo run --example lab "),
        "the README's first command"
    );

    let annotated = "#[resil::circuit_breaker(name = \"price-circuit\")]\n\
        async fn circuit_price(downstream: SocketAddr, behaviour: &str) -> Result<u32, PriceError> {\n    \
        price::fetch(downstream, behaviour).await\n}\n";
    assert!(
        code.contains(annotated),
        "mechanisms.rs has the fn the README shows"
    );
    assert!(
        readme.contains(annotated),
        "the README shows the fn mechanisms.rs has"
    );

    // Every setting line the README shows is in lab.yaml, as written.
    let shown = readme
        .split("```yaml\n")
        .nth(1)
        .and_then(|rest| rest.split("```").next())
        .expect("the README's lab.yaml block");
    assert!(shown.contains("price-circuit: { base-config: price }"));
    for line in shown.lines() {
        assert!(yaml.lines().any(|l| l == line), "lab.yaml lacks `{line}`");
    }

    let printed = format!("== circuit\n{}\n", expected("circuit").join("\n"));
    assert!(readme.contains(&printed), "the README prints:\n{printed}");
}
