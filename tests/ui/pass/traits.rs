//! Trait impls, native `async fn` in traits, and methods inside an
//! `#[async_trait]` impl (the impl attribute expands first; the resil
//! attribute then sees async-trait's `Box::pin(async move { … })` shape).
#![deny(warnings)]
// The trait below is the user's choice, not the expansion's.
#![allow(async_fn_in_trait)]
#[derive(Debug, PartialEq)]
pub struct E;
impl From<resil::Rejection> for E {
    fn from(_: resil::Rejection) -> Self {
        E
    }
}

pub trait Store {
    fn load(&self, key: u32) -> Result<u32, E>;
    fn load_async(&self, key: u32) -> impl std::future::Future<Output = Result<u32, E>> + Send;
}

pub struct Memory;

impl Store for Memory {
    #[resil::retry(name = "pass-traits", wait_duration = "0ms")]
    fn load(&self, key: u32) -> Result<u32, E> {
        Ok(key)
    }

    #[resil::circuit_breaker(name = "pass-traits")]
    async fn load_async(&self, key: u32) -> Result<u32, E> {
        Ok(key + 1)
    }
}

pub trait NativeAsync {
    async fn get(&self, key: String) -> Result<usize, E>;
}

impl NativeAsync for Memory {
    #[resil::retry(name = "pass-traits", wait_duration = "0ms")]
    #[resil::time_limiter(name = "pass-traits")]
    async fn get(&self, key: String) -> Result<usize, E> {
        Ok(key.len())
    }
}

#[async_trait::async_trait]
pub trait Remote {
    async fn fetch(&self, key: &str) -> Result<usize, E>;
}

#[async_trait::async_trait]
impl Remote for Memory {
    #[resil::retry(name = "pass-traits", wait_duration = "0ms")]
    #[resil::circuit_breaker(name = "pass-traits", fallback = fetch_fallback)]
    async fn fetch(&self, key: &str) -> Result<usize, E> {
        if key.is_empty() {
            return Err(E);
        }
        Ok(key.len())
    }
}

impl Memory {
    async fn fetch_fallback(&self, _key: &str, _why: E) -> Result<usize, E> {
        Ok(0)
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    assert_eq!(Memory.load(1), Ok(1));
    assert_eq!(rt.block_on(Memory.load_async(1)), Ok(2));
    assert_eq!(rt.block_on(Memory.get("abc".to_owned())), Ok(3));
    assert_eq!(rt.block_on(Memory.fetch("ab")), Ok(2));
    assert_eq!(rt.block_on(Memory.fetch("")), Ok(0));
}
