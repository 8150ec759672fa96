//! The ten fault drills a protected call must pass before it is trusted,
//! each causing its fault with chaos injection and checking what the
//! protection did: states, calls that reached the downstream, fallbacks,
//! permits back at the end.
//!
//! Each drill gets a fresh registry from the config file (so a drill's
//! breaker starts CLOSED and empty) and runs on tokio's paused clock: an open
//! wait, an injected latency and a timeout pass as virtual time, the same on
//! every machine.

use std::time::Duration;

use futures::future::join_all;
use resil::chaos::ChaosConfig;
use resil::circuit_breaker::{CircuitBreakerEventKind, State};
use resil::Error;
use tokio::time::Instant;

use crate::service::{self, wait, InventoryError, Service, StockView, INSTANCE};

/// One drill's outcome.
#[derive(Debug, Clone)]
pub struct Drill {
    /// 1 to 10.
    pub number: usize,
    /// What it claims.
    pub claim: &'static str,
    /// What was observed, one `key=value` line each.
    pub evidence: Vec<String>,
    /// The checks that failed (empty: passed).
    pub failures: Vec<String>,
}

impl Drill {
    fn new(number: usize, claim: &'static str) -> Drill {
        Drill {
            number,
            claim,
            evidence: Vec::new(),
            failures: Vec::new(),
        }
    }

    /// Whether every check held.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }

    fn note(&mut self, line: impl Into<String>) {
        self.evidence.push(line.into());
    }

    fn check(&mut self, ok: bool, what: impl Into<String>) {
        if !ok {
            self.failures.push(what.into());
        }
    }

    /// The lines the example prints.
    pub fn lines(&self) -> Vec<String> {
        let mut out = vec![format!(
            "== drill {}: {} .. {}",
            self.number,
            self.claim,
            if self.passed() { "PASS" } else { "FAIL" }
        )];
        out.extend(self.evidence.iter().map(|l| format!("   {l}")));
        out.extend(self.failures.iter().map(|l| format!("   FAILED: {l}")));
        out
    }
}

/// The drills' claims, in order: the ten a protected call must pass.
pub const CLAIMS: [&str; 10] = [
    "a downstream failing with 500s opens the breaker once minimum-number-of-calls is reached",
    "a downstream that answers, slowly, opens the breaker on its slow-call rate",
    "while OPEN, no call reaches the downstream",
    "HALF_OPEN lets exactly the configured number of probes through",
    "a recovered downstream closes the breaker without a flood of calls",
    "a full bulkhead refuses at once, and the core dependency still answers",
    "after a timeout the downstream may still do the work; an idempotent query converges",
    "only the listed errors are retried, within max-attempts",
    "the fallback says UNKNOWN and degraded, and writes no business fact",
    "events, metrics and health explain every state change",
];

/// Runs every drill against the instances of `file`.
pub async fn run_all(file: &str) -> Result<Vec<Drill>, String> {
    Ok(vec![
        outage_opens(file).await?,
        slowness_opens(file).await?,
        open_blocks(file).await?,
        half_open_probes(file).await?,
        recovery_closes(file).await?,
        bulkhead_full(file).await?,
        timeout_converges(file).await?,
        retry_scope(file).await?,
        fallback_degrades(file).await?,
        explained(file).await?,
    ])
}

const TTL: Duration = Duration::from_secs(600);

fn errors(e: InventoryError) -> ChaosConfig {
    ChaosConfig::builder()
        .inject_error(1.0, move || e.clone())
        .seed(20)
        .build()
        .expect("a rate of 1.0 is valid")
}

fn latency(d: Duration) -> ChaosConfig {
    ChaosConfig::builder()
        .inject_latency(1.0, d)
        .seed(20)
        .build()
        .expect("a rate of 1.0 is valid")
}

fn none() -> ChaosConfig {
    ChaosConfig::default()
}

fn outage(file: &str) -> Result<Service, String> {
    Service::new(
        file,
        errors(InventoryError::Connection("injected 500")),
        none(),
    )
}

/// Sends failing queries until the breaker opens (at most `limit`); the
/// number of queries sent.
async fn open_breaker(svc: &Service, limit: u32) -> u32 {
    svc.chaos
        .enable_for(TTL, "drill: the downstream answers 500");
    let mut sent = 0;
    while sent < limit && svc.state() != "OPEN" {
        svc.query().await;
        sent += 1;
    }
    svc.chaos.disable("drill: the downstream is healthy again");
    sent
}

fn finish(d: &mut Drill, svc: &Service) {
    let (free, size) = svc.permits();
    d.note(svc.totals());
    d.check(free == size, format!("permits back: {free}/{size}"));
}

