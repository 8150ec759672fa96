//! Eight mechanisms (`circuit`, `slow`, `classification`, `bulkhead`,
//! `async`, `rate`, `order`, `fallback`) and the lab's `timeout`. Each
//! protected call is an annotated fn whose instance `lab.yaml` configures;
//! each of the eight prints exactly the lines a Java lab on Resilience4j
//! 2.3.0 prints for the same experiment.

use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Duration;

use resil::clock::{Clock, ManualClock};
use resil::ErrorKind;
use serde_json::json;
use tokio::task::JoinHandle;

use crate::downstream::{Downstream, PRICE};
use crate::http;
use crate::lab::Lab;
use crate::price::{self, PriceError};

// ---- circuit -------------------------------------------------------------

/// The price query behind the lab's breaker (`price-circuit` in lab.yaml).
#[resil::circuit_breaker(name = "price-circuit")]
async fn circuit_price(downstream: SocketAddr, behaviour: &str) -> Result<u32, PriceError> {
    price::fetch(downstream, behaviour).await
}

/// Four failures open the breaker (not three: minimum 4 calls), an open
/// breaker refuses without calling, and two probes after the wait close it.
pub async fn circuit(lab: &Lab) -> Vec<String> {
    let downstream = Downstream::start(&lab.clock).await;
    let at = downstream.addr();
    let breaker = resil::registry().circuit_breaker("price-circuit");
    let mut out = Vec::new();

    for _ in 0..3 {
        let failed = circuit_price(at, "503").await;
        assert!(matches!(failed, Err(PriceError::DependencyFailure(_))));
    }
    let m = breaker.metrics();
    out.push(format!(
        "after3 state={} buffered={} failed={}",
        m.state(),
        m.buffered_calls(),
        m.failed_calls()
    ));

    let _ = circuit_price(at, "503").await;
    let refused = circuit_price(at, "ok").await;
    assert!(refused.unwrap_err().is_refusal(ErrorKind::CallNotPermitted));
    out.push(format!(
        "open state={} httpCalls={} rejected={}",
        breaker.state(),
        downstream.requests(),
        breaker.metrics().not_permitted_calls()
    ));

    // Just past wait-duration-in-open-state (400 ms in lab.yaml): as in
    // Resilience4j, OPEN ends strictly after it.
    lab.wait(breaker.config().wait_duration_in_open_state() + Duration::from_millis(1));
    assert_eq!(circuit_price(at, "ok").await, Ok(PRICE));
    out.push(format!("probe1 state={}", breaker.state()));
    assert_eq!(circuit_price(at, "ok").await, Ok(PRICE)); // the second probe
    assert_eq!(circuit_price(at, "ok").await, Ok(PRICE)); // an ordinary query
    out.push(format!(
        "recovered state={} httpCalls={}",
        breaker.state(),
        downstream.requests()
    ));
    out
}

// ---- slow ----------------------------------------------------------------

/// The same breaker's settings (`price-slow`), against a slow downstream.
#[resil::circuit_breaker(name = "price-slow")]
async fn slow_price(downstream: SocketAddr, behaviour: &str) -> Result<u32, PriceError> {
    price::fetch(downstream, behaviour).await
}

/// Four 200s, each 250 ms against a 150 ms slow threshold: no failure, and
/// the breaker opens on the slow-call rate alone.
pub async fn slow(lab: &Lab) -> Vec<String> {
    let downstream = Downstream::start(&lab.clock).await;
    for _ in 0..4 {
        assert_eq!(slow_price(downstream.addr(), "slow/250").await, Ok(PRICE));
    }
    let m = resil::registry().circuit_breaker("price-slow").metrics();
    vec![format!(
        "state={} failed={} slow={} slowRate={}",
        m.state(),
        m.failed_calls(),
        m.slow_calls(),
        m.slow_call_rate().unwrap_or(-1.0)
    )]
}

// ---- classification ------------------------------------------------------

/// `price-classification`: 403 is in its `ignore-exceptions`.
#[resil::circuit_breaker(name = "price-classification")]
async fn classified_price(downstream: SocketAddr, behaviour: &str) -> Result<u32, PriceError> {
    price::fetch(downstream, behaviour).await
}

/// Four real 403s reach the caller and leave no sample in the window.
pub async fn classification(lab: &Lab) -> Vec<String> {
    let downstream = Downstream::start(&lab.clock).await;
    let mut rejected = 0;
    for _ in 0..4 {
        if classified_price(downstream.addr(), "403").await == Err(PriceError::BusinessRejected) {
            rejected += 1;
        }
    }
    let breaker = resil::registry().circuit_breaker("price-classification");
    vec![format!(
        "business403={rejected} buffered={} state={}",
        breaker.metrics().buffered_calls(),
        breaker.state()
    )]
}

