//! A mountable actuator: Resilience4j's Spring Boot endpoints as an axum
//! [`Router`], with liveness and readiness kept apart.
//!
//! ```no_run
//! # async fn demo() {
//! use std::sync::Arc;
//! use resil_registry::Registry;
//!
//! let registry = Arc::new(Registry::new());
//! let app = axum::Router::new().merge(resil_web::actuator::router(registry.clone()));
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:8080").await.unwrap();
//! axum::serve(listener, app).await.unwrap();
//! # }
//! ```
//!
//! # Endpoints
//!
//! | path | answers |
//! |---|---|
//! | `GET /actuator/health` | `{"status", "components": {"liveness", "readiness", "circuitBreakers", "rateLimiters", …}}`; the status and the HTTP code (200 / 503) are readiness's |
//! | `GET /actuator/health/liveness` | always `{"status":"UP"}` (200) while the process answers |
//! | `GET /actuator/health/readiness` | `UP` (200), or `OUT_OF_SERVICE` (503) only when readiness was opted in and an instance allowed to fail it is DOWN |
//! | `GET /actuator/circuitbreakers` | `{"circuitBreakers": {name: details}}` (Resilience4j 2's shape) |
//! | `GET /actuator/circuitbreakers/{name}` | one breaker's details (404 when unknown) |
//! | `GET /actuator/ratelimiters`, `retries`, `bulkheads`, `timelimiters` | `{"rateLimiters": [names]}`, `{"retries": …}`, `{"bulkheads": …}`, `{"timeLimiters": …}` |
//! | `GET /actuator/circuitbreakerevents` (also `/{name}` and `/{name}/{eventType}`), `ratelimiterevents`, `retryevents`, `bulkheadevents`, `timelimiterevents` | Resilience4j's event DTOs: `{"circuitBreakerEvents": [{"circuitBreakerName", "type", "creationTime": "2026-12-02T07:00:00.123Z", "stateTransition": "CLOSED_TO_OPEN", "durationInMs", "description"}]}`, `{"retryEvents": [{"retryName", "type", "creationTime", "numberOfAttempts", …}]}`, …; oldest first |
//! | `GET /actuator/metrics`, `/actuator/metrics/{name}` | Actuator's metrics endpoint: `{"names"}`, and `{"name", "measurements", "availableTags"}` with `?tag=kind:failed` filters |
//! | `GET /actuator/stream/events` | server-sent events: `registry` events as they happen (an instance's transition included, pushed at once), `instances` (every instance's state, health and metrics) on connection and when they change |
//! | `GET /actuator/dashboard` | a live page of every instance (state, failure and slow rates, buffered and not-permitted calls, bulkhead and limiter headroom), updated from the event stream, with the management actions when they are enabled |
//! | `GET /actuator/dashboard/instances` | `{"instances": […]}`, the page's snapshot: what the stream's `instances` event carries |
//! | `GET /actuator/prometheus` (feature `prometheus`) | the Prometheus text format with Resilience4j's names, counters ending in `_total` |
//! | `POST /actuator/circuitbreakers/{name}`, `/actuator/ratelimiters/{name}`, `/actuator/bulkheads/{name}` | management, only when [`ActuatorBuilder::management`] enabled it |
//! | `GET /actuator/configversions`, `GET /actuator/configversions/diff?from=1&to=2`, `POST /actuator/configversions/{id}/rollback` | config versions (id, hash, time, source, APPLIED or REFUSED with the problems), the key-level diff of two, a rollback (`{"by": "alice"}`); behind the management authorization, only when it is enabled |
//! | `GET /actuator/shadow`, `POST /actuator/shadow`, `POST /actuator/shadow/promote`, `POST /actuator/shadow/discard` | the shadow trial running (what each staged breaker, rate limiter, bulkhead and retry would have done: transitions, refusals, waits, retries, unobserved calls), staging a config (`{"config": "…", "format": "yaml", "by": "alice"}`) or a kept version (`{"version": 3}`) as a trial, promoting it as a new version, discarding it; behind the management authorization, only when it is enabled |
//!
//! # Liveness is not readiness
//!
//! An open breaker means a *dependency* is failing. If the health endpoint an
//! orchestrator probes answered 503 for it, every instance of the service
//! would be taken out of rotation (or restarted) at once, and a downstream's
//! outage would become this service's. So liveness never looks at the
//! instances, and readiness ignores them unless the application opts in
//! ([`ActuatorBuilder::readiness_from_health`]); then only instances allowed
//! to fail the health summary
//! ([`Registry::allow_health_indicator_to_fail`](resil_registry::Registry::allow_health_indicator_to_fail),
//! `allow-health-indicator-to-fail`) and taking part in it
//! (`register-health-indicator`) can make readiness `OUT_OF_SERVICE`.
//!
//! # One health verdict
//!
//! `/actuator/health`, `/actuator/dashboard/instances` and the stream's
//! `instances` show each instance's status from the registry's one verdict
//! (`Registry::health`, the snapshot's `health`): an OPEN or FORCED_OPEN
//! breaker not allowed to fail the summary is DEGRADED in all three.
//!
//! # Management is audited
//!
//! Every attempt at a state-changing endpoint, granted or refused (401,
//! 403), is one log line (target `resil::management`, with the remote
//! address when the server provides `ConnectInfo<SocketAddr>`, never a header
//! or the token) and one count in
//! [`Registry::management_requests`](resil_registry::Registry::management_requests).
//!
//! # Differences from Resilience4j's JSON
//!
//! Events are the instance's history of notable events (transitions,
//! resets: always kept, never evicted by per-call events) and, when the
//! registry records them (`RegistryBuilder::record_instance_events`), its
//! recent per-call events; each also carries `description`, the event in
//! words. `errorMessage` is never set: events carry no error value.
//! Instance lists of limiters, retries, bulkheads and time limiters are
//! name lists, as in Resilience4j 1.x.