async fn outage_opens(file: &str) -> Result<Drill, String> {
    let mut d = Drill::new(1, CLAIMS[0]);
    let svc = outage(file)?;
    let breaker = svc.registry.circuit_breaker(INSTANCE);
    let minimum = breaker.config().minimum_number_of_calls();
    svc.chaos
        .enable_for(TTL, "drill 1: the downstream answers 500");
    let mut before = None;
    let mut sent = 0;
    while sent < 1000 && svc.state() != "OPEN" {
        before = Some((sent, svc.reached(), svc.breaker()));
        svc.query().await;
        sent += 1;
    }
    if let Some((n, reached, line)) = before {
        d.note(format!("after {n} queries: reached={reached} {line}"));
        d.check(
            reached < minimum && line.starts_with("state=CLOSED"),
            format!("CLOSED below minimum-number-of-calls {minimum}"),
        );
    }
    let at_open = svc.reached();
    d.note(format!(
        "after {sent} queries: reached={at_open} {}",
        svc.breaker()
    ));
    d.check(svc.state() == "OPEN", "the breaker opened");
    d.check(
        at_open == minimum,
        format!("opened at {at_open} failed calls, minimum-number-of-calls is {minimum}"),
    );
    d.check(
        breaker.metrics().failure_rate() == Some(100.0),
        "every sample a failure",
    );
    finish(&mut d, &svc);
    Ok(d)
}

async fn slowness_opens(file: &str) -> Result<Drill, String> {
    let mut d = Drill::new(2, CLAIMS[1]);
    let probe = service::registry(file)?;
    let slow = probe
        .circuit_breaker(INSTANCE)
        .config()
        .slow_call_duration_threshold();
    let timeout = probe.time_limiter(INSTANCE).config().timeout_duration();
    // Between the slow-call threshold and the timeout: slow, but answered.
    let delay = if slow < timeout {
        slow + (timeout - slow) / 2
    } else {
        slow + Duration::from_millis(100)
    };
    let svc = Service::new(file, none(), latency(delay))?;
    svc.latency
        .enable_for(TTL, "drill 2: the downstream answers slowly");
    d.note(format!(
        "injected latency={}ms slowThreshold={}ms timeout={}ms",
        delay.as_millis(),
        slow.as_millis(),
        timeout.as_millis()
    ));
    let (mut sent, mut answered) = (0, 0);
    while sent < 1000 && svc.state() != "OPEN" {
        if let StockView::Known(_) = svc.query().await {
            answered += 1;
        }
        sent += 1;
    }
    let m = svc.registry.circuit_breaker(INSTANCE).metrics();
    d.note(format!(
        "after {sent} queries: answered={answered} {}",
        svc.breaker()
    ));
    d.check(svc.state() == "OPEN", "the breaker opened");
    d.check(
        answered == sent && m.failed_calls() == 0,
        format!(
            "every call answered, none failed (answered={answered} of {sent}, failed={})",
            m.failed_calls()
        ),
    );
    d.check(
        m.slow_calls() > 0 && m.slow_call_rate().unwrap_or(0.0) >= 100.0,
        "every call slow",
    );
    finish(&mut d, &svc);
    Ok(d)
}

async fn open_blocks(file: &str) -> Result<Drill, String> {
    let mut d = Drill::new(3, CLAIMS[2]);
    let svc = outage(file)?;
    open_breaker(&svc, 1000).await;
    let open_wait = svc
        .registry
        .circuit_breaker(INSTANCE)
        .config()
        .wait_duration_in_open_state();
    let (reached, fallbacks) = (svc.reached(), svc.fallbacks());
    svc.chaos
        .enable_for(TTL, "drill 3: the downstream still fails");
    let mut refused = 0;
    for _ in 0..20 {
        if svc.query().await
            == (StockView::Unknown {
                reason: "call_not_permitted",
            })
        {
            refused += 1;
        }
        wait(open_wait / 25).await;
    }
    d.note(format!(
        "20 queries over {}ms of the {}ms open wait: reached={} (was {reached}) \
         refused={refused} fallbacks={} {}",
        (open_wait / 25 * 20).as_millis(),
        open_wait.as_millis(),
        svc.reached(),
        svc.fallbacks() - fallbacks,
        svc.breaker()
    ));
    d.check(svc.reached() == reached, "no call reached the downstream");
    d.check(refused == 20, "every query refused as call_not_permitted");
    d.check(svc.state() == "OPEN", "still OPEN");
    finish(&mut d, &svc);
    Ok(d)
}