// ---- bulkhead ------------------------------------------------------------

/// A report query: two slots (`reports`), no waiting.
#[resil::bulkhead(name = "reports")]
async fn report(downstream: SocketAddr, behaviour: &'static str) -> Result<u32, PriceError> {
    price::fetch(downstream, behaviour).await
}

/// A payment query, behind its own bulkhead (`payment`).
#[resil::bulkhead(name = "payment")]
async fn payment(downstream: SocketAddr, behaviour: &'static str) -> Result<u32, PriceError> {
    price::fetch(downstream, behaviour).await
}

/// Two held reports fill their bulkhead; a third is refused locally (the
/// downstream never sees it) while payment, isolated, still answers.
pub async fn bulkhead(lab: &Lab) -> Vec<String> {
    let downstream = Downstream::start(&lab.clock).await;
    let at = downstream.addr();
    let reports = resil::registry().bulkhead("reports");
    let mut out = Vec::new();

    let held: Vec<_> = (0..2).map(|_| tokio::spawn(report(at, "hold"))).collect();
    downstream.held(2).await; // both reports are on the server
    let before = downstream.requests();
    let third = report(at, "ok").await;
    let rejected = u32::from(third.is_err_and(|e| e.is_refusal(ErrorKind::BulkheadFull)));
    assert_eq!(
        downstream.requests(),
        before,
        "a refused report never leaves"
    );
    let paid = payment(at, "ok")
        .await
        .expect("payment has its own bulkhead");
    out.push(format!(
        "held={} reportAvailable={} reportRejected={rejected} payment={paid}",
        downstream.active(),
        reports.available_concurrent_calls()
    ));

    downstream.release(0);
    for report in held {
        assert_eq!(report.await.expect("report task"), Ok(PRICE));
    }
    let next = report(at, "ok").await.expect("a freed slot");
    out.push(format!(
        "recovered reportAvailable={} next={next}",
        reports.available_concurrent_calls()
    ));
    out
}

// ---- async ---------------------------------------------------------------

/// The wrong way: a sync fn that only *starts* the async request. The slot
/// is held for the microseconds it takes to spawn it.
#[resil::bulkhead(name = "async-reports")]
fn submit_report(
    downstream: SocketAddr,
) -> Result<JoinHandle<Result<u32, PriceError>>, PriceError> {
    Ok(tokio::spawn(price::fetch(downstream, "hold")))
}

/// The right way: the async fn holds its slot until the request's answer.
#[resil::bulkhead(name = "async-reports")]
async fn async_report(downstream: SocketAddr, behaviour: &'static str) -> Result<u32, PriceError> {
    price::fetch(downstream, behaviour).await
}

/// One slot, one paused request, wrapped both ways.
pub async fn async_permits(lab: &Lab) -> Vec<String> {
    let downstream = Downstream::start(&lab.clock).await;
    let at = downstream.addr();
    let reports = resil::registry().bulkhead("async-reports");
    let mut out = Vec::new();

    let submitted = submit_report(at).expect("a free slot");
    downstream.held(1).await;
    out.push(format!(
        "syncWrapper serverActive={} available={}",
        downstream.active(),
        reports.available_concurrent_calls()
    ));
    downstream.release(0);
    assert_eq!(submitted.await.expect("report task"), Ok(PRICE));

    let held = tokio::spawn(async_report(at, "hold"));
    downstream.held(1).await;
    let before = downstream.requests();
    let next = async_report(at, "ok").await;
    assert_eq!(
        downstream.requests(),
        before,
        "a refused report never leaves"
    );
    out.push(format!(
        "asyncWrapper serverActive={} available={} rejected={}",
        downstream.active(),
        reports.available_concurrent_calls(),
        next.map_or_else(|e| e.label(), |_| "none")
    ));
    downstream.release(0);
    assert_eq!(held.await.expect("report task"), Ok(PRICE));
    out.push(format!(
        "asyncCompleted available={}",
        reports.available_concurrent_calls()
    ));
    out
}

// ---- rate ----------------------------------------------------------------

/// A read behind the `read` rate limiter: 2 per 2 s, no waiting.
#[resil::rate_limiter(name = "read")]
async fn read_price(downstream: SocketAddr, behaviour: &str) -> Result<u32, PriceError> {
    price::fetch(downstream, behaviour).await
}