mod auth;
mod dashboard;
mod endpoints;
mod health;
mod manage;
mod metrics;
#[cfg(feature = "prometheus")]
mod prometheus;
mod shadow;
mod stream;
mod versions;

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use axum::routing::{get, post};
use axum::Router;
use resil_registry::Registry;

pub use self::auth::{Authorize, BearerToken, Denied};

/// The registry an actuator reads: the process-wide one or a shared one.
#[derive(Clone)]
pub enum RegistryRef {
    /// A registry that lives for the whole program (`resil::registry()`).
    Static(&'static Registry),
    /// A shared registry.
    Shared(Arc<Registry>),
}

impl Deref for RegistryRef {
    type Target = Registry;
    fn deref(&self) -> &Registry {
        match self {
            RegistryRef::Static(r) => r,
            RegistryRef::Shared(r) => r,
        }
    }
}

impl From<&'static Registry> for RegistryRef {
    fn from(r: &'static Registry) -> Self {
        RegistryRef::Static(r)
    }
}

impl From<Arc<Registry>> for RegistryRef {
    fn from(r: Arc<Registry>) -> Self {
        RegistryRef::Shared(r)
    }
}

impl From<Registry> for RegistryRef {
    fn from(r: Registry) -> Self {
        RegistryRef::Shared(Arc::new(r))
    }
}

/// The read-only actuator over `registry` (no management, readiness not
/// tied to the instances). See [`Actuator::builder`] for the options.
pub fn router(registry: impl Into<RegistryRef>) -> Router {
    Actuator::builder(registry).router()
}

/// The actuator's options; [`ActuatorBuilder::router`] makes the router.
pub struct Actuator;

impl Actuator {
    /// Options for an actuator over `registry`.
    pub fn builder(registry: impl Into<RegistryRef>) -> ActuatorBuilder {
        ActuatorBuilder {
            registry: registry.into(),
            readiness_from_health: false,
            authorize: None,
            stream_interval: Duration::from_secs(1),
        }
    }
}

/// Builds an actuator router.
#[must_use = "a builder does nothing until `router` is called"]
pub struct ActuatorBuilder {
    registry: RegistryRef,
    readiness_from_health: bool,
    authorize: Option<Arc<dyn Authorize>>,
    stream_interval: Duration,
}

impl ActuatorBuilder {
    /// How often `/actuator/stream/events` sends the instances' state when
    /// it changed (one second by default; at least 10 ms).
    pub fn stream_interval(mut self, every: Duration) -> Self {
        self.stream_interval = every.max(Duration::from_millis(10));
        self
    }

    /// Lets instances that are DOWN (and allowed to fail the health summary)
    /// make readiness `OUT_OF_SERVICE`. Off by default: see the module docs.
    pub fn readiness_from_health(mut self, on: bool) -> Self {
        self.readiness_from_health = on;
        self
    }

    /// Enables the state-changing endpoints, each request checked by
    /// `authorize` first: a refusal answers 401/403 and changes nothing.
    pub fn management(mut self, authorize: impl Authorize) -> Self {
        self.authorize = Some(Arc::new(authorize));
        self
    }