/// Opens the breaker, waits out the open wait, then sends `permitted + 2`
/// concurrent queries to a healthy downstream whose answers take a while:
/// the evidence while they are held, then once they answered.
async fn probe(svc: &Service) -> (u32, u32, u32, String, Vec<StockView>) {
    let breaker = svc.registry.circuit_breaker(INSTANCE);
    let permitted = breaker
        .config()
        .permitted_number_of_calls_in_half_open_state();
    open_breaker(svc, 1000).await;
    // The wait is over once strictly more than it has passed (Resilience4j's
    // `isAfter`).
    wait(breaker.config().wait_duration_in_open_state() + Duration::from_millis(1)).await;
    svc.latency
        .enable_for(TTL, "drill: the recovered downstream answers in slow/2");
    svc.reset_peak();
    let (reached, fallbacks) = (svc.reached(), svc.fallbacks());
    let arrivals = permitted + 2;
    let queries = join_all((0..arrivals).map(|_| svc.query()));
    let held = async {
        // Every query has had its first poll; no time has passed.
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        (
            svc.reached() - reached,
            svc.fallbacks() - fallbacks,
            svc.in_flight(),
            svc.breaker(),
        )
    };
    let (views, (through, refused, in_flight, line)) = futures::join!(queries, held);
    (through, refused, in_flight, line, views)
}

fn recovery(file: &str) -> Result<Service, String> {
    let slow = service::registry(file)?
        .circuit_breaker(INSTANCE)
        .config()
        .slow_call_duration_threshold();
    Service::new(
        file,
        errors(InventoryError::Connection("injected 500")),
        latency(slow / 2),
    )
}

async fn half_open_probes(file: &str) -> Result<Drill, String> {
    let mut d = Drill::new(4, CLAIMS[3]);
    let svc = recovery(file)?;
    let permitted = svc
        .registry
        .circuit_breaker(INSTANCE)
        .config()
        .permitted_number_of_calls_in_half_open_state();
    let (through, refused, in_flight, line, _) = probe(&svc).await;
    d.note(format!(
        "{} concurrent queries after the open wait: through={through} refused={refused} \
         inFlight={in_flight} {line}",
        permitted + 2
    ));
    d.check(
        through == permitted,
        format!(
            "{through} probes through, permitted-number-of-calls-in-half-open-state is {permitted}"
        ),
    );
    d.check(refused == 2, "the other 2 refused");
    d.check(
        line.starts_with("state=HALF_OPEN"),
        "HALF_OPEN while probing",
    );
    finish(&mut d, &svc);
    Ok(d)
}

async fn recovery_closes(file: &str) -> Result<Drill, String> {
    let mut d = Drill::new(5, CLAIMS[4]);
    let svc = recovery(file)?;
    let permitted = svc
        .registry
        .circuit_breaker(INSTANCE)
        .config()
        .permitted_number_of_calls_in_half_open_state();
    let served = svc.downstream.served();
    let (through, _, _, _, views) = probe(&svc).await;
    let served = svc.downstream.served() - served;
    let answered = views
        .iter()
        .filter(|v| matches!(v, StockView::Known(_)))
        .count();
    d.note(format!(
        "probes answered={answered} served={served} peakInFlight={} state={}",
        svc.peak(),
        svc.state()
    ));
    d.check(svc.state() == "CLOSED", "CLOSED after the probes succeeded");
    d.check(
        svc.peak() <= permitted && through == permitted && served == permitted,
        format!(
            "at most {permitted} calls at the downstream while recovering (peak {})",
            svc.peak()
        ),
    );
    let reached = svc.reached();
    let mut after = 0;
    for _ in 0..10 {
        if let StockView::Known(_) = svc.query().await {
            after += 1;
        }
    }
    d.note(format!(
        "10 queries after closing: answered={after} reached={}",
        svc.reached() - reached
    ));
    d.check(after == 10, "normal traffic answered once CLOSED");
    finish(&mut d, &svc);
    Ok(d)
}

