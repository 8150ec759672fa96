//! `criticality = <expr>` over the fn's arguments, on sync and async fns,
//! free fns and methods.

use resil::Criticality;

#[derive(Debug)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

pub struct Request {
    pub prefetch: bool,
}

impl Request {
    fn class(&self) -> Criticality {
        if self.prefetch {
            Criticality::Sheddable
        } else {
            Criticality::Critical
        }
    }
}

#[resil::bulkhead(name = "a", criticality = req.class())]
pub fn sync_fetch(req: &Request) -> Result<bool, E> {
    Ok(req.prefetch)
}

#[resil::retry(name = "a")]
#[resil::rate_limiter(name = "a", criticality = if owned.is_empty() { Criticality::Sheddable } else { Criticality::CriticalPlus })]
pub async fn async_fetch(owned: String) -> Result<usize, E> {
    Ok(owned.len())
}

pub struct Service;

impl Service {
    #[resil::bulkhead(name = "a", criticality = self.class_of(n))]
    pub async fn call(&self, n: u32) -> Result<u32, E> {
        Ok(n)
    }

    fn class_of(&self, n: u32) -> Criticality {
        if n > 10 {
            Criticality::Sheddable
        } else {
            Criticality::Critical
        }
    }
}

fn main() {
    assert!(sync_fetch(&Request { prefetch: true }).unwrap());
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(rt.block_on(async_fetch(String::from("ab"))).unwrap(), 2);
    assert_eq!(rt.block_on(Service.call(1)).unwrap(), 1);
}
