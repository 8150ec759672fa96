// Keyed attributes: a `&str` borrowed from an argument, an owned value, a
// field, weighted permits, and a retry on the key's budget around the rest.

use resil::Rejection;

#[derive(Debug)]
struct AppError;

impl From<Rejection> for AppError {
    fn from(_: Rejection) -> Self {
        AppError
    }
}

struct Request {
    tenant: String,
    items: Vec<u32>,
}

impl Request {
    fn tenant(&self) -> &str {
        &self.tenant
    }
}

#[resil::retry(name = "api", key = req.tenant())]
#[resil::rate_limiter(name = "api", key = req.tenant(), permits = req.items.len())]
#[resil::circuit_breaker(name = "api", key = req.tenant.clone())]
#[resil::bulkhead(name = "api", key = req.tenant())]
async fn handle(req: &Request) -> Result<usize, AppError> {
    Ok(req.items.len())
}

#[resil::retry(name = "ip", key = ip)]
#[resil::rate_limiter(name = "ip", key = ip)]
fn by_ip(ip: std::net::IpAddr) -> Result<(), AppError> {
    let _ = ip;
    Ok(())
}

fn main() {
    let req = Request {
        tenant: "t".into(),
        items: vec![1, 2],
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(rt.block_on(handle(&req)).unwrap(), 2);
    by_ip(std::net::IpAddr::from([127, 0, 0, 1])).unwrap();
}