async fn bulkhead_full(file: &str) -> Result<Drill, String> {
    let mut d = Drill::new(6, CLAIMS[5]);
    let timeout = service::registry(file)?
        .time_limiter(INSTANCE)
        .config()
        .timeout_duration();
    let svc = Service::new(file, none(), latency(timeout / 2))?;
    let (_, size) = svc.permits();
    svc.latency
        .enable_for(TTL, "drill 6: the downstream holds every call");
    let started = Instant::now();
    let queries = join_all((0..=size).map(|_| svc.query()));
    let held = async {
        for _ in 0..3 {
            tokio::task::yield_now().await;
        }
        let refused_at = started.elapsed();
        let (free, _) = svc.permits();
        let price = svc.price().await;
        (svc.in_flight(), svc.fallbacks(), refused_at, free, price)
    };
    let (views, (in_flight, refused, refused_at, free, price)) = futures::join!(queries, held);
    let full = views
        .iter()
        .filter(|v| {
            **v == StockView::Unknown {
                reason: "bulkhead_full",
            }
        })
        .count();
    d.note(format!(
        "{} concurrent queries: inFlight={in_flight} refused={refused} (bulkhead_full={full}) \
         refusedAfter={}ms permitsFree={free}/{size}",
        size + 1,
        refused_at.as_millis()
    ));
    d.note(format!("core dependency pricing: {price:?}"));
    d.check(in_flight == size, format!("{size} calls hold the bulkhead"));
    d.check(
        refused == 1 && full == 1 && refused_at.is_zero(),
        "the extra call refused at once (bulkhead_full, no time passed)",
    );
    d.check(price == Ok(42), "the core dependency answered");
    finish(&mut d, &svc);
    Ok(d)
}

async fn timeout_converges(file: &str) -> Result<Drill, String> {
    let mut d = Drill::new(7, CLAIMS[6]);
    let svc = Service::new(file, none(), none())?;
    let time_limiter = svc.registry.time_limiter(INSTANCE);
    let timeout = time_limiter.config().timeout_duration();
    let work = timeout * 2 + Duration::from_millis(400);
    let server = resil::chaos::Chaos::with_clock(
        "inventory-server",
        latency(work),
        resil::clock::TokioClock::new(),
    );
    server.enable_for(TTL, "drill 7: the server is slow to commit");
    let key = "order-17";
    let started = Instant::now();
    let first = time_limiter
        .call_async(service::reserve(&svc.downstream, &server, key))
        .await;
    let timed_out = matches!(first, Err(Error::Timeout(_)));
    d.note(format!(
        "reserve {key}: {} after {}ms; server: reservation={:?} commits={}",
        match &first {
            Ok(()) => "ok".to_owned(),
            Err(e) => e.kind().to_string(),
        },
        started.elapsed().as_millis(),
        svc.downstream.reservation(key),
        svc.downstream.commits()
    ));
    d.check(timed_out, "the time limiter timed out");
    d.check(
        svc.downstream.reservation(key) == Some(false),
        "the server was still working when the caller gave up",
    );
    wait(work).await;
    let committed = svc.downstream.reservation(key);
    d.note(format!(
        "{}ms later: server commits={} (the timeout was not a failure of the work)",
        work.as_millis(),
        svc.downstream.commits()
    ));
    d.check(
        svc.downstream.commits() == 1,
        "the server finished the work after the timeout",
    );
    // Converge: ask, by the idempotency key, instead of submitting again.
    let again = time_limiter
        .call_async(service::reserve(&svc.downstream, &server, key))
        .await;
    d.note(format!(
        "status {key}: {}; resubmitted with the same key: {}; commits={}",
        if committed == Some(true) {
            "COMMITTED"
        } else {
            "UNKNOWN"
        },
        if again.is_ok() { "ok" } else { "failed" },
        svc.downstream.commits()
    ));
    d.check(
        committed == Some(true),
        "the idempotent query sees COMMITTED",
    );
    d.check(
        again.is_ok() && svc.downstream.commits() == 1,
        "a resubmission with the same key commits nothing twice",
    );
    finish(&mut d, &svc);
    Ok(d)
}

async fn retry_scope(file: &str) -> Result<Drill, String> {
    let mut d = Drill::new(8, CLAIMS[7]);
    let max = service::registry(file)?
        .retry(INSTANCE)
        .config()
        .max_attempts();
    let cases = [
        (
            "inventory_connection",
            InventoryError::Connection("injected 503"),
            true,
        ),
        ("inventory_business", InventoryError::OutOfStock, false),
        ("inventory_throttled", InventoryError::Throttled, false),
    ];
    for (class, error, transient) in cases {
        let svc = Service::new(file, errors(error), none())?;
        svc.chaos
            .enable_for(TTL, format!("drill 8: the downstream answers {class}"));
        let requests = 3;
        for _ in 0..requests {
            svc.query().await;
        }
        let reached = svc.reached();
        d.note(format!(
            "{requests} queries failing with {class}: attempts at the downstream={reached} \
             (max-attempts={max})"
        ));
        let expected = if transient { requests * max } else { requests };
        d.check(
            reached == expected,
            format!(
                "{class} is {}retried: expected {expected} attempts, saw {reached}",
                if transient { "" } else { "not " }
            ),
        );
        d.check(
            reached <= requests * max,
            "never more than max-attempts per query",
        );
        let (free, size) = svc.permits();
        d.check(free == size, format!("permits back: {free}/{size}"));
    }
    d.check(max > 1, "the retry retries at all");
    Ok(d)
}

