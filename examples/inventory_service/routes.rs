//! The inventory service's HTTP routes, and how the whole program starts.
//!
//! ```text
//! GET  /inventory/{sku}                               the protected stock query
//! GET  /actuator/health                               the registry's health (503 when DOWN)
//! GET  /actuator/circuitbreakers                      every breaker's snapshot
//! POST /actuator/circuitbreakers/{name}/{operation}   forced-open | disabled | closed | reset
//!                                                     (forced-open, disabled: ?ttl=30s&reason=…)
//! ```

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use hyper::body::Incoming;
use hyper::{Method, Request, StatusCode};
use resil::config::FileConfig;
use resil::registry_crate::{RegistryError, Snapshot, Status, Transition};
use resil::Registry;

use crate::downstream::Downstream;
use crate::http::{self, Reply, Server};
use crate::inventory;

/// The config file shipped with the example.
pub const CONFIG: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/examples/inventory_service.toml"
);

/// The registry from a config file, with the example's error classes and
/// code settings.
pub fn load_registry(path: &Path) -> Result<Registry, String> {
    let file = FileConfig::from_file(path).map_err(|e| e.to_string())?;
    configure(Registry::new(), file)
}

/// Configures `registry` (tests build theirs on a manual clock) from `file`
/// (tests add environment overrides with `FileConfig::from_file_with_env`):
/// first the error classes the file's lists name (`Registry::from_file`
/// could only know `resil::Error`'s kinds), then the file, then the code
/// settings.
pub fn configure(registry: Registry, file: FileConfig) -> Result<Registry, String> {
    registry.register_error_class::<inventory::InventoryError>();
    registry.reload(file).map_err(|e| e.to_string())?;
    inventory::configure(&registry).map_err(|e| e.to_string())?;
    Ok(registry)
}

/// The service: the protected query and the registry it reports on.
pub struct App {
    registry: &'static Registry,
    downstream: SocketAddr,
}

impl App {
    /// Routes one request.
    pub async fn handle(self: Arc<Self>, req: Request<Incoming>) -> Reply {
        let path = req.uri().path().to_owned();
        let segments: Vec<&str> = path.trim_matches('/').split('/').collect();
        match (req.method(), segments.as_slice()) {
            (&Method::GET, ["inventory", sku]) => {
                match inventory::query_stock(self.downstream, sku).await {
                    Ok(view) => http::json(StatusCode::OK, &view.to_json()),
                    // The fallbacks answer every error; one of their own
                    // would land here.
                    Err(e) => http::error(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()),
                }
            }
            (&Method::GET, ["actuator", "health"]) => self.health(),
            (&Method::GET, ["actuator", "circuitbreakers"]) => self.breakers(None),
            (&Method::GET, ["actuator", "circuitbreakers", name]) => self.breakers(Some(name)),
            (&Method::POST, ["actuator", "circuitbreakers", name, operation]) => {
                self.manage(name, operation, &http::query(&req))
            }
            (_, ["inventory", _] | ["actuator", ..]) => http::error(
                StatusCode::METHOD_NOT_ALLOWED,
                format!("{} is not allowed on {path}", req.method()),
            ),
            _ => http::error(StatusCode::NOT_FOUND, format!("no route for {path}")),
        }
    }

    fn health(&self) -> Reply {
        let health = self.registry.health();
        // Actuator's convention: a DOWN application answers 503, so a load
        // balancer takes it out; DEGRADED still serves.
        let status = match health.status {
            Status::Down => StatusCode::SERVICE_UNAVAILABLE,
            Status::Up | Status::Degraded => StatusCode::OK,
        };
        http::json(status, &serde_json::to_value(&health).unwrap_or_default())
    }

    /// The registry's snapshot, circuit breakers only (all of them, or one).
    fn breakers(&self, name: Option<&str>) -> Reply {
        let snapshot = self.registry.snapshot();
        let instances: Vec<_> = snapshot
            .instances
            .into_iter()
            .filter(|i| i.kind == "circuit_breaker" && name.is_none_or(|n| i.name == n))
            .collect();
        if let (Some(name), true) = (name, instances.is_empty()) {
            return http::error(
                StatusCode::NOT_FOUND,
                format!("no circuit breaker `{name}`"),
            );
        }
        let snapshot = Snapshot { instances };
        http::json(
            StatusCode::OK,
            &serde_json::to_value(&snapshot).unwrap_or_default(),
        )
    }

    fn manage(
        &self,
        name: &str,
        operation: &str,
        params: &std::collections::HashMap<String, String>,
    ) -> Reply {
        let ttl = match params.get("ttl").map(|t| resil::config::parse_duration(t)) {
            None => None,
            Some(Ok(ttl)) => Some(ttl),
            Some(Err(e)) => {
                return http::error(StatusCode::BAD_REQUEST, format!("invalid `ttl`: {e}"))
            }
        };
        let reason = params.get("reason").map_or("", String::as_str);
        let done = match operation {
            "forced-open" => self.registry.force_open(name, ttl, reason),
            "disabled" => self.registry.disable(name, ttl, reason),
            "closed" | "reset" if ttl.is_some() => {
                return http::error(
                    StatusCode::BAD_REQUEST,
                    format!("`ttl` applies to forced-open and disabled, not to {operation}"),
                )
            }
            "closed" => self
                .registry
                .transition_circuit_breaker(name, Transition::Closed),
            "reset" => self
                .registry
                .transition_circuit_breaker(name, Transition::Reset),
            other => {
                return http::error(
                    StatusCode::NOT_FOUND,
                    format!(
                        "unknown operation `{other}`: use forced-open, disabled, closed or reset"
                    ),
                )
            }
        };
        match done {
            Ok(()) => self.breakers(Some(name)),
            Err(e @ RegistryError::NotFound { .. }) => {
                http::error(StatusCode::NOT_FOUND, e.to_string())
            }
            Err(e) => http::error(StatusCode::CONFLICT, e.to_string()),
        }
    }
}

/// The whole program, running: the downstream and the service, each on its
/// own port.
pub struct Running {
    /// The registry the service reports on (the process-wide one).
    pub registry: &'static Registry,
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
    pub async fn start(service_addr: SocketAddr) -> std::io::Result<Running> {
        let registry = resil::registry();
        let (downstream, downstream_server) =
            Downstream::start(SocketAddr::from(([127, 0, 0, 1], 0))).await?;
        let app = Arc::new(App {
            downstream: downstream_server.addr(),
            registry,
        });
        let service = Server::start(service_addr, move |req| Arc::clone(&app).handle(req)).await?;
        Ok(Running {
            registry,
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
