//! The `tenants` mode: one quota per tenant at the edge of a service, over
//! real HTTP.
//!
//! The service answers `GET /api` behind resil-web's keyed layer
//! (`KeyedLayer` keyed `by_header("x-tenant")`), whose rate-limiter family
//! is `tenant-api` in lab.yaml: 5 requests a second per tenant, 20 for the
//! `gold-*` tier. For three seconds of the lab's clock, a noisy tenant sends
//! 20 requests a second, a quiet one 3, and a gold one 20; a request without
//! the header is refused as the client's mistake. The noisy tenant is held
//! to its own quota and the others are untouched; the family's report names
//! the noisy tenant while its metrics carry no tenant label.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::{BodyExt, Empty, Full};
use hyper::body::{Bytes, Incoming};
use hyper::header::HOST;
use hyper::{Request, StatusCode};
use hyper_util::rt::TokioIo;
use resil_web::tower::keyed::{by_header, KeyedLayer};
use tokio::net::{TcpListener, TcpStream};
use tower::{Layer, ServiceExt};

use crate::http::Answer;
use crate::lab::Lab;

/// The keyed family (a rate limiter per tenant) in lab.yaml.
const FAMILY: &str = "tenant-api";
/// Seconds of the lab's clock the tenants send for.
const TICKS: u32 = 3;

/// Who sends what each second.
const TENANTS: [(&str, &str, u32); 3] = [
    ("noisy", "acme", 20),
    ("quiet", "globex", 3),
    ("gold", "gold-initech", 20),
];

/// Starts the service: `/api` behind the keyed layer; every connection on
/// its own task until the returned handle is aborted.
async fn serve(lab: &Lab) -> (SocketAddr, tokio::task::JoinHandle<()>) {
    let _ = lab;
    let layer = KeyedLayer::builder(resil::registry(), FAMILY, by_header("x-tenant"))
        .rate_limiter()
        .build();
    let api = layer.layer(tower::service_fn(|_: Request<Incoming>| async {
        Ok::<_, Infallible>(hyper::Response::new(Full::new(Bytes::from("ok"))))
    }));
    let listener = TcpListener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .await
        .expect("the tenants service binds");
    let addr = listener.local_addr().expect("a bound address");
    let accept = tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let api = api.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: Request<Incoming>| {
                    api.clone().oneshot(req)
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    (addr, accept)
}

/// `GET /api` as `tenant` (no header for `None`), on a connection of its own.
async fn get(addr: SocketAddr, tenant: Option<&str>) -> Answer {
    let stream = TcpStream::connect(addr).await.expect("the service accepts");
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(TokioIo::new(stream))
            .await
            .expect("an HTTP/1.1 handshake");
    let connection = tokio::spawn(connection);
    let mut request = Request::get("/api").header(HOST, addr.to_string());
    if let Some(t) = tenant {
        request = request.header("x-tenant", t);
    }
    let reply = sender
        .send_request(request.body(Empty::new()).expect("a request"))
        .await
        .expect("a reply");
    let status = reply.status();
    let body = reply
        .into_body()
        .collect()
        .await
        .expect("a whole body")
        .to_bytes();
    connection.abort();
    Answer {
        status,
        body: String::from_utf8_lossy(&body).trim().to_owned(),
    }
}

/// Runs the mode; its lines.
pub async fn tenants(lab: &Lab) -> Vec<String> {
    let (addr, accept) = serve(lab).await;
    let family = resil::registry().keyed_rate_limiter(FAMILY);
    let quota = family.config();
    let mut lines = vec![format!(
        "quota={}/{}s per tenant, gold-*={} ticks={TICKS}",
        quota.limit_for_period(),
        quota.limit_refresh_period().as_secs(),
        family.tiers().for_str(Some("gold-initech")),
    )];
    let mut counts = [(0u32, 0u32); TENANTS.len()];
    for _ in 0..TICKS {
        // The tenants take turns within the second, as concurrent clients'
        // requests interleave.
        let most = TENANTS.iter().map(|t| t.2).max().unwrap_or(0);
        for i in 0..most {
            for (n, (_, tenant, rate)) in TENANTS.iter().enumerate() {
                if i < *rate {
                    match get(addr, Some(tenant)).await.status {
                        StatusCode::OK => counts[n].0 += 1,
                        StatusCode::TOO_MANY_REQUESTS => counts[n].1 += 1,
                        other => panic!("unexpected {other} for {tenant}"),
                    }
                }
            }
        }
        lab.wait(Duration::from_secs(1));
    }
    for ((role, tenant, rate), (ok, refused)) in TENANTS.iter().zip(counts) {
        lines.push(format!(
            "{role} tenant={tenant} sent={} ok={ok} refused={refused}",
            rate * TICKS
        ));
    }
    let none = get(addr, None).await;
    lines.push(format!(
        "no-header status={} body={:?}",
        none.status.as_u16(),
        none.body
    ));
    let top = family.top_keys(1);
    let counts = family.counts();
    lines.push(format!(
        "family keys={} topRefused={}",
        counts.in_use,
        top.by_refusals.first().map_or("none", |k| k.key.as_str()),
    ));
    accept.abort();
    lines
}