async fn fallback_degrades(file: &str) -> Result<Drill, String> {
    let mut d = Drill::new(9, CLAIMS[8]);
    let svc = outage(file)?;
    let healthy = svc.query().await;
    let writes = svc.stock_writes();
    svc.chaos
        .enable_for(TTL, "drill 9: the downstream answers 500");
    let failed = svc.query().await;
    open_breaker(&svc, 1000).await;
    let refused = svc.query().await;
    d.note(format!(
        "healthy: {}; failing: {}; open: {}",
        healthy.describe(),
        failed.describe(),
        refused.describe()
    ));
    d.note(format!(
        "stockWrites={} (1 from the healthy answer; fallbacks write none)",
        svc.stock_writes()
    ));
    d.check(
        healthy == StockView::Known(service::STOCK),
        "the healthy answer is the downstream's",
    );
    d.check(
        failed
            == StockView::Unknown {
                reason: "inventory_connection",
            },
        "a failure is UNKNOWN with its class",
    );
    d.check(
        refused
            == StockView::Unknown {
                reason: "call_not_permitted",
            },
        "a refusal is UNKNOWN with its kind",
    );
    d.check(
        svc.stock_writes() == writes,
        "no fallback wrote a stock level",
    );
    finish(&mut d, &svc);
    Ok(d)
}

async fn explained(file: &str) -> Result<Drill, String> {
    let mut d = Drill::new(10, CLAIMS[9]);
    let svc = recovery(file)?;
    let breaker = svc.registry.circuit_breaker(INSTANCE);
    let mut events = breaker.subscribe();
    let mut seen = vec![svc.state()];
    let mut health = Vec::new();
    health.push(svc.registry.health());
    // probe() opens the breaker, waits, probes and closes it.
    open_breaker(&svc, 1000).await;
    seen.push(svc.state());
    let while_open = svc.registry.health();
    svc.query().await; // refused: a NOT_PERMITTED event
    let refused_open = breaker.metrics().not_permitted_calls();
    let (_, refused_half_open, _, line, _) = probe(&svc).await;
    seen.push(
        line.split_whitespace()
            .next()
            .unwrap_or("")
            .replace("state=", ""),
    );
    seen.push(svc.state());
    health.push(svc.registry.health());
    let mut transitions = Vec::new();
    let (mut rate_exceeded, mut not_permitted) = (0, 0u32);
    for e in events.drain() {
        match e.kind() {
            CircuitBreakerEventKind::StateTransition { from, to } => {
                transitions.push(format!("{from}->{to}"))
            }
            CircuitBreakerEventKind::FailureRateExceeded { .. } => rate_exceeded += 1,
            CircuitBreakerEventKind::NotPermitted { .. } => not_permitted += 1,
            _ => {}
        }
    }
    d.note(format!("states seen: {}", seen.join(" -> ")));
    d.note(format!("transition events: {}", transitions.join(", ")));
    d.note(format!(
        "FAILURE_RATE_EXCEEDED events={rate_exceeded} NOT_PERMITTED events={not_permitted} \
         (metrics: {refused_open} while OPEN, then {refused_half_open} refused probes)"
    ));
    d.note(format!(
        "health: before={} open={} ({}) after={}",
        health[0].status,
        while_open.status,
        while_open.reason.as_deref().unwrap_or("-"),
        health[1].status
    ));
    let expected: Vec<String> = [
        (State::Closed, State::Open),
        (State::Open, State::HalfOpen),
        (State::HalfOpen, State::Closed),
    ]
    .iter()
    .map(|(a, b)| format!("{a}->{b}"))
    .collect();
    d.check(
        transitions == expected,
        "one transition event per state change",
    );
    d.check(rate_exceeded == 1, "the opening names its cause");
    d.check(
        u64::from(not_permitted) == refused_open + u64::from(refused_half_open),
        "every refusal is an event and a metric",
    );
    d.check(
        while_open.status.as_str() == "DEGRADED"
            && while_open
                .reason
                .as_deref()
                .is_some_and(|r| r.contains(INSTANCE)),
        "health names the open breaker, DEGRADED",
    );
    d.check(
        health[0].status.as_str() == "UP" && health[1].status.as_str() == "UP",
        "health UP before and after",
    );
    finish(&mut d, &svc);
    Ok(d)
}
