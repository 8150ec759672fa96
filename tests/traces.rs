//! resil's spans, read back through `tracing-opentelemetry` from the
//! OpenTelemetry SDK's in-memory exporter (issue 27 §6): a call that fails
//! twice and then succeeds is one `resil.call` span with three
//! `resil.attempt` children (`retry.attempt` 1, 2, 3; `error.type` on the
//! two failures, told apart: a connect failure and an HTTP 503), and a call
//! an open breaker refuses carries `error.type = call_not_permitted` and the
//! refusal event. Time is tokio's paused clock: the retry's waits take no
//! real time.
#![cfg(feature = "otel")]

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use resil::otel::opentelemetry::trace::TracerProvider as _;
use resil::otel::tracing_opentelemetry;
use resil::{registry, Rejection};
use tracing::subscriber::DefaultGuard;
use tracing_subscriber::layer::SubscriberExt;

#[derive(Debug, PartialEq)]
enum PriceError {
    /// The connection was refused.
    Connect,
    /// The server answered with this status.
    Status(u16),
    /// A resil primitive refused the call.
    Refused(Rejection),
}

impl From<Rejection> for PriceError {
    fn from(r: Rejection) -> Self {
        PriceError::Refused(r)
    }
}

/// The in-memory exporter behind an OpenTelemetry layer, installed as this
/// thread's subscriber until the guard drops (every level: the refusal
/// events are DEBUG).
fn otel() -> (InMemorySpanExporter, SdkTracerProvider, DefaultGuard) {
    resil::trace::register_error_type::<PriceError>(|e, label| match e {
        PriceError::Connect => label("connect"),
        PriceError::Status(code) => label(&code.to_string()),
        PriceError::Refused(r) => label(r.kind().as_str()),
    });
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let subscriber = tracing_subscriber::registry()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("tests-traces")));
    let guard = tracing::subscriber::set_default(subscriber);
    (exporter, provider, guard)
}

/// An attribute's value as a string, if the span has it.
fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.as_str().into_owned())
}

static FLAKY_RUNS: AtomicU32 = AtomicU32::new(0);

#[resil::retry(name = "traces-flaky", max_attempts = 3, wait_duration = "100ms")]
#[resil::circuit_breaker(name = "traces-flaky")]
async fn flaky_price(sku: &str) -> Result<String, PriceError> {
    match FLAKY_RUNS.fetch_add(1, Ordering::SeqCst) {
        0 => Err(PriceError::Connect),
        1 => Err(PriceError::Status(503)),
        _ => Ok(format!("{sku}: 42")),
    }
}

#[tokio::test(start_paused = true)]
async fn a_call_that_fails_twice_then_succeeds_is_one_call_span_with_three_attempt_children() {
    let (exporter, _provider, _guard) = otel();
    let started = tokio::time::Instant::now();
    assert_eq!(flaky_price("sku-1").await, Ok("sku-1: 42".to_owned()));
    assert_eq!(
        started.elapsed(),
        Duration::from_millis(200),
        "two waits of 100 ms, on paused time"
    );

    let spans = exporter.get_finished_spans().unwrap();
    let calls: Vec<&SpanData> = spans.iter().filter(|s| s.name == "resil.call").collect();
    assert_eq!(calls.len(), 1, "one span for the logical call: {spans:#?}");
    let call = calls[0];
    assert_eq!(
        attr(call, "resil.instance").as_deref(),
        Some("traces-flaky")
    );
    assert_eq!(
        attr(call, "resil.aspects").as_deref(),
        Some("retry,circuit_breaker"),
        "the aspects in the documented order, outermost first"
    );
    assert_eq!(attr(call, "retry.name").as_deref(), Some("traces-flaky"));
    assert_eq!(
        attr(call, "circuitbreaker.name").as_deref(),
        Some("traces-flaky")
    );
    assert_eq!(
        attr(call, "circuitbreaker.state").as_deref(),
        Some("CLOSED")
    );
    assert_eq!(attr(call, "error.type"), None, "the call succeeded");

    let mut attempts: Vec<&SpanData> = spans.iter().filter(|s| s.name == "resil.attempt").collect();
    attempts.sort_by_key(|s| attr(s, "retry.attempt"));
    assert_eq!(attempts.len(), 3);
    for attempt in &attempts {
        assert_eq!(attempt.parent_span_id, call.span_context.span_id());
        assert_eq!(
            attempt.span_context.trace_id(),
            call.span_context.trace_id()
        );
        assert_eq!(attr(attempt, "retry.name").as_deref(), Some("traces-flaky"));
    }
    let numbered: Vec<(Option<String>, Option<String>)> = attempts
        .iter()
        .map(|s| (attr(s, "retry.attempt"), attr(s, "error.type")))
        .collect();
    assert_eq!(
        numbered,
        [
            (Some("1".into()), Some("connect".into())),
            (Some("2".into()), Some("503".into())),
            (Some("3".into()), None),
        ]
    );
}

#[resil::circuit_breaker(name = "traces-refused")]
async fn refused_price(sku: &str) -> Result<String, PriceError> {
    Ok(format!("{sku}: 42"))
}

