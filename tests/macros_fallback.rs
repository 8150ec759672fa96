//! Fallbacks of annotated fns: chosen by the type of their trailing error
//! parameter, the most specific first whatever the list order; not invoked on
//! success; their own errors propagate; degraded results are counted by cause.

use std::sync::atomic::{AtomicU32, Ordering};

use resil::error::{CallNotPermitted, RequestNotPermitted, Throttled, Timeout};
use resil::{fallback, registry, Error, ErrorKind, Rejection};

#[derive(Debug, Clone, PartialEq)]
enum PriceError {
    Unavailable,
    Rejected(String),
}

impl From<Rejection> for PriceError {
    fn from(r: Rejection) -> Self {
        PriceError::Rejected(r.kind().to_string())
    }
}

#[derive(Debug, PartialEq)]
enum Price {
    Live(u32),
    Cached(u32, &'static str),
}

static LIVE_CALLS: AtomicU32 = AtomicU32::new(0);

// The catch-all is listed first; the more specific fallbacks still win.
#[resil::circuit_breaker(
    name = "macros-fallback-price",
    fallback = [price_unknown, price_on_call_error, price_on_open_breaker]
)]
fn price(sku: &str, fail: bool) -> Result<Price, PriceError> {
    LIVE_CALLS.fetch_add(1, Ordering::SeqCst);
    if fail {
        Err(PriceError::Unavailable)
    } else {
        Ok(Price::Live(sku.len() as u32))
    }
}

fn price_unknown(_sku: &str, _fail: bool, why: Error<PriceError>) -> Result<Price, PriceError> {
    Ok(Price::Cached(0, why.kind().as_str()))
}

fn price_on_call_error(sku: &str, _fail: bool, why: PriceError) -> Result<Price, PriceError> {
    match why {
        PriceError::Unavailable => Ok(Price::Cached(sku.len() as u32 * 10, "call")),
        other => Err(other),
    }
}

fn price_on_open_breaker(
    _sku: &str,
    _fail: bool,
    why: CallNotPermitted,
) -> Result<Price, PriceError> {
    assert_eq!(why.name(), "macros-fallback-price");
    Ok(Price::Cached(7, "open"))
}

#[test]
fn the_most_specific_fallback_wins_whatever_the_list_order_and_none_runs_on_success() {
    let path = concat!(module_path!(), "::price");
    assert_eq!(price("abc", false), Ok(Price::Live(3)));
    assert_eq!(fallback::metrics(path).degraded_total(), 0);

    assert_eq!(price("abc", true), Ok(Price::Cached(30, "call")));
    assert_eq!(fallback::metrics(path).degraded(ErrorKind::Call), 1);

    registry()
        .circuit_breaker("macros-fallback-price")
        .transition_to_forced_open()
        .unwrap();
    let live = LIVE_CALLS.load(Ordering::SeqCst);
    assert_eq!(price("abc", false), Ok(Price::Cached(7, "open")));
    assert_eq!(LIVE_CALLS.load(Ordering::SeqCst), live);
    let m = fallback::metrics(path);
    assert_eq!(m.degraded(ErrorKind::CallNotPermitted), 1);
    assert_eq!((m.degraded_total(), m.failed()), (2, 0));
}

static SLOW_CALLS: AtomicU32 = AtomicU32::new(0);

// Only timeouts fall back; the fn's own error and other refusals propagate,
// which is why `QuoteError: From<Rejection>` is required here.
#[resil::time_limiter(name = "macros-fallback-quote", timeout_duration = "100ms", fallback = quote_on_timeout)]
async fn quote(sku: String, delay_ms: u64) -> Result<u32, PriceError> {
    SLOW_CALLS.fetch_add(1, Ordering::SeqCst);
    tokio::time::sleep(std::time::Duration::from_millis(delay_ms)).await;
    if sku.is_empty() {
        return Err(PriceError::Unavailable);
    }
    Ok(1)
}

async fn quote_on_timeout(sku: String, _delay_ms: u64, why: Timeout) -> Result<u32, PriceError> {
    if sku == "broken" {
        return Err(PriceError::Rejected(format!(
            "fallback failed after {:?}",
            why.after()
        )));
    }
    Ok(sku.len() as u32 + 100)
}

#[tokio::test(start_paused = true)]
async fn an_async_fallback_takes_its_rejection_type_only_and_its_own_error_propagates() {
    let path = concat!(module_path!(), "::quote");
    assert_eq!(quote("sku".to_owned(), 10).await, Ok(1));
    assert_eq!(quote("sku".to_owned(), 500).await, Ok(103));
    assert_eq!(quote(String::new(), 10).await, Err(PriceError::Unavailable));
    assert_eq!(
        quote("broken".to_owned(), 500).await,
        Err(PriceError::Rejected(
            "fallback failed after 100ms".to_owned()
        ))
    );
    let m = fallback::metrics(path);
    assert_eq!(m.degraded(ErrorKind::Timeout), 2);
    assert_eq!(m.degraded(ErrorKind::Call), 0);
    assert_eq!(m.failed(), 1);
    assert_eq!(SLOW_CALLS.load(Ordering::SeqCst), 4);
}

