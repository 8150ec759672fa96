//! The inventory service's routes, and how the whole program starts.
//!
//! ```text
//! GET  /inventory/{skuId}?mode=success|fail|connect|slow   the protected stock query
//! GET  /inventory/attempts                                every downstream attempt so far
//! GET  /actuator/...                                      resil's actuator (health, metrics,
//!                                                         circuitbreakers, prometheus, dashboard, …)
//! ```
//!
//! Two kinds of protection, both from the same registry:
//! - the route itself is behind a tower layer (the `inventory-api` rate
//!   limiter): past its limit a client gets 429 with `Retry-After`, the
//!   service's own load shedding;
//! - the handler's downstream call is the annotated `query_stock` (the
//!   `inventory-query` instances), whose fallbacks answer `UNKNOWN`.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path as UrlPath, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use resil::config::FileConfig;
use resil::Registry;
use resil_web::actuator::{Actuator, BearerToken};
use resil_web::http::HttpClassifier;
use resil_web::tower::{RefusalResponses, ResilienceLayer};
use serde::Deserialize;
use serde_json::json;

use crate::downstream::Downstream;
use crate::inventory::{self, InventoryClient};
use crate::serve::Server;

/// The config file shipped with the example.
pub const CONFIG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/examples/inventory_service.toml"
);

/// The inbound rate limiter in front of `/inventory/{skuId}`.
pub const API: &str = "inventory-api";

/// The registry from a config file, with the example's error classes and
/// code settings, and the downstream's HTTP classifier, which follows the
/// registry's file.
pub fn load_registry(path: &Path) -> Result<(Registry, HttpClassifier), String> {
    let file = FileConfig::from_file(path).map_err(|e| e.to_string())?;
    let registry = configure(Registry::new(), file)?;
    let classifier = classifier(&registry);
    Ok((registry, classifier))
}

/// How the downstream's answers are judged: [`inventory::classifier`]'s
/// sets (200 the answer, 409 ignored) with the registry's file's
/// `resil.http.instances.inventory-query` keys laid over them, now and after
/// every reload of the file (the loader checked those keys with the rest).
pub fn classifier(registry: &Registry) -> HttpClassifier {
    inventory::classifier().follow(registry, inventory::INSTANCE)
}

/// Configures `registry` (tests build theirs on a manual clock) from `file`:
/// first the error classes the file's lists name, then the file, then the
/// code settings.
pub fn configure(registry: Registry, file: FileConfig) -> Result<Registry, String> {
    registry.register_error_class::<inventory::InventoryError>();
    registry.reload(file).map_err(|e| e.to_string())?;
    inventory::configure(&registry).map_err(|e| e.to_string())?;
    registry.rate_limiter(API);
    Ok(registry)
}

#[derive(Deserialize)]
struct StockQuery {
    mode: Option<String>,
}

async fn stock(
    State(client): State<Arc<InventoryClient>>,
    UrlPath(sku): UrlPath<String>,
    Query(q): Query<StockQuery>,
) -> Response {
    if let Some(mode) = q.mode.as_deref() {
        if !inventory::MODES.contains(&mode) {
            let allowed = inventory::MODES.join(", ");
            return (
                StatusCode::BAD_REQUEST,
                Json(json!({ "error": format!("invalid `mode` `{mode}`: use one of {allowed}") })),
            )
                .into_response();
        }
    }
    match inventory::query_stock(&client, &sku, q.mode.as_deref()).await {
        Ok(view) => Json(view).into_response(),
        // The fallbacks answer every error; one of their own would land here.
        Err(e) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(json!({ "error": e.to_string() })),
        )
            .into_response(),
    }
}

async fn attempts(State(client): State<Arc<InventoryClient>>) -> Json<u64> {
    Json(client.attempts())
}

/// The service's router: the inventory routes and the actuator, over the
/// process-wide registry. `admin_token` enables the actuator's management
/// endpoints (and the dashboard's buttons) behind `Authorization: Bearer`.
pub fn router(client: Arc<InventoryClient>, admin_token: Option<&str>) -> Router {
    let registry = resil::registry();
    // Refusals become responses: 429 with `Retry-After` for the rate limit.
    // The stack wraps the handler itself (`handler`), the cheapest form on
    // a hot route.
    let shed = ResilienceLayer::builder(registry, API)
        .rate_limiter()
        .respond(RefusalResponses::<Body>::new())
        .build();
    let inventory = Router::new()
        .route("/inventory/{sku}", get(shed.handler(stock)))
        .route("/inventory/attempts", get(attempts))
        .with_state(client);
    let mut actuator = Actuator::builder(registry);
    if let Some(token) = admin_token {
        actuator = actuator.management(BearerToken::new(token));
    }
    inventory.merge(actuator.router())
}

/// The whole program, running: the downstream and the service, each on its
/// own port.
pub struct Running {
    /// The registry the service reports on (the process-wide one).
    pub registry: &'static Registry,
    /// The downstream's HTTP client (its attempt count).
    pub client: Arc<InventoryClient>,
    /// The fake downstream's state (its mode, its request count).
    pub downstream: Arc<Downstream>,
    /// The downstream's server.
    pub downstream_server: Server,
    /// The service's server.
    pub service: Server,
}

impl Running {
    /// Starts the downstream on any free 127.0.0.1 port and the service on
    /// `service_addr`, protected by the process-wide registry (see
    /// [`resil::init`]).
    pub async fn start(
        service_addr: SocketAddr,
        admin_token: Option<&str>,
        classifier: HttpClassifier,
    ) -> std::io::Result<Running> {
        let (downstream, downstream_server) =
            Downstream::start(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let client = Arc::new(InventoryClient::new(downstream_server.addr(), classifier)?);
        let service = Server::start(service_addr, router(Arc::clone(&client), admin_token)).await?;
        Ok(Running {
            registry: resil::registry(),
            client,
            downstream,
            downstream_server,
            service,
        })
    }

    /// Stops both servers, letting requests in flight finish.
    pub async fn stop(self) {
        self.service.stop().await;
        self.downstream_server.stop().await;
    }
}