/// Three reads in one cycle: two pass, the third is refused before any
/// request; the next cycle brings the quota back.
pub async fn rate(lab: &Lab) -> Vec<String> {
    let downstream = Downstream::start(&lab.clock).await;
    let at = downstream.addr();
    let mut outcomes = Vec::new();
    for _ in 0..3 {
        outcomes.push(read_price(at, "ok").await);
    }
    let accepted = outcomes.iter().filter(|o| o.is_ok()).count();
    let rejected = outcomes
        .iter()
        .filter(|o| matches!(o, Err(e) if e.is_refusal(ErrorKind::RequestNotPermitted)))
        .count();
    let mut out = vec![format!(
        "periodAccepted={accepted} rejected={rejected} httpCalls={}",
        downstream.requests()
    )];
    // limit-refresh-period (2 s in lab.yaml): the next cycle.
    lab.wait(
        resil::registry()
            .rate_limiter("read")
            .config()
            .limit_refresh_period(),
    );
    let next = read_price(at, "ok").await.expect("the next cycle's quota");
    out.push(format!(
        "nextPeriod={next} httpCalls={}",
        downstream.requests()
    ));
    out
}

// ---- order ---------------------------------------------------------------

/// resil's fixed order: Retry( CircuitBreaker( call )), whatever the order
/// the attributes are written in. Every attempt is one breaker sample.
#[resil::circuit_breaker(name = "order-retry-outside")]
#[resil::retry(name = "order")]
async fn retry_outside(downstream: SocketAddr, behaviour: &str) -> Result<u32, PriceError> {
    price::fetch(downstream, behaviour).await
}

/// The order overridden: CircuitBreaker( Retry( call )). The breaker sees
/// one logical call, after every attempt.
#[resil::circuit_breaker(name = "order-circuit-outside", order = [circuit_breaker, retry])]
#[resil::retry(name = "order")]
async fn circuit_outside(downstream: SocketAddr, behaviour: &str) -> Result<u32, PriceError> {
    price::fetch(downstream, behaviour).await
}

/// Both orders against a downstream that always answers 503.
pub async fn order(lab: &Lab) -> Vec<String> {
    let downstream = Downstream::start(&lab.clock).await;
    let at = downstream.addr();
    let registry = resil::registry();
    assert!(retry_outside(at, "503").await.is_err());
    assert!(circuit_outside(at, "503").await.is_err());
    vec![format!(
        "retryOutside failedSamples={} circuitOutside failedSamples={} httpCalls={}",
        registry
            .circuit_breaker("order-retry-outside")
            .metrics()
            .failed_calls(),
        registry
            .circuit_breaker("order-circuit-outside")
            .metrics()
            .failed_calls(),
        downstream.requests()
    )]
}

// ---- fallback ------------------------------------------------------------

/// Where a price came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The price service answered.
    Live,
    /// The last live price, standing in while the service is unwell.
    Cache,
}

impl Source {
    fn as_str(self) -> &'static str {
        match self {
            Source::Live => "LIVE",
            Source::Cache => "CACHE",
        }
    }
}

/// A price as the caller gets it: always with its source and age, so a stale
/// value can never pass for a live one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quote {
    /// The price.
    pub value: u32,
    /// Live, or the cache.
    pub source: Source,
    /// For a cached price, how long ago it was live (0 for a live one).
    pub age_ms: u64,
}

impl Quote {
    /// The body a price endpoint would answer: `{"value":"42","source":"CACHE","ageMs":87}`.
    pub fn to_json(&self) -> serde_json::Value {
        json!({
            "value": self.value.to_string(),
            "source": self.source.as_str(),
            "ageMs": self.age_ms,
        })
    }
}

/// The last live price and when it was read (on the lab's clock).
pub struct PriceCache {
    clock: ManualClock,
    /// How long a cached price may stand in for a live one
    /// (`lab.price-cache.expires-after` in lab.yaml).
    expires_after: Duration,
    last: Mutex<Option<(u32, u64)>>,
}

impl PriceCache {
    fn new(lab: &Lab) -> PriceCache {
        PriceCache {
            clock: lab.clock.clone(),
            expires_after: lab.cache_expires_after,
            last: Mutex::new(None),
        }
    }

    /// Remembers a live price and returns it as a live quote.
    fn live(&self, value: u32) -> Quote {
        *self.last.lock().unwrap_or_else(|p| p.into_inner()) =
            Some((value, self.clock.now_nanos()));
        Quote {
            value,
            source: Source::Live,
            age_ms: 0,
        }
    }