/// No `From<Rejection>` at all: a catch-all fallback makes it unnecessary.
#[derive(Debug, PartialEq)]
struct Plain;

#[resil::retry(name = "macros-fallback-plain", max_attempts = 2, wait_duration = "0ms", fallback = plain_default)]
fn plain(items: Vec<u32>) -> Result<u32, Plain> {
    if items.is_empty() {
        Err(Plain)
    } else {
        Ok(items.iter().sum())
    }
}

fn plain_default(items: Vec<u32>) -> Result<u32, Plain> {
    Ok(items.len() as u32)
}

#[test]
fn a_fallback_without_error_parameter_handles_everything_and_gets_the_arguments_back() {
    assert_eq!(plain(vec![1, 2]), Ok(3));
    assert_eq!(plain(vec![]), Ok(0));
    let retry = registry().retry("macros-fallback-plain");
    assert_eq!(retry.metrics().failed_calls_with_retry(), 1);
}

/// Refusals handled by `Rejection`, call errors propagate as they are.
#[resil::bulkhead(name = "macros-fallback-any-rejection", fallback = on_any_rejection)]
fn guarded(fail: bool) -> Result<u32, Plain> {
    if fail {
        Err(Plain)
    } else {
        Ok(1)
    }
}

fn on_any_rejection(_fail: bool, why: Rejection) -> Result<u32, Plain> {
    assert_eq!(why.kind(), ErrorKind::BulkheadFull);
    Ok(0)
}

#[test]
fn a_rejection_fallback_leaves_call_errors_to_the_caller() {
    assert_eq!(guarded(false), Ok(1));
    assert_eq!(guarded(true), Err(Plain));
}

#[path = "support/recorder.rs"]
mod recorder;

#[resil::retry(name = "macros-fallback-stock", max_attempts = 1, fallback = stock_unknown)]
fn stock(sku: &str) -> Result<u32, PriceError> {
    if sku == "broken" {
        return Err(PriceError::Rejected("no such sku".to_owned()));
    }
    Err(PriceError::Unavailable)
}

fn stock_unknown(sku: &str, why: PriceError) -> Result<u32, PriceError> {
    match sku {
        "broken" => Err(why),
        _ => Ok(0),
    }
}

#[test]
fn the_registry_s_snapshot_and_metrics_show_what_the_fallbacks_did() {
    let path = concat!(module_path!(), "::stock");
    assert_eq!(stock("a"), Ok(0));
    assert_eq!(stock("b"), Ok(0));
    assert!(stock("broken").is_err());

    let snapshot = registry().snapshot();
    let f = snapshot
        .fallbacks
        .iter()
        .find(|f| f.name == path)
        .expect("the fn's fallback ran, so the snapshot lists it");
    assert_eq!(f.degraded, vec![("call", 3)]);
    assert_eq!(f.failed, 1);

    let recorder = recorder::Remember::default();
    metrics::with_local_recorder(&recorder, || registry().publish_metrics());
    let key = |kind: &str, cause: Option<&str>| match cause {
        Some(cause) => format!("resil_fallback_calls{{cause={cause},kind={kind},name={path}}}"),
        None => format!("resil_fallback_calls{{kind={kind},name={path}}}"),
    };
    assert_eq!(recorder.get(&key("degraded", Some("call"))), Some(3.0));
    assert_eq!(recorder.get(&key("failed", None)), Some(1.0));
    assert_eq!(recorder.get(&key("degraded", Some("timeout"))), None);
}

/// A service's own error, classified by the derive: a 404 is `not_found`,
/// a downstream failure `upstream`, a refusal kept as `rejected`.
#[derive(Debug, PartialEq, resil::ErrorClass)]
enum CatalogError {
    NotFound(String),
    Upstream(u16),
    Rejected(Rejection),
}

impl From<Rejection> for CatalogError {
    fn from(r: Rejection) -> Self {
        CatalogError::Rejected(r)
    }
}

static CACHED_CALLS: AtomicU32 = AtomicU32::new(0);

// The fallback takes the downstream's failures and every refusal; a 404
// is an answer, handed to the caller as it is.
#[resil::circuit_breaker(
    name = "macros-fallback-catalog",
    fallback = cached_item,
    on = [upstream, rejected]
)]
async fn catalog_item(sku: &str, status: u16) -> Result<u32, CatalogError> {
    match status {
        200 => Ok(sku.len() as u32),
        404 => Err(CatalogError::NotFound(sku.to_owned())),
        other => Err(CatalogError::Upstream(other)),
    }
}

async fn cached_item(
    _sku: &str,
    _status: u16,
    why: Error<CatalogError>,
) -> Result<u32, CatalogError> {
    CACHED_CALLS.fetch_add(1, Ordering::SeqCst);
    match why {
        // Never reached: `on` lets no `not_found` in.
        Error::Call(CatalogError::NotFound(_)) => Err(why.into_error()),
        _ => Ok(0),
    }
}