#[tokio::test(start_paused = true)]
async fn a_call_an_open_breaker_refuses_carries_the_refusal_event_and_its_error_type() {
    registry()
        .circuit_breaker("traces-refused")
        .transition_to_forced_open()
        .unwrap();
    let (exporter, _provider, _guard) = otel();
    assert!(matches!(
        refused_price("sku-2").await,
        Err(PriceError::Refused(_))
    ));

    let spans = exporter.get_finished_spans().unwrap();
    let call = spans
        .iter()
        .find(|s| s.name == "resil.call")
        .expect("the call's span");
    assert_eq!(
        attr(call, "error.type").as_deref(),
        Some("call_not_permitted")
    );
    assert_eq!(
        attr(call, "circuitbreaker.state").as_deref(),
        Some("FORCED_OPEN")
    );
    // The refusal's event; the breaker's first refusal after a quiet spell
    // also writes its aggregated log line ("traces-refused: 1 call not
    // permitted", target `resil::refusals`) inside the caller's span.
    let events: Vec<_> = call
        .events
        .iter()
        .filter(|e| e.name == "call not permitted")
        .collect();
    assert_eq!(events.len(), 1, "one refusal event: {:#?}", call.events);
    let event = events[0];
    assert_eq!(event.name, "call not permitted");
    let field = |key: &str| {
        event
            .attributes
            .iter()
            .find(|kv| kv.key.as_str() == key)
            .map(|kv| kv.value.as_str().into_owned())
    };
    assert_eq!(field("error.type").as_deref(), Some("call_not_permitted"));
    assert_eq!(
        field("circuitbreaker.name").as_deref(),
        Some("traces-refused")
    );
    assert_eq!(
        field("circuitbreaker.state").as_deref(),
        Some("FORCED_OPEN")
    );
    assert!(
        spans.iter().all(|s| s.name != "resil.attempt"),
        "no retry, no attempt span"
    );
}

#[tokio::test(start_paused = true)]
async fn the_tower_layer_labels_a_503_a_connect_failure_and_a_refusal_apart() {
    use resil::Registry;
    use resil_web::http::{HttpClassifier, HttpError};
    use resil_web::tower::ResilienceLayer;
    use tower::{service_fn, Layer, ServiceExt};

    let registry = Registry::new();
    registry
        .configure_rate_limiter("traces-tower", |b| {
            b.limit_for_period(2)
                .limit_refresh_period(Duration::from_secs(60))
                .timeout_duration(Duration::ZERO)
        })
        .unwrap();
    let layer = ResilienceLayer::builder(&registry, "traces-tower")
        .circuit_breaker()
        .rate_limiter()
        .classify(HttpClassifier::default())
        .build();
    let (exporter, _provider, _guard) = otel();
    let answers = std::sync::Mutex::new(0u32);
    let svc = layer.layer(service_fn(|_: ()| {
        let n = {
            let mut a = answers.lock().unwrap();
            *a += 1;
            *a
        };
        async move {
            match n {
                1 => Ok(http::Response::builder().status(503).body(()).unwrap()),
                _ => Err(HttpError::transport(std::io::Error::from(
                    std::io::ErrorKind::ConnectionRefused,
                ))),
            }
        }
    }));
    let answered = svc.clone().oneshot(()).await.unwrap();
    assert_eq!(answered.status(), 503);
    svc.clone().oneshot(()).await.unwrap_err();
    let refused = svc.oneshot(()).await.unwrap_err();
    assert_eq!(refused.kind(), resil::ErrorKind::RequestNotPermitted);

    let spans = exporter.get_finished_spans().unwrap();
    let calls: Vec<&SpanData> = spans.iter().filter(|s| s.name == "resil.call").collect();
    assert_eq!(calls.len(), 3, "one span a request: {spans:#?}");
    let seen: Vec<(Option<String>, Option<String>)> = calls
        .iter()
        .map(|s| (attr(s, "error.type"), attr(s, "ratelimiter.result")))
        .collect();
    assert_eq!(
        seen,
        [
            (Some("503".into()), Some("permitted".into())),
            (Some("connect".into()), Some("permitted".into())),
            (
                Some("request_not_permitted".into()),
                Some("rejected".into())
            ),
        ]
    );
    for call in &calls {
        assert_eq!(
            attr(call, "resil.instance").as_deref(),
            Some("traces-tower")
        );
        assert_eq!(
            attr(call, "resil.aspects").as_deref(),
            Some("circuit_breaker,rate_limiter")
        );
        assert_eq!(
            attr(call, "circuitbreaker.state").as_deref(),
            Some("CLOSED")
        );
    }
    let refusal = &calls[2].events;
    assert_eq!(refusal.len(), 1);
    assert_eq!(refusal.iter().next().unwrap().name, "request not permitted");
}

static HEDGED_RUNS: AtomicU32 = AtomicU32::new(0);

#[resil::hedge(name = "traces-hedge")]
async fn hedged_price(sku: &str) -> Result<String, PriceError> {
    // The primary fails at once: a hedge starts without waiting.
    match HEDGED_RUNS.fetch_add(1, Ordering::SeqCst) {
        0 => Err(PriceError::Status(503)),
        _ => Ok(format!("{sku}: 42")),
    }
}

#[tokio::test(start_paused = true)]
async fn a_hedged_call_has_a_span_for_the_primary_and_one_for_the_hedge() {
    let (exporter, _provider, _guard) = otel();
    assert_eq!(hedged_price("sku-3").await, Ok("sku-3: 42".to_owned()));

    let spans = exporter.get_finished_spans().unwrap();
    let call = spans
        .iter()
        .find(|s| s.name == "resil.call")
        .expect("the call's span");
    assert_eq!(attr(call, "hedging.name").as_deref(), Some("traces-hedge"));
    let mut attempts: Vec<(Option<String>, Option<String>, Option<String>)> = spans
        .iter()
        .filter(|s| s.name == "resil.attempt")
        .inspect(|s| assert_eq!(s.parent_span_id, call.span_context.span_id()))
        .map(|s| {
            (
                attr(s, "hedging.attempt"),
                attr(s, "hedging.primary"),
                attr(s, "error.type"),
            )
        })
        .collect();
    attempts.sort();
    assert_eq!(
        attempts,
        [
            (Some("1".into()), Some("true".into()), Some("503".into())),
            (Some("2".into()), Some("false".into()), None),
        ]
    );
}