    /// The cached price, if there is one and it has not expired.
    fn fresh(&self) -> Option<Quote> {
        let (value, at) = (*self.last.lock().unwrap_or_else(|p| p.into_inner()))?;
        let age = resil::clock::elapsed(at, self.clock.now_nanos());
        (age <= self.expires_after).then(|| Quote {
            value,
            source: Source::Cache,
            age_ms: u64::try_from(age.as_millis()).unwrap_or(u64::MAX),
        })
    }
}

/// The price shown to a shopper (`price-fallback`): live when the service
/// answers, else the cached price while it is fresh.
#[resil::circuit_breaker(name = "price-fallback", fallback = cached_quote)]
async fn quote(
    cache: &PriceCache,
    downstream: SocketAddr,
    behaviour: &str,
) -> Result<Quote, PriceError> {
    price::fetch(downstream, behaviour)
        .await
        .map(|value| cache.live(value))
}

/// The fallback, for every error (`resil::Error<PriceError>`): only the
/// service being unwell (a failure, or the breaker open on it) may be
/// answered from the cache; a 403 stays a 403, and an expired or missing
/// cache entry leaves the failure as it is.
async fn cached_quote(
    cache: &PriceCache,
    _downstream: SocketAddr,
    _behaviour: &str,
    why: resil::Error<PriceError>,
) -> Result<Quote, PriceError> {
    let why = match why.into_rejection() {
        Ok(refused) => PriceError::Refused(refused),
        Err(own) => own,
    };
    let unavailable = match &why {
        PriceError::DependencyFailure(_) => true,
        PriceError::Refused(r) => r.kind() == ErrorKind::CallNotPermitted,
        PriceError::BusinessRejected | PriceError::InterruptedCall => false,
    };
    match cache.fresh() {
        Some(stale) if unavailable => Ok(stale),
        _ => Err(why),
    }
}

/// A failure with nothing cached, a live read, a 503 answered from the cache,
/// a 403 that stays a refusal, and a 503 after the cache expired.
pub async fn fallback(lab: &Lab) -> Vec<String> {
    let downstream = Downstream::start(&lab.clock).await;
    let at = downstream.addr();
    let cache = PriceCache::new(lab);
    let label = |q: &Result<Quote, PriceError>| match q {
        Ok(q) => q.source.as_str(),
        Err(e) => e.label(),
    };

    let nothing_cached = quote(&cache, at, "503").await;
    assert!(matches!(
        nothing_cached,
        Err(PriceError::DependencyFailure(_))
    ));
    let first = quote(&cache, at, "ok").await;
    lab.wait(Duration::from_millis(87));
    let failure = quote(&cache, at, "503").await;
    assert_eq!(
        failure.as_ref().map(Quote::to_json).ok(),
        Some(json!({ "value": "42", "source": "CACHE", "ageMs": 87 })),
        "a stand-in carries its source and age"
    );
    let forbidden = quote(&cache, at, "403").await;
    lab.wait(lab.cache_expires_after); // now 437 ms old
    let expired = quote(&cache, at, "503").await;
    vec![
        format!(
            "first={} failure={} forbidden={}",
            label(&first),
            label(&failure),
            label(&forbidden)
        ),
        format!("expired={}", label(&expired)),
    ]
}

// ---- timeout -------------------------------------------------------------

/// Waits for a price already requested, at most `timeout-duration`
/// (`price-timeout`).
#[resil::time_limiter(name = "price-timeout")]
async fn await_price(pending: http::Pending) -> Result<u32, PriceError> {
    price::adapt(pending.answer().await?)
}

/// A timeout stops the waiting, not the work: the server has the request,
/// goes on with it after the caller gave up, and finishes it.
pub async fn timeout(lab: &Lab) -> Vec<String> {
    let downstream = Downstream::start(&lab.clock).await;
    let pending = http::send(downstream.addr(), "/price/hold")
        .await
        .expect("the downstream accepts connections");
    downstream.held(1).await; // the server is working on it
    let waited = await_price(pending).await;
    let mut out = vec![format!(
        "timeout={} httpCalls={} serverActive={}",
        waited.map_or_else(|e| e.label(), |_| "none"),
        downstream.requests(),
        downstream.active()
    )];
    downstream.release(0);
    downstream.completed(1).await;
    out.push(format!(
        "afterTimeout serverActive={} serverCompleted={}",
        downstream.active(),
        downstream.finished()
    ));
    out
}