#[tokio::test]
async fn a_fallback_on_some_classes_lets_the_others_pass_untouched_and_uncounted() {
    let path = concat!(module_path!(), "::catalog_item");
    assert_eq!(
        catalog_item("SKU-404", 404).await,
        Err(CatalogError::NotFound("SKU-404".to_owned()))
    );
    assert_eq!(
        CACHED_CALLS.load(Ordering::SeqCst),
        0,
        "not called for a 404"
    );
    let m = fallback::metrics(path);
    assert_eq!((m.degraded_total(), m.failed()), (0, 0));

    assert_eq!(catalog_item("SKU-1", 503).await, Ok(0));
    assert_eq!(CACHED_CALLS.load(Ordering::SeqCst), 1);
    registry()
        .circuit_breaker("macros-fallback-catalog")
        .transition_to_forced_open()
        .unwrap();
    assert_eq!(
        catalog_item("SKU-1", 200).await,
        Ok(0),
        "a refusal falls back"
    );
    let m = fallback::metrics(path);
    assert_eq!(m.degraded(ErrorKind::Call), 1);
    assert_eq!(m.degraded(ErrorKind::CallNotPermitted), 1);
    assert_eq!((m.degraded_total(), m.failed()), (2, 0));
}

// Without `rejected` in `on`, a refusal passes by the fallback too, through
// `CatalogError: From<Rejection>`.
#[resil::circuit_breaker(name = "macros-fallback-catalog-upstream", fallback = stale_item, on = [upstream])]
fn catalog_item_sync(status: u16) -> Result<u32, CatalogError> {
    Err(CatalogError::Upstream(status))
}

fn stale_item(_status: u16, why: CatalogError) -> Result<u32, CatalogError> {
    assert_eq!(why, CatalogError::Upstream(503));
    Ok(1)
}

#[test]
fn a_refusal_not_listed_in_on_reaches_the_caller_as_the_fn_s_error() {
    assert_eq!(catalog_item_sync(503), Ok(1));
    registry()
        .circuit_breaker("macros-fallback-catalog-upstream")
        .transition_to_forced_open()
        .unwrap();
    match catalog_item_sync(503) {
        Err(CatalogError::Rejected(r)) => assert_eq!(r.kind(), ErrorKind::CallNotPermitted),
        other => panic!("expected the refusal, got {other:?}"),
    }
    let m = fallback::metrics(concat!(module_path!(), "::catalog_item_sync"));
    assert_eq!((m.degraded_total(), m.failed()), (1, 0));
}

static SEARCHES: AtomicU32 = AtomicU32::new(0);

// A throttler around a rate limiter: a fallback typed for the throttler's
// refusal and one typed for the rate limiter's each take only their own.
#[resil::throttler(
    name = "macros-fallback-search",
    fallback = [search_on_throttled, search_on_rate_limited]
)]
#[resil::rate_limiter(name = "macros-fallback-search")]
fn search(fail: bool) -> Result<&'static str, PriceError> {
    SEARCHES.fetch_add(1, Ordering::SeqCst);
    if fail {
        Err(PriceError::Unavailable)
    } else {
        Ok("live")
    }
}

fn search_on_throttled(_fail: bool, why: Throttled) -> Result<&'static str, PriceError> {
    assert_eq!(why.name(), "macros-fallback-search");
    assert!(why.probability() > 0.0 && why.probability() <= 1.0);
    Ok("throttled")
}

fn search_on_rate_limited(
    _fail: bool,
    why: RequestNotPermitted,
) -> Result<&'static str, PriceError> {
    assert_eq!(why.name(), "macros-fallback-search");
    Ok("rate limited")
}

#[test]
fn a_throttler_s_refusal_goes_to_the_throttled_fallback_and_a_rate_limit_to_its_own() {
    // The throttler draws from this thread's generator: seeded, the run is
    // the same every time.
    fastrand::seed(30);
    registry()
        .configure_rate_limiter("macros-fallback-search", |b| {
            b.limit_for_period(100)
                .limit_refresh_period(std::time::Duration::from_secs(3_600))
                .timeout_duration(std::time::Duration::ZERO)
        })
        .unwrap();
    // A downstream refusing everything: the throttler soon sheds locally.
    let (mut throttled, mut refused) = (0u64, 0u32);
    for _ in 0..60 {
        match search(true) {
            Ok("throttled") => throttled += 1,
            Err(PriceError::Unavailable) => refused += 1,
            other => {
                panic!("expected the downstream's error or the throttled fallback, got {other:?}")
            }
        }
    }
    assert!(throttled > 0, "the throttler shed nothing");
    assert_eq!(SEARCHES.load(Ordering::SeqCst), refused);
    let throttler = registry().throttler("macros-fallback-search");
    assert_eq!(throttler.metrics().not_permitted_calls(), throttled);

    // The rate limiter's own refusal, with the throttler quiet again: the
    // other fallback, never the throttler's.
    throttler.reset();
    let limiter = registry().rate_limiter("macros-fallback-search");
    while limiter.try_acquire_permission(1) {}
    assert_eq!(search(false), Ok("rate limited"));
    let m = fallback::metrics(concat!(module_path!(), "::search"));
    assert_eq!(m.degraded(ErrorKind::Throttled), throttled);
    assert_eq!(m.degraded(ErrorKind::RequestNotPermitted), 1);
}
