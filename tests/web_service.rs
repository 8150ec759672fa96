//! The web-service path of the guide (`docs/web-service.md`), as a test: a
//! "price" service calls a downstream catalog through an annotated fn whose
//! own error type wraps the downstream's answer. "A 404 is not a failure"
//! is written once, in the file's `resil.http` sets; no second list and no
//! mapping glue. 12 unknown SKUs give 12 × 404 and a CLOSED breaker, the
//! fallback is not called for them and no failed fallback is counted; a
//! reload that records 404s reloads the classification too.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::LazyLock;

use http::{Response, StatusCode};
use resil::circuit_breaker::State;
use resil::config::FileConfig;
use resil::{fallback, registry, Rejection};
use resil_web::http::{HttpClassifier, HttpError};

const CONFIG: &str = "
resilience4j.circuitbreaker:
  instances:
    catalog:
      sliding-window-size: 10
      minimum-number-of-calls: 5
      failure-rate-threshold: 50
resil.http:
  instances:
    catalog:
      ignore-status: [404]
";

/// The service's own error: the catalog's answer, kept whole.
#[derive(Debug, resil::ErrorClass)]
enum PriceError {
    /// The catalog does not know the SKU: an answer, not an outage.
    #[error_class(http)]
    NotFound(HttpError),
    /// The catalog failed (5xx, 429, no answer).
    #[error_class(http)]
    Upstream(HttpError),
    /// A resil primitive refused the call.
    #[allow(dead_code)]
    Rejected(Rejection),
}

impl From<Rejection> for PriceError {
    fn from(r: Rejection) -> Self {
        PriceError::Rejected(r)
    }
}

impl From<HttpError> for PriceError {
    fn from(e: HttpError) -> Self {
        match e.status() {
            Some(StatusCode::NOT_FOUND) => PriceError::NotFound(e),
            _ => PriceError::Upstream(e),
        }
    }
}

/// The classifier of the file the registry loaded, following its reloads.
static CATALOG: LazyLock<HttpClassifier> =
    LazyLock::new(|| HttpClassifier::follow(registry(), "catalog"));

/// The downstream, answering with `status` (a stand-in for a reqwest call
/// whose response goes through `CATALOG.check`).
async fn catalog_get(status: u16) -> Response<u32> {
    Response::builder().status(status).body(42).unwrap()
}

static CACHED: AtomicU32 = AtomicU32::new(0);

#[resil::circuit_breaker(name = "catalog", fallback = cached_price, on = [upstream, rejected])]
async fn price(_sku: &str, status: u16) -> Result<u32, PriceError> {
    let response = CATALOG.check(catalog_get(status).await)?;
    Ok(*response.body())
}

async fn cached_price(_sku: &str, _status: u16) -> Result<u32, PriceError> {
    CACHED.fetch_add(1, Ordering::SeqCst);
    Ok(7)
}

#[tokio::test]
async fn twelve_unknown_skus_give_twelve_404s_a_closed_breaker_and_no_fallback() {
    registry()
        .reload(FileConfig::from_yaml_str(CONFIG).unwrap())
        .unwrap();
    let path = concat!(module_path!(), "::price");
    for i in 0..12 {
        match price(&format!("SKU-UNKNOWN-{i}"), 404).await {
            Err(PriceError::NotFound(e)) => assert_eq!(e.status(), Some(StatusCode::NOT_FOUND)),
            other => panic!("expected the 404 back, got {other:?}"),
        }
    }
    let breaker = registry().circuit_breaker("catalog");
    assert_eq!(breaker.state(), State::Closed);
    assert_eq!(breaker.metrics().failed_calls(), 0);
    assert_eq!(CACHED.load(Ordering::SeqCst), 0, "the fallback never ran");
    let m = fallback::metrics(path);
    assert_eq!((m.degraded_total(), m.failed()), (0, 0));

    // A 503 is the downstream failing: counted, and the fallback answers.
    assert_eq!(price("SKU-1", 503).await.unwrap(), 7);
    assert_eq!(breaker.metrics().failed_calls(), 1);
    assert_eq!(fallback::metrics(path).degraded_total(), 1);

    // The file changes its mind: a reload records 404s, for the classifier
    // and for the breaker's view of the fn's own error alike.
    registry()
        .reload(
            FileConfig::from_yaml_str(
                &CONFIG.replace("ignore-status: [404]", "record-status: [404, 500-599]"),
            )
            .unwrap(),
        )
        .unwrap();
    let mut not_found = 0;
    for i in 0..10 {
        match price(&format!("SKU-GONE-{i}"), 404).await {
            Err(PriceError::NotFound(_)) => not_found += 1,
            // Once the recorded 404s open it, the breaker refuses and the
            // fallback (`on = [rejected]`) answers.
            Ok(7) => assert_eq!(breaker.state(), State::Open),
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(breaker.state(), State::Open, "404s are failures now");
    assert!(not_found >= 4, "{not_found} 404s before the breaker opened");
    assert_eq!(breaker.metrics().failed_calls(), not_found + 1);
    // The registry shows the file it loaded.
    assert!(registry()
        .loaded_file()
        .http()
        .instance("catalog")
        .is_some());
}
