//! Methods with `&self`, `&mut self` and `self: Arc<Self>`, with and without
//! retry and fallback.
#![deny(warnings)]
use std::sync::Arc;

#[derive(Debug, PartialEq)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

pub struct Client {
    calls: u32,
}

impl Client {
    #[resil::retry(name = "pass-methods", wait_duration = "0ms", fallback = cached)]
    pub fn get(&self, key: &str) -> Result<usize, E> {
        Ok(key.len() + self.calls as usize)
    }

    fn cached(&self, _key: &str, _why: E) -> Result<usize, E> {
        Ok(self.calls as usize)
    }

    #[resil::circuit_breaker(name = "pass-methods")]
    #[resil::retry(name = "pass-methods", wait_duration = "0ms")]
    pub fn bump(&mut self) -> Result<u32, E> {
        self.calls += 1;
        Ok(self.calls)
    }

    #[resil::circuit_breaker(name = "pass-methods", fallback = reset)]
    pub async fn bump_async(&mut self) -> Result<u32, E> {
        self.calls += 1;
        Ok(self.calls)
    }

    async fn reset(&mut self) -> Result<u32, E> {
        self.calls = 0;
        Ok(0)
    }

    #[resil::retry(name = "pass-methods", wait_duration = "0ms")]
    pub async fn shared(self: Arc<Self>, add: u32) -> Result<u32, E> {
        Ok(self.calls + add)
    }
}

fn main() {
    let mut client = Client { calls: 0 };
    assert_eq!(client.get("ab"), Ok(2));
    assert_eq!(client.bump(), Ok(1));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(rt.block_on(client.bump_async()), Ok(2));
    assert_eq!(rt.block_on(Arc::new(client).shared(1)), Ok(3));
}