    /// The router, its paths under `/actuator`.
    pub fn router(self) -> Router {
        let ctx = Arc::new(Ctx {
            registry: self.registry,
            readiness_from_health: self.readiness_from_health,
            authorize: self.authorize,
            stream_interval: self.stream_interval,
        });
        let managed = ctx.authorize.is_some();
        let mut router = Router::new()
            .route("/actuator/health", get(health::health))
            .route("/actuator/health/liveness", get(health::liveness))
            .route("/actuator/health/readiness", get(health::readiness))
            .route(
                "/actuator/circuitbreakers",
                get(endpoints::circuit_breakers),
            )
            .route("/actuator/ratelimiters", get(endpoints::rate_limiters))
            .route("/actuator/retries", get(endpoints::retries))
            .route("/actuator/bulkheads", get(endpoints::bulkheads))
            .route("/actuator/timelimiters", get(endpoints::time_limiters))
            .route("/actuator/keyed", get(endpoints::keyed))
            .route("/actuator/stream/events", get(stream::events))
            .route("/actuator/dashboard", get(dashboard::page))
            .route("/actuator/dashboard/instances", get(dashboard::snapshot))
            .route("/actuator/metrics", get(metrics::names))
            .route("/actuator/metrics/{name}", get(metrics::metric));
        for (path, kind) in endpoints::EVENT_PATHS {
            router = router
                .route(
                    path,
                    get(move |s, q| endpoints::events(s, kind, None, None, q)),
                )
                .route(
                    &format!("{path}/{{name}}"),
                    get(
                        move |s, axum::extract::Path(name): axum::extract::Path<String>, q| {
                            endpoints::events(s, kind, Some(name), None, q)
                        },
                    ),
                )
                .route(
                    &format!("{path}/{{name}}/{{event_type}}"),
                    get(
                        move |s,
                              axum::extract::Path((name, ty)): axum::extract::Path<(
                            String,
                            String,
                        )>,
                              q| {
                            endpoints::events(s, kind, Some(name), Some(ty), q)
                        },
                    ),
                );
        }
        let breaker = get(endpoints::circuit_breaker);
        if managed {
            router = router
                .route(
                    "/actuator/circuitbreakers/{name}",
                    breaker.post(manage::circuit_breaker),
                )
                .route("/actuator/ratelimiters/{name}", post(manage::rate_limiter))
                .route("/actuator/bulkheads/{name}", post(manage::bulkhead))
                .route("/actuator/configversions", get(versions::list))
                .route("/actuator/configversions/diff", get(versions::diff))
                .route(
                    "/actuator/configversions/{id}/rollback",
                    post(versions::rollback),
                )
                .route("/actuator/shadow", get(shadow::report).post(shadow::stage))
                .route("/actuator/shadow/promote", post(shadow::promote))
                .route("/actuator/shadow/discard", post(shadow::discard));
        } else {
            router = router.route("/actuator/circuitbreakers/{name}", breaker);
        }
        #[cfg(feature = "prometheus")]
        {
            router = router.route("/actuator/prometheus", get(prometheus::scrape));
        }
        router.with_state(ctx)
    }
}

impl fmt::Debug for ActuatorBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ActuatorBuilder")
            .field("readiness_from_health", &self.readiness_from_health)
            .field("management", &self.authorize.is_some())
            .finish_non_exhaustive()
    }
}

/// What every handler reads.
pub(crate) struct Ctx {
    pub(crate) registry: RegistryRef,
    pub(crate) readiness_from_health: bool,
    pub(crate) authorize: Option<Arc<dyn Authorize>>,
    pub(crate) stream_interval: Duration,
}

pub(crate) type Shared = axum::extract::State<Arc<Ctx>>;

/// A refused request: its status and why, answered as `{"error": …}`.
pub(crate) struct Problem(pub(crate) axum::http::StatusCode, pub(crate) String);

impl axum::response::IntoResponse for Problem {
    fn into_response(self) -> axum::response::Response {
        error(self.0, self.1)
    }
}

/// A JSON error body `{"error": …}` with `status`.
pub(crate) fn error(
    status: axum::http::StatusCode,
    message: impl Into<String>,
) -> axum::response::Response {
    use axum::response::IntoResponse;
    (
        status,
        axum::Json(serde_json::json!({ "error": message.into() })),
    )
        .into_response()
}
